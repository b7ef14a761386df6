//! `approve` / `reject`: append an approval record bound to one exact checkpoint (in that
//! checkpoint's run notes). Only such a record lets a gate pass; nothing else counts.

use crate::catalog::Catalog;
use crate::error::Result;
use crate::ids::{CheckpointSpec, RunId};
use crate::journal::append_note_lines;
use crate::model::NoteLine;
use crate::store::Store;
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
    let cp = Catalog::new(store).resolve(spec)?;
    let line = cp.line();
    let run = RunId::new(line.run.clone())?;
    let by = by.unwrap_or_else(|| default_approver(store));
    // The approver and the message pass through the same redaction as metadata.
    let mut redacted = vec![];
    let (by, by_hit) = crate::redact::redact_value("by", &by);
    if by_hit {
        redacted.push("approval.by".to_string());
    }
    let message = message.map(|m| {
        let (m, hit) = crate::redact::redact_value("message", &m);
        if hit {
            redacted.push("approval.message".to_string());
        }
        m
    });
    let ts = crate::time::Timestamp::now();
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
        step: line.step.clone(),
        decision: if approved { "approved" } else { "rejected" },
        by,
    })
}

/// `Name <email>` from git config, else the writer id.
fn default_approver(store: &Store) -> String {
    match (
        store.config_string("user.name"),
        store.config_string("user.email"),
    ) {
        (Some(n), Some(e)) => format!("{n} <{e}>"),
        (Some(n), None) => n,
        _ => crate::time::writer_id(),
    }
}
