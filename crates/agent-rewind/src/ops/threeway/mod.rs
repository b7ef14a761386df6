//! Applying one change of a run (the difference between two of its checkpoints) onto the
//! worktree, path by path, and keeping everyone else's work: the machinery `revert` (the
//! change taken back: after → before) and `pick` (the change brought over: before → after)
//! share.
//!
//! Per path, three states: *ancestor*, the side the change starts from; *target*, the side
//! it goes to; *ours*, the path in the worktree now. Ours = ancestor: set to the target.
//! Ours = target: already done. Both changed a file's content: merged line by line
//! (`git merge-file`, the ancestor as base). A real conflict refuses the whole operation
//! with nothing written, unless conflict markers are asked for. What a missing side means
//! (left alone, or a conflict) is the operation's [`Direction`].
//!
//! It must never write a byte before every path is planned and every check passed, and never
//! write one before the backup holding it is published. The index is never touched; what
//! the operation records afterwards is the operation's.

pub mod range;

use crate::materialize::{self, Backup};
use crate::store::{BString, ChangeKind, EntryKind, ObjectId, Store, TreeChange};
use agent_rewind_core::error::{Error, Result};
use serde::Serialize;

/// What happens to one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Set back to the state before the run (`revert`; nobody changed it since).
    Revert,
    /// Set to the state the picked range left (`pick`; nobody here changed it).
    Pick,
    /// Both the run and someone here changed it: merged cleanly.
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

/// Which side of a path is missing while ours differs from both others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// The path is not in the worktree.
    Ours,
    /// The change created the path, and the worktree holds something else there.
    Ancestor,
    /// The change deleted the path, and the worktree holds something else there.
    Target,
}

/// The words and rules of one direction.
#[derive(Debug, Clone, Copy)]
pub struct Direction {
    /// The change goes from a tree change's new side to its old one (`revert`).
    pub reversed: bool,
    /// What setting a path nobody else changed to the target is called.
    pub applied: Action,
    /// The reason a path already at the target is kept.
    pub already: &'static str,
    /// What a path with a missing side gets, and why.
    pub missing: fn(Missing) -> (Action, &'static str),
}

/// How conflicting lines are handled and labelled.
#[derive(Debug, Clone, Copy)]
pub struct MergeStyle<'a> {
    /// Write git-style conflict markers instead of refusing.
    pub conflict_markers: bool,
    /// The labels of ours, the ancestor and the target in conflict markers.
    pub labels: [&'a str; 3],
}

/// Every path planned, and the writes the plan needs (empty for a plan that changes
/// nothing). The new objects (merged blobs) stay in memory until [`back_up`].
pub struct Planned {
    pub files: Vec<FilePlan>,
    writes: Vec<TreeChange>,
    staged: Store,
}

impl Planned {
    /// Whether the plan writes nothing.
    pub fn writes_nothing(&self) -> bool {
        self.writes.is_empty()
    }

    /// The paths the plan writes, in order.
    pub fn written_paths(&self) -> Vec<BString> {
        self.writes.iter().map(|w| w.path.clone()).collect()
    }

    /// The submodules among the paths, left in place whatever the change did to them.
    pub fn left_in_place(&self) -> Vec<crate::model::Excluded> {
        self.files
            .iter()
            .filter(|f| f.reason.as_deref() == Some(materialize::SUBMODULE_LEFT_ALONE))
            .map(|f| crate::model::Excluded {
                path: f.path.clone(),
                reason: materialize::SUBMODULE_LEFT_ALONE.into(),
            })
            .collect()
    }
}

/// Plan `changes` (between two checkpoints) onto the worktree. `what` names the operation
/// for errors (`cannot revert run r1`). Reads only; a path git would never check out
/// (`.git/…`, from a fetched run that is not trusted) refuses before the worktree is read.
pub fn plan(
    store: &Store,
    changes: &[TreeChange],
    direction: &Direction,
    style: &MergeStyle,
    what: &str,
) -> Result<Planned> {
    for c in changes {
        for side in [c.old, c.new].into_iter().flatten() {
            store
                .worktree()
                .check_checkout_path(&c.path, side.1 == EntryKind::Link)
                .map_err(|e| e.context(what.to_string()))?;
        }
    }
    let staged = store.handle_for_staged_writes();
    let paths: Vec<BString> = changes.iter().map(|c| c.path.clone()).collect();
    let ours = staged.worktree().worktree_entries(&paths)?;
    let mut files = Vec::with_capacity(changes.len());
    let mut writes = Vec::new();
    for (c, ours) in changes.iter().zip(ours) {
        let (ancestor, target) = match direction.reversed {
            true => (c.new, c.old),
            false => (c.old, c.new),
        };
        let sides = Sides {
            path: &c.path,
            ours,
            ancestor,
            target,
        };
        let (plan, write) = plan_path(&staged, &sides, direction, style)?;
        files.push(plan);
        writes.extend(write);
    }
    store
        .worktree()
        .check_case_collisions(&writes)
        .map_err(|e| e.context(what.to_string()))?;
    Ok(Planned {
        files,
        writes,
        staged,
    })
}

/// Plan `verb` (`revert`, `pick`) of `range` onto the worktree: the range's changes, with
/// the conflict labels `worktree`, then `<run> (before)` and `<run> (after)` in the order of
/// ancestor and target that `direction` gives. Returns the rule that chose the paths, the
/// plan, and the words naming the operation in errors (`cannot revert step s of run r1`).
pub fn plan_range(
    store: &Store,
    range: &range::Range,
    direction: &Direction,
    verb: &str,
    conflict_markers: bool,
) -> Result<(range::PathRule, Planned, String)> {
    let (rule, changes) = range.changes(store)?;
    let what = format!("cannot {verb} {} of run {}", range.scope, range.run);
    let before = format!("{} (before)", range.run);
    let after = format!("{} (after)", range.run);
    let (ancestor, target) = match direction.reversed {
        true => (&after, &before),
        false => (&before, &after),
    };
    let style = MergeStyle {
        conflict_markers,
        labels: ["worktree", ancestor, target],
    };
    let planned = plan(store, &changes, direction, &style, &what)?;
    Ok((rule, planned, what))
}

/// The error refusing a plan with a conflict (nothing was written), if it has one.
pub fn refusal(files: &[FilePlan], what: &str) -> Option<Error> {
    let conflicts: Vec<&str> = files
        .iter()
        .filter(|f| f.action == Action::Conflict)
        .map(|f| f.path.as_str())
        .collect();
    (!conflicts.is_empty()).then(|| {
        Error::refused(format!(
            "{what}: {} changed here in ways that conflict: {}",
            agent_rewind_core::words::count(conflicts.len(), "file", "files"),
            conflicts.join(", ")
        ))
        .with_hint(
            "nothing was written; see the plan with --dry-run, or write conflict markers with --conflict=markers",
        )
    })
}

/// What a backup before the writes is for.
pub struct BackupFor<'a> {
    /// The backup's reason, as `undo --list` shows it.
    pub reason: &'a str,
    /// The run the operation takes back (undoing it un-marks the run), for `revert`.
    pub reverts: Option<String>,
    /// Refs the operation moves after the files are written: their locks are checked now.
    pub refs_after: &'a [String],
}

/// Everything before the first byte: the locks of the refs moved afterwards checked, the new
/// objects written, and the backup holding every path about to be written published.
pub fn back_up(store: &Store, planned: &Planned, why: &BackupFor) -> Result<Backup> {
    for name in why.refs_after {
        store.refs().ensure_unlocked(name)?;
    }
    planned.staged.objects().persist_staged()?;
    let mut capture = materialize::capture(store)?;
    capture.runs.reverts = why.reverts.clone();
    materialize::cover_paths(store, &mut capture, &planned.written_paths())?;
    materialize::publish_backup(store, &capture, why.reason)
}

/// Write the plan's files (atomically, each), after [`back_up`].
pub fn write(store: &Store, planned: &Planned) -> Result<()> {
    materialize::write_changes(store, &planned.writes, &Default::default()).map(drop)
}

/// One path's three states.
struct Sides<'a> {
    path: &'a BString,
    ours: Option<(ObjectId, EntryKind)>,
    ancestor: Option<(ObjectId, EntryKind)>,
    target: Option<(ObjectId, EntryKind)>,
}

/// Decide what happens to one path, and the change to write for it, if any.
fn plan_path(
    store: &Store,
    s: &Sides,
    direction: &Direction,
    style: &MergeStyle,
) -> Result<(FilePlan, Option<TreeChange>)> {
    let (ours, ancestor, target) = (s.ours, s.ancestor, s.target);
    let plan = |action: Action, reason: Option<&str>| FilePlan {
        path: agent_rewind_core::quote::text_path(s.path),
        action,
        reason: reason.map(str::to_string),
    };
    let write = |new: Option<(ObjectId, EntryKind)>| {
        Some(TreeChange {
            path: s.path.clone(),
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
    if submodule(ours) || submodule(ancestor) || submodule(target) {
        return Ok((
            plan(Action::Keep, Some(materialize::SUBMODULE_LEFT_ALONE)),
            None,
        ));
    }
    if ours == ancestor {
        return Ok((plan(direction.applied, None), write(target)));
    }
    if ours == target {
        return Ok((plan(Action::Keep, Some(direction.already)), None));
    }
    let (Some(o), Some(a), Some(t)) = (ours, ancestor, target) else {
        let missing = match (ours, ancestor) {
            (None, _) => Missing::Ours,
            (Some(_), None) => Missing::Ancestor,
            _ => Missing::Target,
        };
        let (action, why) = (direction.missing)(missing);
        return Ok((plan(action, Some(why)), None));
    };
    let is_file = |k: EntryKind| matches!(k, EntryKind::Blob | EntryKind::BlobExecutable);
    if !(is_file(o.1) && is_file(a.1) && is_file(t.1)) {
        return Ok((
            plan(Action::Conflict, Some("changed on both sides (not a file)")),
            None,
        ));
    }
    // The mode follows the change unless someone changed it here.
    let mode = if o.1 == a.1 { t.1 } else { o.1 };
    let merged = store.objects().merge_blobs(o.0, a.0, t.0, style.labels)?;
    Ok(
        match (merged.conflicts, merged.mergeable, style.conflict_markers) {
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
