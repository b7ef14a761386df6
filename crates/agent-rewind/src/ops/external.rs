//! The worker's side of an external step: `step end <step> --run R --attempt N` (the
//! outcome of exactly that attempt, with the revision check of `require_commit`) and
//! `step exit <step> --run R --attempt N` (the worker's process was seen to exit: a fact of
//! its own, never a completion).
//!
//! A report is validated against the step's ref and written only while that ref has not
//! moved (compare-and-swap through `expect_step_tip`), so a stale attempt, a second report
//! racing the first or a report for a step never begun writes nothing. Never runs a step and
//! never decides what runs next (the runner and the watcher do).

use super::checkpoint::{CheckpointOptions, checkpoint};
use crate::catalog::{Catalog, Checkpoint, short};
use crate::journal::{Recorded, append_note_lines};
use crate::model::{Event, NoteLine, Status};
use crate::snapshot::{Policy, snapshot_worktree};
use crate::store::{ObjectId, Store};
use agent_rewind_core::error::{Error, ErrorKind, Result};
use agent_rewind_core::ids::{RunId, StepName};
use agent_rewind_core::time::Timestamp;
use std::collections::BTreeSet;

/// Type of the note line `step exit` appends to the attempt's `begin` checkpoint.
pub use crate::model::WORKER_EXIT;

/// How many times a report is validated again after the step moved under it.
const ROUNDS: u32 = 8;

/// What `step end --attempt` did.
#[derive(Debug, Clone)]
pub struct EndOutcome {
    pub recorded: Recorded,
    /// The same outcome was already recorded for this attempt: nothing was written.
    pub already: bool,
}

/// A worker's report of one attempt's outcome (`step end --attempt`).
#[derive(Debug, Clone)]
pub struct EndReport {
    pub run: RunId,
    pub step: StepName,
    /// The attempt the worker was given.
    pub attempt: u32,
    /// Add the revision check (the workflow's `require_commit` always applies).
    pub require_commit: bool,
    /// The record itself (`status` is `completed` or `failed`).
    pub record: CheckpointOptions,
}

/// Record the outcome (`completed` or `failed`) of the reported attempt.
pub fn report_end(store: &Store, report: EndReport) -> Result<EndOutcome> {
    let EndReport {
        run,
        step,
        attempt,
        require_commit,
        record: opts,
    } = report;
    let (run, step) = (&run, &step);
    let status = match opts.facts.status {
        Some(s @ (Status::Completed | Status::Failed)) => s,
        Some(other) => {
            return Err(Error::usage(format!(
                "step end --attempt reports completed or failed, not {other}"
            )));
        }
        None => return Err(Error::usage("step end needs --status completed|failed")),
    };
    store.worktree().root()?;
    let required = require_commit || workflow_requires_commit(store, run, step)?;
    for _ in 0..ROUNDS {
        // A report whose writer crashed half-way may have moved HEAD and not the step ref.
        crate::journal::catch_up_step_ref(store, run, step)?;
        let mut catalog = Catalog::new(store);
        let tip = current_attempt(store, &mut catalog, run, step, attempt)?;
        match (tip.status(), tip.line().event) {
            (Some(Status::Running), _) => {}
            (Some(s), Event::Finish) if s == status => {
                return Ok(EndOutcome {
                    recorded: Recorded {
                        checkpoint: tip.id(),
                        line: tip.line().clone(),
                        unchanged: true,
                        redacted: vec![],
                    },
                    already: true,
                });
            }
            (s, _) => {
                return Err(Error::refused(format!(
                    "attempt {attempt} of step {step} in run {run} already ended {}; a different report is refused",
                    s.map(|s| s.to_string()).unwrap_or_else(|| "without a status".into())
                ))
                .with_hint("a new attempt is begun by `git agent-rewind resume --retry STEP`"));
            }
        }
        if required && status == Status::Completed {
            let begin = begin_of(&mut catalog, run, &tip)?;
            revision_check(store, step, &begin)?;
        }
        let mut o = opts.clone();
        o.run = Some(run.clone());
        o.event = Some(Event::Finish);
        o.facts.expect_step_tip = Some(tip.id());
        match checkpoint(store, step, o) {
            Ok(out) => {
                return Ok(EndOutcome {
                    recorded: out.recorded,
                    already: false,
                });
            }
            // Someone else reported (or began a new attempt) meanwhile: validate again.
            Err(e) if e.kind == ErrorKind::Conflict => continue,
            Err(e) => return Err(e),
        }
    }
    Err(Error::conflict(format!(
        "step {step} of run {run} kept moving while this report was validated"
    )))
}

/// What `step exit` did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ExitOutcome {
    pub run: String,
    pub step: String,
    pub attempt: u32,
    /// The attempt's `begin` checkpoint, whose note holds the record.
    pub checkpoint: String,
    pub observed_at: Timestamp,
    /// The same observation was already recorded: nothing was written.
    pub already: bool,
}

/// Record that the worker of attempt `attempt` of `step` was seen to exit (at `observed_at`,
/// default now). The step's status is unchanged.
pub fn report_exit(
    store: &Store,
    step: &StepName,
    run: &RunId,
    attempt: u32,
    observed_at: Option<Timestamp>,
) -> Result<ExitOutcome> {
    let mut catalog = Catalog::new(store);
    if store.refs().run_head(run)?.is_none() {
        return Err(Error::not_found(format!("no run {run}")));
    }
    let begin = catalog
        .run_chain(run)?
        .into_iter()
        .rev()
        .find(|c| {
            c.line().event == Event::Begin
                && c.line().step.as_deref() == Some(step.as_str())
                && c.line().attempt == attempt
        })
        .ok_or_else(|| {
            Error::refused(format!(
                "step {step} of run {run} has no attempt {attempt} begun"
            ))
        })?;
    let observed_at = observed_at.unwrap_or_else(Timestamp::now);
    let already = begin.note.lines.iter().any(|l| {
        let v = l.to_json();
        v.get("type").and_then(|t| t.as_str()) == Some(WORKER_EXIT)
            && v.get("observed_at").and_then(|t| t.as_str()) == Some(&observed_at.to_string())
    });
    if !already {
        let line = serde_json::json!({
            "type": WORKER_EXIT,
            "attempt": attempt,
            "observed_at": observed_at,
            "by": store.config().identity().unwrap_or_else(agent_rewind_core::time::writer_id),
            "ts": Timestamp::now(),
        });
        append_note_lines(store, run, begin.id(), &[NoteLine::Other(line)])?;
    }
    Ok(ExitOutcome {
        run: run.to_string(),
        step: step.to_string(),
        attempt,
        checkpoint: begin.id().to_string(),
        observed_at,
        already,
    })
}

/// The step's newest checkpoint in `run`, refusing when the step was never begun there or
/// `attempt` is not its newest attempt.
fn current_attempt(
    store: &Store,
    catalog: &mut Catalog,
    run: &RunId,
    step: &StepName,
    attempt: u32,
) -> Result<Checkpoint> {
    if store.refs().run_head(run)?.is_none() {
        return Err(Error::not_found(format!("no run {run}")));
    }
    let never = || {
        Error::refused(format!("step {step} was never begun in run {run}"))
            .with_hint("the runner begins it (`git agent-rewind run`, `resume` or `watch`) and prints the attempt to report")
    };
    let tip = match crate::catalog::step_tip(store, run, step)? {
        Some(id) => catalog.checkpoint(id)?,
        None => return Err(never()),
    };
    if tip.line().run != run.as_str() {
        return Err(never());
    }
    let newest = tip.line().attempt;
    if attempt != newest {
        let why = if attempt < newest {
            format!(
                "attempt {attempt} of step {step} is stale: the step's newest attempt is {newest}"
            )
        } else {
            format!("step {step} has no attempt {attempt} yet: its newest attempt is {newest}")
        };
        return Err(Error::refused(format!("{why} (run {run})")).with_hint(
            "report the attempt the runner gave; a stale worker's report changes nothing",
        ));
    }
    Ok(tip)
}

/// The `begin` checkpoint of the attempt `tip` belongs to.
fn begin_of(catalog: &mut Catalog, run: &RunId, tip: &Checkpoint) -> Result<Checkpoint> {
    if tip.line().event == Event::Begin {
        return Ok(tip.clone());
    }
    let (step, attempt) = (tip.line().step.clone(), tip.line().attempt);
    catalog
        .run_chain(run)?
        .into_iter()
        .rev()
        .find(|c| {
            c.line().event == Event::Begin && c.line().step == step && c.line().attempt == attempt
        })
        .ok_or_else(|| Error::corrupt(format!("no begin of attempt {attempt} in run {run}")))
}

/// Whether the workflow stored with `run` says `require_commit` for `step`.
fn workflow_requires_commit(store: &Store, run: &RunId, step: &StepName) -> Result<bool> {
    if store.refs().run_head(run)?.is_none() {
        return Ok(false);
    }
    Ok(super::run::find_workflow(store, run)
        .ok()
        .and_then(|f| f.workflow.step(step.as_str()).map(|s| s.require_commit))
        .unwrap_or(false))
}

/// Refuse a completion while files the step changed (different now from the step's `begin`
/// snapshot) are not committed (different now from HEAD), or while HEAD has not moved past
/// the commit the step began on.
fn revision_check(store: &Store, step: &StepName, begin: &Checkpoint) -> Result<()> {
    let snap = snapshot_worktree(store, &Policy::from_config(store)?)?;
    let head = store.refs().user_head()?.commit;
    let head_tree = match head {
        Some(h) => store.objects().commit_tree(h)?,
        None => store.objects().empty_tree(),
    };
    let paths = |a: ObjectId, b: ObjectId| -> Result<BTreeSet<String>> {
        Ok(store
            .objects()
            .diff_trees(a, b)?
            .into_iter()
            .map(|c| c.path.to_string())
            .collect())
    };
    let dirty = paths(head_tree, snap.tree)?;
    let changed = paths(begin.commit.tree, snap.tree)?;
    let uncommitted: Vec<String> = dirty.intersection(&changed).cloned().collect();
    if !uncommitted.is_empty() {
        let shown: Vec<String> = uncommitted
            .iter()
            .take(20)
            .map(|p| agent_rewind_core::quote::display_text_path(p).into_owned())
            .collect();
        let more = match uncommitted.len() {
            n if n > 20 => format!(" and {} more", n - 20),
            _ => String::new(),
        };
        return Err(Error::refused(format!(
            "step {step} cannot complete: it changed files that are not committed: {}{more}",
            shown.join(", ")
        ))
        .with_hint("commit the step's work (git add … && git commit), then report again"));
    }
    let began_on = begin
        .line()
        .git_commit_sha
        .as_deref()
        .and_then(|s| ObjectId::from_hex(s.as_bytes()).ok());
    let moved = match (began_on, head) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(b), Some(h)) => b != h && store.objects().is_ancestor(b, h)?,
    };
    if !moved {
        return Err(Error::refused(format!(
            "step {step} cannot complete: HEAD has not moved past the commit it began on ({})",
            began_on.map(short).unwrap_or_else(|| "none".into())
        ))
        .with_hint("commit the step's work, then report again"));
    }
    Ok(())
}
