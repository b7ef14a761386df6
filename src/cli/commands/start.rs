//! `start`: begin a run.

use crate::cli::record::parse_meta;
use crate::cli::{Ctx, Output, render};
use agent_rewind::ops;
use agent_rewind::store::Store;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::RunId;
use clap::Args;
use std::path::{Path, PathBuf};

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind start --label \"fix login\"
      Begin a run with a generated id and make it the active run of this worktree.
  git agent-rewind start --run r1 --workflow wf.toml --meta ticket=ABC-12
      Begin run r1 that follows wf.toml, with a free-form key recorded in its metadata.";

#[derive(Debug, Args)]
pub struct StartArgs {
    /// Run id (default: a generated, time-sortable id).
    #[arg(long)]
    pub run: Option<String>,
    /// Workflow file whose digest is recorded with the run.
    #[arg(long, value_name = "FILE")]
    pub workflow: Option<PathBuf>,
    /// A human label for the run.
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// Free-form metadata, repeatable.
    #[arg(long = "meta", value_name = "K=V")]
    pub meta: Vec<String>,
    /// Leave this worktree's active run as it is.
    #[arg(long)]
    pub no_activate: bool,
}

pub fn run(a: StartArgs, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    let workflow_digest = match &a.workflow {
        Some(p) => Some(file_digest(&store, &ctx.user_path(p))?),
        None => None,
    };
    let rec = ops::start::start(
        &store,
        ops::start::StartOptions {
            run: a.run.map(RunId::new).transpose()?,
            label: a.label,
            workflow_digest,
            meta: parse_meta(&a.meta)?,
            keep_active_run: a.no_activate,
            ..Default::default()
        },
    )?;
    crate::cli::maintenance::after_recording(&store);
    let human = format!(
        "started run {}\n  checkpoint {}",
        rec.line.run,
        render::short(&rec.checkpoint.to_string())
    );
    let mut json = rec.to_json();
    json["run"] = rec.line.run.clone().into();
    Ok(Output::new(json, human))
}

/// The digest recorded for a workflow file: its git blob id.
fn file_digest(store: &Store, path: &Path) -> Result<String> {
    let data = std::fs::read(path)
        .map_err(|e| Error::usage(format!("cannot read workflow file {}: {e}", path.display())))?;
    Ok(format!("git-blob:{}", store.objects().blob_id(&data)?))
}
