//! `checkpoint`, `step begin`, `step end`: snapshot now and append to a run. A run that does
//! not exist yet is started implicitly (a `start` checkpoint first) and made the worktree's
//! active run (unless asked to keep it); without `--run` the active run is used, or a new
//! one is started.

use super::start::{StartOptions, start};
use crate::catalog::Catalog;
use crate::journal::{Record, Recorded, StepFacts, append};
use crate::journal::{active_run, set_active_run};
use crate::model::{Event, NoteLine, Status};
use crate::store::{ObjectId, Store};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::{RunId, StepName};

/// What `checkpoint()` records: the step's facts as the journal takes them, plus what only
/// `checkpoint()` decides (which run, the event, whether a run it starts becomes active).
#[derive(Debug, Clone, Default)]
pub struct CheckpointOptions {
    pub run: Option<RunId>,
    pub event: Option<Event>,
    /// A run started implicitly does not become the worktree's active run (`--no-activate`).
    pub keep_active_run: bool,
    pub facts: StepFacts,
}

/// The result, with the id of a run that was started implicitly.
#[derive(Debug, Clone)]
pub struct CheckpointOutcome {
    pub recorded: Recorded,
    pub started: Option<Recorded>,
    /// `step begin --force`: the attempt that was still running, now recorded as
    /// interrupted (abandoned).
    pub abandoned_attempt: Option<u32>,
}

/// What `step begin` does with an attempt of the step that is still running.
#[derive(Debug, Clone, Copy, Default)]
pub struct BeginOptions {
    /// Record that attempt as interrupted (abandoned) and begin the next, instead of
    /// refusing (`--force`).
    pub abandon_running: bool,
    /// When the step began, if before now (a wrapper that records the begin late):
    /// `started_at` of the attempt.
    pub started_at: Option<agent_rewind_core::time::Timestamp>,
}

/// Record a checkpoint of `step`.
pub fn checkpoint(
    store: &Store,
    step: &StepName,
    opts: CheckpointOptions,
) -> Result<CheckpointOutcome> {
    checkpoint_started(store, step, opts, None)
}

/// [`checkpoint`], with the attempt's `started_at` when it is not now.
fn checkpoint_started(
    store: &Store,
    step: &StepName,
    opts: CheckpointOptions,
    started_at: Option<agent_rewind_core::time::Timestamp>,
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
    rec.facts = opts.facts;
    rec.started_at = started_at;
    if event == Event::Begin {
        rec.facts.status.get_or_insert(Status::Running);
    }
    rec.facts.next_action = rec
        .facts
        .next_action
        .take()
        .or_else(|| default_next_action(event, step, rec.facts.status));
    let recorded = append(store, rec)?;
    Ok(CheckpointOutcome {
        recorded,
        started,
        abandoned_attempt: None,
    })
}

/// `step begin`: record before dispatch (status `running`, a new attempt). An attempt of
/// the step in the same run that is still running (a `begin` without its `end`) is refused,
/// before anything is written, unless `begin.abandon_running`: then it is recorded as
/// interrupted, with the reason, after the new attempt is begun.
pub fn step_begin(
    store: &Store,
    step: &StepName,
    mut opts: CheckpointOptions,
    begin: BeginOptions,
) -> Result<CheckpointOutcome> {
    if let Some(t) = begin.started_at
        && t > agent_rewind_core::time::Timestamp::now()
    {
        return Err(Error::usage(format!(
            "--started-at {t} is in the future: a step begins at most now"
        )));
    }
    let running = running_attempt(store, step, opts.run.as_ref())?;
    if let (Some((run, attempt, _)), false) = (&running, begin.abandon_running) {
        return Err(Error::refused(format!(
            "step {step} of run {run} is still running (attempt {attempt}): it has no end"
        ))
        .with_hint(format!(
            "record its outcome first (`git agent-rewind step end {step} --status failed`, or completed), or `git agent-rewind step begin {step} --force` to record attempt {attempt} as interrupted and begin attempt {}",
            attempt + 1
        )));
    }
    opts.event = Some(Event::Begin);
    opts.facts.status = Some(opts.facts.status.unwrap_or(Status::Running));
    let mut out = checkpoint_started(store, step, opts, begin.started_at)?;
    if let Some((run, attempt, latest)) = running {
        crate::journal::append_note_lines(
            store,
            &run,
            latest,
            &[NoteLine::Status {
                status: Status::Interrupted,
                ts: agent_rewind_core::time::Timestamp::now(),
                reason: Some(format!(
                    "abandoned: attempt {} was begun without an end to this one",
                    out.recorded.line.attempt
                )),
            }],
        )?;
        out.abandoned_attempt = Some(attempt);
    }
    Ok(out)
}

/// The attempt of `step` still running in the run a `step begin` would append to (`run`,
/// else the active run): the run, the attempt and its newest checkpoint. An attempt begun
/// in the run this one was rewound or forked from is that run's, not this one's.
fn running_attempt(
    store: &Store,
    step: &StepName,
    run: Option<&RunId>,
) -> Result<Option<(RunId, u32, ObjectId)>> {
    let run = match run {
        Some(r) => super::address::existing_run(store, r)?,
        None => active_run(store)?,
    };
    let Some(run) = run else {
        return Ok(None);
    };
    if store.refs().run_head(&run)?.is_none() {
        return Ok(None);
    }
    let Some(tip) = crate::catalog::step_tip(store, &run, step)? else {
        return Ok(None);
    };
    let Some(latest) = Catalog::new(store).try_checkpoint(tip)? else {
        return Ok(None);
    };
    if latest.line().run != run.as_str() || latest.status() != Some(Status::Running) {
        return Ok(None);
    }
    let attempt = latest.line().attempt;
    Ok(Some((run, attempt, latest.id())))
}

/// `step end`: record the outcome after the step ran.
pub fn step_end(
    store: &Store,
    step: &StepName,
    mut opts: CheckpointOptions,
) -> Result<CheckpointOutcome> {
    match opts.facts.status {
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
