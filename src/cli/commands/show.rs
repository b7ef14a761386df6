//! `show`: one checkpoint.

use crate::cli::{Ctx, Output, render};
use agent_rewind::error::Result;
use agent_rewind::ops;
use clap::Args;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:\n  git agent-rewind show r1/plan\n  git agent-rewind show r1@3\n  git agent-rewind --json show r1";

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// `<run>`, `<run>/<step>`, `<run>@<seq>`, `<run>@-1`, `@-1`, or a commit id (default:
    /// the active run's newest checkpoint).
    pub checkpoint: Option<String>,
}

pub fn run(a: ShowArgs, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    let spec = ops::address::spec(&store, a.checkpoint.as_deref())?;
    let shown = ops::show::show(&store, &spec)?;
    Ok(Output::new(
        shown.to_json(),
        render::shown(&shown, &ctx.style),
    ))
}
