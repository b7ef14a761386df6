//! The user's index file read as bytes, without decoding it into entries: a digest of its
//! entries, whether it is "plain" (nothing a tree cannot say), and the entries at a few
//! paths. This is what lets a monitored snapshot start from the last checkpoint's tree
//! (`scan::snapshot::monitored`) without paying for gix's decode of a 100k-entry index.
//!
//! The digest covers the header and every entry byte (stat data, id, flags, path), not the
//! extensions: git rewrites those (its own fsmonitor token, the cache-tree) on every
//! `git status` while the entries stay the same. Plain means version 2 to 4, stage 0 only,
//! no assume-unchanged, skip-worktree or intent-to-add flag, only regular files, executables
//! and symlinks (no submodule, no sparse directory), and no split index. Anything this does
//! not understand is `None`: the caller then takes the full pass. It never writes anything.
//! The file is mapped, not read (the one `unsafe` block; docs/design/from-last-checkpoint.md says why).
//!
//! One of the scanner's sources (`scan::snapshot::scan`). Fallback: the full pass (gix decodes the
//! index) and no state saved for the next checkpoint. Kill switch: none of its own; only a
//! checkpoint with a monitor reads it, so `agentRewind.fromLastCheckpoint=false` or no
//! `core.fsmonitor` leaves it unused.

use gix::ObjectId;
use gix::bstr::{BStr, BString, ByteSlice};
use std::path::Path;

/// The index file's bytes: mapped, as gix's own index reader maps it, or read (where the
/// file cannot be mapped, and in tests).
enum Bytes {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Read(v) => v,
        }
    }
}

impl From<Vec<u8>> for Bytes {
    fn from(v: Vec<u8>) -> Bytes {
        Bytes::Read(v)
    }
}

/// The index file as read, with what the scan found.
pub struct RawIndex {
    bytes: Bytes,
    version: u32,
    count: usize,
    hash: gix::hash::Kind,
    /// Where each entry starts (versions 2 and 3).
    offsets: Option<Vec<usize>>,
    /// Digest of the header and the entries (see the module comment).
    pub digest: [u64; 2],
    /// Whether every entry is one a tree says all of (see the module comment).
    pub plain: bool,
    /// The tree `git write-tree` would write of these entries, from the cache-tree (`TREE`)
    /// extension, when its root is valid and covers every entry (git keeps it so after a
    /// commit, a checkout or a reset; `git add` invalidates it).
    pub tree: Option<ObjectId>,
    /// The file read.
    pub identity: Option<Identity>,
}

/// One entry found by [`RawIndex::lookup`].
#[derive(Debug, Clone)]
pub struct RawEntry {
    pub path: BString,
    /// The mode as git stores it (`0o100644`, `0o100755`, `0o120000`, …).
    pub mode: u32,
    pub id: ObjectId,
}

const ENTRY_FIXED: usize = 40; // ctime, mtime, dev, ino, mode, uid, gid, size
const FLAG_ASSUME_VALID: u16 = 0x8000;
const FLAG_EXTENDED: u16 = 0x4000;
const FLAG_STAGE: u16 = 0x3000;
const NAME_MASK: u16 = 0x0fff;

/// Read and scan the index at `path` (`hash` is the repository's object hash). `None` when
/// there is no index file, it cannot be read, or it is in a form this does not understand.
pub fn read(path: &Path, hash: gix::hash::Kind) -> Option<RawIndex> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).ok()?;
    let identity = Identity::of(&file.metadata().ok()?);
    // Mapped rather than read: reading 10 MB (a 100k-entry index) into a new buffer costs
    // 3-4 ms of page faults and copying, most of a monitored checkpoint's wait.
    // SAFETY: the mapping is only read. git replaces the index by renaming a new file over
    // it and never writes into one; a program that cut the file short under us would make a
    // read fault, the risk gix's own index reader takes with this file on every snapshot.
    let bytes = match unsafe { memmap2::MmapOptions::new().populate().map(&file) } {
        Ok(m) => Bytes::Mapped(m),
        Err(_) => {
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).ok()?;
            Bytes::Read(bytes)
        }
    };
    let mut raw = scan(bytes, hash)?;
    raw.identity = Some(identity);
    Some(raw)
}

/// How many entries the index at `path` says it holds (its header), without reading the
/// rest. `None` when there is no index or its header is not one. A split index counts only
/// the entries of its own part.
pub fn entry_count(path: &Path) -> Option<u32> {
    use std::io::Read;
    let mut header = [0u8; 12];
    std::fs::File::open(path)
        .ok()?
        .read_exact(&mut header)
        .ok()?;
    (&header[..4] == b"DIRC")
        .then(|| be32(&header, 8))
        .flatten()
}

/// Which file a path named: git replaces the index by renaming a new file over it, so
/// another inode or change time means another file (with `index.skipHash` the file's own
/// checksum cannot tell).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: Option<std::time::SystemTime>,
    ctime_ns: i64,
}

impl Identity {
    fn of(md: &std::fs::Metadata) -> Identity {
        #[cfg(unix)]
        let (dev, ino, ctime_ns) = {
            use std::os::unix::fs::MetadataExt;
            (
                md.dev(),
                md.ino(),
                md.ctime() * 1_000_000_000 + md.ctime_nsec(),
            )
        };
        #[cfg(not(unix))]
        let (dev, ino, ctime_ns) = (0, 0, 0);
        Identity {
            dev,
            ino,
            size: md.len(),
            mtime: md.modified().ok(),
            ctime_ns,
        }
    }

    /// The identity of the file at `path` now.
    pub fn at(path: &Path) -> Option<Identity> {
        std::fs::metadata(path).ok().map(|md| Identity::of(&md))
    }
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

/// Git's varint of index version 4 (`decode_varint`): the value and the bytes it took.
fn varint(b: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    let mut c = *b.first()?;
    let mut val = u64::from(c & 127);
    while c & 128 != 0 {
        i += 1;
        val = val.checked_add(1)?;
        if val >> 57 != 0 {
            return None;
        }
        c = *b.get(i)?;
        val = (val << 7) + u64::from(c & 127);
    }
    Some((usize::try_from(val).ok()?, i + 1))
}

/// One entry's parts, as [`walk`] hands them over.
struct Parsed<'a> {
    mode: u32,
    id: &'a [u8],
    flags: u16,
    extended: u16,
}

/// The parts of the entry starting at `start` before its path, and where its path starts.
fn fixed_part(
    b: &[u8],
    start: usize,
    version: u32,
    hash_len: usize,
) -> Option<(Parsed<'_>, usize)> {
    let flags = be16(b, start + ENTRY_FIXED + hash_len)?;
    let mut pos = start + ENTRY_FIXED + hash_len + 2;
    let extended = if flags & FLAG_EXTENDED != 0 {
        if version < 3 {
            return None;
        }
        pos += 2;
        be16(b, pos - 2)?
    } else {
        0
    };
    let parsed = Parsed {
        mode: be32(b, start + 24)?,
        id: b.get(start + ENTRY_FIXED..start + ENTRY_FIXED + hash_len)?,
        flags,
        extended,
    };
    Some((parsed, pos))
}

/// The length of a version 2 or 3 entry's path starting at `pos`: in its flags, or up to
/// its NUL when too long for them.
fn name_len(b: &[u8], pos: usize, flags: u16) -> Option<usize> {
    let len = usize::from(flags & NAME_MASK);
    if len < usize::from(NAME_MASK) {
        Some(len)
    } else {
        b.get(pos..)?.iter().position(|c| *c == 0)
    }
}

/// Go through the entries of `b` in order, handing each one's full path and parts to `each`
/// (`false` from it stops the walk). Returns where the entries end, or `None` when the bytes
/// are not a well-formed list of entries.
fn walk(
    b: &[u8],
    version: u32,
    count: usize,
    hash_len: usize,
    mut each: impl FnMut(usize, &[u8], Parsed<'_>) -> bool,
) -> Option<usize> {
    let mut at = 12;
    let mut name: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = at;
        let (parsed, pos) = fixed_part(b, start, version, hash_len)?;
        if version == 4 {
            let (strip, used) = varint(b.get(pos..)?)?;
            let rest = b.get(pos + used..)?;
            let nul = rest.iter().position(|c| *c == 0)?;
            let keep = name.len().checked_sub(strip)?;
            name.truncate(keep);
            name.extend_from_slice(&rest[..nul]);
            at = pos + used + nul + 1;
        } else {
            let nlen = name_len(b, pos, parsed.flags)?;
            let path = b.get(pos..pos + nlen)?;
            // Padded with 1 to 8 NULs to a multiple of 8 from the entry's start.
            at = start + ((pos - start + nlen + 8) & !7);
            if at > b.len() {
                return None;
            }
            if !each(start, path, parsed) {
                return Some(at);
            }
            continue;
        }
        if !each(start, &name, parsed) {
            return Some(at);
        }
    }
    Some(at)
}

fn scan(bytes: impl Into<Bytes>, hash: gix::hash::Kind) -> Option<RawIndex> {
    let bytes: Bytes = bytes.into();
    let hash_len = hash.len_in_bytes();
    if bytes.len() < 12 + hash_len || &bytes[..4] != b"DIRC" {
        return None;
    }
    let version = be32(&bytes, 4)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = usize::try_from(be32(&bytes, 8)?).ok()?;
    let mut plain = true;
    // Where each entry starts, for lookups by binary search (version 4 compresses each
    // path against the one before: looked up by a walk instead).
    let mut offsets = Vec::with_capacity(if version == 4 { 0 } else { count });
    // The digest's blocks on a thread of their own while the entries are walked here (each
    // takes ~1.5 ms of a 100k-entry index).
    let (entries_end, blocks) = std::thread::scope(|scope| {
        let b: &[u8] = &bytes;
        // No thread (none could be started, or a small index): the blocks are made below.
        let blocks = (b.len() >= 4 * DIGEST_BLOCK)
            .then(|| {
                std::thread::Builder::new()
                    .spawn_scoped(scope, move || {
                        b.chunks_exact(DIGEST_BLOCK).map(digest).collect()
                    })
                    .ok()
            })
            .flatten();
        let end = walk(b, version, count, hash_len, |start, _, e| {
            if version != 4 {
                offsets.push(start);
            }
            if e.flags & (FLAG_ASSUME_VALID | FLAG_STAGE) != 0
                || e.extended != 0
                || !matches!(e.mode, 0o100644 | 0o100755 | 0o120000)
            {
                plain = false;
            }
            true
        });
        let blocks: Vec<[u64; 2]> = blocks.and_then(|h| h.join().ok()).unwrap_or_default();
        (end, blocks)
    });
    let entries_end = entries_end?;
    let trailer = bytes.len().checked_sub(hash_len)?;
    if entries_end > trailer {
        return None;
    }
    // Extensions: a split index (`link`), a sparse index (`sdir`) or a required one we do
    // not know (lower-case signature) means the entries are not the whole story.
    let mut at = entries_end;
    let mut tree = None;
    while at < trailer {
        let sig = bytes.get(at..at + 4)?;
        let size = usize::try_from(be32(&bytes, at + 4)?).ok()?;
        if sig == b"link" || sig == b"sdir" || sig[0].is_ascii_lowercase() {
            plain = false;
        }
        if sig == b"TREE" {
            let data = bytes.get(at + 8..at.checked_add(8)?.checked_add(size)?)?;
            tree = cache_tree_root(data, count, hash);
        }
        at = at.checked_add(8)?.checked_add(size)?;
    }
    if at != trailer {
        return None;
    }
    let digest = entries_digest(&bytes, &blocks, entries_end);
    Some(RawIndex {
        bytes,
        version,
        count,
        hash,
        offsets: (version != 4).then_some(offsets),
        digest,
        plain,
        tree: tree.filter(|_| plain),
        identity: None,
    })
}

/// The root of a cache-tree extension's data: `\0` (the root's empty path), the number of
/// entries it covers in ASCII (`-1`: invalid), a space, its number of subtrees, `\n`, then
/// its id when valid. `None` unless it is valid and covers all `count` entries.
fn cache_tree_root(data: &[u8], count: usize, hash: gix::hash::Kind) -> Option<ObjectId> {
    let rest = data.strip_prefix(b"\0")?;
    let space = rest.iter().position(|c| *c == b' ')?;
    let covered: usize = std::str::from_utf8(&rest[..space]).ok()?.parse().ok()?;
    let newline = space + rest[space..].iter().position(|c| *c == b'\n')?;
    let id = rest.get(newline + 1..newline + 1 + hash.len_in_bytes())?;
    (covered == count).then(|| ObjectId::try_from(id).ok())?
}

/// Bytes per block of an index's digest ([`entries_digest`]).
const DIGEST_BLOCK: usize = 1 << 16;

/// The digest of `b[..end]`: the [`digest`] of the digests of its blocks of
/// [`DIGEST_BLOCK`] bytes (the last one shorter), so that the blocks can be digested before
/// `end` is known. `blocks` holds the digests of the first whole blocks of `b`, when made
/// already (any it lacks are made here).
fn entries_digest(b: &[u8], blocks: &[[u64; 2]], end: usize) -> [u64; 2] {
    let whole = end / DIGEST_BLOCK;
    let mut all = Vec::with_capacity((whole + 1) * 16);
    let mut push = |d: [u64; 2]| {
        all.extend_from_slice(&d[0].to_le_bytes());
        all.extend_from_slice(&d[1].to_le_bytes());
    };
    for i in 0..whole {
        push(match blocks.get(i) {
            Some(d) => *d,
            None => digest(&b[i * DIGEST_BLOCK..(i + 1) * DIGEST_BLOCK]),
        });
    }
    push(digest(&b[whole * DIGEST_BLOCK..end]));
    digest(&all)
}

/// The digest of a part of the index: the one digest module's (stored in `cache/monitored`).
pub(crate) use agent_rewind_core::private::digest::digest128 as digest;

impl RawIndex {
    /// The stage-0 entries at `paths` (sorted, without duplicates), in that order: `None`
    /// where the index has no entry. Also, for each of `dirs` (sorted), how many entries
    /// the index holds below it (`dir/…`).
    pub fn lookup(
        &self,
        paths: &[BString],
        dirs: &[BString],
    ) -> (Vec<Option<RawEntry>>, Vec<usize>) {
        match &self.offsets {
            Some(offsets) => self.lookup_sorted(offsets, paths, dirs),
            None => self.lookup_walking(paths, dirs),
        }
    }

    /// The entry starting at `off` (versions 2 and 3): its path and parts.
    fn entry_at(&self, off: usize) -> Option<(&[u8], Parsed<'_>)> {
        let b = &self.bytes;
        let (parsed, pos) = fixed_part(b, off, self.version, self.hash.len_in_bytes())?;
        let nlen = name_len(b, pos, parsed.flags)?;
        Some((b.get(pos..pos + nlen)?, parsed))
    }

    fn raw_entry(&self, name: &[u8], e: &Parsed<'_>) -> RawEntry {
        RawEntry {
            path: name.into(),
            mode: e.mode,
            id: ObjectId::try_from(e.id).unwrap_or_else(|_| ObjectId::null(self.hash)),
        }
    }

    /// By binary search over the entries, which git keeps sorted by path (then stage).
    fn lookup_sorted(
        &self,
        offsets: &[usize],
        paths: &[BString],
        dirs: &[BString],
    ) -> (Vec<Option<RawEntry>>, Vec<usize>) {
        let name = |i: usize| self.entry_at(offsets[i]).map_or(&[][..], |(n, _)| n);
        // The first entry whose path is not below `key`.
        let first_not_below = |key: &[u8]| {
            let (mut lo, mut hi) = (0, offsets.len());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if name(mid) < key {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            lo
        };
        let found = paths
            .iter()
            .map(|p| {
                let i = first_not_below(p);
                let (n, e) = self.entry_at(*offsets.get(i)?)?;
                (n == p.as_slice() && e.flags & FLAG_STAGE == 0).then(|| self.raw_entry(n, &e))
            })
            .collect();
        let below = dirs
            .iter()
            .map(|d| {
                // Paths below `d` sort from `d/` up to `d0` (`0` follows `/`).
                let mut prefix = d.to_vec();
                prefix.push(b'/');
                let from = first_not_below(&prefix);
                *prefix.last_mut().expect("pushed") = b'0';
                first_not_below(&prefix).saturating_sub(from)
            })
            .collect();
        (found, below)
    }

    /// By a walk over every entry (version 4).
    fn lookup_walking(
        &self,
        paths: &[BString],
        dirs: &[BString],
    ) -> (Vec<Option<RawEntry>>, Vec<usize>) {
        let mut found: Vec<Option<RawEntry>> = vec![None; paths.len()];
        let mut below = vec![0; dirs.len()];
        let prefixes: Vec<Vec<u8>> = dirs
            .iter()
            .map(|d| {
                let mut p = d.to_vec();
                p.push(b'/');
                p
            })
            .collect();
        let mut left = paths.len();
        let hash_len = self.hash.len_in_bytes();
        walk(
            &self.bytes,
            self.version,
            self.count,
            hash_len,
            |_, name, e| {
                if e.flags & FLAG_STAGE == 0
                    && let Ok(i) = paths.binary_search_by(|p| p.as_slice().cmp(name))
                    && found[i].is_none()
                {
                    found[i] = Some(self.raw_entry(name, &e));
                    left -= 1;
                }
                for (p, n) in prefixes.iter().zip(below.iter_mut()) {
                    *n += usize::from(name.starts_with(p));
                }
                // Counting needs every entry when there are folders.
                left > 0 || !prefixes.is_empty()
            },
        );
        (found, below)
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.count
    }

    /// The index file's trailing checksum, to tell it is the file gix read.
    pub fn checksum(&self) -> &BStr {
        self.bytes[self.bytes.len() - self.hash.len_in_bytes()..].as_bstr()
    }
}

#[cfg(test)]
mod tests;
