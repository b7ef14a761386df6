//! After a command changed the worktree's files (`rewind`, `fork`, `restore`, `revert`,
//! `pick`, `undo`): the user's `post-agent-rewind` hook, run by the library's explicit step, its
//! failure a warning. Never changes the command's outcome or exit status.

use crate::cli::render;
use agent_rewind::ops::post_rewind::{RewindEvent, run_hook as run};
use agent_rewind::store::Store;

/// Run the hook for `event`, warning on stderr when it failed.
pub fn run_hook(store: &Store, event: &RewindEvent) {
    if let Some(warning) = run(store, event) {
        render::warn(&warning);
    }
}
