//! The one digest module of everything we keep on disk: the checksum of every private file
//! (CRC-32, as git's index extensions and zlib use), and the 64-bit digests the caches store
//! (entry digests, cache keys, the raw index's digest).
//!
//! Every function here is defined by this file alone, so a value written by one build reads
//! the same in every later one, on every machine: persisted digests never come from a hasher
//! whose output may change between versions or processes (foldhash, std's `RandomState`).
//! These are change detectors for local caches, not a security boundary. It reads and writes
//! nothing.

/// The CRC-32 (IEEE, as zlib and gzip) of `bytes`: the checksum of the private files.
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// A streaming [`crc32`].
pub type Crc32 = crc32fast::Hasher;

/// A small, fast, non-cryptographic 64-bit digest with a fixed definition: each 8-byte word
/// goes through a bijective mix (xor, multiply by an odd constant, rotate), so inputs that
/// differ in one word never collide before the final avalanche.
#[derive(Clone, Copy)]
pub struct Digest(u64);

impl Default for Digest {
    fn default() -> Self {
        Digest(0x9e37_79b9_7f4a_7c15)
    }
}

impl Digest {
    pub fn u64(&mut self, v: u64) {
        self.0 = (self.0 ^ v)
            .wrapping_mul(0xff51_afd7_ed55_8ccd)
            .rotate_left(29);
    }

    pub fn bytes(&mut self, data: &[u8]) {
        let mut chunks = data.chunks_exact(8);
        for c in &mut chunks {
            self.u64(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let mut tail = [0u8; 8];
        tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        self.u64(u64::from_le_bytes(tail) ^ ((data.len() as u64) << 56));
    }

    pub fn finish(self) -> u64 {
        let mut v = self.0;
        v ^= v >> 33;
        v = v.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        v ^ (v >> 33)
    }
}

/// The walk cache's digest of an index entry: `h` holds the entry's path (`Digest::bytes`),
/// to which its mode's bits are added (the walk cache's records and the monitor's proofs).
pub fn path_digest(mut h: Digest, mode_bits: u32) -> u64 {
    h.u64(u64::from(mode_bits));
    h.finish()
}

/// Two independent 64-bit digests of `b`: four [`Digest`] lanes over its 32-byte blocks
/// (independent, so the processor runs them side by side), folded with the tail and the
/// length; and the CRC-32 with the length. A cache key over up to megabytes (the index),
/// not a security boundary.
pub fn digest128(b: &[u8]) -> [u64; 2] {
    let seed = Digest::default().0;
    let mut lanes = [1u64, 2, 3, 4].map(|i| Digest(seed ^ i));
    let mut blocks = b.chunks_exact(32);
    for block in &mut blocks {
        for (lane, word) in lanes.iter_mut().zip(block.chunks_exact(8)) {
            lane.u64(u64::from_le_bytes(word.try_into().expect("8 bytes")));
        }
    }
    let mut h = Digest::default();
    h.bytes(blocks.remainder());
    for lane in lanes {
        h.u64(lane.finish());
    }
    h.u64(b.len() as u64);
    let crc = crc32(b);
    [h.finish(), (u64::from(crc) << 32) ^ b.len() as u64]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values are part of the formats on disk: a change here must bump their versions.
    #[test]
    fn digests_are_fixed() {
        assert_eq!(crc32(b"agent-rewind"), 0x83a5_e892);
        let mut h = Digest::default();
        h.bytes(b"agent-rewind");
        assert_eq!(h.finish(), 0xe286_f2f4_37ee_b275);
        assert_eq!(digest128(b"agent-rewind")[0], 0x216f_5bb3_f469_3817);
        let hundred: Vec<u8> = (0..100).collect();
        assert_eq!(digest128(&hundred)[0], 0x550a_8bf3_06d4_9774);
        assert_eq!(
            digest128(b"agent-rewind")[1] & 0xffff_ffff,
            b"agent-rewind".len() as u64
        );
        assert_ne!(digest128(b"a"), digest128(b"b"));
    }
}
