//! `revert`: take back what one run did — the whole run, the latest attempt of one step, or
//! one checkpoint — and keep everyone else's work.
//!
//! Per path, three states: *theirs*, the path before the run's changes; *base*, the path as
//! the run left it; *ours*, the path in the worktree now. A path nobody changed since
//! (ours = base) is set back to theirs; a path only others changed since is left alone; a
//! path both changed is merged line by line (`git merge-file`). A real conflict refuses the
//! whole revert with nothing written, unless `--conflict=markers`. Which paths count: the
//! `touched` paths the agent's hooks recorded, when the range has any; else every path that
//! differs between theirs and base. The planning and the writing are `threeway`'s, which
//! `pick` shares (the same change, the other way round).
//!
//! Like every writer of the worktree: refused during a merge/rebase or with `index.lock`
//! held, a backup first (so `undo` brings the state before back), files written atomically.
//! The index is left as it was. A `revert` record is appended to the run.

use super::threeway::range::{self, Range};
use super::threeway::{self, BackupFor, Direction, Missing};
use crate::catalog::{Catalog, Checkpoint};
use crate::materialize::{self, Backup};
use crate::model::NoteLine;
use crate::store::Store;
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::{CheckpointSpec, RunId};
use agent_rewind_core::time::Timestamp;
use serde::Serialize;

pub use super::threeway::range::PathRule;
pub use super::threeway::{Action, FilePlan};

/// What `revert` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct RevertOptions {
    /// Print the plan; write nothing.
    pub dry_run: bool,
    /// Write git-style conflict markers instead of refusing on a conflict.
    pub conflict_markers: bool,
    /// Who reverts, for the record (default: the user's identity); the MCP server names the
    /// agent and session that asked.
    pub by: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RevertOutcome {
    pub run: String,
    /// What was reverted: `run`, `step <name>` or `checkpoint @<seq>`.
    pub scope: String,
    /// The checkpoint holding the state before the changes (theirs).
    pub from: String,
    /// The checkpoint holding the state the changes left (base).
    pub to: String,
    pub rule: PathRule,
    pub files: Vec<FilePlan>,
    pub dry_run: bool,
    /// The backup taken before writing (none for a dry run or when nothing changed).
    pub backup: Option<Backup>,
    /// Paths the run changed that stay as they are whatever happened since: submodules,
    /// whose worktrees git leaves alone.
    pub left_in_place: Vec<crate::model::Excluded>,
}

/// What a revert of a spec would take back, for a guard to look at before it is planned.
#[derive(Debug, Clone)]
pub struct RevertSpan {
    pub run: RunId,
    /// `run`, `step <name>` or `checkpoint @<seq>`.
    pub scope: String,
    /// The checkpoint before the changes.
    pub from: Checkpoint,
    /// Every checkpoint after `from` up to the last one reverted, oldest first.
    pub checkpoints: Vec<Checkpoint>,
}

/// The checkpoints a revert of `spec` takes the changes of, resolved as the revert itself
/// resolves them. Reads only.
pub fn span(store: &Store, spec: &CheckpointSpec) -> Result<RevertSpan> {
    let range = range::resolve(&mut Catalog::new(store), spec, "revert")?;
    Ok(RevertSpan {
        run: range.run,
        scope: range.scope,
        from: range.from,
        checkpoints: range.span,
    })
}

/// A revert sets a path back to the state before the run; a path someone else deleted,
/// re-created or changed since is theirs now and left alone.
const REVERT: Direction = Direction {
    reversed: true,
    applied: Action::Revert,
    already: "already as before the run",
    missing: |m| match m {
        Missing::Ours => (Action::Keep, "deleted since the run changed it"),
        Missing::Ancestor => (Action::Keep, "re-created since the run deleted it"),
        Missing::Target => (Action::Keep, "changed since the run created it"),
    },
};

pub fn revert(store: &Store, spec: &CheckpointSpec, opts: &RevertOptions) -> Result<RevertOutcome> {
    materialize::ensure_safe_to_overwrite(store)?;
    let range = range::resolve(&mut Catalog::new(store), spec, "revert")?;
    let (rule, planned, what) =
        threeway::plan_range(store, &range, &REVERT, "revert", opts.conflict_markers)?;
    let mut outcome = RevertOutcome {
        run: range.run.to_string(),
        scope: range.scope.clone(),
        from: range.from.id().to_string(),
        to: range.to.id().to_string(),
        rule,
        files: planned.files.clone(),
        dry_run: opts.dry_run,
        backup: None,
        left_in_place: planned.left_in_place(),
    };
    if !opts.dry_run
        && let Some(refused) = threeway::refusal(&outcome.files, &what)
    {
        return Err(refused);
    }
    if opts.dry_run || planned.writes_nothing() {
        return Ok(outcome);
    }
    let backup = threeway::back_up(
        store,
        &planned,
        &BackupFor {
            reason: &format!("revert {} of run {}", range.scope, range.run),
            // Undoing this revert takes it back: `list` then no longer calls the run reverted.
            reverts: Some(range.run.to_string()),
            // The revert record goes onto the run's notes after the files.
            refs_after: &[crate::store::layout::notes_ref(&range.run)],
        },
    )?;
    agent_rewind_core::crash_point!("revert:backed-up");
    threeway::write(store, &planned)?;
    agent_rewind_core::crash_point!("revert:files-written");
    outcome.backup = Some(backup);
    record(store, &range, &outcome, opts.by.as_deref())?;
    Ok(outcome)
}

/// Append the `revert` record to the run's tip: who, when, what, and each file's fate.
fn record(store: &Store, range: &Range, out: &RevertOutcome, by: Option<&str>) -> Result<()> {
    let tip = Catalog::new(store).require_run_tip(&range.run)?;
    let files: Vec<serde_json::Value> = out
        .files
        .iter()
        .map(|f| serde_json::to_value(f).expect("serializable"))
        .collect();
    let line = NoteLine::Other(serde_json::json!({
        "type": "revert",
        "scope": out.scope,
        "from": out.from,
        "to": out.to,
        "rule": out.rule,
        "files": files,
        "backup": out.backup.as_ref().map(|b| b.commit.clone()),
        "by": by.map(str::to_string).unwrap_or_else(|| store.config().identity().unwrap_or_else(agent_rewind_core::time::writer_id)),
        "ts": Timestamp::now(),
    }));
    crate::journal::append_note_lines(store, &range.run, tip.id(), &[line])
}
