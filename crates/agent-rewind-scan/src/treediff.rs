//! Comparing two trees: the paths that differ, without reading identical subtrees, or
//! `None` past a limit. The monitored snapshot asks it what git changed between two
//! checkpoints; the store's `Objects` hands it out to the layers above. It reads objects
//! and writes nothing.

use crate::gixerror::from_gix;
use agent_rewind_core::error::{Error, Result};
use gix::ObjectId;
use gix::bstr::BString;

/// How a path differs between two trees; serialized and shown as git's status letter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum ChangeKind {
    #[serde(rename = "A")]
    Added,
    #[serde(rename = "D")]
    Deleted,
    #[serde(rename = "M")]
    Modified,
    /// The kind of entry changed (e.g. file ↔ symlink).
    #[serde(rename = "T")]
    TypeChanged,
}

impl ChangeKind {
    /// git's status letter.
    pub fn letter(self) -> char {
        match self {
            ChangeKind::Added => 'A',
            ChangeKind::Deleted => 'D',
            ChangeKind::Modified => 'M',
            ChangeKind::TypeChanged => 'T',
        }
    }

    /// The change between two entries of a path, as git says it: an executable bit flipped
    /// is a modification, a file that became a symlink (or a submodule) a type change.
    pub fn between(old: gix::objs::tree::EntryKind, new: gix::objs::tree::EntryKind) -> Self {
        if same_type(old, new) {
            ChangeKind::Modified
        } else {
            ChangeKind::TypeChanged
        }
    }
}

impl std::fmt::Display for ChangeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.letter())
    }
}

/// One path that differs between two trees (directories are not listed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeChange {
    /// The path as bytes (`/`-separated), as git stores it.
    pub path: BString,
    pub change: ChangeKind,
    pub old: Option<(ObjectId, gix::objs::tree::EntryKind)>,
    pub new: Option<(ObjectId, gix::objs::tree::EntryKind)>,
}

/// Whether two entry kinds are the same type of object for git's status letters (a regular
/// file with or without its executable bit is one type).
fn same_type(a: gix::objs::tree::EntryKind, b: gix::objs::tree::EntryKind) -> bool {
    use gix::objs::tree::EntryKind::{Blob, BlobExecutable};
    a == b || matches!((a, b), (Blob, BlobExecutable) | (BlobExecutable, Blob))
}

/// The paths that differ between two trees of `repo`, sorted, or `None` as soon as more
/// than `limit` entries that are not trees differ (the rest is not read). Identical
/// subtrees are skipped without being read.
///
/// gix's plumbing tree diff, not `Repository::diff_tree_to_tree`: that one first builds a
/// blob-diff resource cache, whose attribute stack reads the whole index (30 ms of a
/// `show` on 30k files) for a result that never looks at a blob.
pub fn diff_trees_at_most(
    repo: &gix::Repository,
    from: ObjectId,
    to: ObjectId,
    limit: usize,
) -> Result<Option<Vec<TreeChange>>> {
    use gix::diff::tree::recorder::Change as C;
    let old = repo.find_tree(from).map_err(from_gix)?;
    let new = repo.find_tree(to).map_err(from_gix)?;
    let mut rec = AtMost {
        inner: gix::diff::tree::Recorder::default(),
        files: 0,
        limit,
    };
    match gix::diff::tree(
        gix::objs::TreeRefIter::from_bytes(&old.data, old.id.kind()),
        gix::objs::TreeRefIter::from_bytes(&new.data, new.id.kind()),
        gix::diff::tree::State::default(),
        &repo.objects,
        &mut rec,
    ) {
        Ok(()) => {}
        Err(gix::diff::tree::Error::Cancelled) => return Ok(None),
        Err(e) => {
            return Err(Error::git(format!(
                "cannot compare trees {from} and {to}: {e}"
            )));
        }
    }
    let mut out = vec![];
    for c in rec.inner.records {
        let tc = match c {
            C::Addition {
                path,
                entry_mode,
                oid,
                ..
            } if !entry_mode.is_tree() => TreeChange {
                path,
                change: ChangeKind::Added,
                old: None,
                new: Some((oid, entry_mode.kind())),
            },
            C::Deletion {
                path,
                entry_mode,
                oid,
                ..
            } if !entry_mode.is_tree() => TreeChange {
                path,
                change: ChangeKind::Deleted,
                old: Some((oid, entry_mode.kind())),
                new: None,
            },
            C::Modification {
                path,
                previous_entry_mode,
                previous_oid,
                entry_mode,
                oid,
            } => {
                match (previous_entry_mode.is_tree(), entry_mode.is_tree()) {
                    (true, true) => continue,
                    (false, false) => TreeChange {
                        path,
                        change: ChangeKind::between(previous_entry_mode.kind(), entry_mode.kind()),
                        old: Some((previous_oid, previous_entry_mode.kind())),
                        new: Some((oid, entry_mode.kind())),
                    },
                    // A file became a directory or back: the file side is what changed.
                    (true, false) => TreeChange {
                        path,
                        change: ChangeKind::Added,
                        old: None,
                        new: Some((oid, entry_mode.kind())),
                    },
                    (false, true) => TreeChange {
                        path,
                        change: ChangeKind::Deleted,
                        old: Some((previous_oid, previous_entry_mode.kind())),
                        new: None,
                    },
                }
            }
            _ => continue,
        };
        out.push(tc);
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Some(out))
}

/// gix's recorder of a tree diff, cancelling it past `limit` changed entries that are not
/// trees.
struct AtMost {
    inner: gix::diff::tree::Recorder,
    files: usize,
    limit: usize,
}

impl gix::diff::tree::Visit for AtMost {
    fn pop_front_tracked_path_and_set_current(&mut self) {
        self.inner.pop_front_tracked_path_and_set_current();
    }
    fn push_back_tracked_path_component(&mut self, component: &gix::bstr::BStr) {
        self.inner.push_back_tracked_path_component(component);
    }
    fn push_path_component(&mut self, component: &gix::bstr::BStr) {
        self.inner.push_path_component(component);
    }
    fn pop_path_component(&mut self) {
        self.inner.pop_path_component();
    }
    fn visit(&mut self, change: gix::diff::tree::visit::Change) -> gix::diff::tree::visit::Action {
        use gix::diff::tree::visit::Change as C;
        let file = match &change {
            C::Addition { entry_mode, .. } | C::Deletion { entry_mode, .. } => {
                !entry_mode.is_tree()
            }
            C::Modification {
                previous_entry_mode,
                entry_mode,
                ..
            } => !previous_entry_mode.is_tree() || !entry_mode.is_tree(),
        };
        self.files += usize::from(file);
        if self.files > self.limit {
            return std::ops::ControlFlow::Break(());
        }
        self.inner.visit(change)
    }
}
