//! `checkpoint`: snapshot the worktree and append a checkpoint of a step.

use crate::cli::record::{RecordArgs, record_options, recorded_output};
use crate::cli::{Ctx, Output};
use agent_rewind::model::Event;
use agent_rewind::ops;
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::StepName;
use clap::Args;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind checkpoint implement -m \"first draft\"
      Snapshot the worktree (tracked and untracked files, your index untouched) as a checkpoint of step implement of the active run.
  git agent-rewind checkpoint test --status failed --artifact out/test.log
      Record that step test failed, keeping out/test.log as an artifact of the checkpoint.";

#[derive(Debug, Args)]
pub struct CheckpointArgs {
    /// The step this checkpoint belongs to.
    pub step: String,
    /// Event: begin, finish, commit, turn, manual, steer (default: manual).
    #[arg(long, value_name = "E")]
    pub event: Option<String>,
    #[command(flatten)]
    pub record: RecordArgs,
}

pub fn run(a: CheckpointArgs, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    let style = ctx.style(&store)?;
    let step = StepName::new(a.step)?;
    let mut opts = record_options(&a.record, &store, ctx)?;
    opts.event = a.event.as_deref().map(Event::parse).transpose()?;
    let out = ops::checkpoint::checkpoint(&store, &step, opts)?;
    if !out.recorded.unchanged || out.started.is_some() {
        crate::cli::maintenance::after_recording(&store);
    }
    Ok(recorded_output(&out, &style))
}
