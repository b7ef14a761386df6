//! `start`: begin a run — record its seq-0 `start` checkpoint (no step ref) with the run's
//! label and workflow digest, and make it the active run of this worktree.

use crate::error::Result;
use crate::ids::RunId;
use crate::journal::set_active_run;
use crate::journal::{Record, Recorded, append};
use crate::model::Event;
use crate::store::Store;

#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    pub run: Option<RunId>,
    pub label: Option<String>,
    pub workflow_digest: Option<String>,
    pub meta: std::collections::BTreeMap<String, String>,
}

pub fn start(store: &Store, opts: StartOptions) -> Result<Recorded> {
    store.workdir()?;
    let run = opts.run.unwrap_or_else(RunId::generate);
    let mut rec = Record::new(run.clone(), Event::Start);
    rec.label = opts.label;
    rec.workflow_digest = opts.workflow_digest;
    rec.meta = opts.meta;
    rec.new_run = true;
    rec.next_action = Some("record the first step".into());
    let recorded = append(store, rec)?;
    set_active_run(store, &run)?;
    Ok(recorded)
}
