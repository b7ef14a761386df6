//! `rewind` and `fork`: a new run pinned to an earlier point of a run.

use crate::cli::{Ctx, Output, render};
use agent_rewind::error::{Error, Result};
use agent_rewind::ids::RunId;
use agent_rewind::ops;
use clap::Args;
use std::path::PathBuf;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind rewind r1 --to implement
      Start a new run from the state right before r1's implement step began and check it out here; r1 is archived, and `undo` brings the current files back.
  git agent-rewind rewind r1 --to plan --after
      Start from the state when the plan step finished instead.
  git agent-rewind rewind r1 --list
      List r1's checkpoints, to choose where to go back to.";

/// The examples ending `fork -h`.
pub const FORK_EXAMPLES: &str = "Examples:
  git agent-rewind fork r1 --to implement --worktree ../try-b
      Try another way from before step implement in a new worktree ../try-b; r1 stays active here.
  git agent-rewind fork r1 --to r1@4 --run r1-alt --label \"other approach\"
      Fork from checkpoint r1@4 into a run named r1-alt, checked out here.";

#[derive(Debug, Args)]
pub struct RewindArgs {
    /// The run to go back in (an id or a unique prefix; default: the active run).
    pub run: Option<String>,
    /// A step (the state right before its latest attempt began), or a checkpoint
    /// (`<run>@<seq>`, a commit id).
    #[arg(long, value_name = "STEP|CHECKPOINT", required_unless_present = "list")]
    pub to: Option<String>,
    /// The state when the step last finished, instead of right before it began.
    #[arg(long)]
    pub after: bool,
    /// Check out into a new linked worktree at PATH; this worktree is left alone.
    #[arg(long, value_name = "PATH", conflicts_with = "no_checkout")]
    pub worktree: Option<PathBuf>,
    /// Only write refs (for orchestrators).
    #[arg(long)]
    pub no_checkout: bool,
    /// The new run's id (default: generated).
    #[arg(long = "run", value_name = "NEWID")]
    pub new_run: Option<String>,
    /// Branch to create (default: agent-runs/<newrun>).
    #[arg(long, value_name = "NAME")]
    pub branch: Option<String>,
    /// A label for the new run.
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// List the run's checkpoints instead (same as `list RUN`).
    #[arg(long)]
    pub list: bool,
    /// Say what would happen (the files that would change, what stays in place, where the
    /// agent's conversation would resume) and write nothing.
    #[arg(long, short = 'n')]
    pub dry_run: bool,
}

/// `rewind` (`fork == false`) or `fork`.
pub fn run(a: RewindArgs, fork: bool, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    let run = ops::address::run_or_active(&store, a.run.as_deref())?;
    if a.list {
        let cps = ops::list::list_checkpoints(&store, &run)?;
        return Ok(Output::new(
            cps.iter().map(|c| c.to_json()).collect(),
            render::checkpoints_table(&cps, &ctx.style),
        ));
    }
    let to =
        a.to.ok_or_else(|| Error::usage("--to <step|checkpoint> is required"))?;
    let out = ops::rewind::rewind(
        &store,
        &run,
        ops::rewind::RewindOptions {
            to: ops::rewind::RewindTarget::Named(to),
            after: a.after,
            worktree: a.worktree.map(|p| ctx.path(&p)),
            no_checkout: a.no_checkout,
            new_run: a.new_run.map(RunId::new).transpose()?,
            branch: a.branch,
            fork,
            label: a.label,
            dry_run: a.dry_run,
        },
    )?;
    Ok(Output::new(
        serde_json::to_value(&out).expect("json"),
        render::rewound(&out, &ctx.style),
    ))
}
