//! `status`: the active run of this worktree, its last checkpoint, unfinished steps (a
//! `begin` whose latest record is still `running`) and the next action in plain words.

use crate::catalog::{Catalog, Checkpoint, RunSummary};
use crate::journal::active_run;
use crate::model::{NoteLine, Status};
use crate::store::Store;
use agent_rewind_core::error::Result;

#[derive(Debug, Clone)]
pub struct RunStatus {
    pub summary: RunSummary,
    pub last: Checkpoint,
    /// Steps whose newest record says `running`.
    pub unfinished: Vec<String>,
    pub next_action: String,
    /// The newest agent conversation recorded in the run, and how to resume it.
    pub resume: Option<Resume>,
    /// Steps were left `running` by a workflow runner that died (its lock is free): the
    /// run's status says `interrupted`.
    pub runner_gone: bool,
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
            "runner_gone": self.runner_gone,
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
    summary.active = true;
    let last = catalog.require_run_tip(&run)?;
    let mut unfinished = vec![];
    // An external step's worker (the first such step found) and its attempt.
    let mut external = None;
    for (step, id) in crate::catalog::step_tips(store, &run)? {
        if let Some(cp) = catalog.try_checkpoint(id)?
            && cp.status() == Some(Status::Running)
            && cp.line().run == run.as_str()
        {
            if external.is_none()
                && cp.line().meta.get("external").map(String::as_str) == Some("true")
            {
                external = Some((step.to_string(), cp.line().attempt));
            }
            unfinished.push(step.to_string());
        }
    }
    let has_workflow = crate::ops::run::has_workflow(&mut catalog, &last)?;
    let runner_gone = !unfinished.is_empty()
        && external.is_none()
        && crate::workflow::lock::runner_gone(store, &run)?;
    if runner_gone {
        summary.status = Status::Interrupted.to_string();
    }
    let next_action = match (unfinished.first(), external) {
        (_, Some((s, attempt))) => format!(
            "step {s} (attempt {attempt}) waits for its worker, which reports with `{}`",
            crate::workflow::external::report_command(run.as_str(), &s, attempt)
        ),
        (Some(s), None) if runner_gone => format!(
            "the runner of this run is gone (it died while step {s} ran): `git agent-rewind resume` reconciles the step and goes on"
        ),
        (Some(s), None) if has_workflow => format!(
            "step {s} began but has not finished; if its process died, `resume` reconciles it"
        ),
        (Some(s), None) => format!(
            "step {s} began but has not finished: `git agent-rewind step end {s} --status completed` (or failed) records its outcome"
        ),
        (None, None) => next_action(&mut catalog, &summary, &last, has_workflow)?,
    };
    let resume = resume_at(&mut catalog, &last)?;
    Ok(Some(RunStatus {
        summary,
        last,
        unfinished,
        next_action,
        resume,
        runner_gone,
    }))
}

/// The next action from the run's state now, not the one recorded with its last checkpoint
/// (an approval, a rejection, an archive or a completion came later).
fn next_action(
    catalog: &mut Catalog,
    summary: &RunSummary,
    last: &Checkpoint,
    has_workflow: bool,
) -> Result<String> {
    let step = last.line().step.as_deref().unwrap_or("?");
    Ok(match summary.status.as_str() {
        "archived" => {
            let root = catalog.root_of(last)?;
            let why = root
                .note
                .lines
                .iter()
                .rev()
                .find_map(|l| match l {
                    NoteLine::RunStatus { status, reason, .. } if status == "archived" => {
                        reason.clone()
                    }
                    _ => None,
                })
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            format!(
                "this run is archived{why}; `git agent-rewind list --all` shows it, `undo` reverses a rewind made here"
            )
        }
        "completed" => crate::workflow::next::COMPLETE.into(),
        "approved" => format!(
            "`git agent-rewind resume` passes gate {step} (approved by {})",
            last.decision().map(|d| d.1).unwrap_or_default()
        ),
        "rejected" => crate::workflow::next::gate_rejected(
            step,
            &last.decision().map(|d| d.1).unwrap_or_default(),
            &last.id().to_string(),
        ),
        "awaiting_approval" => crate::workflow::next::approve_gate(&last.id().to_string()),
        // `resume` runs a workflow: a run without one (a fork of a run recorded by hand)
        // goes on by hand.
        _ if !has_workflow => match (
            &last.line().next_action,
            // A fork's or rewind's root names the step it was made at in its lineage link.
            last.line().origin().and_then(|(l, _)| l.step.as_ref()),
        ) {
            (Some(a), _) if !a.contains("resume") => a.clone(),
            (_, Some(step)) => format!(
                "re-enter step {step}: `git agent-rewind step begin {step}` or `git agent-rewind checkpoint {step}` records it (this run has no workflow to run)"
            ),
            _ => "record the next step (`git agent-rewind checkpoint <step>`)".into(),
        },
        _ => last
            .line()
            .next_action
            .clone()
            .unwrap_or_else(|| "record the next step".into()),
    })
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
