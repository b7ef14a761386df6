//! The `Index` facade: the user's index, read, saved and written as git would (under
//! git's `index.lock`; reset by `git read-tree`). Its methods are all here; the index
//! file's format is `indexfile`, the lock protocol `indexlock`, the saved copy `savedindex`.

use crate::indexfile::{self, FsChecks, WrittenFile};
use crate::repository::Store;
use crate::savedindex::IndexFile;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_scan::gixerror::from_gix;
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
        crate::indexlock::index_locked(
            &self.store.repo.index_path(),
            &self.store.private().tmp_dir(),
        )
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
        let Some(tree) = tree else {
            return self.reset_user_index(None, &[]);
        };
        let old = self.store.read_user_index()?;
        if let Some(reason) = self.left_to_git(&old) {
            agent_rewind_core::trace::mark(&format!("index: left to git ({reason})"));
            let mut refresh = Vec::new();
            for w in written {
                if self.store.objects().path_in_tree(tree, &w.path)? == Some(w.id) {
                    refresh.push(w.path.as_slice());
                }
            }
            return self.reset_user_index(Some(tree), &refresh);
        }
        agent_rewind_core::trace::mark("index: old read");
        let repo = &self.store.repo;
        let stat_options = repo.stat_options().map_err(from_gix)?;
        let hash = self.store.objects().object_hash();
        // The index must hash to `tree`: its cache-tree is computed from the entries and
        // compared. An edit of the old index that does not (the index changed since it was
        // captured) is thrown away for an index read from the whole tree.
        let edited = match base {
            Some(base) => {
                let changes = self.store.objects().diff_trees(base, tree)?;
                self.store.worktree().check_checkout_paths(&changes)?;
                indexfile::edited_entries(&old, &changes, stat_options)
            }
            None => None,
        };
        let (mut new, kept, cache_tree) = match edited.and_then(|(new, kept)| {
            let cache_tree = indexfile::cache_tree_of(&new, hash).filter(|t| t.id == tree)?;
            Some((new, kept, Some(cache_tree)))
        }) {
            Some(done) => done,
            None => {
                let mut new = repo.index_from_tree(&tree).map_err(|e| {
                    Error::other(format!(
                        "cannot make an index of tree {tree}: {}",
                        agent_rewind_core::error::one_line(&e.to_string())
                    ))
                })?;
                let kept = indexfile::keep_unchanged_stat(&old, &mut new, stat_options);
                let cache_tree = indexfile::cache_tree_of(&new, hash).filter(|t| t.id == tree);
                if cache_tree.is_none() {
                    agent_rewind_core::trace::mark(
                        "index: the cache-tree does not reproduce the tree",
                    );
                }
                (new.into_parts().0, kept, cache_tree)
            }
        };
        let fs = repo.filesystem_options().map_err(from_gix)?;
        let fs = FsChecks {
            executable_bit: fs.executable_bit,
            symlinks: fs.symlink,
        };
        let root = self.store.worktree().root()?;
        let refreshed = indexfile::refresh_written(&mut new, root, written, fs);
        let bytes = indexfile::encode(&new, cache_tree.as_ref(), hash)?;
        agent_rewind_core::trace::mark(&format!(
            "index: built ({} entries, {kept} kept their stat data, {refreshed} refreshed)",
            new.entries().len()
        ));
        crate::indexlock::install_index(
            &repo.index_path(),
            &self.store.private().tmp_dir(),
            &bytes,
            None,
        )
    }

    /// Why the user's index `old` must be rewritten by git instead of in-process, if it must:
    /// what gix cannot write faithfully, or `agentRewind.inProcessIndex` turned off.
    fn left_to_git(&self, old: &gix::index::State) -> Option<&'static str> {
        let config = self.store.repo.config_snapshot();
        let in_process = config.boolean("agentRewind.inProcessIndex").unwrap_or(true);
        let split = config.boolean("core.splitIndex").unwrap_or(false);
        indexfile::needs_git(old)
            .or_else(|| {
                indexfile::index_is_split(split, &self.store.repo.index_path())
                    .then_some("split index")
            })
            .or((!in_process).then_some("turned off"))
    }
}

#[cfg(test)]
mod tests {
    use crate::checksum::digest;
    use crate::indexfile::WrittenFile;
    use crate::indexfile::tests::{git, oid};
    use crate::repository::{OpenFor, Store};
    use std::process::Command;

    /// A file changed after the checkout wrote it (and given an old mtime, so the index
    /// cannot call it racy) must not get fresh stat data: git would then think it unchanged.
    /// Both ways of building the index: editing the old one, and reading the whole tree.
    #[test]
    fn a_file_changed_after_it_was_written_gets_no_fresh_stat_data() {
        for edit_old_index in [true, false] {
            changed_after_written(edit_old_index);
        }
    }

    fn changed_after_written(edit_old_index: bool) {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        git(d, &["init", "-q", "-b", "main"]);
        std::fs::write(d.join("changed.txt"), "one\n").unwrap();
        std::fs::write(d.join("kept.txt"), "two\n").unwrap();
        git(d, &["add", "-A"]);
        git(
            d,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                "c",
            ],
        );
        let tree = oid(&git(d, &["rev-parse", "HEAD^{tree}"]));
        let store = Store::discover(d, OpenFor::Work).unwrap();
        let hash = store.objects().object_hash();
        let written = |path: &str, bytes: &[u8]| WrittenFile {
            path: path.into(),
            id: oid(&git(d, &["rev-parse", &format!("HEAD:{path}")])),
            digest: digest(hash, bytes).unwrap(),
            symlink: false,
        };
        // As the checkout left them: both rewritten; then someone changes one (same size),
        // with an mtime far enough in the past to be trusted.
        std::fs::write(d.join("changed.txt"), "one\n").unwrap();
        std::fs::write(d.join("kept.txt"), "two\n").unwrap();
        std::fs::write(d.join("changed.txt"), "ONE\n").unwrap();
        for f in ["changed.txt", "kept.txt"] {
            let out = Command::new("touch")
                .args(["-d", "@1700000000"])
                .arg(d.join(f))
                .status()
                .unwrap();
            assert!(out.success());
        }
        store
            .index()
            .set_user_index(
                Some(tree),
                edit_old_index.then_some(tree),
                &[
                    written("changed.txt", b"one\n"),
                    written("kept.txt", b"two\n"),
                ],
            )
            .unwrap();
        assert_eq!(
            git(d, &["diff-files", "--name-only"]),
            "changed.txt\n",
            "the changed file is seen as changed, the other one is trusted by its stat"
        );
        assert_eq!(git(d, &["status", "--porcelain"]), " M changed.txt\n");
        assert_eq!(git(d, &["write-tree"]).trim(), tree.to_string());
    }
}
