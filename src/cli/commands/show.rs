//! `show`: one checkpoint.

use crate::cli::{Ctx, Output, render};
use agent_rewind::ops;
use agent_rewind_core::error::Result;
use clap::Args;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind show r1/plan
      The latest checkpoint of r1's plan step: its metadata, the files it changed and its artifacts.
  git agent-rewind show r1@3
      The checkpoint with seq 3 of run r1.
  git agent-rewind --json show r1
      The newest checkpoint of r1 as one JSON document, for a script.";

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// `<run>`, `<run>/<step>`, `<run>@<seq>`, `<run>@-1`, `@-1`, or a commit id (default:
    /// the active run's newest checkpoint).
    pub checkpoint: Option<String>,
}

pub fn run(a: ShowArgs, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store_to_look()?;
    let spec = ops::address::spec(&store, a.checkpoint.as_deref())?;
    let shown = ops::show::show(&store, &spec)?;
    Ok(Output::new(
        shown.to_json(),
        render::shown(&shown, &ctx.style(&store)?),
    ))
}
