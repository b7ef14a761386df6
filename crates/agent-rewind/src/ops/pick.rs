//! `pick`: bring what a run did — the whole run, the latest attempt of one step, one
//! checkpoint, or the checkpoints after `@a` up to `@b` — onto this worktree, keeping the
//! work already here; no commit in between. Another worktree's attempt, an A/B fork or a
//! teammate's fetched run comes home this way.
//!
//! The dual of `revert`, through the same `threeway` machinery: per path, the state before
//! the range (the ancestor), the state the range left (the target) and the worktree (ours).
//! A path nobody here changed (ours = ancestor) takes the run's version; a path already as
//! the run left it stays; a path both changed is merged line by line (`git merge-file`). A
//! real conflict — the same lines, or a path the run changed and this worktree deleted,
//! created or changed — refuses the whole pick with nothing written, unless
//! `--conflict=markers` (where lines conflict).
//!
//! Like every writer of the worktree: refused during a merge/rebase or with `index.lock`
//! held, a backup first (so `undo` brings the state before back), files written atomically,
//! the index left as it was. The pick is recorded afterwards as a `manual` checkpoint of
//! step `pick` in the active run (started when there is none), carrying `picked_from` and a
//! `pick` record with each file's fate. It must never write a byte when the plan has a
//! conflict or for a dry run.

use super::checkpoint::{CheckpointOptions, checkpoint};
use super::threeway::range::{self, PathRule, Range};
use super::threeway::{self, Action, BackupFor, Direction, FilePlan, Missing};
use crate::catalog::Catalog;
use crate::journal::{StepFacts, active_run};
use crate::materialize::{self, Backup};
use crate::model::{Event, NoteLine, PickedFrom};
use crate::store::Store;
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::{CheckpointSpec, StepName};
use agent_rewind_core::time::Timestamp;
use serde::Serialize;

/// The step a pick is recorded under in the run it lands in.
pub const PICK_STEP: &str = "pick";

/// What `pick` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct PickOptions {
    /// Print the plan; write nothing.
    pub dry_run: bool,
    /// Write git-style conflict markers instead of refusing on conflicting lines.
    pub conflict_markers: bool,
    /// Who picks, for the record (default: the user's identity).
    pub by: Option<String>,
}

/// What to pick: one address (a run, a step, a checkpoint), or a range of one run.
#[derive(Debug, Clone)]
pub enum PickTarget {
    One(CheckpointSpec),
    /// `<run>@a..@b`: the changes after `a` up to `b`.
    Between(CheckpointSpec, CheckpointSpec),
}

#[derive(Debug, Clone, Serialize)]
pub struct PickOutcome {
    /// The run the changes came from.
    pub run: String,
    /// What was picked: `run`, `step <name>`, `checkpoint @<seq>` or `checkpoints @a..@b`.
    pub scope: String,
    /// The checkpoint holding the state before the changes (the ancestor).
    pub from: String,
    /// The checkpoint holding the state the changes left.
    pub to: String,
    pub rule: PathRule,
    pub files: Vec<FilePlan>,
    pub dry_run: bool,
    /// The backup taken before writing (none for a dry run or when nothing changed).
    pub backup: Option<Backup>,
    /// Submodules the range changed, left as they are (git leaves their worktrees alone).
    pub left_in_place: Vec<crate::model::Excluded>,
    /// The run the pick was recorded in, and its checkpoint (none when nothing was written).
    pub recorded_in: Option<String>,
    pub checkpoint: Option<String>,
}

/// A pick sets a path nobody here changed to the run's version; a path the run changed that
/// this worktree deleted, created or changed otherwise is a conflict, as for `git
/// cherry-pick`: taking it silently would lose the run's change or ours.
const PICK: Direction = Direction {
    reversed: false,
    applied: Action::Pick,
    already: "already as the run left it",
    missing: |m| match m {
        Missing::Ours => (Action::Conflict, "deleted here, changed by the run"),
        Missing::Ancestor => (Action::Conflict, "created here and by the run, differently"),
        Missing::Target => (Action::Conflict, "changed here, deleted by the run"),
    },
};

/// The address the user typed: `<run>`, `<run>/<step>`, `<run>@<n>`, a commit id, or
/// `<run>@<a>..@<b>` (the second side may leave the run out).
pub fn target(store: &Store, text: &str) -> Result<PickTarget> {
    let Some((left, right)) = text.split_once("..") else {
        return super::address::spec(store, Some(text)).map(PickTarget::One);
    };
    let from = super::address::spec(store, Some(left))?;
    let right = match (&from, right.starts_with('@')) {
        (CheckpointSpec::Seq(Some(run), _), true) => format!("{run}{right}"),
        _ => right.to_string(),
    };
    let to = super::address::spec(store, Some(&right))?;
    Ok(PickTarget::Between(from, to))
}

pub fn pick(store: &Store, target: &PickTarget, opts: &PickOptions) -> Result<PickOutcome> {
    materialize::ensure_safe_to_overwrite(store)?;
    let mut catalog = Catalog::new(store);
    let range = match target {
        PickTarget::One(spec) => range::resolve(&mut catalog, spec, "pick")?,
        PickTarget::Between(a, b) => range::between(&mut catalog, a, b, "pick")?,
    };
    let (rule, planned, what) =
        threeway::plan_range(store, &range, &PICK, "pick", opts.conflict_markers)?;
    let mut outcome = PickOutcome {
        run: range.run.to_string(),
        scope: range.scope.clone(),
        from: range.from.id().to_string(),
        to: range.to.id().to_string(),
        rule,
        files: planned.files.clone(),
        dry_run: opts.dry_run,
        backup: None,
        left_in_place: planned.left_in_place(),
        recorded_in: None,
        checkpoint: None,
    };
    if !opts.dry_run
        && let Some(refused) = threeway::refusal(&outcome.files, &what)
    {
        return Err(refused);
    }
    if opts.dry_run || planned.writes_nothing() {
        return Ok(outcome);
    }
    // The checkpoint goes onto the active run after the files: its refs' locks are checked
    // before the first byte.
    let refs_after = match active_run(store)? {
        Some(run) => vec![
            crate::store::layout::notes_ref(&run),
            crate::store::layout::run_head(&run),
        ],
        None => vec![],
    };
    let backup = threeway::back_up(
        store,
        &planned,
        &BackupFor {
            reason: &format!("pick {} of run {}", range.scope, range.run),
            reverts: None,
            refs_after: &refs_after,
        },
    )?;
    agent_rewind_core::crash_point!("pick:backed-up");
    threeway::write(store, &planned)?;
    agent_rewind_core::crash_point!("pick:files-written");
    outcome.backup = Some(backup);
    let recorded = record(store, &range, &outcome, opts.by.as_deref())?;
    outcome.recorded_in = Some(recorded.line.run.clone());
    outcome.checkpoint = Some(recorded.checkpoint.to_string());
    Ok(outcome)
}

/// Record the pick as a checkpoint of the active run: `picked_from`, and a `pick` record
/// with who, when and each file's fate.
fn record(
    store: &Store,
    range: &Range,
    out: &PickOutcome,
    by: Option<&str>,
) -> Result<crate::journal::Recorded> {
    let files: Vec<serde_json::Value> = out
        .files
        .iter()
        .map(|f| serde_json::to_value(f).expect("serializable"))
        .collect();
    let line = NoteLine::Other(serde_json::json!({
        "type": "pick",
        "run": out.run,
        "scope": out.scope,
        "from": out.from,
        "to": out.to,
        "rule": out.rule,
        "files": files,
        "backup": out.backup.as_ref().map(|b| b.commit.clone()),
        "by": by.map(str::to_string).unwrap_or_else(|| store.config().identity().unwrap_or_else(agent_rewind_core::time::writer_id)),
        "ts": Timestamp::now(),
    }));
    let step = range.scope.strip_prefix("step ").map(str::to_string);
    let outcome = checkpoint(
        store,
        &StepName::new(PICK_STEP)?,
        CheckpointOptions {
            event: Some(Event::Manual),
            facts: StepFacts {
                message: Some(format!("pick {} of run {}", out.scope, out.run)),
                picked_from: Some(PickedFrom {
                    run: out.run.clone(),
                    step,
                    from: out.from.clone(),
                    to: out.to.clone(),
                }),
                extra_lines: vec![line],
                ..Default::default()
            },
            ..Default::default()
        },
    )?;
    Ok(outcome.recorded)
}
