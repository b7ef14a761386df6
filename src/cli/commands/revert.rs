//! `revert`: take back what one run, step attempt or checkpoint changed.

use crate::cli::{Ctx, Output, render};
use agent_rewind::ops;
use agent_rewind_core::error::Result;
use clap::Args;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind revert r1 --dry-run
      Show, file by file, how taking back everything run r1 changed would merge with the work done since; nothing is written.
  git agent-rewind revert r1/implement
      Take back what the latest attempt of step implement changed, keeping every later change.
  git agent-rewind revert r1@4 --conflict markers
      Take back one checkpoint; where a file conflicts, write git's conflict markers into it.";

#[derive(Debug, Args)]
pub struct RevertArgs {
    /// `<run>` (the whole run), `<run>/<step>` (its latest attempt), `<run>@<seq>` or a
    /// commit id (that one checkpoint).
    pub target: String,
    /// Print the plan (per file: revert, merge, keep, conflict); write nothing. Exits 1
    /// when the plan has a conflict (the revert would be refused).
    #[arg(long)]
    pub dry_run: bool,
    /// On a conflict: `refuse` (default, nothing written) or `markers` (write git-style
    /// conflict markers, after the backup).
    #[arg(long, value_name = "STYLE", default_value = "refuse", value_parser = ["refuse", "markers"])]
    pub conflict: String,
}

pub fn run(a: RevertArgs, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    let out = ops::revert::revert(
        &store,
        &ops::address::spec(&store, Some(&a.target))?,
        &ops::revert::RevertOptions {
            dry_run: a.dry_run,
            conflict_markers: a.conflict == "markers",
            by: None,
        },
    )?;
    if !out.dry_run {
        crate::cli::post_rewind::run_hook(
            &store,
            &ops::post_rewind::RewindEvent {
                operation: "revert",
                source: Some(&out.from),
                target: Some(&out.to),
                backup: out.backup.as_ref().map(|b| b.commit.as_str()),
            },
        );
    }
    let human = render::reverted(&out);
    let mut output = Output::new(serde_json::to_value(&out).expect("json"), human);
    // A dry run whose plan has a conflict says so by its exit status, as the revert would.
    if out
        .files
        .iter()
        .any(|f| f.action == ops::revert::Action::Conflict)
    {
        output.exit_code = 1;
    }
    Ok(output)
}
