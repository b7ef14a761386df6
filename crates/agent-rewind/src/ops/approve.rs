//! `approve` / `reject`: append an approval record bound to one exact checkpoint (in that
//! checkpoint's run notes). Only such a record lets a gate pass; nothing else counts.
//! Refused, with nothing written: a checkpoint that is not a gate, a gate checkpoint that a
//! newer one of the same gate superseded (the error names it and what changed), a gate not
//! awaiting approval, and an empty `--by`.

use crate::catalog::{Catalog, short};
use crate::journal::append_note_lines;
use crate::model::{Event, NoteLine, Status, StepKind};
use crate::store::ObjectId;
use crate::store::Store;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::{CheckpointSpec, RunId, StepName};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct ApprovalOutcome {
    pub checkpoint: String,
    pub run: String,
    pub step: Option<String>,
    pub decision: &'static str,
    pub by: String,
}

pub fn decide(
    store: &Store,
    spec: &CheckpointSpec,
    approved: bool,
    by: Option<String>,
    message: Option<String>,
) -> Result<ApprovalOutcome> {
    let verb = if approved { "approve" } else { "reject" };
    let by = match by {
        Some(b) if b.trim().is_empty() || b.chars().any(char::is_control) => {
            return Err(Error::usage(format!(
                "--by {b:?}: name who decides (e.g. --by \"Ada <ada@example.com>\")"
            ))
            .with_hint("leave --by out to use your git identity"));
        }
        Some(b) => b.trim().to_string(),
        None => default_approver(store),
    };
    let mut catalog = Catalog::new(store);
    let cp = catalog.resolve(spec)?;
    let line = cp.line();
    let run = RunId::new(line.run.clone())?;
    let (Some(step), Some(StepKind::Gate)) = (line.step.as_deref(), line.step_kind) else {
        return Err(Error::refused(format!(
            "checkpoint {} ({}{}, {}) is not a gate: only a gate checkpoint can be {verb}d",
            short(cp.id()),
            run,
            line.step
                .as_deref()
                .map(|s| format!("/{s}"))
                .unwrap_or_default(),
            line.step_kind
                .map(|k| format!("{k} step"))
                .unwrap_or_else(|| "no step kind".into()),
        ))
        .with_hint("`git agent-rewind status` shows the gate awaiting approval"));
    };
    let step = StepName::new(step)?;
    // A newer checkpoint of the gate (a commit landed, the gate was opened again or passed)
    // means this one is not what a resume would look at: say what replaced it.
    if let Some(newest) = crate::catalog::step_tip(store, &run, &step)?
        && newest != cp.id()
        && store.objects().is_ancestor(cp.id(), newest)?
    {
        let new = catalog.checkpoint(newest)?;
        let files = store
            .objects()
            .diff_trees(cp.commit.tree, new.commit.tree)?;
        let changed = if files.is_empty() {
            "no file changed".to_string()
        } else {
            let mut names: Vec<String> = files
                .iter()
                .take(5)
                .map(|f| format!("{} {}", f.change, f.path))
                .collect();
            if files.len() > 5 {
                names.push(format!("and {} more", files.len() - 5));
            }
            format!("files changed: {}", names.join(", "))
        };
        let nl = new.line();
        let what = match (nl.event, new.status()) {
            (Event::Commit, _) => {
                let subject = nl
                    .git_commit_sha
                    .as_deref()
                    .and_then(|h| ObjectId::from_hex(h.as_bytes()).ok())
                    .and_then(|c| store.objects().read_commit(c).ok())
                    .and_then(|c| c.message.lines().next().map(str::to_string))
                    .unwrap_or_default();
                format!("a commit landed during the gate: \"{subject}\"")
            }
            (Event::Begin, Some(Status::AwaitingApproval)) => {
                "the gate was opened again (its inputs changed)".to_string()
            }
            (_, Some(Status::Completed)) => "the gate passed".to_string(),
            (event, status) => format!(
                "a {event} checkpoint ({})",
                status
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "no status".into())
            ),
        };
        return Err(Error::refused(format!(
            "gate checkpoint {} of {run}/{step} was superseded by {}: {what}; {changed}",
            short(cp.id()),
            short(newest),
        ))
        .with_hint(match new.status() {
            Some(Status::AwaitingApproval) => {
                format!("review what changed, then `git agent-rewind {verb} {newest}`")
            }
            _ => format!("see `git agent-rewind show {newest}`"),
        }));
    }
    if cp.status() != Some(Status::AwaitingApproval) {
        return Err(Error::refused(format!(
            "gate checkpoint {} of {run}/{step} is not awaiting approval (status {})",
            short(cp.id()),
            cp.status()
                .map(|s| s.to_string())
                .unwrap_or_else(|| "none".into())
        ))
        .with_hint("`git agent-rewind resume` opens the gate again when its inputs change"));
    }
    // The approver and the message pass through the same redaction as metadata.
    let mut redacted = vec![];
    let (by, by_hit) = agent_rewind_core::redact::redact_value("by", &by);
    if by_hit {
        redacted.push("approval.by".to_string());
    }
    let message = message.map(|m| {
        let (m, hit) = agent_rewind_core::redact::redact_value("message", &m);
        if hit {
            redacted.push("approval.message".to_string());
        }
        m
    });
    let ts = agent_rewind_core::time::Timestamp::now();
    let mut lines = vec![NoteLine::Approval {
        approved,
        by: by.clone(),
        ts,
        message,
    }];
    if !redacted.is_empty() {
        lines.push(NoteLine::Redaction {
            fields: redacted,
            ts,
        });
    }
    append_note_lines(store, &run, cp.id(), &lines)?;
    Ok(ApprovalOutcome {
        checkpoint: cp.id().to_string(),
        run: run.to_string(),
        step: Some(step.to_string()),
        decision: if approved { "approved" } else { "rejected" },
        by,
    })
}

/// `Name <email>` as git resolves it (environment, `git -c`, config), else the writer id.
fn default_approver(store: &Store) -> String {
    store
        .config()
        .identity()
        .unwrap_or_else(agent_rewind_core::time::writer_id)
}
