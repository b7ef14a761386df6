//! The facades of [`Store`]: a caller finds a method by what it touches, `store.refs()`,
//! `store.objects()`, `store.notes()`, `store.index()`, `store.worktree()`,
//! `store.remote()`, `store.maintenance()`, `store.locks()`, `store.config()`,
//! `store.diff()` (and `store.private()` for the
//! paths of our private files), instead of in one flat list. Each facade is a type of its
//! own that borrows the store and holds nothing else (it does not dereference to the store,
//! so a facade's method is found only on its facade); the methods live beside what they
//! touch (`refs.rs`, `objects.rs`, …). Owns no behaviour of its own.

use crate::reffiles::RefFiles;
use crate::repository::Store;
use crate::{
    config::Config, diff::Diff, index::Index, locks::Locks, maintenance::Maintenance, notes::Notes,
    objects::Objects, refs::Refs, remote::Remote, worktree::Worktree,
};
use agent_rewind_core::private::PrivatePaths;

impl Store {
    /// The refs: read and move them, with compare-and-swap.
    pub fn refs(&self) -> Refs<'_> {
        Refs { store: self }
    }
    /// The objects: blobs, trees and commits, read and written.
    pub fn objects(&self) -> Objects<'_> {
        Objects { store: self }
    }
    /// The runs' notes: read, written and merged.
    pub fn notes(&self) -> Notes<'_> {
        Notes { store: self }
    }
    /// The user's index: read, saved, written under git's lock.
    pub fn index(&self) -> Index<'_> {
        Index { store: self }
    }
    /// The user's worktree and HEAD: checked, written, linked worktrees.
    pub fn worktree(&self) -> Worktree<'_> {
        Worktree { store: self }
    }
    /// The remotes and bundles: push, fetch, local copies.
    pub fn remote(&self) -> Remote<'_> {
        Remote { store: self }
    }
    /// git's maintenance we start in the background.
    pub fn maintenance(&self) -> Maintenance<'_> {
        Maintenance { store: self }
    }
    /// Our flocks: writers, the background post-commit checkpoint.
    pub fn locks(&self) -> Locks<'_> {
        Locks { store: self }
    }
    /// The repository's configuration: read as git reads it, and the one write we make.
    pub fn config(&self) -> Config<'_> {
        Config { store: self }
    }
    /// The differences between two trees, as text.
    pub fn diff(&self) -> Diff<'_> {
        Diff { store: self }
    }
    /// The paths of our private files for this worktree.
    pub fn private(&self) -> PrivatePaths<'_> {
        PrivatePaths::of(self.repo.git_dir(), self.repo.common_dir())
    }
    /// The paths of the ref files and our lock claims, for the git-format ref writers.
    pub(crate) fn ref_files(&self) -> RefFiles {
        RefFiles {
            common: self.repo.common_dir().to_path_buf(),
            git_dir: self.repo.git_dir().to_path_buf(),
            claims: self.private().lock_claims(),
        }
    }
}
