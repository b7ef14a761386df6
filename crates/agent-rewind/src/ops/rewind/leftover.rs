//! What a killed `fork --worktree` left behind, recognised so that the retry works: the
//! linked worktree git made for the fork, and its branch. A folder at `--worktree` counts as
//! such a leftover only when nothing in it can be lost:
//!
//! - it is a linked worktree of this repository, attached to a branch that still points at
//!   the commit the fork checks out (nobody committed there);
//! - it has no active run (setting it is the fork's last step);
//! - each of its files is as in that commit or as in the checkpoint (what git checked out,
//!   or what the fork had written over it when it was killed).
//!
//! Anything else is refused as before. Reads only; the caller removes a leftover after
//! every other check passed.

use crate::store::{ObjectId, Store};
use agent_rewind_core::error::Result;
use std::path::Path;

/// The branch of the leftover at `path` (see the module's doc), or `None` when the folder
/// is anything else. `commit` is the commit the fork checks out (its tree `base`), `target`
/// the checkpoint's tree.
pub(super) fn leftover_fork(
    store: &Store,
    path: &Path,
    commit: Option<ObjectId>,
    base: ObjectId,
    target: ObjectId,
) -> Result<Option<String>> {
    if !path.join(".git").is_file() {
        return Ok(None);
    }
    let Ok(linked) = Store::open_linked_worktree(path) else {
        return Ok(None);
    };
    let same_repository = std::fs::canonicalize(linked.worktree().common_dir()).ok()
        == std::fs::canonicalize(store.worktree().common_dir()).ok();
    let head = linked.refs().user_head()?;
    let Some(branch) = head
        .branch
        .as_deref()
        .and_then(|b| b.strip_prefix("refs/heads/"))
    else {
        return Ok(None);
    };
    if !same_repository
        || head.commit != commit
        || crate::journal::worktree_active_run(&linked)?.is_some()
    {
        return Ok(None);
    }
    let now = crate::materialize::capture(&linked)?.tree;
    for change in store.objects().diff_trees(target, now)? {
        // A file that differs from the checkpoint must be as the commit has it.
        if store.objects().entry_in_tree(base, &change.path)? != change.new {
            return Ok(None);
        }
    }
    Ok(Some(branch.to_string()))
}
