//! `run <workflow.toml>` and `resume [<run>] [--retry STEP]`: start a workflow run (its
//! start checkpoint records the workflow's name, path and digest) and execute it; continue
//! a run — including one created by `rewind`/`fork` — from its record.

use super::start::{StartOptions, start};
use crate::catalog::Catalog;
use crate::error::IoResultExt;
use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::journal::{active_run, set_active_run};
use crate::store::Store;
use crate::workflow::{self, runner::RunReport};
use std::path::{Path, PathBuf};

/// Meta key under which the start checkpoint records the workflow file (relative to the
/// worktree root).
pub const WORKFLOW_META: &str = "workflow";

pub fn run_workflow(
    store: &Store,
    file: &Path,
    run: Option<RunId>,
    label: Option<String>,
) -> Result<RunReport> {
    let root = store.workdir()?.to_path_buf();
    let wf = workflow::load(file)?;
    let abs = std::fs::canonicalize(file)
        .map_err(|e| Error::usage(format!("{}: {e}", file.display())))?;
    let rel = abs
        .strip_prefix(std::fs::canonicalize(&root).at(&root)?)
        .map(Path::to_path_buf)
        .map_err(|_| {
            Error::usage(format!(
                "workflow file {} is outside the worktree {}",
                file.display(),
                root.display()
            ))
            .with_hint(
                "keep the workflow file in the repository so resume (and teammates) can find it",
            )
        })?;
    let mut meta = std::collections::BTreeMap::new();
    meta.insert(
        WORKFLOW_META.to_string(),
        rel.to_string_lossy().into_owned(),
    );
    let started = start(
        store,
        StartOptions {
            run,
            label: label.or_else(|| Some(wf.name.clone())),
            workflow_digest: Some(format!("git-blob:{}", store.blob_id(wf.text.as_bytes())?)),
            meta,
        },
    )?;
    let run = RunId::new(started.line.run)?;
    workflow::runner::execute(store, &run, &wf, None)
}

pub fn resume(store: &Store, run: Option<RunId>, retry: Option<&str>) -> Result<RunReport> {
    let run = match run {
        Some(r) => r,
        None => active_run(store)?.ok_or_else(|| {
            Error::usage("no run given and this worktree has no active run")
                .with_hint("git agent-rewind resume <run>")
        })?,
    };
    let file = workflow_file(store, &run)?;
    let wf = workflow::load(&file)?;
    set_active_run(store, &run)?;
    workflow::runner::execute(store, &run, &wf, retry)
}

/// The workflow file recorded in the run's lineage, resolved in this worktree.
pub fn workflow_file(store: &Store, run: &RunId) -> Result<PathBuf> {
    let mut catalog = Catalog::new(store);
    let tip = catalog.require_run_tip(run)?;
    let rel = catalog
        .lineage_chain(tip.id(), usize::MAX)?
        .into_iter()
        .find_map(|c| c.line().meta.get(WORKFLOW_META).cloned())
        .ok_or_else(|| {
            Error::refused(format!("run {run} was not started from a workflow file"))
                .with_hint("start workflow runs with `git agent-rewind run <workflow.toml>`")
        })?;
    let path = store.workdir()?.join(&rel);
    if !path.is_file() {
        return Err(Error::not_found(format!(
            "the workflow file of run {run} ({rel}) is missing from this worktree"
        )));
    }
    Ok(path)
}
