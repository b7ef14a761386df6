//! One note of a checkpoint: its JSON Lines (`checkpoint`, `status`, `run-status`, `label`,
//! `approval`, `redaction`, `workflow`, and unknown types kept verbatim), why a line could
//! not be read, and the fold of the lines into the checkpoint's current state. Pure data;
//! nothing here touches git.

use super::*;

/// Type of the note line `step exit` appends to an attempt's `begin` checkpoint: its worker
/// was seen to exit (kept as an [`NoteLine::Other`] line; it never changes a status).
pub const WORKER_EXIT: &str = "worker-exit";
/// The `type` of the record an `undo` of a revert appends to the run: no longer reverted.
pub const REVERT_UNDONE: &str = "revert-undone";
/// The `type` of the record an `undo` of that undo appends: reverted again.
pub const REVERT_REDONE: &str = "revert-redone";

/// One line of a note body. Unknown types are kept verbatim so newer writers' lines survive.
#[derive(Debug, Clone, PartialEq)]
pub enum NoteLine {
    Checkpoint(Box<CheckpointLine>),
    /// A later status for the checkpoint's step (e.g. a gate passed, a step reconciled).
    Status {
        status: Status,
        ts: Timestamp,
        reason: Option<String>,
    },
    /// A run-level status (`archived`, `active`, `deleted`), recorded on the run's root note.
    RunStatus {
        status: String,
        ts: Timestamp,
        reason: Option<String>,
    },
    /// A new label for the run, recorded on the run's root note.
    Label {
        label: String,
        ts: Timestamp,
    },
    /// An approval or rejection bound to this exact checkpoint.
    Approval {
        approved: bool,
        by: String,
        ts: Timestamp,
        message: Option<String>,
    },
    /// Which fields of this note had secret-looking values replaced.
    Redaction {
        fields: Vec<String>,
        ts: Timestamp,
    },
    /// The workflow file a run executes, stored on the run's root note so `resume` works
    /// without the file (another machine, a deleted file). The newest line wins.
    Workflow(Box<StoredWorkflow>),
    Other(serde_json::Value),
}

impl NoteLine {
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        let mut v = match self {
            NoteLine::Checkpoint(c) => {
                let mut v = serde_json::to_value(c).expect("serializable");
                v.as_object_mut()
                    .expect("object")
                    .insert("type".into(), json!("checkpoint"));
                return v;
            }
            NoteLine::Status { status, ts, reason } => {
                json!({"type": "status", "status": status, "ts": ts, "reason": reason})
            }
            NoteLine::RunStatus { status, ts, reason } => {
                json!({"type": "run-status", "status": status, "ts": ts, "reason": reason})
            }
            NoteLine::Label { label, ts } => json!({"type": "label", "label": label, "ts": ts}),
            NoteLine::Approval {
                approved,
                by,
                ts,
                message,
            } => json!({
                "type": "approval", "decision": if *approved { "approved" } else { "rejected" },
                "by": by, "ts": ts, "message": message}),
            NoteLine::Redaction { fields, ts } => {
                json!({"type": "redaction", "fields": fields, "ts": ts})
            }
            NoteLine::Workflow(w) => json!({
                "type": "workflow", "name": w.name, "path": w.path, "digest": w.digest,
                "text": w.text, "ts": w.ts}),
            NoteLine::Other(v) => return v.clone(),
        };
        if let Some(o) = v.as_object_mut() {
            o.retain(|_, v| !v.is_null());
        }
        v
    }

    /// One line of JSON, no trailing newline.
    pub fn to_line(&self) -> String {
        serde_json::to_string(&self.to_json()).expect("serializable")
    }

    pub fn parse(line: &str) -> Result<NoteLine, NoteLineError> {
        if is_plain_checkpoint(line)
            && let Ok(c) = serde_json::from_str::<CheckpointLine>(line)
        {
            return Ok(NoteLine::Checkpoint(Box::new(c)));
        }
        Self::parse_value(line)
    }

    /// [`NoteLine::parse`] through a `serde_json::Value`: every line's type and errors.
    fn parse_value(line: &str) -> Result<NoteLine, NoteLineError> {
        let v: serde_json::Value = serde_json::from_str(line).map_err(NoteLineError::NotJson)?;
        let ty = v
            .get("type")
            .and_then(|t| t.as_str())
            .ok_or(NoteLineError::NoType)?
            .to_string();
        let s = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
        let req = |k: &'static str| {
            s(k).ok_or_else(|| NoteLineError::Missing {
                ty: ty.clone(),
                field: k,
            })
        };
        let bad = |field: &'static str, reason: String| NoteLineError::Invalid {
            ty: ty.clone(),
            field,
            reason,
        };
        let ts = || Timestamp::parse(&req("ts")?).map_err(|e| bad("ts", e.message));
        Ok(match ty.as_str() {
            "checkpoint" => NoteLine::Checkpoint(Box::new(
                serde_json::from_value(v).map_err(NoteLineError::Checkpoint)?,
            )),
            "status" => NoteLine::Status {
                status: Status::parse(&req("status")?).map_err(|e| bad("status", e.message))?,
                ts: ts()?,
                reason: s("reason"),
            },
            "run-status" => NoteLine::RunStatus {
                status: req("status")?,
                ts: ts()?,
                reason: s("reason"),
            },
            "label" => NoteLine::Label {
                label: req("label")?,
                ts: ts()?,
            },
            "approval" => NoteLine::Approval {
                approved: match req("decision")?.as_str() {
                    "approved" => true,
                    "rejected" => false,
                    other => return Err(bad("decision", format!("unknown decision {other:?}"))),
                },
                by: req("by")?,
                ts: ts()?,
                message: s("message"),
            },
            "redaction" => NoteLine::Redaction {
                fields: v
                    .get("fields")
                    .and_then(|f| f.as_array())
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default(),
                ts: ts()?,
            },
            "workflow" => NoteLine::Workflow(Box::new(StoredWorkflow {
                name: s("name").unwrap_or_default(),
                path: req("path")?,
                digest: req("digest")?,
                text: req("text")?,
                ts: ts()?,
            })),
            _ => NoteLine::Other(v),
        })
    }
}

/// Why one line of a note could not be read.
#[derive(Debug)]
pub enum NoteLineError {
    NotJson(serde_json::Error),
    NoType,
    Missing {
        ty: String,
        field: &'static str,
    },
    Invalid {
        ty: String,
        field: &'static str,
        reason: String,
    },
    Checkpoint(serde_json::Error),
}

impl std::fmt::Display for NoteLineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoteLineError::NotJson(e) => write!(f, "not JSON: {e}"),
            NoteLineError::NoType => f.write_str("a line without a \"type\""),
            NoteLineError::Missing { ty, field } => write!(f, "a {ty} line without {field:?}"),
            NoteLineError::Invalid { ty, field, reason } => {
                write!(f, "a {ty} line with a bad {field:?}: {reason}")
            }
            NoteLineError::Checkpoint(e) => write!(f, "bad checkpoint line: {e}"),
        }
    }
}

impl std::error::Error for NoteLineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NoteLineError::NotJson(e) | NoteLineError::Checkpoint(e) => Some(e),
            _ => None,
        }
    }
}

/// Why a note could not be read: the first bad line (1-based) and what is wrong with it.
#[derive(Debug)]
pub struct NoteError {
    pub line: usize,
    pub error: NoteLineError,
}

impl std::fmt::Display for NoteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.error)
    }
}

impl std::error::Error for NoteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl From<NoteError> for crate::Error {
    fn from(e: NoteError) -> Self {
        crate::Error::corrupt(e.to_string()).with_source(e)
    }
}

/// A parsed note: all its lines, folded on demand.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Note {
    pub lines: Vec<NoteLine>,
}

/// Whether `line` is a checkpoint line that can be read straight into its struct (what
/// [`NoteLine::parse`] would get through a `serde_json::Value`, without building one: at
/// 100,000 runs that was a tenth of a first `list`). True only when `"type"` occurs once, as
/// the object's first or last member, with the value `"checkpoint"`: then it is the object's
/// own `type` and the struct (which ignores it) sees every other member as the general path
/// would. Anything else, or a line the struct rejects, takes the general path and its errors.
fn is_plain_checkpoint(line: &str) -> bool {
    const KEY: &str = "\"type\"";
    let Some(at) = line.find(KEY) else {
        return false;
    };
    let (before, after) = (&line[..at], &line[at + KEY.len()..]);
    if after.contains(KEY) {
        return false;
    }
    let Some(value) = after
        .trim_start()
        .strip_prefix(':')
        .and_then(|v| v.trim_start().strip_prefix("\"checkpoint\""))
    else {
        return false;
    };
    let first = before.trim() == "{";
    let last = value
        .trim_start()
        .strip_prefix('}')
        .is_some_and(|r| r.trim().is_empty())
        && before.trim_end().ends_with(',');
    first || last
}

impl Note {
    /// Parse a JSON Lines body. Empty lines are skipped; any malformed line fails the note.
    pub fn parse(body: &str) -> Result<Note, NoteError> {
        let mut lines = Vec::new();
        for (i, l) in body.lines().enumerate() {
            if l.trim().is_empty() {
                continue;
            }
            lines.push(NoteLine::parse(l).map_err(|error| NoteError { line: i + 1, error })?);
        }
        Ok(Note { lines })
    }

    pub fn to_body(&self) -> String {
        let mut s = String::new();
        for l in &self.lines {
            s.push_str(&l.to_line());
            s.push('\n');
        }
        s
    }

    /// The checkpoint line (the first one, if a merge ever produced two).
    pub fn checkpoint(&self) -> Option<&CheckpointLine> {
        self.lines.iter().find_map(|l| match l {
            NoteLine::Checkpoint(c) => Some(c.as_ref()),
            _ => None,
        })
    }

    /// The step status after folding later `status` lines by timestamp.
    pub fn effective_status(&self) -> Option<Status> {
        let base = self.checkpoint().and_then(|c| c.status.map(|s| (c.ts, s)));
        self.lines
            .iter()
            .filter_map(|l| match l {
                NoteLine::Status { status, ts, .. } => Some((*ts, *status)),
                _ => None,
            })
            .chain(base)
            .max_by(|a, b| a.0.cmp(&b.0))
            .map(|(_, s)| s)
    }

    /// The latest run-level status recorded on this (root) note, with its time.
    pub fn run_status(&self) -> Option<(Timestamp, &str)> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                NoteLine::RunStatus { status, ts, .. } => Some((*ts, status.as_str())),
                _ => None,
            })
            .max_by(|a, b| a.0.cmp(&b.0))
    }

    /// Whether this (root) note says the run completed, and nothing was recorded after that
    /// (`tip_ts`: the time of the run's newest checkpoint): a run status holds until a newer
    /// checkpoint is appended.
    pub fn completed_as_of(&self, tip_ts: Timestamp) -> bool {
        matches!(self.run_status(), Some((ts, "completed")) if ts >= tip_ts)
    }

    /// The run's label: the latest `label` line, else the checkpoint line's label.
    pub fn label(&self) -> Option<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                NoteLine::Label { label, ts } => Some((*ts, label.as_str())),
                _ => None,
            })
            .max_by(|a, b| a.0.cmp(&b.0))
            .map(|(_, s)| s)
            .or_else(|| self.checkpoint().and_then(|c| c.label.as_deref()))
    }

    /// Whether a `revert` record took back what this checkpoint's run had done, and no
    /// `revert-undone` record (an `undo` of it) came after it; a `revert-redone` record (an
    /// undo of that undo) makes it reverted again.
    pub fn reverted(&self) -> bool {
        let mut reverted = false;
        for l in &self.lines {
            if let NoteLine::Other(v) = l {
                match v.get("type").and_then(|t| t.as_str()) {
                    Some("revert" | REVERT_REDONE) => reverted = true,
                    Some(REVERT_UNDONE) => reverted = false,
                    _ => {}
                }
            }
        }
        reverted
    }

    /// Whether a `worker-exit` record (`step exit`) says the worker of this attempt exited.
    pub fn worker_exited(&self) -> bool {
        self.lines.iter().any(|l| {
            matches!(l, NoteLine::Other(v) if v.get("type").and_then(|t| t.as_str()) == Some(WORKER_EXIT))
        })
    }

    /// The newest workflow stored on this (root) note.
    pub fn workflow(&self) -> Option<&StoredWorkflow> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                NoteLine::Workflow(w) => Some(w.as_ref()),
                _ => None,
            })
            .max_by(|a, b| a.ts.cmp(&b.ts))
    }

    pub fn approvals(&self) -> impl Iterator<Item = &NoteLine> {
        self.lines
            .iter()
            .filter(|l| matches!(l, NoteLine::Approval { .. }))
    }

    /// The newest approval record: (approved, by).
    pub fn decision(&self) -> Option<(bool, String)> {
        self.approvals()
            .filter_map(|l| match l {
                NoteLine::Approval {
                    approved, by, ts, ..
                } => Some((*ts, *approved, by.clone())),
                _ => None,
            })
            .max_by(|a, b| a.0.cmp(&b.0))
            .map(|(_, a, by)| (a, by))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checkpoint_fast_path_reads_what_the_general_path_reads() {
        let ours = NoteLine::Checkpoint(Box::new(line())).to_line();
        let seeded = r#"{"type": "checkpoint", "schema": "agent-rewind/checkpoint/v1", "run": "s1", "step": null, "attempt": 1, "seq": 0, "event": "start", "ts": "2026-01-01T00:00:00.000Z", "writer": "w"}"#;
        let inner = ours.replacen('{', r#"{"type":"checkpoint","#, 1);
        for (l, fast) in [
            (ours.as_str(), true),
            (seeded, true),
            // `type` twice, nested, misplaced or another value: the general path decides.
            (inner.as_str(), false),
            (&ours.replace("\"checkpoint\"}", "\"status\"}"), false),
            (
                &ours.replace(r#""run":"r1""#, r#""x":{"type":"checkpoint"},"run":"r1""#),
                false,
            ),
            (&seeded.replace("\"type\": \"checkpoint\", ", ""), false),
            (
                &seeded.replace(r#""seq": 0"#, r#""seq": 0, "seq": 1"#),
                true,
            ),
            (&seeded.replace(r#""seq": 0"#, r#""seq": "x""#), true),
            (
                &seeded.replace(
                    r#""writer": "w"}"#,
                    r#""writer": "w", "x": {"type": "checkpoint"}}"#,
                ),
                false,
            ),
        ] {
            assert_eq!(is_plain_checkpoint(l), fast, "{l}");
            let (a, b) = (NoteLine::parse(l), NoteLine::parse_value(l));
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{l}");
        }
    }

    fn line() -> CheckpointLine {
        CheckpointLine {
            schema: CHECKPOINT_SCHEMA.into(),
            run: "r1".into(),
            step: Some("plan".into()),
            attempt: 1,
            seq: 2,
            event: Event::Finish,
            step_kind: Some(StepKind::Agent),
            status: Some(Status::Completed),
            sdk_session_id: None,
            agent: None,
            touched: vec![],
            git_commit_sha: None,
            head_ref: None,
            artifacts: vec![],
            inputs_hash: None,
            idempotency_key: None,
            rewound_from: None,
            forked_from: None,
            excluded: vec![],
            started_at: None,
            finished_at: None,
            ts: "2026-01-01T00:00:00.000Z".parse().unwrap(),
            writer: "me@host".into(),
            next_action: None,
            meta: BTreeMap::new(),
            message: None,
            label: None,
            workflow_digest: None,
            run_root: None,
            exit_code: None,
            picked_from: None,
            usage: Usage::default(),
        }
    }

    #[test]
    fn recording_agent_falls_back_to_meta() {
        let mut l = line();
        assert_eq!(l.recording_agent(), None);
        l.meta.insert("agent".into(), "claude".into());
        assert_eq!(l.recording_agent(), Some("claude"));
        l.agent = Some("codex".into());
        assert_eq!(l.recording_agent(), Some("codex"));
    }

    #[test]
    fn round_trip_and_fold() {
        let note = Note {
            lines: vec![
                NoteLine::Checkpoint(Box::new(line())),
                NoteLine::Status {
                    status: Status::Failed,
                    ts: "2026-01-02T00:00:00.000Z".parse().unwrap(),
                    reason: None,
                },
                NoteLine::Other(serde_json::json!({"type": "future", "x": 1})),
            ],
        };
        let body = note.to_body();
        assert_eq!(body.lines().count(), 3);
        assert!(body.lines().all(|l| l.contains("\"type\":")));
        let back = Note::parse(&body).unwrap();
        assert_eq!(back, note);
        assert_eq!(back.effective_status(), Some(Status::Failed));
        assert_eq!(back.checkpoint().unwrap().step.as_deref(), Some("plan"));
    }

    #[test]
    fn malformed_lines_are_reported() {
        assert!(Note::parse("{not json").is_err());
        assert!(Note::parse("{\"x\":1}").is_err());
        assert!(Note::parse("{\"type\":\"checkpoint\"}").is_err());
    }
}
