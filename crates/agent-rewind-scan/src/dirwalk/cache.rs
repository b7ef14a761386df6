//! The untracked walk's cache file (`<git dir>/agent-rewind/cache/dirwalk`): what it records
//! of each directory read, its encoding, and the key of everything outside the worktree that
//! decides what the walk reports. Deciding which records still hold is the walk's
//! (`scan::dirwalk`); this module only stores and reads them, and a damaged or foreign file
//! reads as an empty cache.

use super::{CACHE_HEADER, RACY_MARGIN};
use crate::ScanContext;
use agent_rewind_core::error::Result;
use agent_rewind_core::private::digest::Digest;
use agent_rewind_core::private::envelope::DIRWALK_CACHE;
use gix::bstr::{BString, ByteSlice};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Stat data of a file or directory (not following a symlink), as far as it tells of a
/// change: the walk cache's directories and `.gitignore`s, and `packed-refs` for ref listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatData {
    mtime: (i64, i64),
    ctime: (i64, i64),
    ino: u64,
    dev: u64,
    mode: u32,
    size: u64,
}

impl StatData {
    pub fn of(path: &Path) -> Option<StatData> {
        Self::from_metadata(&std::fs::symlink_metadata(path).ok()?)
    }

    #[cfg(unix)]
    fn from_metadata(md: &std::fs::Metadata) -> Option<StatData> {
        use std::os::unix::fs::MetadataExt;
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
    fn from_metadata(_md: &std::fs::Metadata) -> Option<StatData> {
        None
    }

    /// Changed at or after `after`: a change right after the stat could keep the same data.
    pub(super) fn is_racy(&self, after: SystemTime) -> bool {
        let after = after.duration_since(UNIX_EPOCH).unwrap_or_default();
        let after = (after.as_secs() as i64, i64::from(after.subsec_nanos()));
        self.mtime >= after || self.ctime >= after
    }

    /// As text, for the cache key.
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

    /// As [`STAT_BYTES`] bytes in the cache file: eight little-endian 64-bit words.
    fn put(&self, out: &mut Vec<u8>) {
        for w in [
            self.mtime.0 as u64,
            self.mtime.1 as u64,
            self.ctime.0 as u64,
            self.ctime.1 as u64,
            self.ino,
            self.dev,
            u64::from(self.mode),
            self.size,
        ] {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }

    fn take(r: &mut Reader<'_>) -> Option<StatData> {
        Some(StatData {
            mtime: (r.u64()? as i64, r.u64()? as i64),
            ctime: (r.u64()? as i64, r.u64()? as i64),
            ino: r.u64()?,
            dev: r.u64()?,
            mode: u32::try_from(r.u64()?).ok()?,
            size: r.u64()?,
        })
    }
}

/// Reads the cache file's binary records; every read past the end is `None`.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn bytes(&mut self, n: usize) -> Option<&[u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.bytes(8)?.try_into().ok()?))
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.bytes(4)?.try_into().ok()?))
    }
}

/// Flag bits of a record in the cache file.
const HAS_UNTRACKED: u8 = 1;
const RACY: u8 = 2;
const IGNORE_RACY: u8 = 4;
const HAS_GITIGNORE: u8 = 8;

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
    /// The fsmonitor token the records are valid at (`scan::fsmonitor`), if any.
    pub(super) token: Option<String>,
    pub(super) dirs: BTreeMap<BString, DirRecord>,
}

impl Cache {
    pub(super) fn load(path: &Path, key: u64) -> Cache {
        DIRWALK_CACHE
            .read_cache(path)
            .and_then(|body| Self::parse(&body, key))
            .unwrap_or_default()
    }

    /// The body (in the envelope of [`DIRWALK_CACHE`], `agent_rewind_core::private::envelope`): a line
    /// `<key, 16 hex digits>[\t<token>]\n`, then per directory, in path order: its path's
    /// length (u32) and bytes, a flag byte, its stat data, its `.gitignore`'s when it has
    /// one, the count and digest of the index entries below it (u64 each); all numbers
    /// little-endian.
    fn parse(data: &[u8], key: u64) -> Option<Cache> {
        let nl = data.find_byte(b'\n')?;
        let header = data[..nl].to_str().ok()?;
        let mut fields = header.split('\t');
        let stored_key = fields.next()?;
        if stored_key.len() != 16 || u64::from_str_radix(stored_key, 16).ok()? != key {
            return None;
        }
        let token = fields.next().map(str::to_string);
        if fields.next().is_some() {
            return None;
        }
        let mut r = Reader(&data[nl + 1..]);
        let mut dirs: Vec<(BString, DirRecord)> = Vec::new();
        while !r.0.is_empty() {
            let len = usize::try_from(r.u32()?).ok()?;
            let path = BString::from(r.bytes(len)?);
            let flags = r.bytes(1)?[0];
            let stat = StatData::take(&mut r)?;
            let gitignore = match flags & HAS_GITIGNORE {
                0 => None,
                _ => Some(StatData::take(&mut r)?),
            };
            let index = (r.u64()?, r.u64()?);
            // Written in path order: anything else is not our file.
            if dirs.last().is_some_and(|(last, _)| *last >= path) {
                return None;
            }
            dirs.push((
                path,
                DirRecord {
                    stat,
                    gitignore,
                    has_untracked: flags & HAS_UNTRACKED != 0,
                    index,
                    racy: flags & RACY != 0,
                    ignore_racy: flags & IGNORE_RACY != 0,
                },
            ));
        }
        Some(Cache {
            key,
            token,
            dirs: dirs.into_iter().collect(),
        })
    }

    pub(super) fn save(&self, path: &Path) -> Result<()> {
        let mut out = Vec::with_capacity(self.dirs.len() * 112 + 256);
        out.extend_from_slice(format!("{:016x}", self.key).as_bytes());
        if let Some(token) = self
            .token
            .as_deref()
            .filter(|t| !t.contains(['\t', '\0', '\n']))
        {
            out.extend_from_slice(format!("\t{token}").as_bytes());
        }
        out.push(b'\n');
        for (dir, r) in &self.dirs {
            let len = u32::try_from(dir.len()).map_err(|_| {
                agent_rewind_core::error::Error::other("a path too long for the walk cache")
            })?;
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(dir);
            let mut flags = 0;
            for (on, bit) in [
                (r.has_untracked, HAS_UNTRACKED),
                (r.racy, RACY),
                (r.ignore_racy, IGNORE_RACY),
                (r.gitignore.is_some(), HAS_GITIGNORE),
            ] {
                if on {
                    flags |= bit;
                }
            }
            out.push(flags);
            r.stat.put(&mut out);
            if let Some(g) = r.gitignore {
                g.put(&mut out);
            }
            out.extend_from_slice(&r.index.0.to_le_bytes());
            out.extend_from_slice(&r.index.1.to_le_bytes());
        }
        DIRWALK_CACHE.write(path, &out)
    }
}

/// Everything outside the worktree that decides what the walk reports: if any of it
/// changes, no record of the cache is used.
pub(super) fn cache_key(ctx: &ScanContext, workdir: &Path) -> u64 {
    let mut h = Digest::default();
    h.bytes(CACHE_HEADER.as_bytes());
    h.bytes(workdir.as_os_str().as_encoded_bytes());
    let config = ctx.repo().config_snapshot();
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
    let mut sources = vec![ctx.common_dir().join("info").join("exclude")];
    sources.extend(global_files(ctx, "core.excludesFile", "ignore"));
    for source in sources {
        h.bytes(source.as_os_str().as_encoded_bytes());
        h.bytes(source_stamp(&source).as_bytes());
    }
    h.finish()
}

/// The files outside the worktree git reads for `setting` (`core.excludesFile`,
/// `core.attributesFile`): the configured one, and the defaults `$XDG_CONFIG_HOME/git/<name>`
/// and `~/.config/git/<name>`, whether or not they exist.
pub(crate) fn global_files(ctx: &ScanContext, setting: &str, name: &str) -> Vec<PathBuf> {
    let mut out = vec![];
    if let Some(p) = ctx
        .repo()
        .config_snapshot()
        .trusted_path(setting)
        .ok()
        .flatten()
    {
        out.push(p);
    }
    if let Some(p) = std::env::var_os("XDG_CONFIG_HOME") {
        out.push(PathBuf::from(p).join("git").join(name));
    }
    if let Some(p) = std::env::var_os("HOME") {
        out.push(PathBuf::from(p).join(".config").join("git").join(name));
    }
    out
}

/// `source`, a file outside the worktree, as a key made now records it: the stat data of
/// what git reads (through a symlink, as dotfile managers make them), or why there is none.
/// A file changed moments ago might change again unseen: it gets a value no later key
/// repeats, so whatever relies on the key is not used next time.
pub(crate) fn source_stamp(source: &Path) -> String {
    let now = SystemTime::now();
    match std::fs::metadata(source) {
        Ok(md) => match StatData::from_metadata(&md) {
            Some(s) if s.is_racy(now - RACY_MARGIN) => format!(
                "racy {}",
                now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos())
            ),
            Some(s) => s.encode(),
            // No stat data on this platform: only a key that never matches is safe.
            None => format!("unknown {:?}", now),
        },
        Err(e) => format!("- {:?}", e.kind()),
    }
}
