//! `delete`: remove a run from this repository.

use crate::cli::output::json;
use crate::cli::render::short;
use crate::cli::{Ctx, Output};
use agent_rewind::ops;
use agent_rewind_core::error::Result;
use clap::Args;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind delete r1
      Delete run r1: its refs, its notes and fetched copies of it; refused while another run's lineage passes through it.
  git agent-rewind delete r1 --force
      Delete it even so; the runs that came from it keep their own checkpoints.";

#[derive(Debug, Args)]
pub struct DeleteArgs {
    pub run: String,
    /// Delete even when other runs' lineage passes through it.
    #[arg(long)]
    pub force: bool,
}

pub fn run(a: DeleteArgs, ctx: &Ctx) -> Result<Output> {
    let store = &ctx.store()?;
    let run = ops::address::run(store, &a.run)?;
    let out = ops::delete::delete(store, &run, a.force)?;
    let mut s = format!(
        "deleted run {} ({} refs; tip {})",
        out.run,
        out.refs_deleted,
        out.head.as_deref().map(short).unwrap_or_else(|| "-".into())
    );
    if !out.lineage_of.is_empty() {
        s.push_str(&format!(
            "\n  the lineage of {} passed through it: their history before their root now shows plain commits",
            out.lineage_of.join(", ")
        ));
    }
    Ok(Output::new(json(&out), s))
}
