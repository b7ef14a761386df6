//! `log`: a run's lineage, as a chain or as the tree of runs (`--graph`).

use crate::cli::{Ctx, Output, render};
use agent_rewind::ops;
use agent_rewind_core::error::Result;
use clap::Args;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind log r2
      The chain of r2 back through the rewinds and forks it came from to the first run.
  git agent-rewind log --graph
      Every tree of runs (archived ones folded), as `git log --graph --all`.
  git agent-rewind log r1 --graph --format mermaid
      The same tree as a Mermaid diagram, to paste into a pull request.";

#[derive(Debug, Args)]
pub struct LogArgs {
    /// The run (an id or a unique prefix; default: the active run, and with --graph every
    /// run).
    pub run: Option<String>,
    /// Show the tree of runs (which run came from which checkpoint of which run): the run's
    /// tree, or with no run named every tree, as `git log --graph --all`.
    #[arg(long)]
    pub graph: bool,
    /// With --graph and no run: also the trees of archived runs alone, unfolded.
    #[arg(long, requires = "graph")]
    pub all: bool,
    /// With --graph: text (default), mermaid, dot, or json (nodes and edges).
    #[arg(long, value_name = "FMT", requires = "graph",
          value_parser = ["text", "mermaid", "dot", "json"])]
    pub format: Option<String>,
}

pub fn run(a: LogArgs, json: bool, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store_to_look()?;
    let style = ctx.style(&store)?;
    if a.graph
        && let Some(out) = super::view::log_graph(&store, &a, json)?
    {
        return Ok(out);
    }
    let shape = render::GraphShape {
        fold_archived: !a.all,
    };
    if a.graph && a.run.is_none() {
        let trees = ops::log::lineage_forest(&store)?;
        return Ok(Output::new(
            serde_json::to_value(&trees).expect("json"),
            render::forest(&trees, shape, &style),
        ));
    }
    let run = ops::address::run_or_active(&store, a.run.as_deref())?;
    if a.graph {
        let g = ops::log::lineage_graph(&store, &run)?;
        Ok(Output::new(
            serde_json::to_value(vec![&g]).expect("json"),
            render::graph(&g, shape, &style),
        ))
    } else {
        let chain = ops::log::lineage(&store, &run)?;
        Ok(Output::new(
            chain.iter().map(|c| c.to_json()).collect(),
            render::lineage(&chain, &style),
        ))
    }
}
