//! `revert`: take back what one run did — the whole run, the latest attempt of one step, or
//! one checkpoint — and keep everyone else's work.
//!
//! Per path, three states: *theirs*, the path before the run's changes; *base*, the path as
//! the run left it; *ours*, the path in the worktree now. A path nobody changed since
//! (ours = base) is set back to theirs; a path only others changed since is left alone; a
//! path both changed is merged line by line (`git merge-file`). A real conflict refuses the
//! whole revert with nothing written, unless `--conflict=markers`. Which paths count: the
//! `touched` paths the agent's hooks recorded, when the range has any; else every path that
//! differs between theirs and base.
//!
//! Like every writer of the worktree: refused during a merge/rebase or with `index.lock`
//! held, a backup first (so `undo` brings the state before back), files written atomically.
//! The index is left as it was. A `revert` record is appended to the run.

use crate::catalog::{Catalog, Checkpoint, short};
use crate::materialize::{self, Backup};
use crate::model::NoteLine;
use crate::store::{BString, ByteSlice, ChangeKind, EntryKind, ObjectId, Store, TreeChange};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::{CheckpointSpec, RunId, StepName};
use agent_rewind_core::time::Timestamp;
use serde::Serialize;
use std::collections::BTreeSet;

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

/// What happens to one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Set back to the state before the run (nobody changed it since).
    Revert,
    /// Both the run and someone since changed it: merged cleanly.
    Merge,
    /// Left as it is (see `reason`).
    Keep,
    /// Both changed it in a way that does not merge.
    Conflict,
    /// Conflicting, written with conflict markers (`--conflict=markers`).
    Markers,
}

/// One path of the plan.
#[derive(Debug, Clone, Serialize)]
pub struct FilePlan {
    pub path: String,
    pub action: Action,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Which paths counted as the run's changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PathRule {
    /// The `touched` paths recorded by the agent's file-edit hooks.
    Touched,
    /// Every path that differs between the two checkpoints.
    Diff,
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

/// The two checkpoints a revert goes between, and the ones whose `touched` paths count.
struct Range {
    run: RunId,
    scope: String,
    from: Checkpoint,
    to: Checkpoint,
    within: Vec<Checkpoint>,
    /// Every checkpoint after `from` up to `to`, oldest first: the changes the revert's
    /// diff holds (a step's range also holds other steps' checkpoints between its own).
    span: Vec<Checkpoint>,
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
    let range = resolve_range(store, spec)?;
    Ok(RevertSpan {
        run: range.run,
        scope: range.scope,
        from: range.from,
        checkpoints: range.span,
    })
}

pub fn revert(store: &Store, spec: &CheckpointSpec, opts: &RevertOptions) -> Result<RevertOutcome> {
    materialize::ensure_safe_to_overwrite(store)?;
    let range = resolve_range(store, spec)?;
    let (rule, touched) = touched_paths(&range.within);
    let mut changes = store
        .objects()
        .diff_trees(range.from.commit.tree, range.to.commit.tree)?;
    if let Some(touched) = &touched {
        changes.retain(|c| c.path.to_str().is_ok_and(|p| touched.contains(p)));
    }
    // A fetched run is not trusted: a path git would never check out (`.git/…`) refuses
    // the revert before the worktree is read or anything is written.
    for c in &changes {
        for side in [c.old, c.new].into_iter().flatten() {
            store
                .worktree()
                .check_checkout_path(&c.path, side.1 == EntryKind::Link)
                .map_err(|e| {
                    e.context(format!(
                        "cannot revert {} of run {}",
                        range.scope, range.run
                    ))
                })?;
        }
    }
    let staged = store.handle_for_staged_writes();
    let paths: Vec<BString> = changes.iter().map(|c| c.path.clone()).collect();
    let ours = staged.worktree().worktree_entries(&paths)?;
    let labels = [
        "worktree".to_string(),
        format!("{} (after)", range.run),
        format!("{} (before)", range.run),
    ];
    let labels = [labels[0].as_str(), labels[1].as_str(), labels[2].as_str()];
    let mut files = Vec::with_capacity(changes.len());
    let mut writes = Vec::new();
    for (c, ours) in changes.iter().zip(ours) {
        let (plan, write) = plan_path(&staged, c, ours, opts, labels)?;
        files.push(plan);
        writes.extend(write);
    }
    let mut outcome = RevertOutcome {
        run: range.run.to_string(),
        scope: range.scope.clone(),
        from: range.from.id().to_string(),
        to: range.to.id().to_string(),
        rule,
        files,
        dry_run: opts.dry_run,
        backup: None,
        left_in_place: vec![],
    };
    for f in &outcome.files {
        if f.reason.as_deref() == Some(materialize::SUBMODULE_LEFT_ALONE) {
            outcome.left_in_place.push(crate::model::Excluded {
                path: f.path.clone(),
                reason: materialize::SUBMODULE_LEFT_ALONE.into(),
            });
        }
    }
    let conflicts: Vec<&str> = outcome
        .files
        .iter()
        .filter(|f| f.action == Action::Conflict)
        .map(|f| f.path.as_str())
        .collect();
    if !conflicts.is_empty() && !opts.dry_run {
        return Err(Error::refused(format!(
            "cannot revert {} of run {}: {} changed since in ways that conflict: {}",
            range.scope,
            range.run,
            agent_rewind_core::words::count(conflicts.len(), "file", "files"),
            conflicts.join(", ")
        ))
        .with_hint(
            "nothing was written; see the plan with --dry-run, or write conflict markers with --conflict=markers",
        ));
    }
    if opts.dry_run || writes.is_empty() {
        return Ok(outcome);
    }

    // The revert record goes onto the run's notes after the files: that lock is checked now.
    store
        .refs()
        .ensure_unlocked(&crate::store::layout::notes_ref(&range.run))?;
    staged.objects().persist_staged()?;
    // The backup holds every path about to be written as its bytes are on disk.
    let mut prepared_capture = materialize::capture(store)?;
    // Undoing this revert takes it back: `list` then no longer calls the run reverted.
    prepared_capture.runs.reverts = Some(range.run.to_string());
    let written: Vec<BString> = writes.iter().map(|w| w.path.clone()).collect();
    materialize::cover_paths(store, &mut prepared_capture, &written)?;
    let backup = materialize::publish_backup(
        store,
        &prepared_capture,
        &format!("revert {} of run {}", range.scope, range.run),
    )?;
    agent_rewind_core::crash_point!("revert:backed-up");
    materialize::write_changes(store, &writes, &Default::default())?;
    agent_rewind_core::crash_point!("revert:files-written");
    outcome.backup = Some(backup);
    record(store, &range, &outcome, opts.by.as_deref())?;
    Ok(outcome)
}

/// Decide what happens to one path the run changed (`c.old` = theirs, `c.new` = base), and
/// the change to write for it, if any.
fn plan_path(
    store: &Store,
    c: &TreeChange,
    ours: Option<(ObjectId, EntryKind)>,
    opts: &RevertOptions,
    labels: [&str; 3],
) -> Result<(FilePlan, Option<TreeChange>)> {
    let (theirs, base) = (c.old, c.new);
    let plan = |action: Action, reason: Option<&str>| FilePlan {
        path: agent_rewind_core::quote::text_path(&c.path),
        action,
        reason: reason.map(str::to_string),
    };
    let write = |new: Option<(ObjectId, EntryKind)>| {
        Some(TreeChange {
            path: c.path.clone(),
            change: match (ours, new) {
                (None, _) => ChangeKind::Added,
                (_, None) => ChangeKind::Deleted,
                (Some(o), Some(n)) => ChangeKind::between(o.1, n.1),
            },
            old: ours,
            new,
        })
    };
    let submodule =
        |side: Option<(ObjectId, EntryKind)>| side.is_some_and(|s| s.1 == EntryKind::Commit);
    if submodule(ours) || submodule(base) || submodule(theirs) {
        return Ok((
            plan(Action::Keep, Some(materialize::SUBMODULE_LEFT_ALONE)),
            None,
        ));
    }
    if ours == base {
        return Ok((plan(Action::Revert, None), write(theirs)));
    }
    if ours == theirs {
        return Ok((plan(Action::Keep, Some("already as before the run")), None));
    }
    let (Some(o), Some(b), Some(t)) = (ours, base, theirs) else {
        let why = match (ours, base, theirs) {
            (None, _, _) => "deleted since the run changed it",
            (Some(_), None, _) => "re-created since the run deleted it",
            _ => "changed since the run created it",
        };
        return Ok((plan(Action::Keep, Some(why)), None));
    };
    let is_file = |k: EntryKind| matches!(k, EntryKind::Blob | EntryKind::BlobExecutable);
    if !(is_file(o.1) && is_file(b.1) && is_file(t.1)) {
        return Ok((
            plan(Action::Conflict, Some("changed on both sides (not a file)")),
            None,
        ));
    }
    // The mode follows the run's change unless someone changed it since.
    let mode = if o.1 == b.1 { t.1 } else { o.1 };
    let merged = store.objects().merge_blobs(o.0, b.0, t.0, labels)?;
    Ok(
        match (merged.conflicts, merged.mergeable, opts.conflict_markers) {
            (false, _, _) => (plan(Action::Merge, None), write(Some((merged.blob, mode)))),
            (true, true, true) => (
                plan(Action::Markers, Some("conflict markers written")),
                write(Some((merged.blob, mode))),
            ),
            (true, true, false) => (
                plan(Action::Conflict, Some("both changed the same lines")),
                None,
            ),
            (true, false, _) => (
                plan(
                    Action::Conflict,
                    Some("both changed it and it does not merge (binary)"),
                ),
                None,
            ),
        },
    )
}

/// The checkpoints a spec reverts between.
fn resolve_range(store: &Store, spec: &CheckpointSpec) -> Result<Range> {
    let mut catalog = Catalog::new(store);
    match spec {
        CheckpointSpec::RunHead(run) => {
            let chain = catalog.run_chain(run)?;
            let (Some(first), Some(last)) = (chain.first(), chain.last()) else {
                return Err(crate::catalog::unknown_run(run));
            };
            Ok(Range {
                run: run.clone(),
                scope: "run".into(),
                from: first.clone(),
                to: last.clone(),
                within: chain[1..].to_vec(),
                span: chain[1..].to_vec(),
            })
        }
        CheckpointSpec::Step(run, step) => step_range(&mut catalog, run, step),
        other => {
            let cp = catalog.resolve(other)?;
            let run = RunId::new(cp.line().run.clone())?;
            let seq = cp.line().seq;
            let parent = cp.commit.parents.first().copied();
            let from = match parent {
                Some(p) if seq > 0 => catalog.try_checkpoint(p)?,
                _ => None,
            };
            let from = from.ok_or_else(|| {
                Error::usage(format!(
                    "checkpoint {} is where run {run} began; it changed nothing to revert",
                    short(cp.id())
                ))
                .with_hint(format!(
                    "revert the whole run with `git agent-rewind revert {run}`"
                ))
            })?;
            Ok(Range {
                run,
                scope: format!("checkpoint @{seq}"),
                from,
                to: cp.clone(),
                within: vec![cp.clone()],
                span: vec![cp],
            })
        }
    }
}

/// A step's latest attempt: from the checkpoint before its first checkpoint to its last.
fn step_range(catalog: &mut Catalog, run: &RunId, step: &StepName) -> Result<Range> {
    let last_id = catalog.step_commit(run, step)?;
    let last = catalog.checkpoint(last_id)?;
    if last.line().run != run.as_str() {
        return Err(Error::usage(format!(
            "step {step} of run {run} was inherited from run {}; revert it there",
            last.line().run
        )));
    }
    let chain = catalog.run_chain(run)?;
    let end = chain
        .iter()
        .position(|c| c.id() == last.id())
        .ok_or_else(|| Error::corrupt(format!("step {step} is not in the chain of run {run}")))?;
    let attempt = last.line().attempt;
    let in_attempt = |c: &Checkpoint| {
        c.line().step.as_deref() == Some(step.as_str()) && c.line().attempt == attempt
    };
    // The attempt's first checkpoint (its begin, or its first record): other steps'
    // checkpoints may lie between it and the last one.
    let begin = chain[..=end]
        .iter()
        .position(in_attempt)
        .expect("the last checkpoint is in the attempt");
    let from = match begin.checked_sub(1) {
        Some(i) => chain[i].clone(),
        None => {
            return Err(Error::corrupt(format!(
                "step {step} of run {run} has no checkpoint before it"
            )));
        }
    };
    Ok(Range {
        run: run.clone(),
        scope: format!("step {step}"),
        from,
        to: last,
        within: chain[begin..=end]
            .iter()
            .filter(|c| in_attempt(c))
            .cloned()
            .collect(),
        span: chain[begin..=end].to_vec(),
    })
}

/// The touched paths recorded in `within`, when there are any.
fn touched_paths(within: &[Checkpoint]) -> (PathRule, Option<BTreeSet<String>>) {
    let touched: BTreeSet<String> = within
        .iter()
        .flat_map(|c| c.line().touched.iter().cloned())
        .collect();
    if touched.is_empty() {
        (PathRule::Diff, None)
    } else {
        (PathRule::Touched, Some(touched))
    }
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
