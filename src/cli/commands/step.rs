//! `step begin|end`: record a step's lifecycle.

use crate::cli::record::{RecordArgs, record_options, recorded_output};
use crate::cli::{Ctx, Output};
use agent_rewind::error::Result;
use agent_rewind::ids::StepName;
use agent_rewind::ops;
use clap::Subcommand;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:\n  git agent-rewind step begin plan --kind agent --session-id \"$SESSION\"\n  git agent-rewind step end plan --status completed\n  git agent-rewind step end test --status failed --exit-code 3";

#[derive(Debug, Subcommand)]
pub enum StepCommand {
    /// Record that STEP is about to run (status running, a new attempt).
    Begin {
        step: String,
        #[command(flatten)]
        record: RecordArgs,
    },
    /// Record STEP's outcome (`--status completed|failed`) with a snapshot.
    End {
        step: String,
        /// The command's exit code, if any.
        #[arg(long, value_name = "N")]
        exit_code: Option<i32>,
        #[command(flatten)]
        record: RecordArgs,
    },
}

pub fn run(cmd: StepCommand, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    let out = match cmd {
        StepCommand::Begin { step, record } => ops::checkpoint::step_begin(
            &store,
            &StepName::new(step)?,
            record_options(&record, &store, ctx)?,
        )?,
        StepCommand::End {
            step,
            exit_code,
            record,
        } => {
            let mut opts = record_options(&record, &store, ctx)?;
            opts.exit_code = exit_code;
            ops::checkpoint::step_end(&store, &StepName::new(step)?, opts)?
        }
    };
    Ok(recorded_output(&out, &ctx.style))
}
