//! The run's state in a few lines, given to an agent whose context was compacted, resumed
//! or cleared (`SessionStart` with `source` `compact`, `resume` or `clear`; for Pi, whose
//! session start does not tell a resumed session from a new one, a session that already
//! has a turn in the run), so it knows
//! where its work stands without the transcript: run, label, each step's state with its
//! attempt, approvals pending, the next action, the last checkpoint and how to rewind to it.
//!
//! At most [`MAX_MANIFEST`] bytes. Built from the run's notes only, whose values were
//! redacted when written; never from a transcript. `agentRewind.agentContext=false` turns
//! it off. Reads; never writes.

use crate::catalog::{Catalog, step_tips};
use crate::model::Status;
use crate::store::Store;
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::RunId;

/// The longest manifest given to an agent, in bytes.
pub const MAX_MANIFEST: usize = 2048;

/// The session-start sources after which an agent is given the manifest.
pub const SOURCES: [&str; 3] = ["compact", "resume", "clear"];

/// How many of a run's newest checkpoints (its lineage included) are looked through for a
/// turn of a session whose start does not say whether it resumes.
pub const RESUME_LOOKBACK: usize = 1000;

/// Whether the session starting in `ev` continues a conversation the agent had before: its
/// `source` says so, or (Pi, which cannot tell) a `turn` of the same session is among the
/// run's newest [`RESUME_LOOKBACK`] checkpoints, its lineage included.
pub fn resumed(store: &Store, run: &RunId, ev: &super::payload::AgentEvent) -> Result<bool> {
    if let Some(source) = ev.meta.get("source") {
        return Ok(SOURCES.contains(&source.as_str()));
    }
    let (crate::agent::Agent::Pi, Some(session)) = (ev.agent, ev.session_id.as_deref()) else {
        return Ok(false);
    };
    let mut catalog = Catalog::new(store);
    let Some(tip) = catalog.run_tip(run)? else {
        return Ok(false);
    };
    Ok(catalog
        .lineage_chain(tip.id(), RESUME_LOOKBACK)?
        .iter()
        .any(|cp| {
            let line = cp.line();
            line.event == crate::model::Event::Turn
                && line.sdk_session_id.as_deref() == Some(session)
                && line.agent.as_deref() == Some(ev.agent.name())
        }))
}

/// Whether `agentRewind.agentContext` allows giving agents the manifest (default: yes).
pub fn enabled(store: &Store) -> bool {
    store
        .config()
        .bool("agentRewind.agentContext")
        .ok()
        .flatten()
        .unwrap_or(true)
}

/// The manifest of `run`.
pub fn manifest(store: &Store, run: &RunId) -> Result<String> {
    let mut catalog = Catalog::new(store);
    let summary = catalog.summary(run)?;
    let last = catalog.require_run_tip(run)?;
    let mut out = format!("git agent-rewind: this session records into run {run}");
    if let Some(l) = &summary.label {
        out.push_str(&format!(" ({l:?})"));
    }
    out.push_str(&format!(", status {}.\n", summary.status));
    let mut steps = vec![];
    let mut pending = vec![];
    for (step, id) in step_tips(store, run)? {
        let Some(cp) = catalog.try_checkpoint(id)? else {
            continue;
        };
        let status = cp
            .status()
            .map_or("recorded".to_string(), |s| s.to_string());
        if cp.status() == Some(Status::AwaitingApproval) {
            pending.push(format!("{step} (`git agent-rewind approve {}`)", cp.id()));
        }
        steps.push(format!("{step} {status} (attempt {})", cp.line().attempt));
    }
    if !steps.is_empty() {
        out.push_str(&format!("Steps: {}.\n", steps.join("; ")));
    }
    if !pending.is_empty() {
        out.push_str(&format!("Approvals pending: {}.\n", pending.join("; ")));
    }
    if let Some(next) = last.line().next_action.as_deref() {
        out.push_str(&format!("Next: {next}.\n"));
    }
    let seq = last.line().seq;
    out.push_str(&format!(
        "Last checkpoint: {run}@{seq} ({}, {} of step {}). To go back to it: \
         `git agent-rewind rewind {run} --to {run}@{seq}`.\n",
        &last.id().to_string()[..12],
        last.line().event,
        last.line().step.as_deref().unwrap_or("-"),
    ));
    Ok(truncate(out))
}

/// `text` cut to [`MAX_MANIFEST`] bytes at a character boundary, marked when cut.
fn truncate(mut text: String) -> String {
    const MARK: &str = " […]\n";
    if text.len() > MAX_MANIFEST {
        let mut end = MAX_MANIFEST - MARK.len();
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str(MARK);
    }
    text
}

#[cfg(test)]
mod tests {
    #[test]
    fn long_manifests_are_cut_at_a_character_boundary() {
        let cut = super::truncate("é".repeat(3000));
        assert!(cut.len() <= super::MAX_MANIFEST, "{}", cut.len());
        assert!(cut.ends_with(" […]\n"));
        assert_eq!(super::truncate("short".into()), "short");
    }
}
