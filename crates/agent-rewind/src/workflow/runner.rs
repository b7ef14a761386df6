//! The runner: executes a workflow run step by step under the run's runner lock. For each
//! step it asks the planner, records `begin` (running) before dispatching the command, and
//! `finish` (completed/failed, with a snapshot and the exit code) after it. A failing step,
//! an interrupted agent/effect step or a gate stops the run with a next action in words. An
//! external step is only begun (its worker reports with `step end --attempt N`): the steps
//! that need it wait, the others go on, and the run stops waiting for workers. Each launch
//! is told to `ExecOptions::on_launch` right after its `begin` is recorded.
//!
//! The step's command runs under `sh -c` in the worktree with `AGENT_RUN`, `AGENT_STEP`,
//! `AGENT_ATTEMPT`, `AGENT_RESUME_SESSION` and `AGENT_IDEMPOTENCY_KEY` set; its output goes
//! to our stderr so `--json` output stays clean. Commands come only from the workflow the
//! caller passes: a file the user named, or the copy stored with a run the user resumes
//! (`ops::run`); nothing is ever executed by fetching or importing.

use super::external::{ExternalTask, Launch};
use super::plan::{self, Context};
use super::{StepDef, Workflow, lock};
use crate::catalog::Catalog;
use crate::journal::Recorded;
use crate::model::Status;
use crate::store::Store;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::RunId;
use agent_rewind_core::process::{self, Purpose};
use serde::Serialize;
use std::collections::HashSet;
use std::process::Stdio;

mod execution;

use execution::Execution;

/// What the runner did with a step; serialized (and shown) in kebab-case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepAction {
    /// Its command ran.
    Ran,
    /// Already done with the same inputs.
    Skipped,
    /// An effect already performed with this idempotency key.
    SkippedEffect,
    /// A gate was opened and waits for a person.
    GateOpened,
    /// A gate's approval let the run pass it.
    GatePassed,
    /// The run stopped at this step.
    Stopped,
    /// An external step was begun and handed to a worker.
    Dispatched,
    /// An external step (or a step that needs one) waits for its worker's report.
    Waiting,
}

impl std::fmt::Display for StepAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StepAction::Ran => "ran",
            StepAction::Skipped => "skipped",
            StepAction::SkippedEffect => "skipped-effect",
            StepAction::GateOpened => "gate-opened",
            StepAction::GatePassed => "gate-passed",
            StepAction::Stopped => "stopped",
            StepAction::Dispatched => "dispatched",
            StepAction::Waiting => "waiting",
        })
    }
}

/// What happened to one step during this invocation.
#[derive(Debug, Clone, Serialize)]
pub struct StepReport {
    pub step: String,
    pub action: StepAction,
    pub reason: String,
    pub status: Option<Status>,
    pub attempt: Option<u32>,
    pub exit_code: Option<i32>,
    pub checkpoint: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub run: String,
    pub workflow: String,
    pub steps: Vec<StepReport>,
    /// True when every step is done.
    pub finished: bool,
    /// How the run ended: completed, failed (a step failed, a gate was rejected), or
    /// waiting for a person (a gate awaiting approval, an interrupted step to retry).
    pub outcome: Outcome,
    /// Why the run stopped early, if it did.
    pub stopped: Option<String>,
    pub next_action: String,
    /// Steps whose interrupted attempt was reconciled at the start.
    pub reconciled: Vec<String>,
    /// The runner whose stale lock was taken over, if any.
    pub took_over_from: Option<String>,
    /// The workflow file changed since the run last recorded it.
    pub workflow_changed: bool,
    /// Where the workflow executed came from, in words (set by `ops::run`).
    pub workflow_from: String,
    /// The file the run was started from, when it changed on disk and the stored copy was
    /// used instead (`resume --workflow FILE` uses the file).
    pub workflow_file_changed: Option<String>,
    /// When waiting: for a person (a gate, a step to retry) or for workers (external steps).
    pub waiting_on: Option<WaitingOn>,
    /// External steps begun and not reported yet, with what their workers need.
    pub external: Vec<ExternalTask>,
}

/// What a waiting run waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitingOn {
    /// A gate to approve, an interrupted or failed step to retry.
    Person,
    /// Workers to report external steps (`step end --attempt N`).
    Workers,
}

/// How to execute: which step to retry, whether interrupted steps may start again, and who
/// hears of each launch (right after its `begin` is recorded, before it starts).
pub struct ExecOptions<'a> {
    pub retry: Option<&'a str>,
    /// `resume` re-runs an interrupted deterministic (or idempotent) step; the watcher never
    /// starts an attempt a second time.
    pub rerun_interrupted: bool,
    pub on_launch: Option<&'a mut dyn FnMut(&Launch)>,
}

/// How a run (or this part of it) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every step is done.
    Completed,
    /// A step failed or a gate was rejected.
    Failed,
    /// Stopped until a person acts: a gate awaits approval, or an interrupted agent/effect
    /// step needs `resume --retry`.
    Waiting,
    /// Ctrl-C: the step that was running is recorded `interrupted` (exit 130, as a shell).
    Interrupted,
}

/// Execute (or continue) `run` with `workflow`.
pub fn execute(
    store: &Store,
    run: &RunId,
    workflow: &Workflow,
    retry: Option<&str>,
) -> Result<RunReport> {
    check_retry(workflow, retry)?;
    let runner = lock::acquire(store, run)?;
    // Ctrl-C from here on is noted, and the running step recorded `interrupted`.
    agent_rewind_core::process::interrupt::catch();
    execute_locked(
        store,
        run,
        workflow,
        ExecOptions {
            retry,
            rerun_interrupted: true,
            on_launch: None,
        },
        runner,
    )
}

fn check_retry(workflow: &Workflow, retry: Option<&str>) -> Result<()> {
    if let Some(r) = retry
        && workflow.step(r).is_none()
    {
        return Err(Error::usage(format!(
            "--retry {r}: the workflow has no step {r:?}"
        )));
    }
    Ok(())
}

/// Execute (or continue) `run` under its runner lock, taken by the caller.
pub fn execute_locked(
    store: &Store,
    run: &RunId,
    workflow: &Workflow,
    mut opts: ExecOptions,
    runner: lock::RunnerLock,
) -> Result<RunReport> {
    check_retry(workflow, opts.retry)?;
    let digest = format!(
        "git-blob:{}",
        store.objects().blob_id(workflow.text.as_bytes())?
    );
    let mut catalog = Catalog::new(store);
    let recorded_digest = {
        let tip = catalog.require_run_tip(run)?;
        catalog
            .lineage_chain(tip.id(), usize::MAX)?
            .into_iter()
            .find_map(|c| c.line().workflow_digest.clone())
    };
    let reconciled = {
        let none = HashSet::new();
        let mut cx = Context {
            store,
            catalog: &mut catalog,
            run,
            workflow,
            retry: opts.retry,
            ran_now: &none,
            rerun_interrupted: opts.rerun_interrupted,
        };
        plan::reconcile_interrupted(&mut cx)?
    };
    let out = RunReport {
        run: run.to_string(),
        workflow: workflow.name.clone(),
        steps: vec![],
        finished: false,
        outcome: Outcome::Failed,
        stopped: None,
        next_action: String::new(),
        reconciled,
        took_over_from: runner.took_over_from.clone(),
        workflow_changed: recorded_digest.is_some_and(|d| d != digest),
        workflow_from: String::new(),
        workflow_file_changed: None,
        waiting_on: None,
        external: vec![],
    };
    let mut exec = Execution::new(store, run, workflow, digest, out)?;
    for step in &workflow.steps {
        if agent_rewind_core::process::interrupt::caught() {
            return Ok(exec.stopped(execution::between_steps(step)));
        }
        if let Some(stop) = exec.step(step, &mut opts)? {
            return Ok(exec.stopped(stop));
        }
    }
    let out = exec.finish()?;
    drop(runner);
    Ok(out)
}

/// The report of a step whose decision was recorded as `rec`.
fn recorded(step: &StepDef, action: StepAction, reason: String, rec: &Recorded) -> StepReport {
    StepReport {
        step: step.name.to_string(),
        action,
        reason,
        status: rec.line.status,
        attempt: Some(rec.line.attempt),
        exit_code: rec.line.exit_code,
        checkpoint: Some(rec.checkpoint.to_string()),
    }
}

fn launch(run: &RunId, step: &StepDef, rec: &Recorded, external: bool, reason: &str) -> Launch {
    Launch {
        run: run.to_string(),
        step: step.name.to_string(),
        attempt: rec.line.attempt,
        checkpoint: rec.checkpoint.to_string(),
        external,
        reason: reason.to_string(),
    }
}

fn report(
    step: &StepDef,
    action: StepAction,
    reason: String,
    status: Option<Status>,
    attempt: Option<u32>,
) -> StepReport {
    StepReport {
        step: step.name.to_string(),
        action,
        reason,
        status,
        attempt,
        exit_code: None,
        checkpoint: None,
    }
}

/// The shell a step's command runs under, and its flag: `sh -c <command>`. `sh` is found on
/// the `PATH` the step runs with (its own `env` may set it).
pub const STEP_SHELL: [&str; 2] = ["sh", "-c"];

/// Run the step's command; returns its exit code (None when killed by a signal).
fn run_command(
    store: &Store,
    run: &RunId,
    step: &StepDef,
    attempt: u32,
    session: Option<&str>,
    key: Option<&str>,
) -> Result<Option<i32>> {
    let Some(cmd) = &step.run else {
        return Ok(Some(0));
    };
    // The step's output goes to our stderr (stdout is the runner's report).
    let to_stderr = || Stdio::from(std::io::stderr());
    let status = process::command(Purpose::WorkflowStep, STEP_SHELL[0])
        .arg(STEP_SHELL[1])
        .arg(cmd)
        .current_dir(store.worktree().root()?)
        .envs(&step.env)
        .env("AGENT_RUN", run.as_str())
        .env("AGENT_STEP", step.name.as_str())
        .env("AGENT_ATTEMPT", attempt.to_string())
        .env("AGENT_RESUME_SESSION", session.unwrap_or(""))
        .env("AGENT_IDEMPOTENCY_KEY", key.unwrap_or(""))
        .stdin(Stdio::null())
        .stdout(to_stderr())
        .stderr(to_stderr())
        .status()
        .map_err(|e| Error::other(format!("could not run step {}: {e}", step.name)))?;
    Ok(status.code())
}
