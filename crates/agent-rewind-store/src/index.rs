//! The `Index` facade: the user's index, read, saved and written as git would (under
//! git's `index.lock`; reset by `git read-tree`). Its methods are all here; the index
//! writer and the lock protocol are `userindex` and `indexlock`, the saved copy `savedindex`.

use crate::repository::Store;
use crate::savedindex::IndexFile;
use crate::userindex::WrittenFile;
use agent_rewind_core::error::Result;
use gix::ObjectId;

/// Above this many written files, `reset_user_index` refreshes the whole index instead of
/// naming them (measured on 30k entries: 100 named paths cost about one full refresh).
const REFRESH_PATHS_LIMIT: usize = 64;

/// The store's the user's index: read, saved, written under git's lock.
#[derive(Clone, Copy)]
pub struct Index<'s> {
    pub(crate) store: &'s Store,
}

impl Index<'_> {
    /// Make the user's index hold `tree` (emptied for `None`), as `git read-tree --reset`
    /// does: entries that did not change keep their stat data. Only `refresh` (files just
    /// written whose content is what `tree` holds) get fresh stat data (`git add --refresh`),
    /// instead of git's refresh of every entry (a full `lstat` pass); a changed file left
    /// out is only re-hashed by git's next status.
    pub fn reset_user_index(&self, tree: Option<gix::ObjectId>, refresh: &[&[u8]]) -> Result<()> {
        let Some(tree) = tree else {
            self.store.git(&["read-tree", "--empty"])?;
            return Ok(());
        };
        self.store
            .git(&["read-tree", "--reset", &tree.to_string()])?;
        if refresh.is_empty() {
            return Ok(());
        }
        // git matches every entry against every pathspec: past a few dozen paths one full
        // refresh (an lstat per entry) is cheaper.
        if refresh.len() > REFRESH_PATHS_LIMIT {
            // `--refresh` exits non-zero when files differ from the index: that is expected.
            let _ = self.store.git_output_in(
                self.store.worktree().root()?,
                &["update-index", "-q", "--refresh"],
            )?;
            return Ok(());
        }
        let mut paths = Vec::new();
        for p in refresh {
            paths.extend_from_slice(p);
            paths.push(0);
        }
        // Literal: a path is a name, never a glob or `:(magic)`.
        let args = [
            "--literal-pathspecs",
            "add",
            "--refresh",
            "--pathspec-from-file=-",
            "--pathspec-file-nul",
        ];
        // Best effort: the index is already right; without fresh stat data git only
        // re-hashes those files on its next status (a file removed meanwhile fails this).
        let _ = self
            .store
            .git_with_input(self.store.worktree().root()?, &args, &paths);
        Ok(())
    }

    /// Paths with unmerged (conflicted) entries in the user's index.
    pub fn unmerged_paths(&self) -> Result<Vec<String>> {
        let index = self.store.read_user_index()?;
        let mut out: Vec<String> = index
            .entries()
            .iter()
            .filter(|e| e.stage_raw() != 0)
            .map(|e| e.path(&index).to_string())
            .collect();
        out.dedup();
        Ok(out)
    }

    /// How many entries the user's index holds, from its header alone (`None`: no index).
    pub fn index_entry_count(&self) -> Option<u32> {
        agent_rewind_scan::index_entry_count(&self.store.repo.index_path())
    }

    /// Whether git's `index.lock` is held in this worktree. One left by a rewind of ours that
    /// was killed while holding it is removed first.
    pub fn user_index_locked(&self) -> bool {
        crate::indexlock::user_index_locked(self.store)
    }

    /// The paths of the user's index marked skip-worktree, with the object each records:
    /// git leaves such a file on disk as it is, whatever a checkout writes around it.
    pub fn skip_worktree_entries(&self) -> Result<Vec<(gix::bstr::BString, ObjectId)>> {
        crate::savedindex::skip_worktree_entries(self.store)
    }

    /// The user's index file as it is now (`None` when there is none).
    pub fn user_index_file(&self) -> Result<Option<IndexFile>> {
        crate::savedindex::user_index_file(self.store)
    }

    /// Put `saved` back as the user's index when its entries (leaving out intent-to-add
    /// ones, which no tree holds) are exactly `tree`'s. Returns whether it did; when not
    /// (the file is damaged, split, sparse or of another index), nothing is written.
    pub fn reinstall_user_index(&self, saved: &IndexFile, tree: ObjectId) -> Result<bool> {
        crate::savedindex::reinstall_user_index(self.store, saved, tree)
    }

    /// Make the user's index hold `tree` (emptied for `None`); `written` are the files just
    /// written into the worktree (their entries get fresh stat data when their content is
    /// still what was written and what `tree` holds). `base` is the tree the index held when
    /// it was captured, if known: then only the entries that differ between `base` and `tree`
    /// are replaced instead of reading all of `tree`.
    pub fn set_user_index(
        &self,
        tree: Option<ObjectId>,
        base: Option<ObjectId>,
        written: &[WrittenFile],
    ) -> Result<()> {
        crate::userindex::set_user_index(self.store, tree, base, written)
    }
}
