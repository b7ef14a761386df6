//! A run's summary for `list` and `status`: from its HEAD's and root's notes, two note reads
//! whatever the run's length, the HEAD's found in the run's own notes when it is there.
//!
//! Read-only, like the rest of the catalog; never decides what is cached (that is `list`).

use super::{Catalog, run_root_id, short, step_tips};
use crate::model::{Note, Status};
use crate::store::ObjectId;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::{RunId, StepName};
use agent_rewind_core::time::Timestamp;
use serde::Serialize;
use std::collections::HashMap;

/// A run at a glance, for `list` and `status`.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct RunSummary {
    pub run: String,
    pub label: Option<String>,
    /// The run's state: `archived`, `completed`, or from the newest checkpoint: `running`,
    /// `failed`, `interrupted`, `awaiting_approval`, `approved`/`rejected` (a gate decided,
    /// not yet passed by `resume`), else `waiting` (open, nothing running: waiting for its
    /// next step). Whether it is this worktree's active run is [`Self::active`], apart.
    pub status: String,
    pub archived: bool,
    pub steps: Vec<String>,
    pub checkpoints: u64,
    pub last_activity: Timestamp,
    pub head: String,
    pub rewound_from: Option<crate::model::LineageLink>,
    pub forked_from: Option<crate::model::LineageLink>,
    /// The run's newest checkpoint was taken back by `revert` (the run has not gone on
    /// since).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reverted: bool,
    /// Length of the shortest prefix of `run` that names no other run of the repository
    /// (archived ones included): what a user can type instead of the whole id. Set by
    /// `list` and `status`; 0 when not computed.
    #[serde(default)]
    pub unique_prefix: usize,
    /// The active run of this worktree (the one `checkpoint` and `status` use), whatever its
    /// state; as `git branch` marks the branch checked out. Set by `list` and `status`.
    #[serde(default)]
    pub active: bool,
    /// The order of the steps: the run's workflow's, else the order they first happened
    /// (empty for a run of one step): `steps` follow it.
    #[serde(skip)]
    pub step_order: Vec<String>,
}

/// The state of a run that is open with nothing running: waiting for its next step.
pub const WAITING: &str = "waiting";

/// The step names of a stored workflow's text, in its order (empty when it does not parse).
pub fn workflow_step_order(text: &str) -> Vec<String> {
    let Ok(doc) = text.parse::<toml::Table>() else {
        return vec![];
    };
    doc.get("steps")
        .and_then(|s| s.as_array())
        .map(|steps| {
            steps
                .iter()
                .filter_map(|s| s.get("name")?.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// `steps` in the order of `order` (the workflow's), the steps it does not name after them
/// in the order they had.
pub fn order_steps<'a>(steps: &mut [String], order: impl IntoIterator<Item = &'a str>) {
    let rank: std::collections::HashMap<&str, usize> =
        order.into_iter().enumerate().map(|(i, s)| (s, i)).collect();
    if rank.is_empty() {
        return;
    }
    steps.sort_by_key(|s| rank.get(s.as_str()).copied().unwrap_or(usize::MAX));
}

impl Catalog<'_> {
    /// Summary of a run from its tip and root notes: two note reads, whatever the run's length.
    pub fn summary(&mut self, run: &RunId) -> Result<RunSummary> {
        let tip = self.require_run_tip(run)?;
        let steps = step_tips(self.store, run)?;
        self.summary_of(run, tip.id(), &tip.note, &steps)
    }

    /// [`Self::summary`] from refs already read (see `Store::run_ref_sets`).
    pub fn summary_from_refs(&mut self, refs: &crate::store::RunRefSet) -> Result<RunSummary> {
        let tip = self.checkpoint(refs.head)?;
        self.summary_of(&refs.run, tip.id(), &tip.note, &refs.steps)
    }

    /// [`Self::summary_from_refs`] for one run of many read in one pass, with the notes tip
    /// read with the others (`None`: no notes ref). No notes reader is kept afterwards, so
    /// summarizing 100,000 runs holds one notes tree at a time, not one per run.
    pub fn summary_at(
        &mut self,
        refs: &crate::store::RunRefSet,
        notes_tip: Option<ObjectId>,
    ) -> Result<RunSummary> {
        self.readers.clear();
        let tips = self.notes_tips.get_or_insert_with(HashMap::new);
        tips.clear();
        if let Some(tip) = notes_tip {
            tips.insert(refs.run.to_string(), tip);
        }
        let out = match self.own_note(&refs.run, refs.head)? {
            Some(tip) => self.summary_of(&refs.run, refs.head, &tip, &refs.steps),
            None => self.summary_from_refs(refs),
        };
        self.readers.clear();
        out
    }

    /// The note of `commit` in `run`'s own notes when it is a checkpoint of `run` (its
    /// checkpoint line names the run) and `commit` is a commit: what [`Self::checkpoint`]
    /// finds for a checkpoint of the run, without reading the commit's message for its
    /// `Agent-Run:` trailer (a third of a first `list` of 100,000 runs). `None`: not
    /// found so, for the general path to decide (and report).
    fn own_note(&mut self, run: &RunId, commit: ObjectId) -> Result<Option<Note>> {
        let Ok(Some(note)) = self.reader(run)?.note(commit, Note::parse) else {
            return Ok(None);
        };
        let own = note.checkpoint().is_some_and(|c| c.run == run.as_str());
        Ok((own && self.store.objects().is_commit(commit)).then_some(note))
    }

    /// `steps` (a run's without a workflow) in the order they first happened: the run's
    /// chain walked back from `head` through its root, and on into the run it came from
    /// while a step (one it inherited) has not been met. The order is only for showing:
    /// a chain that cannot be read further ends the walk, and a step never met keeps its
    /// place after the others.
    fn first_happened(&mut self, run: &RunId, head: ObjectId, steps: &[String]) -> Vec<String> {
        // For each step, how far back its oldest checkpoint was met.
        let mut oldest: HashMap<&str, usize> = HashMap::new();
        let mut past_own_root = false;
        let mut next = Some(head);
        let mut walked = 0usize;
        while let Some(id) = next.take() {
            let Ok(Some(cp)) = self.try_checkpoint(id) else {
                break;
            };
            let line = cp.line();
            let own = line.run == run.as_str();
            past_own_root |= !own;
            if let Some(name) = line
                .step
                .as_deref()
                .and_then(|s| steps.iter().find(|x| x.as_str() == s))
            {
                oldest.insert(name.as_str(), walked);
            }
            walked += 1;
            past_own_root |= own && line.seq == 0;
            if past_own_root && oldest.len() == steps.len() {
                break;
            }
            next = cp.commit.parents.first().copied();
        }
        let mut order: Vec<String> = steps.to_vec();
        order.sort_by_key(|s| {
            oldest
                .get(s.as_str())
                .map_or(usize::MAX, |at| usize::MAX - 1 - at)
        });
        order
    }

    fn summary_of(
        &mut self,
        run: &RunId,
        head: ObjectId,
        tip: &Note,
        steps: &[(StepName, ObjectId)],
    ) -> Result<RunSummary> {
        let line = tip.checkpoint().ok_or_else(|| {
            Error::corrupt(format!(
                "the note of checkpoint {} has no checkpoint line",
                short(head)
            ))
        })?;
        let root = match run_root_id(line, head)? {
            None => None,
            Some(id) => Some(match self.own_note(run, id)? {
                Some(note) => note,
                None => self.checkpoint(id)?.note,
            }),
        };
        let root_note = root.as_ref().unwrap_or(tip);
        let root_line = root_note.checkpoint().ok_or_else(|| {
            Error::corrupt("the run's root note has no checkpoint line".to_string())
        })?;
        let mut step_order = root_note
            .workflow()
            .map(|w| workflow_step_order(&w.text))
            .unwrap_or_default();
        let mut steps: Vec<String> = steps.iter().map(|(s, _)| s.to_string()).collect();
        if step_order.is_empty() && steps.len() > 1 {
            step_order = self.first_happened(run, head, &steps);
        }
        order_steps(&mut steps, step_order.iter().map(String::as_str));
        let recorded = root_note.run_status();
        let archived = matches!(recorded, Some((_, "archived")));
        let status = match recorded {
            Some((_, "archived")) => "archived".to_string(),
            // A run status holds until a newer checkpoint is appended; `active` (written
            // when a run is un-archived) only says "not archived": the tip decides.
            Some((ts, s)) if ts >= line.ts && s != "active" => s.to_string(),
            _ => match tip.effective_status() {
                // A gate decided but not yet passed by `resume`.
                Some(Status::AwaitingApproval) => match tip.decision() {
                    Some((true, _)) => "approved".into(),
                    Some((false, _)) => "rejected".into(),
                    None => Status::AwaitingApproval.to_string(),
                },
                Some(s @ (Status::Running | Status::Failed | Status::Interrupted)) => s.to_string(),
                _ => WAITING.into(),
            },
        };
        Ok(RunSummary {
            run: run.to_string(),
            label: root_note.label().map(str::to_string),
            status,
            archived,
            steps,
            checkpoints: line.seq + 1,
            last_activity: line.ts,
            head: head.to_string(),
            rewound_from: root_line.rewound_from.clone(),
            forked_from: root_line.forked_from.clone(),
            reverted: tip.reverted(),
            unique_prefix: 0,
            active: false,
            step_order,
        })
    }
}
