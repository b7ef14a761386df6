//! Proving index entries unchanged before gix's status pass looks at them.
//!
//! gix's index-vs-worktree pass `lstat`s every entry by its full path, so the kernel walks
//! every leading directory again for every file; on a large worktree that walk is most of a
//! snapshot's time. Here each directory is opened once (relative to its parent, refusing
//! symlinks) and its files are `stat`ed relative to it, on a few threads. An entry whose stat
//! data still matches the index, whose mode did not change and that is not racily clean is
//! marked `UPTODATE` in our in-memory copy of the index, which gix's pass then skips.
//!
//! It only ever proves "unchanged", with gix's own comparisons (`Stat::matches`,
//! `Stat::is_racy`, `Mode::change_to_match_fs_with_values`) and the repository's stat options;
//! every doubt (a stat error, a symlinked or missing directory, a conflict, intent-to-add,
//! skip-worktree, a submodule) leaves the entry to gix. It never writes the user's index
//! (the flags live in memory only) and never touches a file.
//!
//! One of the scanner's sources (`scan::snapshot::scan`). Fallback: gix's status looks at every
//! entry (what happens for each entry it leaves unproven, and for all of them when
//! [`Settings::new`] gives `None`). Kill switch: none in the configuration (it is off on
//! platforms other than unix); the repository's stat settings (`core.checkStat`,
//! `core.trustCtime`, `core.fileMode`, `core.symlinks`) decide what it proves.

use gix::index::entry::Flags;
#[cfg(unix)]
use gix::index::entry::{Mode, Stat};
use std::path::Path;

/// What the checks need from the repository's configuration and the index file (read by
/// the unix checks only; elsewhere no entry is proven).
#[cfg_attr(not(unix), allow(dead_code))]
pub struct Settings {
    stat: gix::index::entry::stat::Options,
    symlinks: bool,
    executable_bit: bool,
    /// The index file's mtime (seconds, nanoseconds): entries changed at or after it are
    /// racily clean.
    timestamp: (i64, u32),
}

impl Settings {
    /// `None` when the configuration cannot be read or the platform is not supported: then
    /// no entry is marked and gix looks at all of them.
    pub fn new(repo: &gix::Repository, index: &gix::index::State) -> Option<Settings> {
        if !cfg!(unix) {
            return None;
        }
        let fs = repo.filesystem_options().ok()?;
        Some(Settings {
            stat: repo.stat_options().ok()?,
            symlinks: fs.symlink,
            executable_bit: fs.executable_bit,
            timestamp: (
                index.timestamp().unix_seconds(),
                index.timestamp().nanoseconds(),
            ),
        })
    }
}

/// For each entry of `index`, whether it provably did not change in the worktree at
/// `workdir`. Entries `known[i]` already proved unchanged (the filesystem monitor,
/// `scan::fsmonitor`) are not looked at again. Read-only: runs beside other readers of the
/// index.
pub fn unchanged_entries(
    index: &gix::index::State,
    workdir: &Path,
    settings: &Settings,
    known: Option<&[bool]>,
) -> Vec<bool> {
    let known = known.filter(|k| k.len() == index.entries().len());
    imp::unchanged_entries(index, workdir, settings, known)
}

/// Mark the entries `unchanged_entries` proved unchanged as `UPTODATE` (in memory only).
/// Returns how many were marked.
pub fn mark_uptodate(index: &mut gix::index::State, unchanged: &[bool]) -> usize {
    if unchanged.len() != index.entries().len() {
        return 0;
    }
    let mut marked = 0;
    for (entry, yes) in index.entries_mut().iter_mut().zip(unchanged) {
        if *yes {
            entry.flags.insert(Flags::UPTODATE);
            marked += 1;
        }
    }
    marked
}

#[cfg(not(unix))]
mod imp {
    pub fn unchanged_entries(
        index: &gix::index::State,
        _workdir: &std::path::Path,
        _settings: &super::Settings,
        known: Option<&[bool]>,
    ) -> Vec<bool> {
        known.map_or_else(|| vec![false; index.entries().len()], <[bool]>::to_vec)
    }
}

#[cfg(unix)]
mod imp {
    use super::*;
    use gix::bstr::ByteSlice;
    use rustix::fd::OwnedFd;
    use rustix::fs::{AtFlags, FileType, OFlags};

    /// Below this many entries one thread is fastest (thread start-up costs more).
    const ENTRIES_PER_THREAD: usize = 4000;

    pub fn unchanged_entries(
        index: &gix::index::State,
        workdir: &Path,
        settings: &Settings,
        known: Option<&[bool]>,
    ) -> Vec<bool> {
        let entries = index.entries();
        let to_check = known.map_or(entries.len(), |k| k.iter().filter(|y| !**y).count());
        let wanted = to_check / ENTRIES_PER_THREAD;
        let threads = if wanted < 2 {
            1
        } else {
            let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
            wanted.min(cores).min(8)
        };
        let all_unknown = vec![false; entries.len()];
        let known = known.unwrap_or(&all_unknown);
        if threads == 1 {
            return check_entries(index, entries, known, workdir, settings);
        }
        let chunk = entries.len().div_ceil(threads);
        let verdicts: Vec<Vec<bool>> = std::thread::scope(|scope| {
            let handles: Vec<_> = entries
                .chunks(chunk)
                .zip(known.chunks(chunk))
                .map(|(part, known)| {
                    scope.spawn(move || check_entries(index, part, known, workdir, settings))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        });
        let out: Vec<bool> = verdicts.into_iter().flatten().collect();
        if out.len() == entries.len() {
            out
        } else {
            vec![false; entries.len()]
        }
    }

    /// The verdict for each entry of `part`: `true` when it provably did not change (or
    /// `known` says so already).
    fn check_entries(
        state: &gix::index::State,
        part: &[gix::index::Entry],
        known: &[bool],
        workdir: &Path,
        settings: &Settings,
    ) -> Vec<bool> {
        let mut out = Vec::with_capacity(part.len());
        let Ok(root) = rustix::fs::open(
            workdir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        ) else {
            return vec![false; part.len()];
        };
        let mut dirs = DirStack::new(root);
        for (entry, known) in part.iter().zip(known) {
            if *known {
                out.push(true);
                continue;
            }
            let path = entry.path(state);
            let (dir, name) = match path.rfind_byte(b'/') {
                Some(i) => (&path[..i], &path[i + 1..]),
                None => (&path[..0], path),
            };
            out.push(
                dirs.open(dir)
                    .is_some_and(|fd| is_unchanged(entry, fd, name, settings)),
            );
        }
        out
    }

    // `st_mode` is `u16` on some platforms: the casts are not redundant everywhere.
    #[allow(clippy::unnecessary_cast)]
    fn is_unchanged(
        entry: &gix::index::Entry,
        dir: &OwnedFd,
        name: &[u8],
        settings: &Settings,
    ) -> bool {
        if entry.stage_raw() != 0
            || entry.flags.intersects(
                Flags::SKIP_WORKTREE
                    | Flags::ASSUME_VALID
                    | Flags::INTENT_TO_ADD
                    | Flags::UPTODATE
                    | Flags::FSMONITOR_VALID,
            )
            || !matches!(
                entry.mode,
                Mode::FILE | Mode::FILE_EXECUTABLE | Mode::SYMLINK
            )
        {
            return false;
        }
        let Ok(st) = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) else {
            return false;
        };
        let kind = FileType::from_raw_mode(st.st_mode as _);
        let is_file = kind == FileType::RegularFile;
        let mode_change = entry.mode.change_to_match_fs_with_values(
            is_file,
            kind == FileType::Directory,
            kind == FileType::Symlink,
            is_file && (st.st_mode as u32) & 0o100 != 0,
            settings.symlinks,
            settings.executable_bit,
        );
        if mode_change.is_some() {
            return false;
        }
        // As gix_index::entry::Stat::from_fs: truncated to 32 bits, as git does.
        let new_stat = Stat {
            mtime: gix::index::entry::stat::Time {
                secs: st.st_mtime as u32,
                nsecs: st.st_mtime_nsec as u32,
            },
            ctime: gix::index::entry::stat::Time {
                secs: st.st_ctime as u32,
                nsecs: st.st_ctime_nsec as u32,
            },
            dev: st.st_dev as u32,
            ino: st.st_ino as u32,
            uid: st.st_uid,
            gid: st.st_gid,
            size: st.st_size as u32,
        };
        new_stat.matches(&entry.stat, settings.stat)
            && (!entry.id.is_empty_blob() || entry.stat.size == 0)
            && !is_racy(&new_stat, settings)
    }

    /// As `gix_index::entry::Stat::is_racy` against the index file's mtime.
    fn is_racy(stat: &Stat, settings: &Settings) -> bool {
        let (secs, nanos) = settings.timestamp;
        match secs.cmp(&i64::from(stat.mtime.secs)) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Equal if settings.stat.use_nsec && settings.stat.check_stat => {
                nanos <= stat.mtime.nsecs
            }
            std::cmp::Ordering::Equal => true,
            std::cmp::Ordering::Greater => false,
        }
    }

    /// Open directories along the current path, each relative to its parent and never
    /// through a symlink; entries come sorted, so each directory is opened about once.
    struct DirStack {
        root: OwnedFd,
        /// (component, its fd or `None` when it could not be opened safely).
        open: Vec<(Vec<u8>, Option<OwnedFd>)>,
    }

    impl DirStack {
        fn new(root: OwnedFd) -> Self {
            DirStack { root, open: vec![] }
        }

        /// The fd of `dir` (`""` is the root), or `None` when it cannot be trusted.
        fn open(&mut self, dir: &[u8]) -> Option<&OwnedFd> {
            let components: Vec<&[u8]> = if dir.is_empty() {
                vec![]
            } else {
                dir.split(|b| *b == b'/').collect()
            };
            let common = self
                .open
                .iter()
                .zip(&components)
                .take_while(|((name, _), c)| name.as_slice() == **c)
                .count();
            self.open.truncate(common);
            for c in &components[common..] {
                let parent = match self.open.last() {
                    None => Some(&self.root),
                    Some((_, fd)) => fd.as_ref(),
                };
                let fd = parent.and_then(|p| {
                    rustix::fs::openat(
                        p,
                        *c,
                        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                        rustix::fs::Mode::empty(),
                    )
                    .ok()
                });
                self.open.push((c.to_vec(), fd));
            }
            match self.open.last() {
                None => Some(&self.root),
                Some((_, fd)) => fd.as_ref(),
            }
        }
    }
}
