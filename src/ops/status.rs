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
    /// The newest agent conversation recorded in the run, and how to resume it.
    pub resume: Option<Resume>,
}

/// How to resume the agent conversation a checkpoint recorded.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Resume {
    pub agent: String,
    pub session_id: String,
    pub command: String,
    /// The checkpoint that recorded it.
    pub checkpoint: String,
}

/// How many checkpoints back from the tip `status` looks for an agent's session.
const RESUME_LOOKBACK: usize = 64;

impl RunStatus {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "run": self.summary.run,
            "summary": self.summary,
            "last": self.last.to_json(),
            "unfinished": self.unfinished,
            "next_action": self.next_action,
            "resume_command": self.resume.as_ref().map(|r| r.command.clone()),
            "resume": self.resume,
        })
    }
}

/// `None` when this worktree has no active run.
pub fn status(store: &Store) -> Result<Option<RunStatus>> {
    let Some(run) = active_run(store)? else {
        return Ok(None);
    };
    let mut catalog = Catalog::new(store);
    let summary = catalog.summary(&run)?;
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
    let resume = resume_at(&mut catalog, &last)?;
    Ok(Some(RunStatus {
        summary,
        last,
        unfinished,
        next_action,
        resume,
    }))
}

/// The newest checkpoint (a bounded walk back from `tip` along the chain) that recorded an
/// agent's session, as a [`Resume`].
fn resume_at(catalog: &mut Catalog, tip: &Checkpoint) -> Result<Option<Resume>> {
    let mut cp = tip.clone();
    for _ in 0..RESUME_LOOKBACK {
        let l = cp.line();
        if let (Some(agent), Some(session)) = (l.recording_agent(), &l.sdk_session_id)
            && let Some(command) = crate::agent::resume_command(Some(agent), Some(session))
        {
            return Ok(Some(Resume {
                agent: agent.to_string(),
                session_id: session.clone(),
                command,
                checkpoint: cp.id().to_string(),
            }));
        }
        if l.seq == 0 {
            break;
        }
        let Some(parent) = cp.commit.parents.first().copied() else {
            break;
        };
        match catalog.try_checkpoint(parent)? {
            Some(p) => cp = p,
            None => break,
        }
    }
    Ok(None)
}
