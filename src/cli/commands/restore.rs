//! `restore`: put files from a checkpoint back into the worktree.

use crate::cli::paths::worktree_paths;
use crate::cli::{Ctx, Output, render};
use agent_rewind::ops;
use agent_rewind_core::error::Result;
use clap::Args;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind restore r1/plan
      Put the whole worktree back as it was at r1's plan step (a backup is taken first: `undo` brings today's files back).
  git agent-rewind restore r1@3 -- src/login.rs
      Only bring back src/login.rs from checkpoint r1@3.
  git agent-rewind restore r1/plan -- .
      Only the files under the current folder.";

#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// `<run>`, `<run>/<step>`, `<run>@<seq>`, or a commit id.
    pub checkpoint: String,
    /// Only these paths (files or folders, relative to the current folder); default: the
    /// whole tree.
    #[arg(last = true, value_name = "PATH")]
    pub paths: Vec<String>,
}

pub fn run(a: RestoreArgs, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    let spec = ops::address::spec(&store, Some(&a.checkpoint))?;
    let paths = worktree_paths(store.worktree().root()?, &ctx.dir, &a.paths)?;
    let out = ops::restore::restore(&store, &spec, &paths)?;
    crate::cli::post_rewind::run_hook(
        &store,
        &ops::post_rewind::RewindEvent {
            operation: "restore",
            source: Some(&out.checkpoint),
            target: None,
            backup: Some(&out.backup.commit),
        },
    );
    let human = format!(
        "restored {} from {}
{}  backup {} (`git agent-rewind undo` brings the previous state back)
{}",
        agent_rewind_core::words::count(out.changed.len(), "path", "paths"),
        render::short(&out.checkpoint),
        render::file_changes(&out.files),
        render::short(&out.backup.commit),
        render::left_in_place(&out.left_in_place)
    )
    .trim_end()
    .to_string();
    Ok(Output::new(
        serde_json::to_value(&out).expect("json"),
        human,
    ))
}
