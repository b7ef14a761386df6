//! The small, fast digest the scanner's caches compare with: the walk cache's records and
//! key (`store::dirwalk`) and the monitor's proofs of index entries (`store::fsmonitor`).
//! Both use it, so it sits below both of them. It only computes: it reads and writes
//! nothing, and its values must stay what they are (they are stored in those caches).

/// A small, fast, non-cryptographic digest (the cache is local and only detects changes).
#[derive(Clone, Copy)]
pub(crate) struct Digest(u64);

impl Default for Digest {
    fn default() -> Self {
        Digest(0x9e37_79b9_7f4a_7c15)
    }
}

impl Digest {
    pub(crate) fn u64(&mut self, v: u64) {
        self.0 = (self.0 ^ v)
            .wrapping_mul(0xff51_afd7_ed55_8ccd)
            .rotate_left(29);
    }

    pub(crate) fn bytes(&mut self, data: &[u8]) {
        let mut chunks = data.chunks_exact(8);
        for c in &mut chunks {
            self.u64(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let mut tail = [0u8; 8];
        tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        self.u64(u64::from_le_bytes(tail) ^ ((data.len() as u64) << 56));
    }

    pub(crate) fn finish(self) -> u64 {
        let mut v = self.0;
        v ^= v >> 33;
        v = v.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        v ^ (v >> 33)
    }
}

/// The walk cache's digest of an index entry: `h` holds the entry's path (`Digest::bytes`),
/// to which its mode is added.
pub(crate) fn path_digest(mut h: Digest, mode: gix::index::entry::Mode) -> u64 {
    h.u64(u64::from(mode.bits()));
    h.finish()
}
