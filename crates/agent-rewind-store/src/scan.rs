//! The snapshot of this store's worktree, taken by the scanner (`agent-rewind-scan`): this
//! module hands it what it takes from the store (the repository, HEAD's tree, git's path
//! protections) and the configuration its policy is read from. It decides nothing itself;
//! the layers above find it as `snapshot`, beside the scanner's types.

use crate::repository::Store;
use agent_rewind_core::error::Result;
use agent_rewind_scan::{Policy, PolicyConfig, Purpose, ScanContext, Snapshot};
use gix::ObjectId;

/// Snapshot the worktree of `store`. Exclusion applies to paths that are not in HEAD
/// (untracked or newly staged); files already committed are kept as git keeps them.
pub fn snapshot_worktree(store: &Store, policy: &Policy) -> Result<Snapshot> {
    agent_rewind_scan::snapshot(&context(store)?, policy, Purpose::Other)
}

/// [`snapshot_worktree`] for a checkpoint of a run whose newest checkpoint has tree `last`
/// (`None`: the run has none yet). With a filesystem monitor it may start from that tree,
/// and it saves where it ended for the next checkpoint.
pub fn snapshot_for_checkpoint(
    store: &Store,
    policy: &Policy,
    last: Option<ObjectId>,
) -> Result<Snapshot> {
    agent_rewind_scan::snapshot(&context(store)?, policy, Purpose::Checkpoint { last })
}

/// What the scanner takes from the store.
fn context(store: &Store) -> Result<ScanContext<'_>> {
    Ok(ScanContext::new(
        store.repo(),
        store.worktree().root()?,
        store.head_tree_or_empty()?,
        store.protect_options(),
    ))
}

impl PolicyConfig for Store {
    fn config_strings(&self, key: &str) -> Vec<String> {
        self.config().strings(key)
    }
    fn config_size(&self, key: &str) -> Result<Option<u64>> {
        self.config().size(key)
    }
}
