//! `list`: the runs, or the checkpoints of one run.

use crate::cli::{Ctx, Output, listing, render};
use agent_rewind::error::Result;
use agent_rewind::ops;
use clap::Args;

/// The examples ending `-h`.
pub const EXAMPLES: &str =
    "Examples:\n  git agent-rewind list\n  git agent-rewind list --all\n  git agent-rewind list r1";

#[derive(Debug, Args)]
pub struct ListArgs {
    /// List the checkpoints of this run instead of all runs.
    pub run: Option<String>,
    /// Include archived runs.
    #[arg(long)]
    pub all: bool,
}

pub fn run(a: ListArgs, json: bool, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    match a.run {
        None => {
            let list = ops::list::list_runs(&store, a.all)?;
            for p in &list.problems {
                crate::cli::render::warn(p);
            }
            if json {
                // Written straight to stdout: with 100,000 runs a `Value` of the whole list
                // would cost several times the list's own memory.
                let runs = list.runs;
                return Ok(Output::streamed(
                    Box::new(move |w| {
                        serde_json::to_writer_pretty(w, &runs).map_err(std::io::Error::other)
                    }),
                    String::new(),
                ));
            }
            Ok(Output::new(
                serde_json::Value::Null,
                listing::runs_table(
                    &list.runs,
                    list.archived_hidden,
                    listing::terminal_width(),
                    &ctx.style,
                ),
            ))
        }
        Some(run) => {
            let run = ops::address::run(&store, &run)?;
            let cps = ops::list::list_checkpoints(&store, &run)?;
            Ok(Output::new(
                cps.iter().map(|c| c.to_json()).collect(),
                render::checkpoints_table(&cps, &ctx.style),
            ))
        }
    }
}
