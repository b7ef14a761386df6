//! `run` and `resume`: execute a workflow file, continue a run.

use crate::cli::{Ctx, Output, render};
use agent_rewind::ops;
use agent_rewind::workflow::runner::{Outcome, RunReport};
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::RunId;
use clap::Args;
use std::path::PathBuf;

/// The examples ending `-h`, and the exit status scripts rely on.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind run workflow.toml
      Run the workflow's steps in order as a new run, a checkpoint before and after each; the file you name is trusted to run.
  git agent-rewind run workflow.toml --run r1 && deploy
      Name the run r1, and deploy only when every step completed (exit 0).

Exit status: 0 the run completed; 1 a step failed, a gate was rejected, or an error; 3 the run waits for a person (a gate to approve, an interrupted step to retry with --retry) or for the worker of an external step; 130 interrupted by Ctrl-C (the running step is recorded interrupted).";

/// The examples ending `resume -h`.
pub const RESUME_EXAMPLES: &str = "Examples:
  git agent-rewind resume
      Continue the active run from its first unfinished step; finished steps are not run again.
  git agent-rewind resume --retry implement
      Run the interrupted step implement again (a new attempt).
  git agent-rewind resume r2 --workflow workflow.toml
      Continue r2 with the steps of workflow.toml as it is now (the file you name is trusted to run).

Exit status: 0 the run completed; 1 a step failed, a gate was rejected, or an error; 3 the run waits for a person (a gate to approve, an interrupted step to retry with --retry) or for the worker of an external step; 130 interrupted by Ctrl-C (the running step is recorded interrupted).";

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The workflow file (TOML).
    pub workflow: PathBuf,
    /// Run id (default: generated).
    #[arg(long)]
    pub run: Option<String>,
    /// A label for the run (default: the workflow's name).
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The run (default: the active run of this worktree).
    pub run: Option<String>,
    /// Record a new attempt of STEP even if it was interrupted or failed.
    #[arg(long, value_name = "STEP")]
    pub retry: Option<String>,
    /// Use this workflow file instead of the copy stored with the run (it becomes the
    /// stored copy).
    #[arg(long, value_name = "FILE")]
    pub workflow: Option<PathBuf>,
}

pub fn run(a: RunArgs, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    let style = ctx.style(&store)?;
    let report = ops::run::run_workflow(
        &store,
        &ctx.user_path(&a.workflow),
        a.run.map(RunId::new).transpose()?,
        a.label,
    )?;
    crate::cli::maintenance::after_recording(&store);
    Ok(report_output(report, &style))
}

pub fn resume(a: ResumeArgs, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    let style = ctx.style(&store)?;
    let run = a
        .run
        .as_deref()
        .map(|r| ops::address::run(&store, r))
        .transpose()?;
    let workflow = a.workflow.as_deref().map(|p| ctx.user_path(p));
    let report = ops::run::resume(
        &store,
        run,
        ops::run::ResumeOptions {
            retry: a.retry.as_deref(),
            workflow_file: workflow.as_deref(),
        },
    )?;
    crate::cli::maintenance::after_recording(&store);
    Ok(report_output(report, &style))
}

/// A workflow report. The exit status says how the run ended, so that
/// `git agent-rewind run wf.toml && deploy` deploys only a completed run: 0 completed, 1 a
/// step failed or a gate was rejected, 3 waiting for a person (the report says why), 130
/// interrupted by Ctrl-C (the running step recorded `interrupted`).
fn report_output(report: RunReport, style: &render::Style) -> Output {
    let mut out = Output::new(
        serde_json::to_value(&report).expect("json"),
        render::run_report(&report, style),
    );
    out.exit_code = match report.outcome {
        Outcome::Completed => 0,
        Outcome::Failed => 1,
        Outcome::Waiting => EXIT_WAITING,
        // As a shell reports a command ended by SIGINT.
        Outcome::Interrupted => 130,
    };
    out
}

/// Exit status of `run`/`resume` when the run stopped to wait for a person.
pub const EXIT_WAITING: i32 = 3;
