//! `checkpoint`, `step begin`, `step end`: snapshot now and append to a run. A run that does
//! not exist yet is started implicitly (a `start` checkpoint first) and made the worktree's
//! active run (unless asked to keep it); without `--run` the active run is used, or a new
//! one is started.

use super::start::{StartOptions, start};
use crate::journal::{Record, Recorded, append};
use crate::journal::{active_run, set_active_run};
use crate::model::{Event, Status, StepKind};
use crate::store::Store;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::{RunId, StepName};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default)]
pub struct CheckpointOptions {
    pub run: Option<RunId>,
    pub kind: Option<StepKind>,
    pub status: Option<Status>,
    pub event: Option<Event>,
    pub session_id: Option<String>,
    /// The coding agent whose session `session_id` is.
    pub agent: Option<String>,
    /// Paths (relative to the worktree root) the agent edited since its previous turn.
    pub touched: Vec<String>,
    pub artifacts: Vec<String>,
    pub meta: BTreeMap<String, String>,
    pub message: Option<String>,
    pub exit_code: Option<i32>,
    pub inputs_hash: Option<String>,
    pub idempotency_key: Option<String>,
    pub next_action: Option<String>,
    /// More note lines written in the same commit as the checkpoint line.
    pub note_lines: Vec<crate::model::NoteLine>,
    /// Write only while the step's ref still points at this checkpoint (see `ops::external`).
    pub expect_step_tip: Option<crate::store::ObjectId>,
    /// Write only while the user's HEAD is still this commit after the snapshot (a
    /// post-commit checkpoint taken in the background, `hooks::background`).
    pub expect_head: Option<crate::store::ObjectId>,
    /// A run started implicitly does not become the worktree's active run (`--no-activate`).
    pub keep_active_run: bool,
    /// The user's HEAD to record instead of the current one (a background checkpoint of a
    /// commit HEAD has moved on from by commits on top of it).
    pub user_head: Option<crate::store::UserHead>,
}

/// The result, with the id of a run that was started implicitly.
#[derive(Debug, Clone)]
pub struct CheckpointOutcome {
    pub recorded: Recorded,
    pub started: Option<Recorded>,
}

/// Record a checkpoint of `step`.
pub fn checkpoint(
    store: &Store,
    step: &StepName,
    opts: CheckpointOptions,
) -> Result<CheckpointOutcome> {
    let event = opts.event.unwrap_or(Event::Manual);
    if matches!(event, Event::Start | Event::Root) {
        return Err(Error::usage(format!(
            "event {event} is recorded by `start`/`rewind`/`fork`, not by `checkpoint`"
        )));
    }
    store.worktree().root()?;
    let (run, started) = ensure_run(store, opts.run.clone(), opts.keep_active_run)?;
    let mut rec = Record::new(run, event);
    rec.step = Some(step.clone());
    rec.kind = opts.kind;
    rec.status = opts.status.or(match event {
        Event::Begin => Some(Status::Running),
        _ => None,
    });
    rec.session_id = opts.session_id;
    rec.agent = opts.agent;
    rec.touched = opts.touched;
    rec.artifacts = opts.artifacts;
    rec.meta = opts.meta;
    rec.message = opts.message;
    rec.exit_code = opts.exit_code;
    rec.inputs_hash = opts.inputs_hash;
    rec.idempotency_key = opts.idempotency_key;
    rec.extra_lines = opts.note_lines;
    rec.expect_step_tip = opts.expect_step_tip;
    rec.expect_user_head = opts.expect_head;
    rec.user_head = opts.user_head;
    rec.next_action = opts
        .next_action
        .or_else(|| default_next_action(event, step, rec.status));
    let recorded = append(store, rec)?;
    Ok(CheckpointOutcome { recorded, started })
}

/// `step begin`: record before dispatch (status `running`, a new attempt).
pub fn step_begin(
    store: &Store,
    step: &StepName,
    mut opts: CheckpointOptions,
) -> Result<CheckpointOutcome> {
    opts.event = Some(Event::Begin);
    opts.status = Some(opts.status.unwrap_or(Status::Running));
    checkpoint(store, step, opts)
}

/// `step end`: record the outcome after the step ran.
pub fn step_end(
    store: &Store,
    step: &StepName,
    mut opts: CheckpointOptions,
) -> Result<CheckpointOutcome> {
    match opts.status {
        Some(
            Status::Completed
            | Status::Failed
            | Status::Skipped
            | Status::Interrupted
            | Status::AwaitingApproval,
        ) => {}
        Some(other) => {
            return Err(Error::usage(format!(
                "step end needs an outcome status (completed, failed, skipped, interrupted, awaiting_approval), not {other}"
            )));
        }
        None => return Err(Error::usage("step end needs --status completed|failed")),
    }
    opts.event = Some(Event::Finish);
    checkpoint(store, step, opts)
}

/// The run to append to: `--run` (an existing run's id or unique prefix; any other name
/// starts a new run), the active run, or a new one;
/// a run started here becomes the active run unless `keep_active_run`.
fn ensure_run(
    store: &Store,
    run: Option<RunId>,
    keep_active_run: bool,
) -> Result<(RunId, Option<Recorded>)> {
    let run = match run {
        // A run is named as every command names it (full id or unique prefix); only a name
        // that is no prefix of an existing run starts a new one.
        Some(r) => match super::address::existing_run(store, &r)? {
            Some(existing) => return Ok((existing, None)),
            None => r,
        },
        None => match active_run(store)? {
            Some(r) => r,
            None => {
                let rec = start(
                    store,
                    StartOptions {
                        keep_active_run,
                        ..Default::default()
                    },
                )?;
                let run = RunId::new(rec.line.run.clone())?;
                return Ok((run, Some(rec)));
            }
        },
    };
    if store.refs().run_head(&run)?.is_some() {
        return Ok((run, None));
    }
    match start(
        store,
        StartOptions {
            run: Some(run.clone()),
            keep_active_run,
            ..Default::default()
        },
    ) {
        Ok(rec) => Ok((run, Some(rec))),
        // Another process started it between our check and our write: append to it.
        Err(_) if store.refs().run_head(&run)?.is_some() => {
            if !keep_active_run {
                set_active_run(store, &run)?;
            }
            Ok((run, None))
        }
        Err(e) => Err(e),
    }
}

fn default_next_action(event: Event, step: &StepName, status: Option<Status>) -> Option<String> {
    Some(match (event, status) {
        (Event::Begin, _) => {
            format!("wait for step {step} to finish; if its process died, resume reconciles it")
        }
        (_, Some(Status::Failed)) => format!("fix the cause and retry step {step}"),
        (_, Some(Status::AwaitingApproval)) => format!("approve or reject step {step}"),
        (_, Some(Status::Completed)) => "run the next step".into(),
        _ => return None,
    })
}
