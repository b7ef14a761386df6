//! `step begin|end|exit`: record a step's lifecycle; `end --attempt N` and `exit` are the
//! worker's side of an external step (`ops::external`).

use crate::cli::record::{RecordArgs, record_options, recorded_output};
use crate::cli::{Ctx, Output, render};
use agent_rewind::ops;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::{RunId, StepName};
use agent_rewind_core::time::Timestamp;
use clap::Subcommand;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind step begin plan --kind agent --session-id \"$SESSION\"
      Record that step plan began, an agent's step, with the agent's session id so that a rewind can resume the conversation.
  git agent-rewind step end plan --status completed
      Record its outcome: a checkpoint of the worktree as the step left it.
  git agent-rewind step end review --run r1 --attempt 2 --status completed
      A worker reports the outcome of attempt 2 of an external step; the same report twice records nothing twice.

Exit status of `step end --attempt`: 0 recorded, or the same report was already recorded (nothing written); 1 refused (a stale attempt, a step never begun, a different outcome already recorded, uncommitted work under require_commit).";

#[derive(Debug, Subcommand)]
pub enum StepCommand {
    /// Record that STEP is about to run (status running, a new attempt).
    Begin {
        step: String,
        /// When an attempt of STEP is still running (begun, never ended), record it as
        /// interrupted (abandoned) and begin the next one, instead of refusing.
        #[arg(long)]
        force: bool,
        /// When the step began, if before now (RFC 3339, e.g. 2026-12-01T10:00:00Z; default:
        /// now): for a wrapper that records the begin after the step started.
        #[arg(long, value_name = "TIME")]
        started_at: Option<String>,
        #[command(flatten)]
        record: RecordArgs,
    },
    /// Record STEP's outcome (`--status completed|failed`) with a snapshot.
    End {
        step: String,
        /// The command's exit code, if any.
        #[arg(long, value_name = "N")]
        exit_code: Option<i32>,
        /// Report for exactly this attempt (an external step's worker): refused unless it
        /// is the step's newest attempt; a repeated report is a no-op.
        #[arg(long, value_name = "N")]
        attempt: Option<u32>,
        /// Refuse `completed` while files the step changed are uncommitted or HEAD has not
        /// moved past the commit the step began on (implies the checks of --attempt; without
        /// --attempt, the step's newest attempt).
        #[arg(long)]
        require_commit: bool,
        #[command(flatten)]
        record: RecordArgs,
    },
    /// Record that the worker of attempt N of STEP was seen to exit (never a completion).
    Exit {
        step: String,
        /// The run (default: the active run of this worktree).
        #[arg(long)]
        run: Option<String>,
        /// The attempt whose worker exited.
        #[arg(long, value_name = "N")]
        attempt: u32,
        /// When the exit was observed (RFC 3339, e.g. 2026-12-01T10:00:00Z; default: now).
        #[arg(long, value_name = "TIME")]
        observed_at: Option<String>,
    },
}

pub fn run(cmd: StepCommand, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    let style = ctx.style(&store)?;
    let out = match cmd {
        StepCommand::Begin {
            step,
            force,
            started_at,
            record,
        } => {
            let step = StepName::new(step)?;
            let started_at = started_at
                .as_deref()
                .map(agent_rewind_core::time::Timestamp::parse)
                .transpose()?;
            let out = ops::checkpoint::step_begin(
                &store,
                &step,
                record_options(&record, &store, ctx)?,
                ops::checkpoint::BeginOptions {
                    abandon_running: force,
                    started_at,
                },
            )?;
            if let Some(attempt) = out.abandoned_attempt {
                render::warn(&format!(
                    "attempt {attempt} of {step} was still running: recorded it as interrupted (abandoned); this is attempt {}",
                    out.recorded.line.attempt
                ));
            }
            out
        }
        StepCommand::End {
            step,
            exit_code,
            attempt,
            require_commit,
            record,
        } => {
            let mut opts = record_options(&record, &store, ctx)?;
            opts.facts.exit_code = exit_code;
            let step = StepName::new(step)?;
            if attempt.is_none() && !require_commit {
                ops::checkpoint::step_end(&store, &step, opts)?
            } else {
                let run = run_of(&store, opts.run.clone())?;
                let attempt = match attempt {
                    Some(a) => a,
                    None => newest_attempt(&store, &run, &step)?,
                };
                let end = ops::external::report_end(
                    &store,
                    ops::external::EndReport {
                        run: run.clone(),
                        step: step.clone(),
                        attempt,
                        require_commit,
                        record: opts,
                    },
                )?;
                if !end.already {
                    crate::cli::maintenance::after_recording(&store);
                }
                if end.already {
                    let status = end
                        .recorded
                        .line
                        .status
                        .map(|s| s.to_string())
                        .unwrap_or_default();
                    let mut json = end.recorded.to_json();
                    json["already_recorded"] = true.into();
                    return Ok(Output::new(
                        json,
                        format!(
                            "already recorded: attempt {attempt} of {run}/{step} is {status} (nothing written)"
                        ),
                    ));
                }
                ops::checkpoint::CheckpointOutcome {
                    recorded: end.recorded,
                    started: None,
                    abandoned_attempt: None,
                }
            }
        }
        StepCommand::Exit {
            step,
            run,
            attempt,
            observed_at,
        } => {
            let run = match run {
                Some(r) => Some(ops::address::run(&store, &r)?),
                None => None,
            };
            let run = run_of(&store, run)?;
            let at = observed_at
                .as_deref()
                .map(|t| {
                    Timestamp::parse(t)
                        .map_err(|e| Error::usage(format!("--observed-at {t:?}: {}", e.message)))
                })
                .transpose()?;
            let o = ops::external::report_exit(&store, &StepName::new(step)?, &run, attempt, at)?;
            let human = format!(
                "{} worker exit of {}/{} attempt {} at {} (on {}; the step's status is unchanged)",
                if o.already {
                    "already recorded"
                } else {
                    "recorded"
                },
                o.run,
                o.step,
                o.attempt,
                o.observed_at,
                render::short(&o.checkpoint)
            );
            return Ok(Output::new(crate::cli::output::json(&o), human));
        }
    };
    if !out.recorded.unchanged || out.started.is_some() {
        crate::cli::maintenance::after_recording(&store);
    }
    Ok(recorded_output(&out, &style))
}

/// `--run`, else the active run of this worktree.
fn run_of(store: &agent_rewind::store::Store, run: Option<RunId>) -> Result<RunId> {
    match run {
        Some(r) => Ok(r),
        None => agent_rewind::journal::active_run(store)?.ok_or_else(|| {
            Error::usage("no --run given and this worktree has no active run")
                .with_hint("give the run the runner printed: --run RUN")
        }),
    }
}

/// The newest attempt of `step` in `run` (for `--require-commit` without `--attempt`).
fn newest_attempt(store: &agent_rewind::store::Store, run: &RunId, step: &StepName) -> Result<u32> {
    let tip = agent_rewind::catalog::step_tip(store, run, step)?
        .ok_or_else(|| Error::refused(format!("step {step} was never begun in run {run}")))?;
    Ok(agent_rewind::catalog::Catalog::new(store)
        .checkpoint(tip)?
        .line()
        .attempt)
}
