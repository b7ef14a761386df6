//! The data of the format: checkpoint lines and the other JSON Lines record types, step kinds,
//! statuses, events, and the fold of a note's lines into the current state of a checkpoint.
//!
//! Pure data and pure functions: serialization shape is the contract of docs/FORMAT.md, so
//! field names here must not change without a schema bump. Nothing here touches git.
//! A note's lines and their fold live in `note`.

use agent_rewind_core::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Schema id of a checkpoint line.
pub const CHECKPOINT_SCHEMA: &str = "agent-rewind/checkpoint/v1";
/// Value of the `Agent-Schema:` trailer.
pub const TRAILER_SCHEMA: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepKind {
    Agent,
    Deterministic,
    Effect,
    Gate,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    Running,
    AwaitingApproval,
    Completed,
    Failed,
    Interrupted,
    Skipped,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Event {
    Start,
    Root,
    Begin,
    Finish,
    Commit,
    Turn,
    Manual,
    Steer,
}

macro_rules! text_enum {
    ($ty:ty, $what:literal, [$($v:ident = $s:literal),* $(,)?]) => {
        impl $ty {
            pub fn as_str(&self) -> &'static str {
                match self { $(Self::$v => $s),* }
            }
            pub fn parse(s: &str) -> crate::Result<Self> {
                match s {
                    $($s => Ok(Self::$v),)*
                    _ => Err(crate::Error::usage(format!(
                        concat!("unknown ", $what, " {:?} (expected one of: {})"),
                        s, [$($s),*].join(", ")))),
                }
            }
        }
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { f.write_str(self.as_str()) }
        }
    };
}
text_enum!(
    StepKind,
    "step kind",
    [
        Agent = "agent",
        Deterministic = "deterministic",
        Effect = "effect",
        Gate = "gate"
    ]
);
text_enum!(
    Status,
    "status",
    [
        Pending = "pending",
        Running = "running",
        AwaitingApproval = "awaiting_approval",
        Completed = "completed",
        Failed = "failed",
        Interrupted = "interrupted",
        Skipped = "skipped"
    ]
);
text_enum!(
    Event,
    "event",
    [
        Start = "start",
        Root = "root",
        Begin = "begin",
        Finish = "finish",
        Commit = "commit",
        Turn = "turn",
        Manual = "manual",
        Steer = "steer"
    ]
);

/// Where a run came from: `{ "run", "step", "checkpoint" }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineageLink {
    pub run: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    pub checkpoint: String,
}

/// Where a `pick` checkpoint's changes came from: `{ "run", "step", "from", "to" }`, the
/// changes of `run` between its checkpoints `from` and `to` (a step's latest attempt when
/// `step` is set). A reader that does not know the field ignores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PickedFrom {
    pub run: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// The checkpoint holding the state before the picked changes.
    pub from: String,
    /// The checkpoint holding the state the picked changes left.
    pub to: String,
}

/// An artifact: a path in the snapshot (with its blob id) or an external URI with a digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// A path the snapshot left out, and why (defined by the snapshot that produces it).
pub use agent_rewind_store::snapshot::Excluded;

/// The `checkpoint` line of a note (schema `agent-rewind/checkpoint/v1`).
///
/// Fields added after the first version of the line (documented in docs/FORMAT.md): `run_root`
/// (commit of the run's seq-0 checkpoint, so run-level facts are found in one read), `label`,
/// `workflow_digest`, `message`, `exit_code`, `tree`, `picked_from`, `usage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointLine {
    pub schema: String,
    pub run: String,
    #[serde(default)]
    pub step: Option<String>,
    pub attempt: u32,
    pub seq: u64,
    pub event: Event,
    #[serde(default)]
    pub step_kind: Option<StepKind>,
    #[serde(default)]
    pub status: Option<Status>,
    #[serde(default)]
    pub sdk_session_id: Option<String>,
    /// The coding agent that recorded this checkpoint (`claude`, `codex`, `gemini`,
    /// `cursor`, `opencode`, `qwen`, `copilot`, `pi`), whose conversation `sdk_session_id` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Paths (relative to the worktree root) the agent edited since its previous turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub touched: Vec<String>,
    #[serde(default)]
    pub git_commit_sha: Option<String>,
    #[serde(default)]
    pub head_ref: Option<String>,
    #[serde(default)]
    pub artifacts: Vec<Artifact>,
    #[serde(default)]
    pub inputs_hash: Option<String>,
    #[serde(default)]
    pub idempotency_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewound_from: Option<LineageLink>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<LineageLink>,
    #[serde(default)]
    pub excluded: Vec<Excluded>,
    #[serde(default)]
    pub started_at: Option<Timestamp>,
    #[serde(default)]
    pub finished_at: Option<Timestamp>,
    pub ts: Timestamp,
    pub writer: String,
    #[serde(default)]
    pub next_action: Option<String>,
    #[serde(default)]
    pub meta: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_root: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// On a `pick` checkpoint: the run and the checkpoints its changes came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub picked_from: Option<PickedFrom>,
    /// On a `turn`: the tokens its model calls used, per model (never any text).
    #[serde(default, skip_serializing_if = "Usage::is_empty")]
    pub usage: Usage,
}

impl CheckpointLine {
    /// The lineage link of a root checkpoint, and whether it was a rewind (`true`) or a fork.
    pub fn origin(&self) -> Option<(&LineageLink, bool)> {
        self.rewound_from
            .as_ref()
            .map(|l| (l, true))
            .or_else(|| self.forked_from.as_ref().map(|l| (l, false)))
    }

    /// The agent that recorded this checkpoint: the `agent` field, or `meta.agent` as
    /// written by `hook claude` before that field existed.
    pub fn recording_agent(&self) -> Option<&str> {
        self.agent
            .as_deref()
            .or_else(|| self.meta.get("agent").map(String::as_str))
    }

    /// Equal in everything a re-recording would repeat (ignores times and writer).
    pub fn same_facts(&self, other: &CheckpointLine) -> bool {
        let strip = |c: &CheckpointLine| {
            let mut c = c.clone();
            c.seq = 0;
            c.ts = Timestamp::EPOCH;
            c.started_at = None;
            c.finished_at = None;
            c.writer.clear();
            c.run_root = None;
            c
        };
        strip(self) == strip(other)
    }
}

/// A workflow file as stored with a run (the `workflow` note line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredWorkflow {
    /// The workflow's `[workflow] name`.
    pub name: String,
    /// Where the file was: relative to the worktree root when it was inside it, else
    /// absolute.
    pub path: String,
    /// `git-blob:<id>` of `text`.
    pub digest: String,
    /// The file's whole text.
    pub text: String,
    pub ts: Timestamp,
}

mod note;
pub use note::*;
pub mod usage;
pub use usage::{Tokens, Usage};
