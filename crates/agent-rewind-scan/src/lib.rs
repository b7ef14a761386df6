//! The snapshot of a worktree: given a [`ScanContext`] (the repository the store opened and
//! the few things the scan takes from it), [`snapshot`] returns the tree `git add -A` would
//! commit, minus what the [`Policy`] leaves out. Its sources are its own modules: the
//! filesystem monitor (`fsmonitor`, with Watchman's socket), the directory walk with its
//! cache (`dirwalk`), the raw index reader (`rawindex`), the stat check (`statcheck`) and the
//! start from the run's last checkpoint (`snapshot::monitored`).
//!
//! It must never move a ref, write the user's index, HEAD or files, or write anything but
//! objects and its own caches (private files, through core's envelope). It depends on core
//! and gix, never on the store (docs/ARCHITECTURE.md).

// `print!`/`eprintln!` panic when the stream is a closed pipe; nothing here prints but
// through a write whose error is dropped.
#![deny(clippy::print_stdout, clippy::print_stderr)]
// The filesystem monitor's hook is a process the scanner starts itself.
#![allow(clippy::disallowed_methods)]

mod dirwalk;
mod fsmonitor;
pub mod gixerror;
mod rawindex;
mod snapshot;
mod statcheck;
mod treediff;

use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::private::PrivatePaths;
use gix::ObjectId;
use std::path::Path;

pub use dirwalk::StatData;
pub use rawindex::entry_count as index_entry_count;
pub use snapshot::{
    DEFAULT_MAX_UNTRACKED, Excluded, Policy, PolicyConfig, Purpose, Snapshot, edit_tree,
    glob_match, retry_object_write, snapshot,
};
pub use treediff::{ChangeKind, TreeChange, diff_trees_at_most};

/// What the scanner takes from the repository's owner: the repository, its worktree, the
/// tree HEAD names, and the path protections git applies. Everything else (the index, the
/// config, our private files) the scanner reads from the repository itself.
pub struct ScanContext<'r> {
    repo: &'r gix::Repository,
    workdir: &'r Path,
    /// The tree of the commit HEAD names, the empty tree on an unborn branch: the owner
    /// reads it, since HEAD may live in a reftable.
    pub head_tree: ObjectId,
    /// The path protections git applies to paths it writes (`core.protectNTFS`,
    /// `core.protectHFS`).
    protect: gix::validate::path::component::Options,
}

impl<'r> ScanContext<'r> {
    /// The context of `repo` with its worktree `workdir`.
    pub fn new(
        repo: &'r gix::Repository,
        workdir: &'r Path,
        head_tree: ObjectId,
        protect: gix::validate::path::component::Options,
    ) -> ScanContext<'r> {
        ScanContext {
            repo,
            workdir,
            head_tree,
            protect,
        }
    }

    pub fn repo(&self) -> &'r gix::Repository {
        self.repo
    }

    pub fn workdir(&self) -> &'r Path {
        self.workdir
    }

    /// The paths of our private files for this worktree.
    pub fn private(&self) -> PrivatePaths<'r> {
        PrivatePaths::of(self.repo.git_dir(), self.repo.common_dir())
    }

    /// The git dir shared by all worktrees.
    pub fn common_dir(&self) -> &'r Path {
        self.repo.common_dir()
    }

    pub fn protect_options(&self) -> gix::validate::path::component::Options {
        self.protect
    }

    /// The user's index as it is on disk (see [`read_user_index`]).
    pub fn read_user_index(&self) -> Result<gix::index::File> {
        read_user_index(self.repo)
    }
}

/// The user's index as it is on disk (empty when there is none yet), read without
/// verifying its trailing checksum: git itself only verifies it in `fsck`, every writer
/// replaces the file atomically, and hashing it is a tenth of a snapshot's time on a
/// large index.
pub fn read_user_index(repo: &gix::Repository) -> Result<gix::index::File> {
    gix::index::File::at_or_default(
        repo.index_path(),
        repo.object_hash(),
        true,
        gix::index::decode::Options::default(),
    )
    .map_err(|e| {
        Error::corrupt(format!(
            "cannot read the index {}: {}",
            repo.index_path().display(),
            agent_rewind_core::error::one_line(&e.to_string())
        ))
    })
}

/// Whether `core.fsmonitor` names a monitor a snapshot asks (`fsmonitor`).
pub fn has_fsmonitor(repo: &gix::Repository) -> bool {
    fsmonitor::is_configured(repo)
}
