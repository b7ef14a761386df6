//! `pick`: bring what a run, step attempt, checkpoint or range of checkpoints changed onto
//! this worktree, merged with the work here.

use crate::cli::{Ctx, Output, render};
use agent_rewind::ops;
use agent_rewind_core::error::Result;
use clap::Args;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind pick attempt-b --dry-run
      Show, file by file, how bringing everything run attempt-b changed here would merge with the work here; nothing is written.
  git agent-rewind pick attempt-b
      Bring attempt-b's work (another worktree's, a fork's, a fetched run's) onto this worktree, with no commit in between.
  git agent-rewind pick r1@3..@5 --conflict markers
      Bring what checkpoints 4 and 5 of r1 changed; where lines conflict, write git's conflict markers.";

#[derive(Debug, Args)]
pub struct PickArgs {
    /// `<run>` (the whole run), `<run>/<step>` (its latest attempt), `<run>@<seq>` or a
    /// commit id (that one checkpoint), `<run>@<a>..@<b>` (the checkpoints after a up to b).
    pub target: String,
    /// Print the plan (per file: pick, merge, keep, conflict); write nothing. Exits 1 when
    /// the plan has a conflict (the pick would be refused).
    #[arg(long)]
    pub dry_run: bool,
    /// On conflicting lines: `refuse` (default, nothing written) or `markers` (write
    /// git-style conflict markers, after the backup).
    #[arg(long, value_name = "STYLE", default_value = "refuse", value_parser = ["refuse", "markers"])]
    pub conflict: String,
}

pub fn run(a: PickArgs, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    let out = ops::pick::pick(
        &store,
        &ops::pick::target(&store, &a.target)?,
        &ops::pick::PickOptions {
            dry_run: a.dry_run,
            conflict_markers: a.conflict == "markers",
            by: None,
        },
    )?;
    if out.backup.is_some() {
        crate::cli::post_rewind::run_hook(
            &store,
            &ops::post_rewind::RewindEvent {
                operation: "pick",
                source: Some(&out.to),
                target: out.checkpoint.as_deref(),
                backup: out.backup.as_ref().map(|b| b.commit.as_str()),
            },
        );
    }
    let human = render::picked(&out);
    let mut output = Output::new(serde_json::to_value(&out).expect("json"), human);
    // A dry run whose plan has a conflict says so by its exit status, as the pick would.
    if out
        .files
        .iter()
        .any(|f| f.action == ops::revert::Action::Conflict)
    {
        output.exit_code = 1;
    }
    Ok(output)
}
