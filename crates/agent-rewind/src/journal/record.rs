//! What a writer asks the journal to record ([`Record`]) and what was recorded
//! ([`Recorded`]). Plain data: no I/O.

use crate::model::{
    CheckpointLine, Event, Excluded, LineageLink, NoteLine, PickedFrom, Status, StepKind,
};
use crate::store::{ObjectId, UserHead};
use agent_rewind_core::ids::{RunId, StepName};
use std::collections::BTreeMap;

/// Where the checkpoint's tree comes from.
#[derive(Debug, Clone)]
pub enum TreeSource {
    /// Snapshot the current worktree.
    Worktree,
    /// A tree given by the caller (e.g. the checkpoint a rewind starts from).
    Given {
        tree: ObjectId,
        excluded: Vec<Excluded>,
    },
}

/// The run a new run starts from (rewind/fork).
#[derive(Debug, Clone)]
pub struct Origin {
    pub link: LineageLink,
    pub rewound: bool,
    /// The checkpoint commit the new run's root has as first parent.
    pub checkpoint: ObjectId,
    /// Step refs the new run inherits (created in the same transaction).
    pub inherited_steps: Vec<(StepName, ObjectId)>,
}

/// The facts of a step that a checkpoint records, and the conditions it is written under.
/// One struct for every writer: [`Record`] holds it, and the `checkpoint` operation takes it
/// as it is (its options are these facts plus the few things only it decides).
#[derive(Debug, Clone, Default)]
pub struct StepFacts {
    pub kind: Option<StepKind>,
    pub status: Option<Status>,
    pub session_id: Option<String>,
    /// The coding agent whose session `session_id` is (`agent` on the line).
    pub agent: Option<String>,
    /// Paths (relative to the worktree root) the agent edited since its previous turn
    /// (`touched` on the line).
    pub touched: Vec<String>,
    /// Paths (inside the snapshot) or URIs (`scheme://…`).
    pub artifacts: Vec<String>,
    pub meta: BTreeMap<String, String>,
    pub message: Option<String>,
    pub exit_code: Option<i32>,
    pub inputs_hash: Option<String>,
    pub idempotency_key: Option<String>,
    pub next_action: Option<String>,
    /// More note lines written with the checkpoint line, in the same commit (e.g. the
    /// `rewrite` record of the post-rewrite hook). A record with any is never `unchanged`.
    pub extra_lines: Vec<NoteLine>,
    /// Write only while the step's ref still points here (the tip the caller validated
    /// against, as an external worker's report does); otherwise fail with a conflict,
    /// nothing written.
    pub expect_step_tip: Option<ObjectId>,
    /// Write only while the user's HEAD is still this commit once the worktree is
    /// snapshotted (a post-commit checkpoint taken after the commit returned, in the
    /// background); otherwise fail with a conflict, nothing written.
    pub expect_user_head: Option<ObjectId>,
    /// The user's HEAD to record instead of the current one (a rewind's root records the
    /// commit the new run's branch starts at; a background checkpoint records the commit
    /// HEAD has moved on from by commits on top of it).
    pub user_head: Option<UserHead>,
    /// The run and checkpoints a `pick` brought the changes from (`picked_from`).
    pub picked_from: Option<PickedFrom>,
    /// The tokens an agent's turn used, per model (`usage`).
    pub usage: crate::model::Usage,
}

/// What to record.
#[derive(Debug, Clone)]
pub struct Record {
    pub run: RunId,
    pub step: Option<StepName>,
    pub event: Event,
    /// The step's facts and the conditions the write is made under.
    pub facts: StepFacts,
    pub label: Option<String>,
    pub workflow_digest: Option<String>,
    pub started_at: Option<agent_rewind_core::time::Timestamp>,
    pub tree: TreeSource,
    pub origin: Option<Origin>,
    /// The run must not exist yet (start, rewind, fork).
    pub new_run: bool,
    /// Write even when identical to the tip.
    pub force: bool,
    /// The line's `ts` instead of now (an imported record says when its facts happened:
    /// the commit whose lines another tool attributed).
    pub at: Option<agent_rewind_core::time::Timestamp>,
}

impl Record {
    pub fn new(run: RunId, event: Event) -> Self {
        Record {
            run,
            step: None,
            event,
            facts: StepFacts::default(),
            label: None,
            workflow_digest: None,
            started_at: None,
            tree: TreeSource::Worktree,
            origin: None,
            new_run: false,
            force: false,
            at: None,
        }
    }
}

/// What was recorded.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub checkpoint: ObjectId,
    pub line: CheckpointLine,
    /// True when the tip already recorded exactly this and nothing was written.
    pub unchanged: bool,
    /// Fields whose values were redacted.
    pub redacted: Vec<String>,
}

impl Recorded {
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(&self.line).expect("serializable");
        let o = v.as_object_mut().expect("object");
        o.insert("checkpoint".into(), self.checkpoint.to_string().into());
        o.insert("unchanged".into(), self.unchanged.into());
        if !self.redacted.is_empty() {
            o.insert("redacted".into(), self.redacted.clone().into());
        }
        v
    }
}
