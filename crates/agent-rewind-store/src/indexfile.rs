//! The index file format as the user's index needs it after a checkout into their worktree
//! (rewind, undo): the entries of exactly a tree, as `git read-tree --reset <tree>` makes
//! them, encoded in-process instead of by two git processes that each read and write the
//! whole index. Free functions over gix's index types and paths; the `Index` facade
//! (`index.rs`) reads the old index and the trees, and installs the bytes.
//!
//! What git does and we do the same way:
//! - the entries are the tree's: the old index edited by the difference between the tree it
//!   held at the backup and the target (or, failing that, read from the whole tree); an entry
//!   whose path, object id and mode did not change keeps the old entry's stat data (and
//!   assume-valid bit), unless it was racily clean in the old index (then it gets none, and
//!   git's next status compares its content);
//! - the files the checkout just wrote get fresh stat data, but only after their content was
//!   read back and found to be exactly what was written (as `git add --refresh` would);
//! - the cache-tree (`TREE` extension) is primed, as `read-tree` does, so the next
//!   `git commit` and our next snapshot need not rebuild it; it is computed from the entries,
//!   and its root must be the tree's id: that proves the index holds exactly the tree (an
//!   edit that fails the proof is replaced by the whole tree's entries);
//! - the file is then replaced atomically under git's `index.lock` (`indexlock`).
//!
//! An index using what gix cannot write faithfully (version 4, split index, sparse index,
//! untracked cache, fsmonitor, skip-worktree or intent-to-add entries) is left to git.
//! Must never: record an entry the tree does not hold, or give stat data to a file whose
//! content it has not seen.

use crate::checksum::digest;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_scan::TreeChange;
use gix::ObjectId;
use gix::bstr::{BStr, ByteSlice};
use gix::index::entry::{Flags, Mode, Stat};
use gix::index::extension::Tree as CacheTree;
use gix::objs::tree::EntryKind;
use std::collections::HashMap;
use std::path::Path;

/// A file the checkout just wrote into the worktree (`Store::apply_changes`).
#[derive(Debug, Clone)]
pub struct WrittenFile {
    pub path: gix::bstr::BString,
    /// The blob (or symlink target) it was written from.
    pub id: ObjectId,
    /// The hash of the bytes put on disk (after filters), or of the symlink's target: what a
    /// later read must find for the file to count as unchanged since.
    pub digest: ObjectId,
    pub symlink: bool,
}

/// `old` (believed to hold the tree `changes` start from) with the entries at the changed
/// paths replaced; the others keep their stat data unless racily clean. Returns the new
/// entries and how many kept their stat data; `None` when `old` has an entry that cannot be
/// kept as it is (a conflict stage) or a change is a tree.
pub(crate) fn edited_entries(
    old: &gix::index::State,
    changes: &[TreeChange],
    options: gix::index::entry::stat::Options,
) -> Option<(gix::index::State, usize)> {
    let entries = old.entries();
    let mut new = gix::index::State::new(old.object_hash());
    let (mut o, mut kept) = (0, 0);
    for c in changes.iter().map(Some).chain([None]) {
        // The old entries before this change (all of the rest after the last one).
        while let Some(e) = entries.get(o) {
            let path = e.path(old);
            if c.is_some_and(|c| path.as_bytes() >= c.path.as_bytes()) {
                break;
            }
            if e.stage_raw() != 0 {
                return None;
            }
            let carried = carried_over(e, old, options);
            kept += usize::from(carried.is_some());
            let (stat, flags) = carried.unwrap_or((Stat::default(), Flags::empty()));
            new.dangerously_push_entry(stat, e.id, flags, e.mode, path);
            o += 1;
        }
        let Some(c) = c else { break };
        // The change replaces or removes the old entries at its path.
        while entries
            .get(o)
            .is_some_and(|e| e.path(old).as_bytes() == c.path.as_bytes())
        {
            o += 1;
        }
        if let Some((id, kind)) = c.new {
            let mode = match kind {
                EntryKind::Blob => Mode::FILE,
                EntryKind::BlobExecutable => Mode::FILE_EXECUTABLE,
                EntryKind::Link => Mode::SYMLINK,
                EntryKind::Commit => Mode::COMMIT,
                EntryKind::Tree => return None,
            };
            new.dangerously_push_entry(Stat::default(), id, Flags::empty(), mode, c.path.as_bstr());
        }
    }
    Some((new, kept))
}

/// Whether the index file `index` is (or is to be) split: gix reads a split index as one,
/// so this looks at `core.splitIndex` (`split_configured`) and for git's `sharedindex.*`
/// files beside it.
pub(crate) fn index_is_split(split_configured: bool, index: &Path) -> bool {
    if split_configured {
        return true;
    }
    let Some(dir) = index.parent() else {
        return true;
    };
    std::fs::read_dir(dir).map_or(true, |d| {
        d.flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("sharedindex."))
    })
}

/// Why an index must be left to git, if it must.
pub(crate) fn needs_git(old: &gix::index::State) -> Option<&'static str> {
    if old.version() == gix::index::Version::V4 {
        return Some("index version 4");
    }
    if old.link().is_some() {
        return Some("split index");
    }
    if old.is_sparse() {
        return Some("sparse index");
    }
    if old.untracked().is_some() {
        return Some("untracked cache");
    }
    if old.fs_monitor().is_some() {
        return Some("fsmonitor");
    }
    if old.entries().iter().any(|e| {
        e.flags
            .intersects(Flags::SKIP_WORKTREE | Flags::INTENT_TO_ADD)
    }) {
        return Some("skip-worktree or intent-to-add entries");
    }
    None
}

/// Give each entry of `new` whose path, id and mode are those of a stage-0 entry of `old`
/// that entry's stat data and assume-valid bit, unless it was racily clean. Returns how many.
pub(crate) fn keep_unchanged_stat(
    old: &gix::index::State,
    new: &mut gix::index::State,
    options: gix::index::entry::stat::Options,
) -> usize {
    let old_entries = old.entries();
    let mut o = 0;
    let mut kept = 0;
    for (entry, path) in new.entries_mut_with_paths() {
        while o < old_entries.len() && old_entries[o].path(old).as_bytes() < path.as_bytes() {
            o += 1;
        }
        let Some(before) = old_entries.get(o) else {
            break;
        };
        if before.path(old) == path
            && before.stage_raw() == 0
            && before.id == entry.id
            && before.mode == entry.mode
            && let Some((stat, flags)) = carried_over(before, old, options)
        {
            entry.stat = stat;
            entry.flags |= flags;
            kept += 1;
        }
    }
    kept
}

/// What an unchanged entry of the old index passes on to the new one: its stat data and
/// assume-valid bit, unless it was racily clean (changed at or after the old index was
/// written), when git's next status must compare its content instead.
fn carried_over(
    before: &gix::index::Entry,
    old: &gix::index::State,
    options: gix::index::entry::stat::Options,
) -> Option<(Stat, Flags)> {
    (!before.stat.is_racy(old.timestamp(), options))
        .then(|| (before.stat, before.flags & Flags::ASSUME_VALID))
}

/// Whether the file mode bits and symlinks count (`core.fileMode`, `core.symlinks`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FsChecks {
    pub(crate) executable_bit: bool,
    pub(crate) symlinks: bool,
}

/// Give fresh stat data to the entries of `new` for files just written from the entry's
/// own object, when the file is still of the entry's type and holds what was written. The
/// stat is taken before the content is read, so a change after it shows as a stat change.
pub(crate) fn refresh_written(
    new: &mut gix::index::State,
    workdir: &Path,
    written: &[WrittenFile],
    fs: FsChecks,
) -> usize {
    let by_path: HashMap<&[u8], &WrittenFile> =
        written.iter().map(|w| (w.path.as_bytes(), w)).collect();
    let hash = new.object_hash();
    let mut refreshed = 0;
    for (entry, path) in new.entries_mut_with_paths() {
        let Some(w) = by_path.get(path.as_bytes()) else {
            continue;
        };
        if w.id != entry.id {
            continue;
        }
        if let Some(stat) = stat_if_as_written(workdir, path, entry.mode, w, hash, fs) {
            entry.stat = stat;
            refreshed += 1;
        }
    }
    refreshed
}

fn stat_if_as_written(
    workdir: &Path,
    path: &BStr,
    mode: Mode,
    w: &WrittenFile,
    hash: gix::hash::Kind,
    fs: FsChecks,
) -> Option<Stat> {
    let full = workdir.join(gix::path::from_bstr(path).ok()?);
    let md = gix::index::fs::Metadata::from_path_no_follow(&full).ok()?;
    let content = if mode == Mode::SYMLINK && fs.symlinks {
        if !md.is_symlink() || !w.symlink {
            return None;
        }
        gix::path::os_str_into_bstr(std::fs::read_link(&full).ok()?.as_os_str())
            .ok()?
            .to_vec()
    } else if mode == Mode::FILE || mode == Mode::FILE_EXECUTABLE || mode == Mode::SYMLINK {
        if !md.is_file() || w.symlink {
            return None;
        }
        if fs.executable_bit && mode != Mode::SYMLINK {
            let exec = md.is_executable();
            if exec != (mode == Mode::FILE_EXECUTABLE) {
                return None;
            }
        }
        std::fs::read(&full).ok()?
    } else {
        return None;
    };
    (digest(hash, &content).ok()? == w.digest)
        .then(|| Stat::from_fs(&md).ok())
        .flatten()
}

/// The cache-tree of an index of stage-0 entries, sorted: the tree each folder makes, how
/// many entries are below it, and its subfolders (in git's order: shorter names first).
/// `None` when an entry cannot be part of a tree.
pub(crate) fn cache_tree_of(state: &gix::index::State, hash: gix::hash::Kind) -> Option<CacheTree> {
    let entries = state.entries();
    let paths: Vec<&BStr> = entries.iter().map(|e| e.path(state)).collect();
    build_tree(state, &paths, 0, entries.len(), 0, b"", hash)
}

fn build_tree(
    state: &gix::index::State,
    paths: &[&BStr],
    start: usize,
    end: usize,
    prefix_len: usize,
    name: &[u8],
    hash: gix::hash::Kind,
) -> Option<CacheTree> {
    let entries = state.entries();
    let mut body = Vec::with_capacity((end - start) * 40);
    let mut children = Vec::new();
    let mut i = start;
    while i < end {
        let rel = &paths[i][prefix_len..];
        if entries[i].stage_raw() != 0 {
            return None;
        }
        if let Some(slash) = rel.find_byte(b'/') {
            let dir = &rel[..=slash];
            let mut j = i + 1;
            while j < end && paths[j][prefix_len..].starts_with(dir) {
                j += 1;
            }
            let sub = build_tree(
                state,
                paths,
                i,
                j,
                prefix_len + slash + 1,
                &rel[..slash],
                hash,
            )?;
            body.extend_from_slice(b"40000 ");
            body.extend_from_slice(&rel[..slash]);
            body.push(0);
            body.extend_from_slice(sub.id.as_bytes());
            children.push(sub);
            i = j;
        } else {
            let mode: &[u8] = match entries[i].mode {
                Mode::FILE => b"100644",
                Mode::FILE_EXECUTABLE => b"100755",
                Mode::SYMLINK => b"120000",
                Mode::COMMIT => b"160000",
                _ => return None,
            };
            body.extend_from_slice(mode);
            body.push(b' ');
            body.extend_from_slice(rel);
            body.push(0);
            body.extend_from_slice(entries[i].id.as_bytes());
            i += 1;
        }
    }
    let id = gix::objs::compute_hash(hash, gix::objs::Kind::Tree, &body).ok()?;
    children.sort_by(|a: &CacheTree, b: &CacheTree| {
        a.name.len().cmp(&b.name.len()).then(a.name.cmp(&b.name))
    });
    Some(CacheTree {
        name: name.into(),
        id,
        num_entries: Some(u32::try_from(end - start).ok()?),
        children,
    })
}

/// The index file: entries as gix writes them (version 2, or 3 when an entry needs it), the
/// cache-tree extension, and the trailing checksum.
pub(crate) fn encode(
    state: &gix::index::State,
    cache_tree: Option<&CacheTree>,
    hash: gix::hash::Kind,
) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(state.entries().len() * 96 + 64);
    state
        .write_to(
            &mut out,
            gix::index::write::Options {
                extensions: gix::index::write::Extensions::None,
                skip_hash: false,
            },
        )
        .map_err(|e| Error::other(format!("cannot encode the index: {e}")))?;
    if let Some(tree) = cache_tree {
        tree.write_to(&mut out)
            .map_err(|e| Error::other(format!("cannot encode the cache-tree: {e}")))?;
    }
    let sum = digest(hash, &out)?;
    out.extend_from_slice(sum.as_bytes());
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::process::Command;

    /// `git <args>` in `dir` with no system or user config; its standard output.
    pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .current_dir(dir)
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    pub(crate) fn oid(hex: &str) -> ObjectId {
        ObjectId::from_hex(hex.trim().as_bytes()).unwrap()
    }

    #[test]
    fn the_cache_tree_of_an_index_reproduces_its_tree() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        git(d, &["init", "-q", "-b", "main"]);
        for p in [
            "a-b", "a.c", "a/x", "a/b/c/d", "ab/y", "b", "c/a-b", "c/a/z",
        ] {
            let f = d.join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(&f, p).unwrap();
        }
        git(d, &["add", "-A"]);
        let tree = oid(&git(d, &["write-tree"]));
        let repo = gix::open(d).unwrap();
        let index = repo.index_from_tree(&tree).unwrap();
        let cache = cache_tree_of(&index, repo.object_hash()).unwrap();
        assert_eq!(cache.id, tree);
        assert_eq!(cache.num_entries, Some(8));
        let names: Vec<String> = cache
            .children
            .iter()
            .map(|c| String::from_utf8_lossy(&c.name).into_owned())
            .collect();
        assert_eq!(names, ["a", "c", "ab"], "git's order: shorter names first");
        let a = &cache.children[0];
        assert_eq!(a.num_entries, Some(2));
        assert_eq!(a.id, oid(&git(d, &["rev-parse", &format!("{tree}:a")])));
    }
}
