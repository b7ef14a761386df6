//! `start`: begin a run — record its seq-0 `start` checkpoint (no step ref) with the run's
//! label and workflow digest, and make it the active run of this worktree (unless asked to
//! keep the active run).

use crate::journal::set_active_run;
use crate::journal::{Record, Recorded, append};
use crate::model::Event;
use crate::store::Store;
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::RunId;

#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    pub run: Option<RunId>,
    pub label: Option<String>,
    pub workflow_digest: Option<String>,
    pub meta: std::collections::BTreeMap<String, String>,
    /// More lines for the start checkpoint's note (e.g. the stored workflow).
    pub extra_lines: Vec<crate::model::NoteLine>,
    /// Leave the worktree's active run as it is (`--no-activate`).
    pub keep_active_run: bool,
}

pub fn start(store: &Store, opts: StartOptions) -> Result<Recorded> {
    store.worktree().root()?;
    let run = opts.run.unwrap_or_else(RunId::generate);
    let mut rec = Record::new(run.clone(), Event::Start);
    rec.label = opts.label;
    rec.workflow_digest = opts.workflow_digest;
    rec.facts.meta = opts.meta;
    rec.facts.extra_lines = opts.extra_lines;
    rec.new_run = true;
    rec.facts.next_action = Some("record the first step".into());
    let recorded = append(store, rec)?;
    if !opts.keep_active_run {
        set_active_run(store, &run)?;
    }
    Ok(recorded)
}
