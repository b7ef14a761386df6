//! Digests of the index entries for the monitor's proofs (`scan::fsmonitor`), and finding
//! them among the stored ones. It only computes; it reads and writes nothing.

use agent_rewind_core::private::digest::{Digest, path_digest};
use gix::bstr::ByteSlice;

/// Digests of the index entries, computed in one pass over their paths.
pub struct EntryDigests {
    /// Of each entry as it is: path, stat data, id, mode, stage and the flags that change
    /// what it means. Equal digests mean the same entry.
    pub entries: Vec<u64>,
    /// Of each entry's path and mode: what the untracked walk's cache compares
    /// (`scan::dirwalk`), so that it need not go over the paths again.
    pub paths: Vec<u64>,
    /// Of the sequence of `paths`, in index order: equal layouts mean the same paths and
    /// modes at the same positions, so an entry need only be compared with the stored
    /// digest at its own position (`Proofs`).
    pub layout: u64,
}

/// [`EntryDigests`] of `index`. The digest is the walk cache's (`Digest`: each 8-byte word
/// goes through a bijective mix, so entries that differ in one field never collide),
/// several times faster than std's SipHash over 100k entries; an entry's digest continues
/// from its path's.
pub fn entry_digests(index: &gix::index::State) -> EntryDigests {
    let entries = index.entries();
    let n = entries.len();
    // Split over a few threads for a large index (the monitor is being asked meanwhile).
    let parts = if n < 20_000 {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |p| p.get().min(4))
    };
    let mut out = EntryDigests {
        entries: vec![0; n],
        paths: vec![0; n],
        layout: 0,
    };
    let chunk = n.div_ceil(parts.max(1)).max(1);
    std::thread::scope(|scope| {
        let mut rest = (entries, &mut out.entries[..], &mut out.paths[..]);
        let mut handles = Vec::new();
        while !rest.0.is_empty() {
            let k = chunk.min(rest.0.len());
            let (e, e_rest) = rest.0.split_at(k);
            let (d, d_rest) = std::mem::take(&mut rest.1).split_at_mut(k);
            let (p, p_rest) = std::mem::take(&mut rest.2).split_at_mut(k);
            rest = (e_rest, d_rest, p_rest);
            if rest.0.is_empty() {
                digest_part(index, e, d, p);
            } else {
                handles.push(scope.spawn(move || digest_part(index, e, d, p)));
            }
        }
        for h in handles {
            let _ = h.join();
        }
    });
    let mut layout = Digest::default();
    layout.u64(n as u64);
    for p in &out.paths {
        layout.u64(*p);
    }
    out.layout = layout.finish();
    out
}

/// The digests of `entries` (of `index`) into `digests` and `paths`.
fn digest_part(
    index: &gix::index::State,
    entries: &[gix::index::Entry],
    digests: &mut [u64],
    paths: &mut [u64],
) {
    use gix::index::entry::Flags;
    let keep = Flags::STAGE_MASK
        | Flags::INTENT_TO_ADD
        | Flags::SKIP_WORKTREE
        | Flags::ASSUME_VALID
        | Flags::EXTENDED;
    for ((e, digest), path) in entries.iter().zip(digests).zip(paths) {
        let mut h = Digest::default();
        h.bytes(e.path(index).as_bytes());
        *path = path_digest(h, e.mode.bits());
        let s = &e.stat;
        h.u64((u64::from(s.mtime.secs) << 32) | u64::from(s.mtime.nsecs));
        h.u64((u64::from(s.ctime.secs) << 32) | u64::from(s.ctime.nsecs));
        h.u64((u64::from(s.dev) << 32) | u64::from(s.ino));
        h.u64((u64::from(s.uid) << 32) | u64::from(s.gid));
        h.u64(u64::from(s.size));
        h.bytes(e.id.as_bytes());
        h.u64((u64::from(e.mode.bits()) << 32) | u64::from((e.flags & keep).bits()));
        *digest = h.finish();
    }
}

/// The digests of the entries a snapshot proved unchanged, as stored with our token: one
/// per index entry of that snapshot, in index order, `0` for an entry it did not prove.
#[derive(Default)]
pub(super) struct Proofs {
    /// [`EntryDigests::layout`] of that snapshot's index.
    pub(super) layout: u64,
    pub(super) digests: Vec<u64>,
}

impl Proofs {
    /// For each entry (its digest in `now`), whether these proofs hold that very entry. When
    /// the index has the same layout as then, an entry is compared with the digest at its own
    /// position only (an entry found at another position is merely not taken as proven);
    /// otherwise it is looked up among all of them.
    pub(super) fn holds(&self, now: &EntryDigests) -> Vec<bool> {
        if self.layout == now.layout && self.digests.len() == now.entries.len() {
            return now
                .entries
                .iter()
                .zip(&self.digests)
                .map(|(d, p)| *d != 0 && d == p)
                .collect();
        }
        let mut sorted: Vec<u64> = self.digests.iter().copied().filter(|d| *d != 0).collect();
        sorted.sort_unstable();
        let buckets = Buckets::new(&sorted);
        now.entries
            .iter()
            .map(|d| *d != 0 && buckets.contains(*d))
            .collect()
    }
}

/// A sorted list of digests with where each run of equal top bits starts: the digests are
/// spread evenly over `u64`, so a lookup reads one bucket start and one or two digests next
/// to each other, not a binary search's ~17 scattered ones (100k entries).
pub(super) struct Buckets<'a> {
    sorted: &'a [u64],
    shift: u32,
    /// `starts[b]`: the first position whose digest's top bits are `b` or more.
    starts: Vec<u32>,
}

impl<'a> Buckets<'a> {
    pub(super) fn new(sorted: &'a [u64]) -> Buckets<'a> {
        // About one digest per bucket; the positions fit `u32` (or no buckets at all).
        let bits = (sorted.len().max(1).ilog2() + 1).min(24);
        let shift = 64 - bits;
        if u32::try_from(sorted.len()).is_err() {
            return Buckets {
                sorted,
                shift,
                starts: Vec::new(),
            };
        }
        let mut starts = vec![0u32; (1usize << bits) + 1];
        let mut pos = 0usize;
        for (b, start) in starts.iter_mut().enumerate() {
            while pos < sorted.len() && ((sorted[pos] >> shift) as usize) < b {
                pos += 1;
            }
            *start = pos as u32;
        }
        Buckets {
            sorted,
            shift,
            starts,
        }
    }

    pub(super) fn contains(&self, d: u64) -> bool {
        if self.starts.is_empty() {
            return self.sorted.binary_search(&d).is_ok();
        }
        let b = (d >> self.shift) as usize;
        let (lo, hi) = (self.starts[b] as usize, self.starts[b + 1] as usize);
        self.sorted[lo..hi].contains(&d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_digests_are_found_wherever_they_sit() {
        let mut v: Vec<u64> = (0..5000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (i << 7))
            .collect();
        v.extend([0, 1, u64::MAX, u64::MAX - 1, 1 << 63]);
        v.sort_unstable();
        v.dedup();
        let b = Buckets::new(&v);
        for (k, d) in v.iter().enumerate() {
            assert!(b.contains(*d), "{k}");
            for probe in [d.wrapping_add(1), d.wrapping_sub(1)] {
                assert_eq!(b.contains(probe), v.binary_search(&probe).is_ok());
            }
        }
        // Clustered values (not spread evenly) are found too, only with longer scans.
        let w: Vec<u64> = (0..1000).collect();
        let b = Buckets::new(&w);
        assert!(w.iter().all(|d| b.contains(*d)) && !b.contains(5000));
        assert!(!Buckets::new(&[]).contains(1));
    }
}
