//! `restore`: put files from a checkpoint back into this worktree — the whole tree, or only
//! the named paths (files or folders) — after a backup. HEAD and the index are left alone,
//! so restored files show up as changes against them.

use crate::catalog::Catalog;
use crate::materialize::{self, Backup};
use crate::store::Store;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::CheckpointSpec;
use agent_rewind_core::quote::PathBytes;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct RestoreOutcome {
    pub checkpoint: String,
    /// Paths written or removed.
    pub changed: Vec<PathBytes>,
    /// The same, with what happened to each.
    pub files: Vec<materialize::PathChange>,
    /// Files left as they were although the checkpoint lacks them (see `Backup`).
    pub left_in_place: Vec<crate::model::Excluded>,
    pub backup: Backup,
}

/// What `restore` would write, and nothing written: each path with what would happen to it.
pub fn restore_plan(
    store: &Store,
    spec: &CheckpointSpec,
    paths: &[String],
) -> Result<Vec<materialize::PathChange>> {
    let (_, prepared) = prepare(store, spec, paths)?;
    Ok(materialize::path_changes(&prepared.changes))
}

pub fn restore(store: &Store, spec: &CheckpointSpec, paths: &[String]) -> Result<RestoreOutcome> {
    let (cp, mut prepared) = prepare(store, spec, paths)?;
    prepared.capture.runs =
        materialize::RunFacts::active(crate::journal::worktree_active_run(store)?.as_ref());
    let backup =
        materialize::publish_backup(store, &prepared.capture, &format!("restore {}", cp.id()))?;
    agent_rewind_core::crash_point!("restore:backed-up");
    let changes = prepared.changes;
    // The index is left as it was: restore only puts files back.
    materialize::write_changes(store, &changes, &prepared.backed_up)?;
    agent_rewind_core::crash_point!("restore:files-written");
    Ok(RestoreOutcome {
        files: materialize::path_changes(&changes),
        checkpoint: cp.id().to_string(),
        changed: changes
            .into_iter()
            .map(|c| PathBytes(c.path.into()))
            .collect(),
        left_in_place: backup.left_in_place.clone(),
        backup,
    })
}

/// Everything checked and the changes planned, before anything is written.
fn prepare(
    store: &Store,
    spec: &CheckpointSpec,
    paths: &[String],
) -> Result<(crate::catalog::Checkpoint, materialize::PreparedOverwrite)> {
    materialize::ensure_safe_to_overwrite(store)?;
    let cp = Catalog::new(store).resolve(spec)?;
    // A named path must be one the checkpoint holds, a file or a folder, as `git restore
    // --source` requires: restoring a path to "never existed" would delete it.
    if !paths.is_empty() {
        let entries = store.objects().tree_entries(cp.commit.tree)?;
        for p in paths {
            let p = p.trim_start_matches("./").trim_end_matches('/');
            let in_checkpoint = p.is_empty()
                || p == "."
                || entries
                    .iter()
                    .any(|(e, _, _)| materialize::path_is_under(e, p));
            if !in_checkpoint {
                return Err(Error::not_found(format!(
                    "{p} did not exist at checkpoint {}: there is nothing to restore it to",
                    crate::catalog::short(cp.id())
                ))
                .with_hint(
                    "name paths the checkpoint holds (`git agent-rewind show <checkpoint>`); \
                     restoring their folder removes the files it lacks",
                ));
            }
        }
    }
    let filter = (!paths.is_empty()).then_some(paths);
    let prepared = materialize::prepare_overwrite(store, cp.commit.tree, filter, None)?;
    Ok((cp, prepared))
}
