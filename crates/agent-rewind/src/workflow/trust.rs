//! Which stored workflows may run here. A run carries its workflow's text (the root note's
//! `workflow` line), and `fetch` or a bundle brings runs written elsewhere: their commands
//! must not run on `resume` or `watch` just because they arrived. A stored workflow runs
//! only when its digest is on this repository's trusted list: every workflow `run` or
//! `resume --workflow` stored from a file the user named, and every one accepted with
//! `trust <run>`. A file with the same content proves nothing (a rewind of a fetched run
//! writes exactly that file), so who may call `trust` is decided in `ops`.
//!
//! Owns the list's format (one `git-blob:<hex>` digest per line); never decides anything
//! else about a workflow.

use crate::store::Store;
use agent_rewind_core::error::Result;
use agent_rewind_core::private::envelope::TRUSTED_WORKFLOWS;
use std::collections::BTreeSet;

/// The digests on the trusted list.
fn trusted(store: &Store) -> Result<BTreeSet<String>> {
    let Some(bytes) = TRUSTED_WORKFLOWS.read_state(&store.private().trusted_workflows())? else {
        return Ok(BTreeSet::new());
    };
    Ok(String::from_utf8_lossy(&bytes)
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("git-blob:"))
        .map(str::to_string)
        .collect())
}

/// Whether the workflow with `digest` is on the trusted list.
pub fn is_trusted(store: &Store, digest: &str) -> Result<bool> {
    Ok(trusted(store)?.contains(digest))
}

/// Put `digest` on the trusted list (a no-op when it is there).
pub fn trust(store: &Store, digest: &str) -> Result<()> {
    let _lock = store.locks().writer_lock("trusted-workflows")?;
    let mut all = trusted(store)?;
    if !all.insert(digest.to_string()) {
        return Ok(());
    }
    let mut body = String::new();
    for d in &all {
        body.push_str(d);
        body.push('\n');
    }
    TRUSTED_WORKFLOWS.write(&store.private().trusted_workflows(), body.as_bytes())
}
