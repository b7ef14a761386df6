//! The full pass's tree: HEAD's tree with, in this order, what is staged, what changed in
//! the worktree, the submodules' checked-out commits and the new untracked files, minus what
//! the policy leaves out (listed with why). It decides each path as `git add -A` would; it
//! writes only objects, never the user's index, HEAD or files.

use super::newfile::{NewFile, new_file};
use super::tree::TreeEdits;
use super::{Excluded, Policy};
use crate::dirwalk::Untracked;
use crate::gixerror::from_gix;
use crate::snapshot::retry_object_write;
use agent_rewind_core::error::Result;
use gix::ObjectId;
use gix::bstr::{BStr, BString, ByteSlice};
use std::collections::HashSet;
use std::path::Path;

type WorktreeStatus = gix::status::plumbing::index_as_worktree::EntryStatus<(), ()>;

/// The tree being built and what was left out of it.
pub(super) struct Build<'r> {
    pub(super) editor: TreeEdits<'r>,
    excluded: Vec<Excluded>,
    /// Paths left out: later steps leave them alone too.
    skip: HashSet<Vec<u8>>,
}

impl<'r> Build<'r> {
    pub(super) fn new(editor: TreeEdits<'r>) -> Self {
        Build {
            editor,
            excluded: Vec::new(),
            skip: HashSet::new(),
        }
    }

    fn exclude(&mut self, path: &BStr, reason: String) {
        self.skip.insert(path.to_vec());
        self.excluded.push(Excluded {
            path: agent_rewind_core::quote::text_path(path),
            reason,
        });
    }

    /// Directories the walk could not read: left out with what is below them (tracked files
    /// there keep their index entry), as `git status` warns and goes on.
    pub(super) fn unreadable(&mut self, unreadable: &[(BString, String)]) {
        for (dir, why) in unreadable {
            self.excluded.push(Excluded {
                path: format!("{}/", agent_rewind_core::quote::text_path(dir)),
                reason: format!("directory cannot be read ({why}); left out, as git status does"),
            });
        }
    }

    /// Index vs HEAD: what is staged.
    pub(super) fn staged(
        &mut self,
        policy: &Policy,
        staged: &[gix::diff::index::Change],
    ) -> Result<()> {
        for c in staged {
            use gix::diff::index::ChangeRef as C;
            match c {
                C::Addition {
                    location,
                    entry_mode,
                    id,
                    ..
                } => {
                    if let Some(p) = policy.excluded_pattern(&location.to_str_lossy()) {
                        self.exclude(location.as_ref(), format!("matches secret pattern {p}"));
                        continue;
                    }
                    if let Some(kind) = entry_mode.to_tree_entry_mode().map(|m| m.kind()) {
                        self.editor
                            .upsert(location.as_ref(), kind, id.clone().into_owned())?;
                    }
                }
                C::Modification {
                    location,
                    entry_mode,
                    id,
                    ..
                } => {
                    if let Some(kind) = entry_mode.to_tree_entry_mode().map(|m| m.kind()) {
                        self.editor
                            .upsert(location.as_ref(), kind, id.clone().into_owned())?;
                    }
                }
                C::Deletion { location, .. } => {
                    self.editor.remove(location.as_ref())?;
                }
                C::Rewrite { .. } => {}
            }
        }
        Ok(())
    }

    /// Worktree vs index, for the tracked entries (before the untracked files: a tracked
    /// file that became a folder must be removed before the untracked files inside that
    /// folder are added, or the removal would take them with it). Paths for which
    /// `unreadable` holds (below a folder that cannot be read) keep their entry.
    pub(super) fn worktree(
        &mut self,
        worktree: Vec<(BString, WorktreeStatus)>,
        unreadable: impl Fn(&[u8]) -> bool,
        pipeline: &mut gix::filter::Pipeline<'_>,
        index: &gix::index::State,
    ) -> Result<()> {
        use gix::status::plumbing::index_as_worktree::{Change, EntryStatus};
        for (rela_path, status) in worktree {
            if self.skip.contains(rela_path.as_slice()) || unreadable(&rela_path) {
                continue;
            }
            match status {
                EntryStatus::Change(Change::Removed) => {
                    self.editor.remove(rela_path.as_bstr())?;
                }
                EntryStatus::Change(Change::Modification { .. } | Change::Type { .. })
                | EntryStatus::IntentToAdd
                | EntryStatus::Conflict { .. } => {
                    match retry_object_write(|| {
                        pipeline.worktree_file_to_object(rela_path.as_bstr(), index)
                    })
                    .map_err(from_gix)?
                    {
                        Some((id, kind, _)) => {
                            self.editor.upsert(rela_path.as_bstr(), kind, id)?;
                        }
                        None => {
                            self.editor.remove(rela_path.as_bstr())?;
                        }
                    }
                }
                _ => {} // stat-only changes, submodule changes: keep the index/HEAD entry
            }
        }
        Ok(())
    }

    /// Submodules: their current commit, as `git add -A` records it (a submodule that is not
    /// checked out keeps its entry).
    pub(super) fn submodules(&mut self, index: &gix::index::State, workdir: &Path) -> Result<()> {
        for entry in index.entries() {
            if entry.mode != gix::index::entry::Mode::COMMIT || entry.stage_raw() != 0 {
                continue;
            }
            let rela = entry.path(index);
            if self.skip.contains(rela.as_bytes()) {
                continue;
            }
            if let Some(head) =
                submodule_head(&workdir.join(agent_rewind_core::quote::rel_path(rela)))
                && head != entry.id
            {
                self.editor
                    .upsert(rela, gix::objs::tree::EntryKind::Commit, head)?;
            }
        }
        Ok(())
    }

    /// The untracked, not ignored files the walk found, unless the policy leaves them out.
    pub(super) fn untracked(
        &mut self,
        policy: &Policy,
        protect: gix::validate::path::component::Options,
        workdir: &Path,
        pipeline: &mut gix::filter::Pipeline<'_>,
        index: &gix::index::State,
        untracked: &[Untracked],
    ) -> Result<()> {
        for entry in untracked {
            if matches!(
                entry.disk_kind,
                Some(gix::dir::entry::Kind::Directory) | None
            ) {
                // An untracked directory is only reported whole when it is empty or cannot
                // be read: the latter is listed.
                let full = workdir.join(agent_rewind_core::quote::rel_path(&entry.rela_path));
                if entry.disk_kind.is_some()
                    && let Err(e) = std::fs::read_dir(&full)
                {
                    self.excluded.push(Excluded {
                        path: format!("{}/", agent_rewind_core::quote::text_path(&entry.rela_path)),
                        reason: format!(
                            "directory cannot be read ({e}); left out, as git status does"
                        ),
                    });
                }
                continue;
            }
            let rela = entry.rela_path.as_bstr();
            match new_file(policy, protect, workdir, pipeline, index, rela)? {
                NewFile::Blob(id, kind) => self.editor.upsert(rela, kind, id)?,
                NewFile::Excluded(reason) => self.exclude(rela, reason),
                NewFile::Gone => {}
            }
        }
        Ok(())
    }

    /// Write the tree: its id, and what was left out, sorted, each path once.
    pub(super) fn finish(mut self) -> Result<(ObjectId, Vec<Excluded>)> {
        let tree = self.editor.write()?;
        let mut excluded = self.excluded;
        excluded.sort_by(|a, b| a.path.cmp(&b.path));
        excluded.dedup_by(|a, b| a.path == b.path);
        Ok((tree, excluded))
    }
}

/// The commit checked out in the submodule at `dir`, if it is checked out there.
fn submodule_head(dir: &Path) -> Option<ObjectId> {
    if !dir.join(".git").exists() {
        return None;
    }
    let sub = gix::open_opts(dir, gix::open::Options::isolated()).ok()?;
    sub.head_id().ok().map(|id| id.detach())
}
