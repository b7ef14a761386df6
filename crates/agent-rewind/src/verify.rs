//! What a note claims, checked against the objects before anything uses it (FORMAT.md,
//! "What a reader checks"): a checkpoint line must agree with its commit (run and step
//! trailers, names), `git_commit_sha` must be a commit the checkpoint commit already holds
//! (its second parent, or its only parent for a run's first checkpoint), a lineage link must
//! point at an existing checkpoint the root descends from, and a commit about to be checked
//! out must hold only paths git would check out.
//!
//! Read-only. Notes come from other machines (fetch, import) or from anyone who can run
//! `git notes`: nothing here trusts a field before it is parsed into a typed value and
//! compared with the commit graph.

use crate::model::CheckpointLine;
use crate::store::{CommitInfo, ObjectId, Store};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::{RunId, StepName};

fn short(id: ObjectId) -> String {
    id.to_hex_with_len(12).to_string()
}

/// A hex object id read from a note: a full id of the repository's object format (40 hex
/// digits, 64 in a SHA-256 repository).
pub fn object_id(store: &Store, field: &str, hex: &str) -> std::result::Result<ObjectId, String> {
    let hex_len = store.objects().object_hash().len_in_hex();
    if hex.len() != hex_len || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "{field} {:?} is not a full object id",
            hex.chars().take(50).collect::<String>()
        ));
    }
    ObjectId::from_hex(hex.as_bytes()).map_err(|e| format!("{field}: {e}"))
}

/// The user's commit a checkpoint records (`git_commit_sha`), verified against the
/// checkpoint commit `commit` (whose line is `line`):
///
/// * absent: fine (an unborn branch);
/// * a run's first checkpoint with a lineage link (the root of a rewind, fork or imported
///   continuation): a commit reachable from its only parent (the checkpoint it came from);
/// * any other checkpoint: its second parent, or its only parent when it has one (a fresh
///   run's first checkpoint, whose first parent is the user's HEAD; or a checkpoint taken
///   while HEAD was the previous checkpoint itself).
///
/// So the commit a rewind checks out is always one the checkpoint already keeps reachable:
/// never a blob, never a commit a note merely names.
pub fn git_commit(
    store: &Store,
    commit: &CommitInfo,
    line: &CheckpointLine,
) -> std::result::Result<Option<ObjectId>, String> {
    let Some(hex) = line.git_commit_sha.as_deref() else {
        return Ok(None);
    };
    let id = object_id(store, "git_commit_sha", hex)?;
    let not_held = || {
        format!(
            "git_commit_sha {} of checkpoint {} is not a parent of that checkpoint",
            short(id),
            short(commit.id)
        )
    };
    let ok = if line.origin().is_some() && line.seq == 0 {
        match commit.parents.first() {
            Some(p) => store.objects().is_ancestor(id, *p).map_err(|e| e.message)?,
            None => false,
        }
    } else {
        match commit.parents.as_slice() {
            [only] => *only == id,
            [_, second] => *second == id,
            _ => false,
        }
    };
    if !ok {
        return Err(not_held());
    }
    store.objects().read_commit(id).map_err(|e| {
        format!(
            "git_commit_sha {} of checkpoint {} is not a commit ({})",
            short(id),
            short(commit.id),
            e.message
        )
    })?;
    Ok(Some(id))
}

/// A checkpoint line against its own commit: names valid (a step is never `HEAD`), the
/// commit's `Agent-Run`/`Agent-Step` trailers say the same, the lineage link (on a run's
/// first checkpoint only) names an existing checkpoint this one descends from, and
/// `git_commit_sha` passes [`git_commit`].
pub fn checkpoint(
    store: &Store,
    commit: &CommitInfo,
    line: &CheckpointLine,
) -> std::result::Result<(), String> {
    let at = short(commit.id);
    RunId::new(line.run.as_str()).map_err(|e| format!("checkpoint {at}: {}", e.message))?;
    if let Some(s) = &line.step {
        StepName::new(s.as_str()).map_err(|e| format!("checkpoint {at}: {}", e.message))?;
    }
    if commit.trailers.run.as_deref() != Some(line.run.as_str()) {
        return Err(format!(
            "checkpoint {at}: its note says run {:?}, its commit {:?}",
            line.run,
            commit.trailers.run.as_deref().unwrap_or("(none)")
        ));
    }
    if commit.trailers.step != line.step {
        return Err(format!(
            "checkpoint {at}: its note says step {:?}, its commit {:?}",
            line.step, commit.trailers.step
        ));
    }
    if let Some((link, _)) = line.origin() {
        if line.seq != 0 {
            return Err(format!(
                "checkpoint {at}: a lineage link on a checkpoint that is not its run's first"
            ));
        }
        RunId::new(link.run.as_str()).map_err(|e| format!("checkpoint {at}: {}", e.message))?;
        if let Some(s) = &link.step {
            StepName::new(s.as_str()).map_err(|e| format!("checkpoint {at}: {}", e.message))?;
        }
        let from = object_id(store, "lineage checkpoint", &link.checkpoint)?;
        let source = store.objects().read_commit(from).map_err(|_| {
            format!(
                "checkpoint {at}: it comes from {}, which is not a commit here",
                short(from)
            )
        })?;
        if source.trailers.run.as_deref() != Some(link.run.as_str()) {
            return Err(format!(
                "checkpoint {at}: it comes from {}, which is not a checkpoint of run {}",
                short(from),
                link.run
            ));
        }
        let descends = match commit.parents.first() {
            Some(p) => store
                .objects()
                .is_ancestor(from, *p)
                .map_err(|e| e.message)?,
            None => false,
        };
        if !descends {
            return Err(format!(
                "checkpoint {at}: it claims to come from {}, which it does not descend from",
                short(from)
            ));
        }
    }
    git_commit(store, commit, line)?;
    Ok(())
}

/// A commit about to become the user's HEAD (and index): every path it adds or changes
/// relative to the current HEAD must be one git would check out (no `.git` in any
/// spelling, no `..`). The current HEAD's own paths are already in the user's index.
pub fn checkout_commit(store: &Store, commit: Option<ObjectId>) -> Result<()> {
    let Some(commit) = commit else {
        return Ok(());
    };
    let tree = store.objects().commit_tree(commit).map_err(|e| {
        Error::refused(format!(
            "{} cannot be checked out: {}",
            short(commit),
            e.message
        ))
    })?;
    let base = match store.refs().user_head()?.commit {
        Some(h) => store.objects().commit_tree(h)?,
        None => store.objects().empty_tree(),
    };
    store
        .worktree()
        .check_checkout_paths(&store.objects().diff_trees(base, tree)?)
}

/// [`checkpoint`] as an error of the library (for commands reading local checkpoints).
pub fn require_checkpoint(store: &Store, commit: &CommitInfo, line: &CheckpointLine) -> Result<()> {
    checkpoint(store, commit, line).map_err(|why| {
        Error::corrupt(format!("refusing to use a checkpoint its note misdescribes: {why}"))
            .with_hint(
                "the note or the commit was edited or crafted; inspect it with `git notes --ref=agent-runs/<run> show <commit>`",
            )
    })
}
