//! `delete <run> --remote <r>`: delete a run here and on a remote. The remote is read first
//! (`git ls-remote`), so an unreachable one changes nothing here; then the run is deleted
//! here leaving a tombstone, the tombstone is pushed (so other clones do not import the run
//! again), and the remote's copy is deleted as `push` deletes covered runs: only at the
//! value deleted here or an ancestor of it, never forced (`ops::push::retire`).
//!
//! It never deletes another run on the remote, and a remote copy that moved on stays there.

use super::DeleteOutcome;
use crate::ops::push::retire::{self, RetireOptions, Retired};
use crate::remote::Remote;
use crate::store::Store;
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::RunId;
use serde::Serialize;

/// What `delete --remote` did there.
#[derive(Debug, Clone, Serialize)]
pub struct RemoteDeleteOutcome {
    #[serde(flatten)]
    pub here: DeleteOutcome,
    /// The remote, as git was given it.
    pub remote: String,
    /// The run on the remote: `deleted`, `kept` (with the reason), `not on the remote`.
    pub on_remote: Retired,
    /// Tombstones of this repository the remote lacked and now has (this run's among them).
    pub tombstones_pushed: usize,
}

/// Delete `run` here (refused as `delete` refuses, unless `force`) and on `remote`.
pub fn delete_here_and_there(
    store: &Store,
    run: &RunId,
    force: bool,
    remote: &Remote,
) -> Result<RemoteDeleteOutcome> {
    // Reachable, and what it holds, before anything changes here.
    let there = crate::remote::listing::remote_run_refs(store, remote)?;
    let here = super::delete_leaving(store, run, force, true)?;
    let tombstones_pushed = crate::ops::push::push_tombstones(store, remote)?;
    let opts = RetireOptions {
        only: Some(vec![run.clone()]),
        dry_run: false,
    };
    let on_remote = retire::retire(store, remote, &opts, Some(there))?
        .into_iter()
        .find(|r| r.run == run.as_str())
        .unwrap_or_else(|| Retired {
            run: run.to_string(),
            result: "not on the remote",
            refs: 0,
            reason: None,
        });
    Ok(RemoteDeleteOutcome {
        here,
        remote: remote.target.clone(),
        on_remote,
        tombstones_pushed,
    })
}
