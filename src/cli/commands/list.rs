//! `list`: the runs, or the checkpoints of one run.

use crate::cli::{Ctx, Output, listing, render};
use agent_rewind::ops;
use agent_rewind_core::error::Result;
use clap::Args;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind list
      The runs of this repository with their status, steps and lineage.
  git agent-rewind list --all
      Also the runs that were archived by a rewind.
  git agent-rewind list r1
      The checkpoints of run r1, and the tokens its turns used, per agent and model.";

#[derive(Debug, Args)]
pub struct ListArgs {
    /// List the checkpoints of this run instead of all runs.
    pub run: Option<String>,
    /// Include archived runs.
    #[arg(long)]
    pub all: bool,
    /// With a run: only its token usage, per agent and model, its own and what it
    /// inherited, priced with `agentRewind.price.<model>`.
    #[arg(long, requires = "run")]
    pub usage: bool,
}

pub fn run(a: ListArgs, json: bool, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store_to_look()?;
    match a.run {
        None => {
            let listing = ops::list::run_listing(&store, a.all)?;
            for p in &listing.problems {
                crate::cli::render::warn(p);
            }
            if json {
                // Written straight to stdout from the summary cache's JSON: with 100,000
                // runs, parsing and re-serializing every summary would cost more than
                // reading the refs. One run per line (docs/FORMAT.md).
                return Ok(Output::streamed(
                    Box::new(move |w| listing.write_json(w)),
                    String::new(),
                ));
            }
            // A run left `running` by a runner that died says so (the cached summary holds
            // what was recorded; the lock is looked at now, for running runs only).
            let summaries = listing.summaries().map(|s| {
                let mut s = s?;
                if s.status == "running"
                    && let Ok(run) = agent_rewind_core::ids::RunId::new(s.run.clone())
                    && agent_rewind::workflow::lock::runner_gone(&store, &run)?
                {
                    s.status = "interrupted (runner gone)".into();
                }
                Ok(s)
            });
            let table = listing::runs_table(
                summaries,
                listing.archived_hidden,
                listing::terminal_width(),
                &ctx.style(&store)?,
            )?;
            Ok(Output::new(serde_json::Value::Null, table))
        }
        Some(run) => {
            let run = ops::address::run(&store, &run)?;
            if a.usage {
                let mut catalog = agent_rewind::catalog::Catalog::new(&store);
                let u = ops::usage::run_usage(&store, &mut catalog, &run)?;
                return Ok(Output::new(
                    crate::cli::output::json(&u),
                    render::usage::run_usage(&u),
                ));
            }
            let cps = ops::list::list_checkpoints(&store, &run)?;
            // Only the document that will be printed is made.
            if json {
                return Ok(Output::new(
                    cps.iter().map(|c| c.to_json()).collect(),
                    String::new(),
                ));
            }
            let mut text = render::checkpoints_table(&cps, &ctx.style(&store)?);
            if cps.iter().any(|c| !c.line().usage.is_empty()) {
                let mut catalog = agent_rewind::catalog::Catalog::new(&store);
                let u = ops::usage::run_usage(&store, &mut catalog, &run)?;
                text.push_str("\n\n");
                text.push_str(&render::usage::run_usage(&u));
            }
            Ok(Output::new(serde_json::Value::Null, text))
        }
    }
}
