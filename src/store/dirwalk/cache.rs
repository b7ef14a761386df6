//! The untracked walk's cache file (`<git dir>/agent-rewind/cache/dirwalk`): what it records
//! of each directory read, its encoding, and the key of everything outside the worktree that
//! decides what the walk reports. Deciding which records still hold is the walk's
//! (`store::dirwalk`); this module only stores and reads them, and a damaged or foreign file
//! reads as an empty cache.

use super::{CACHE_HEADER, RACY_MARGIN};
use crate::error::Result;
use crate::store::Store;
use gix::bstr::{BString, ByteSlice};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Stat data of a file or directory (not following a symlink), as far as it tells of a
/// change: the walk cache's directories and `.gitignore`s, and `packed-refs` for ref listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::store) struct StatData {
    mtime: (i64, i64),
    ctime: (i64, i64),
    ino: u64,
    dev: u64,
    mode: u32,
    size: u64,
}

impl StatData {
    #[cfg(unix)]
    pub(in crate::store) fn of(path: &Path) -> Option<StatData> {
        use std::os::unix::fs::MetadataExt;
        let md = std::fs::symlink_metadata(path).ok()?;
        Some(StatData {
            mtime: (md.mtime(), md.mtime_nsec()),
            ctime: (md.ctime(), md.ctime_nsec()),
            ino: md.ino(),
            dev: md.dev(),
            mode: md.mode(),
            size: md.size(),
        })
    }

    #[cfg(not(unix))]
    fn of(_path: &Path) -> Option<StatData> {
        None
    }

    /// Changed at or after `after`: a change right after the stat could keep the same data.
    pub(super) fn is_racy(&self, after: SystemTime) -> bool {
        let after = after.duration_since(UNIX_EPOCH).unwrap_or_default();
        let after = (after.as_secs() as i64, i64::from(after.subsec_nanos()));
        self.mtime >= after || self.ctime >= after
    }

    fn encode(&self) -> String {
        format!(
            "{}.{} {}.{} {} {} {} {}",
            self.mtime.0,
            self.mtime.1,
            self.ctime.0,
            self.ctime.1,
            self.ino,
            self.dev,
            self.mode,
            self.size
        )
    }

    fn decode(s: &str) -> Option<StatData> {
        let mut it = s.split(' ');
        let pair = |v: &str| -> Option<(i64, i64)> {
            let (a, b) = v.split_once('.')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        };
        let out = StatData {
            mtime: pair(it.next()?)?,
            ctime: pair(it.next()?)?,
            ino: it.next()?.parse().ok()?,
            dev: it.next()?.parse().ok()?,
            mode: it.next()?.parse().ok()?,
            size: it.next()?.parse().ok()?,
        };
        it.next().is_none().then_some(out)
    }
}

/// Whether two records say the same (whether a directory was read now or carried over does
/// not matter).
pub(super) fn same_records(a: &DirRecord, b: &DirRecord) -> bool {
    a.stat == b.stat
        && a.gitignore == b.gitignore
        && a.has_untracked == b.has_untracked
        && a.index == b.index
        && a.racy == b.racy
        && a.ignore_racy == b.ignore_racy
}

/// What the walk learned about one directory it read.
#[derive(Debug, Clone)]
pub(super) struct DirRecord {
    pub(super) stat: StatData,
    /// Stat data of `<dir>/.gitignore`, `None` when there is none.
    pub(super) gitignore: Option<StatData>,
    /// Whether an untracked entry sits directly in this directory.
    pub(super) has_untracked: bool,
    /// The index entries below this directory: (count, digest).
    pub(super) index: (u64, u64),
    /// The directory's stat data was too recent to be trusted next time.
    pub(super) racy: bool,
    /// The `.gitignore`'s stat data was too recent to be trusted next time.
    pub(super) ignore_racy: bool,
}

#[derive(Debug, Default)]
pub(super) struct Cache {
    pub(super) key: u64,
    /// The fsmonitor token the records are valid at (`store::fsmonitor`), if any.
    pub(super) token: Option<String>,
    pub(super) dirs: BTreeMap<BString, DirRecord>,
}

impl Cache {
    pub(super) fn load(path: &Path, key: u64) -> Cache {
        let Ok(data) = std::fs::read(path) else {
            return Cache::default();
        };
        Self::parse(&data, key).unwrap_or_default()
    }

    fn parse(data: &[u8], key: u64) -> Option<Cache> {
        let mut records = data.split(|b| *b == 0);
        let header = records.next()?.to_str().ok()?;
        let mut fields = header.split('\t');
        let (name, stored_key) = (fields.next()?, fields.next()?);
        if name != CACHE_HEADER || u64::from_str_radix(stored_key, 16).ok()? != key {
            return None;
        }
        let token = fields.next().map(str::to_string);
        let mut dirs = BTreeMap::new();
        for rec in records.filter(|r| !r.is_empty()) {
            // fields\tpath: the path comes last as it may hold any byte but NUL.
            let mut fields = rec.splitn(6, |b| *b == b'\t');
            let stat = StatData::decode(fields.next()?.to_str().ok()?)?;
            let gitignore = match fields.next()?.to_str().ok()? {
                "-" => None,
                s => Some(StatData::decode(s)?),
            };
            let flags = fields.next()?.to_str().ok()?;
            let count = fields.next()?.to_str().ok()?.parse().ok()?;
            let digest = u64::from_str_radix(fields.next()?.to_str().ok()?, 16).ok()?;
            let path = BString::from(fields.next()?);
            dirs.insert(
                path,
                DirRecord {
                    stat,
                    gitignore,
                    has_untracked: flags.contains('u'),
                    index: (count, digest),
                    racy: flags.contains('r'),
                    ignore_racy: flags.contains('i'),
                },
            );
        }
        Some(Cache { key, token, dirs })
    }

    pub(super) fn save(&self, path: &Path) -> Result<()> {
        let mut out = Vec::with_capacity(self.dirs.len() * 96);
        out.extend_from_slice(format!("{CACHE_HEADER}\t{:016x}", self.key).as_bytes());
        if let Some(token) = self.token.as_deref().filter(|t| !t.contains(['\t', '\0'])) {
            out.extend_from_slice(format!("\t{token}").as_bytes());
        }
        for (dir, r) in &self.dirs {
            out.push(0);
            let flags = format!(
                "{}{}{}-",
                if r.has_untracked { "u" } else { "" },
                if r.racy { "r" } else { "" },
                if r.ignore_racy { "i" } else { "" }
            );
            let gitignore = r.gitignore.map_or_else(|| "-".to_string(), |s| s.encode());
            out.extend_from_slice(
                format!(
                    "{}\t{gitignore}\t{flags}\t{}\t{:016x}\t",
                    r.stat.encode(),
                    r.index.0,
                    r.index.1
                )
                .as_bytes(),
            );
            out.extend_from_slice(dir);
        }
        crate::store::write_atomic(path, &out, None)
    }
}

/// Everything outside the worktree that decides what the walk reports: if any of it
/// changes, no record of the cache is used.
pub(super) fn cache_key(store: &Store, workdir: &Path) -> u64 {
    let mut h = Digest::default();
    h.bytes(CACHE_HEADER.as_bytes());
    h.bytes(workdir.as_os_str().as_encoded_bytes());
    let config = store.repo().config_snapshot();
    for key in [
        "core.ignoreCase",
        "core.excludesFile",
        "core.precomposeUnicode",
    ] {
        h.bytes(key.as_bytes());
        h.bytes(
            config
                .string(key)
                .as_deref()
                .map_or(&b"-"[..], |v| v.as_ref()),
        );
    }
    let mut sources = vec![store.common_dir().join("info").join("exclude")];
    if let Some(p) = config.trusted_path("core.excludesFile").ok().flatten() {
        sources.push(p);
    }
    if let Some(p) = std::env::var_os("XDG_CONFIG_HOME") {
        sources.push(PathBuf::from(p).join("git").join("ignore"));
    }
    if let Some(p) = std::env::var_os("HOME") {
        sources.push(PathBuf::from(p).join(".config").join("git").join("ignore"));
    }
    let racy_after = SystemTime::now() - RACY_MARGIN;
    for source in sources {
        h.bytes(source.as_os_str().as_encoded_bytes());
        match StatData::of(&source) {
            // A global ignore file changed moments ago might change again unseen: a key
            // that matches nothing makes the next walk read everything.
            Some(s) if s.is_racy(racy_after) => h.u64(
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64),
            ),
            Some(s) => h.bytes(s.encode().as_bytes()),
            None => h.bytes(b"-"),
        }
    }
    h.finish()
}

/// A small, fast, non-cryptographic digest (the cache is local and only detects changes).
#[derive(Clone, Copy)]
pub(in crate::store) struct Digest(u64);

impl Default for Digest {
    fn default() -> Self {
        Digest(0x9e37_79b9_7f4a_7c15)
    }
}

impl Digest {
    pub(in crate::store) fn u64(&mut self, v: u64) {
        self.0 = (self.0 ^ v)
            .wrapping_mul(0xff51_afd7_ed55_8ccd)
            .rotate_left(29);
    }

    pub(in crate::store) fn bytes(&mut self, data: &[u8]) {
        let mut chunks = data.chunks_exact(8);
        for c in &mut chunks {
            self.u64(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let mut tail = [0u8; 8];
        tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        self.u64(u64::from_le_bytes(tail) ^ ((data.len() as u64) << 56));
    }

    pub(in crate::store) fn finish(self) -> u64 {
        let mut v = self.0;
        v ^= v >> 33;
        v = v.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        v ^ (v >> 33)
    }
}
