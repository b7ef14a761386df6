//! `status`: the active run of this worktree, its last checkpoint, unfinished steps (a
//! `begin` whose latest record is still `running`) and the next action in plain words.

use crate::catalog::{Catalog, Checkpoint, RunSummary};
use crate::error::Result;
use crate::journal::active_run;
use crate::model::Status;
use crate::store::Store;

#[derive(Debug, Clone)]
pub struct RunStatus {
    pub summary: RunSummary,
    pub last: Checkpoint,
    /// Steps whose newest record says `running`.
    pub unfinished: Vec<String>,
    pub next_action: String,
}

impl RunStatus {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "run": self.summary.run,
            "summary": self.summary,
            "last": self.last.to_json(),
            "unfinished": self.unfinished,
            "next_action": self.next_action,
        })
    }
}

/// `None` when this worktree has no active run.
pub fn status(store: &Store) -> Result<Option<RunStatus>> {
    let Some(run) = active_run(store)? else {
        return Ok(None);
    };
    let mut catalog = Catalog::new(store);
    let mut summary = catalog.summary(&run)?;
    summary.unique_prefix = catalog.unique_prefix(&run)?;
    let last = catalog.require_run_tip(&run)?;
    let mut unfinished = vec![];
    for (step, id) in store.step_refs(&run)? {
        if let Some(cp) = catalog.try_checkpoint(id)?
            && cp.status() == Some(Status::Running)
            && cp.line().run == run.as_str()
        {
            unfinished.push(step.to_string());
        }
    }
    let next_action = if let Some(s) = unfinished.first() {
        format!("step {s} began but has not finished; if its process died, `resume` reconciles it")
    } else {
        last.line()
            .next_action
            .clone()
            .unwrap_or_else(|| "record the next step".into())
    };
    Ok(Some(RunStatus {
        summary,
        last,
        unfinished,
        next_action,
    }))
}
