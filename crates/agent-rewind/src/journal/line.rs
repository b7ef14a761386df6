//! The pure part of an append: from a [`Record`], the [`Context`] it continues and what was
//! captured (tree, artifacts, the user's HEAD), the checkpoint line, its parents and its
//! commit message. No I/O: every input is an argument, so the rules of attempts, sequence
//! numbers and carried-over fields can be read (and tested) in one place.

use super::context::Context;
use crate::journal::Record;
use crate::model::{Artifact, CHECKPOINT_SCHEMA, CheckpointLine, Event, Excluded, TRAILER_SCHEMA};
use crate::store::{ObjectId, Trailers, UserHead};
use agent_rewind_core::redact;
use agent_rewind_core::time::Timestamp;
use std::collections::BTreeMap;

/// What the append captured before building the line.
pub(super) struct Captured<'a> {
    pub excluded: &'a [Excluded],
    pub artifacts: &'a [Artifact],
    pub user_head: &'a UserHead,
    /// The record's free-text fields after redaction.
    pub fields: &'a RedactedFields,
    /// Now, as written into `ts` (and `started_at`/`finished_at` where they start now).
    pub now: Timestamp,
    pub writer: &'a str,
}

/// The checkpoint line `rec` makes on top of `ctx`.
pub(super) fn checkpoint_line(rec: &Record, ctx: &Context, cap: &Captured) -> CheckpointLine {
    let step_attempt = ctx.step_prev.as_ref().map(|c| c.line().attempt);
    // A finish carries the start time of the attempt it ends.
    let attempt_started = ctx
        .step_prev
        .as_ref()
        .filter(|c| rec.event != Event::Begin && c.line().run == rec.run.as_str())
        .and_then(|c| c.line().started_at);
    let attempt = match (rec.event, step_attempt) {
        (Event::Begin, Some(a)) => a + 1,
        (_, Some(a)) => a,
        (_, None) => 1,
    };
    let seq = ctx.prev.as_ref().map_or(0, |p| p.line().seq + 1);
    let run_root = ctx.prev.as_ref().map(|p| {
        p.line()
            .run_root
            .clone()
            .unwrap_or_else(|| p.id().to_string())
    });
    // A record of a step that is neither its begin nor its finish (a commit, a turn, a
    // manual checkpoint) continues the step's current attempt: it keeps its status, kind
    // and input hash unless told otherwise.
    let continues = ctx
        .step_prev
        .as_ref()
        .filter(|_| !matches!(rec.event, Event::Begin | Event::Finish));
    // A finish of the step's current attempt (in this run) carries the input hash and
    // idempotency key that attempt began with: the outcome is of those inputs.
    let attempt_of = ctx
        .step_prev
        .as_ref()
        .filter(|c| rec.event != Event::Begin && c.line().run == rec.run.as_str());
    let origin = |rewound: bool| {
        rec.origin
            .as_ref()
            .filter(|o| o.rewound == rewound)
            .map(|o| o.link.clone())
    };
    let now = cap.now;
    CheckpointLine {
        schema: CHECKPOINT_SCHEMA.into(),
        run: rec.run.to_string(),
        step: rec.step.as_ref().map(|s| s.to_string()),
        attempt,
        seq,
        event: rec.event,
        step_kind: rec
            .facts
            .kind
            .or_else(|| ctx.step_prev.as_ref().and_then(|c| c.line().step_kind)),
        status: rec
            .facts
            .status
            .or_else(|| continues.and_then(|c| c.status())),
        sdk_session_id: cap.fields.session_id.clone(),
        agent: rec.facts.agent.clone(),
        touched: rec.facts.touched.clone(),
        git_commit_sha: cap.user_head.commit.map(|c| c.to_string()),
        head_ref: cap.user_head.branch.clone(),
        artifacts: cap.artifacts.to_vec(),
        inputs_hash: rec.facts.inputs_hash.clone().or_else(|| {
            continues
                .or(attempt_of)
                .and_then(|c| c.line().inputs_hash.clone())
        }),
        idempotency_key: rec.facts.idempotency_key.clone().or_else(|| {
            continues
                .or(attempt_of)
                .and_then(|c| c.line().idempotency_key.clone())
        }),
        rewound_from: origin(true),
        forked_from: origin(false),
        excluded: cap.excluded.to_vec(),
        started_at: rec
            .started_at
            .or_else(|| (rec.event == Event::Begin).then_some(now))
            .or(attempt_started),
        finished_at: (rec.event == Event::Finish).then_some(now),
        ts: now,
        writer: cap.writer.to_string(),
        next_action: rec.facts.next_action.clone(),
        meta: cap.fields.meta.clone(),
        message: cap.fields.message.clone(),
        label: cap.fields.label.clone(),
        workflow_digest: rec.workflow_digest.clone(),
        run_root,
        exit_code: rec.facts.exit_code,
        picked_from: rec.facts.picked_from.clone(),
        usage: rec.facts.usage.clone(),
    }
}

/// First parent: the previous checkpoint of the run (for a run's first checkpoint, the
/// checkpoint it was rewound/forked from, or the user's HEAD commit). Second parent: the
/// user's HEAD commit when it is not already the first (a root's first parent already
/// reaches its commit).
pub(super) fn parents(rec: &Record, ctx: &Context, user_head: &UserHead) -> Vec<ObjectId> {
    let first = match (&ctx.prev, &rec.origin) {
        (Some(p), _) => Some(p.id()),
        (None, Some(o)) => Some(o.checkpoint),
        (None, None) => user_head.commit,
    };
    let mut parents: Vec<ObjectId> = first.into_iter().collect();
    if let Some(h) = user_head.commit
        && Some(h) != first
        && !(ctx.prev.is_none() && rec.origin.is_some())
    {
        parents.push(h);
    }
    parents
}

/// Whether `line` (with `tree`) only repeats the tip: then nothing is written. No touched
/// paths and no usage are no news: a turn repeated after the previous one took them is the
/// same state.
pub(super) fn repeats_tip(
    rec: &Record,
    ctx: &Context,
    tree: ObjectId,
    line: &CheckpointLine,
) -> bool {
    ctx.prev.as_ref().is_some_and(|p| {
        let mut compared = line.clone();
        if compared.touched.is_empty() {
            compared.touched = p.line().touched.clone();
        }
        if compared.usage.is_empty() {
            compared.usage = p.line().usage.clone();
        }
        !rec.force
            && rec.facts.extra_lines.is_empty()
            && p.commit.tree == tree
            && p.line().git_commit_sha == line.git_commit_sha
            && p.line().same_facts(&compared)
    })
}

/// `run step #seq event`, for reflog messages and notes commits.
pub(super) fn describe(line: &CheckpointLine) -> String {
    format!(
        "{} {} #{} {}",
        line.run,
        line.step.as_deref().unwrap_or("-"),
        line.seq,
        line.event
    )
}

/// Subject, optional body, and the identity trailers.
pub(super) fn commit_message(line: &CheckpointLine) -> String {
    let mut subject = format!("agent-rewind: {} {}", line.run, line.event);
    if let Some(s) = &line.step {
        subject.push_str(&format!(" {s}"));
    }
    if let Some(st) = line.status {
        subject.push_str(&format!(" ({st})"));
    }
    let trailers = Trailers {
        run: Some(line.run.clone()),
        step: line.step.clone(),
        attempt: Some(line.attempt),
        event: Some(line.event.to_string()),
        schema: Some(TRAILER_SCHEMA),
    };
    match &line.message {
        Some(m) if !m.trim().is_empty() => {
            format!("{subject}\n\n{}\n\n{}", m.trim(), trailers.render())
        }
        _ => format!("{subject}\n\n{}", trailers.render()),
    }
}

/// The record's free-text fields with secret-looking values redacted, and the names of the
/// fields that were.
pub(super) struct RedactedFields {
    pub meta: BTreeMap<String, String>,
    pub message: Option<String>,
    pub session_id: Option<String>,
    pub label: Option<String>,
    pub redacted: Vec<String>,
}

/// Redact secret-looking values in meta, message, session id and label.
pub(super) fn redact_fields(rec: &Record) -> RedactedFields {
    let mut redacted = vec![];
    let meta = rec
        .facts
        .meta
        .iter()
        .map(|(k, v)| {
            let (v, hit) = redact::redact_value(k, v);
            if hit {
                redacted.push(format!("meta.{k}"));
            }
            (k.clone(), v)
        })
        .collect();
    let mut one = |field: &str, v: &Option<String>| {
        v.as_ref().map(|v| {
            let (v, hit) = redact::redact_value(field, v);
            if hit {
                redacted.push(field.to_string());
            }
            v
        })
    };
    let message = one("message", &rec.facts.message);
    let session_id = one("sdk_session_id", &rec.facts.session_id);
    let label = one("label", &rec.label);
    RedactedFields {
        meta,
        message,
        session_id,
        label,
        redacted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Checkpoint;
    use crate::model::{Note, NoteLine, Status};
    use crate::store::{CommitInfo, Trailers};
    use agent_rewind_core::ids::{RunId, StepName};

    fn oid(n: u8) -> ObjectId {
        ObjectId::from_bytes_or_panic(&[n; 20])
    }

    /// A checkpoint of `step` (attempt, seq, status) whose commit id is `oid(id)`.
    fn checkpoint(id: u8, step: &str, attempt: u32, seq: u64, status: Status) -> Checkpoint {
        let rec = Record::new(RunId::new("r1").unwrap(), Event::Begin);
        let ctx = Context {
            head: None,
            notes_tip: None,
            step_tip: None,
            step_ref: None,
            lagging: None,
            prev: None,
            step_prev: None,
        };
        let mut line = checkpoint_line(&rec, &ctx, &captured(&fields(), &head(None)));
        line.step = Some(step.into());
        line.attempt = attempt;
        line.seq = seq;
        line.status = Some(status);
        line.inputs_hash = Some("h1".into());
        Checkpoint {
            commit: CommitInfo {
                id: oid(id),
                tree: oid(100),
                parents: vec![],
                message: String::new(),
                trailers: Trailers::default(),
                time: 0,
            },
            note: Note {
                lines: vec![NoteLine::Checkpoint(Box::new(line))],
            },
        }
    }

    fn fields() -> RedactedFields {
        RedactedFields {
            meta: BTreeMap::new(),
            message: None,
            session_id: None,
            label: None,
            redacted: vec![],
        }
    }

    fn head(commit: Option<u8>) -> UserHead {
        UserHead {
            commit: commit.map(oid),
            branch: Some("refs/heads/main".into()),
        }
    }

    fn captured<'a>(fields: &'a RedactedFields, head: &'a UserHead) -> Captured<'a> {
        Captured {
            excluded: &[],
            artifacts: &[],
            user_head: head,
            fields,
            now: Timestamp::parse("2026-12-01T10:00:00.000Z").unwrap(),
            writer: "w@h",
        }
    }

    fn ctx_after(tip: Checkpoint, step_prev: Option<Checkpoint>) -> Context {
        Context {
            head: Some(tip.id()),
            notes_tip: None,
            step_tip: step_prev.as_ref().map(Checkpoint::id),
            step_ref: step_prev.as_ref().map(Checkpoint::id),
            lagging: None,
            prev: Some(tip),
            step_prev,
        }
    }

    fn record(event: Event, step: &str) -> Record {
        let mut rec = Record::new(RunId::new("r1").unwrap(), event);
        rec.step = Some(StepName::new(step).unwrap());
        rec
    }

    #[test]
    fn a_begin_opens_a_new_attempt_and_a_commit_continues_it() {
        let tip = checkpoint(1, "plan", 2, 4, Status::Running);
        let (f, h) = (fields(), head(Some(9)));
        let ctx = ctx_after(tip.clone(), Some(tip.clone()));

        let begin = checkpoint_line(&record(Event::Begin, "plan"), &ctx, &captured(&f, &h));
        assert_eq!((begin.attempt, begin.seq), (3, 5));
        assert_eq!(begin.started_at, Some(captured(&f, &h).now));
        assert_eq!(
            begin.inputs_hash, None,
            "a new attempt carries no old input hash"
        );

        let commit = checkpoint_line(&record(Event::Commit, "plan"), &ctx, &captured(&f, &h));
        assert_eq!(commit.attempt, 2);
        assert_eq!(commit.status, Some(Status::Running), "status carried over");
        assert_eq!(commit.inputs_hash.as_deref(), Some("h1"));
        assert_eq!(
            commit.run_root.as_deref(),
            Some(oid(1).to_string().as_str())
        );

        let finish = checkpoint_line(&record(Event::Finish, "plan"), &ctx, &captured(&f, &h));
        assert_eq!(finish.status, None, "a finish states its own status");
        assert_eq!(finish.finished_at, Some(captured(&f, &h).now));
    }

    #[test]
    fn parents_are_the_chain_then_the_users_commit() {
        let tip = checkpoint(1, "plan", 1, 0, Status::Completed);
        let ctx = ctx_after(tip, None);
        let rec = record(Event::Manual, "test");
        assert_eq!(parents(&rec, &ctx, &head(Some(9))), vec![oid(1), oid(9)]);
        assert_eq!(parents(&rec, &ctx, &head(None)), vec![oid(1)]);
        let fresh = Context {
            head: None,
            notes_tip: None,
            step_tip: None,
            step_ref: None,
            lagging: None,
            prev: None,
            step_prev: None,
        };
        assert_eq!(parents(&rec, &fresh, &head(Some(9))), vec![oid(9)]);
    }

    #[test]
    fn a_repeat_of_the_tip_is_recognised_unless_forced() {
        let (f, h) = (fields(), head(Some(9)));
        let rec = record(Event::Manual, "plan");
        let empty = Context {
            head: None,
            notes_tip: None,
            step_tip: None,
            step_ref: None,
            lagging: None,
            prev: None,
            step_prev: None,
        };
        let first = checkpoint_line(&rec, &empty, &captured(&f, &h));
        let mut tip = checkpoint(1, "plan", 1, 0, Status::Running);
        tip.note.lines = vec![NoteLine::Checkpoint(Box::new(first))];
        let ctx = ctx_after(tip, None);
        let again = checkpoint_line(&rec, &ctx, &captured(&f, &h));
        assert!(repeats_tip(&rec, &ctx, oid(100), &again));
        assert!(!repeats_tip(&rec, &ctx, oid(101), &again), "another tree");
        let mut forced = rec.clone();
        forced.force = true;
        assert!(!repeats_tip(&forced, &ctx, oid(100), &again));
    }
}
