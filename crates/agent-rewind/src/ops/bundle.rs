//! `export` / `import`: runs as a git bundle file, for sharing without a common remote.
//! Export writes the runs' refs and notes refs with `git bundle create` (no prerequisites,
//! so plain `git bundle verify` accepts it in any repository). Import verifies the bundle,
//! fetches it into the staging namespace `bundle`, imports exactly like `fetch` (same
//! validation, same five cases), then drops the staged copies.
//!
//! Nothing in a bundle is ever executed; refs of a bundle outside our namespaces are ignored.

use super::fetch::{FetchOutcome, import_staged};
use crate::remote;
use crate::store::{RefChange, Store, layout};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::{RemoteName, RunId};
use serde::Serialize;
use std::path::Path;

#[derive(Debug, Clone, Serialize)]
pub struct ExportOutcome {
    pub file: String,
    pub runs: Vec<String>,
    pub refs: Vec<String>,
}

/// Write `runs` into the bundle `file`. An existing `file` is only replaced with `force`
/// (checked before anything is written; git then writes the bundle through a lock file).
pub fn export(store: &Store, runs: &[RunId], file: &Path, force: bool) -> Result<ExportOutcome> {
    if runs.is_empty() {
        return Err(Error::usage("which runs? name at least one"));
    }
    if !force && std::fs::symlink_metadata(file).is_ok() {
        return Err(Error::refused(format!("{} already exists", file.display()))
            .with_hint("choose another file, or add --force to overwrite it"));
    }
    let mut refs = vec![];
    for run in runs {
        if store.refs().run_head(run)?.is_none() {
            return Err(crate::catalog::unknown_run(run));
        }
        refs.extend(
            store
                .refs()
                .refs_under(&layout::run_prefix(run))?
                .into_iter()
                .map(|(name, _)| name),
        );
        if store.refs().notes_tip(run)?.is_some() {
            refs.push(layout::notes_ref(run));
        }
    }
    remote::bundle_create(store, file, &refs)?;
    Ok(ExportOutcome {
        file: file.display().to_string(),
        runs: runs.iter().map(|r| r.to_string()).collect(),
        refs,
    })
}

pub fn import(store: &Store, file: &Path) -> Result<FetchOutcome> {
    let heads = remote::bundle_verify(store, file)?;
    let ours = |r: &str| r.starts_with(layout::RUNS_PREFIX) || r.starts_with(layout::NOTES_PREFIX);
    if !heads.iter().any(|h| ours(h)) {
        return Err(
            Error::refused(format!("{} holds no agent runs", file.display()))
                .with_hint("create one with `git agent-rewind export RUN -o FILE`"),
        );
    }
    let require_signed = super::fetch::require_signed_config(store)?;
    let staging = RemoteName::new(layout::BUNDLE_REMOTE)?;
    remote::fetch_bundle(store, file, &staging)?;
    let result = import_staged(store, &staging, super::fetch::Select::All, require_signed);
    clear_staging(store, &staging)?;
    let mut out = result?;
    out.remote = file.display().to_string();
    for h in heads.iter().filter(|h| !ours(h)) {
        out.warnings
            .push(format!("bundle ref {h} ignored (not an agent run)"));
    }
    Ok(out)
}

/// Delete every staged ref of `staging` (compare-and-swap on the values listed).
fn clear_staging(store: &Store, staging: &RemoteName) -> Result<()> {
    let mut refs = store
        .refs()
        .refs_under(&layout::remote_run_prefix(staging))?;
    refs.extend(
        store
            .refs()
            .refs_under(&layout::remote_notes_prefix(staging))?,
    );
    if refs.is_empty() {
        return Ok(());
    }
    let changes: Vec<RefChange> = refs
        .into_iter()
        .map(|(name, id)| RefChange::delete(name, id))
        .collect();
    store
        .refs()
        .publish(
            &changes,
            "agent-rewind: import done, drop staged bundle refs",
        )
        .map_err(Error::from)
}
