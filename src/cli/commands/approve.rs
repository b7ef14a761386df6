//! `approve` and `reject`: a person's decision on a checkpoint.

use crate::cli::render::escape;
use crate::cli::{Ctx, Output, render};
use agent_rewind::ops;
use agent_rewind_core::error::Result;
use clap::Args;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind approve r1/review
      Approve the checkpoint of the latest attempt of r1's review step, as your git identity; a waiting gate then passes on the next resume.
  git agent-rewind approve r1@7 -m \"looks good\"
      Approve exactly the 8th checkpoint of r1 (seq 7), with a comment.";

/// The examples ending `reject -h`.
pub const REJECT_EXAMPLES: &str = "Examples:
  git agent-rewind reject r1/review -m \"tests are missing\"
      Reject the latest attempt of r1's review step; the gate fails and the run stops there.
  git agent-rewind reject r1@7 --by \"Ana <ana@example.com>\"
      Reject checkpoint r1@7 in someone else's name (recorded as who decided).";

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// `<run>`, `<run>/<step>`, `<run>@<seq>`, or a commit id.
    pub checkpoint: String,
    /// Who decides (default: your git identity).
    #[arg(long, value_name = "WHO")]
    pub by: Option<String>,
    #[arg(short = 'm', long = "message", value_name = "TEXT")]
    pub message: Option<String>,
}

/// `approve` (`approved == true`) or `reject`.
pub fn run(a: ApproveArgs, approved: bool, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    let out = ops::approve::decide(
        &store,
        &ops::address::spec(&store, Some(&a.checkpoint))?,
        approved,
        a.by,
        a.message,
    )?;
    let human = format!(
        "{} checkpoint {} ({}{}) by {}",
        out.decision,
        render::short(&out.checkpoint),
        out.run,
        out.step
            .as_ref()
            .map(|s| format!("/{s}"))
            .unwrap_or_default(),
        escape(&out.by)
    );
    Ok(Output::new(
        serde_json::to_value(&out).expect("json"),
        human,
    ))
}
