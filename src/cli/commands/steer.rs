//! `steer`: change a run's inputs and invalidate steps.

use crate::cli::paths::worktree_paths;
use crate::cli::{Ctx, Output, render};
use agent_rewind::ops;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::StepName;
use clap::Args;
use std::path::Path;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind steer r1 --edit TASK.md=new-task.md
      Show which steps would run again if TASK.md got new-task.md's content; nothing changes without --yes.
  git agent-rewind steer r1 --invalidate test --yes
      Mark step test (and what depends on it) to run again on the next resume.";

#[derive(Debug, Args)]
pub struct SteerArgs {
    pub run: String,
    /// Replace PATH (a file of the worktree) with the content of FILE; both relative to the
    /// current folder. Repeatable.
    #[arg(long = "edit", value_name = "PATH=FILE")]
    pub edits: Vec<String>,
    /// Re-run STEP (and what depends on it) on the next resume. Repeatable.
    #[arg(long = "invalidate", value_name = "STEP")]
    pub invalidate: Vec<String>,
    /// Only show the blast radius (the default without --yes).
    #[arg(long, conflicts_with = "yes")]
    pub dry_run: bool,
    /// Apply.
    #[arg(long)]
    pub yes: bool,
}

pub fn run(a: SteerArgs, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    let style = ctx.style(&store)?;
    let run = ops::address::run(&store, &a.run)?;
    let mut edits = vec![];
    for e in &a.edits {
        let (p, f) = e
            .split_once('=')
            .ok_or_else(|| Error::usage(format!("invalid --edit {e:?}: expected PATH=FILE")))?;
        let p = worktree_paths(store.worktree().root()?, &ctx.dir, &[p.to_string()])?.remove(0);
        edits.push((p, ctx.user_path(Path::new(f))));
    }
    let invalidate = a
        .invalidate
        .into_iter()
        .map(StepName::new)
        .collect::<Result<Vec<_>>>()?;
    let out = ops::steer::steer(&store, &run, &edits, &invalidate, a.yes && !a.dry_run)?;
    if out.checkpoint.is_some() {
        crate::cli::maintenance::after_recording(&store);
    }
    Ok(Output::new(
        serde_json::to_value(&out).expect("json"),
        render::steer(&out, &style),
    ))
}
