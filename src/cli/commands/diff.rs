//! `diff`: files and metadata between two checkpoints.

use crate::cli::{Ctx, Output, render};
use agent_rewind::error::Result;
use agent_rewind::ops;
use clap::Args;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:\n  git agent-rewind diff r1/implement\n  git agent-rewind diff r1@2 r1@5 --stat\n  git agent-rewind diff r1/plan r2 -- src/";

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The checkpoint to diff (against its predecessor when alone; default: the active
    /// run's newest checkpoint).
    pub first: Option<String>,
    /// With two: diff from FIRST to SECOND.
    pub second: Option<String>,
}

pub fn run(a: DiffArgs, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    let first = ops::address::spec(&store, a.first.as_deref())?;
    let d = match a.second {
        Some(s) => {
            let second = ops::address::spec(&store, Some(&s))?;
            ops::diff::diff(&store, Some(&first), &second)?
        }
        None => ops::diff::diff(&store, None, &first)?,
    };
    Ok(Output::new(
        serde_json::to_value(&d).expect("json"),
        render::diff(&d, &ctx.style),
    ))
}
