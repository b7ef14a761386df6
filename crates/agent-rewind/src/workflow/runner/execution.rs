//! One pass of the runner over a workflow's steps: for each step, the planner's decision
//! and what it records (a skip, an opened or passed gate, a dispatched external step, a
//! command run between its `begin` and `finish`), then how the pass ends. Owns the order
//! of the records of one step; it never decides what a step should do (that is `plan`) and
//! never starts a process but through `run_command`.

use super::{
    ExecOptions, Outcome, RunReport, StepAction, StepReport, WaitingOn, launch, recorded, report,
    run_command,
};
use crate::catalog::Catalog;
use crate::journal::{Record, TreeSource, append};
use crate::model::{Event, Status, StepKind};
use crate::snapshot::{Policy, Snapshot, snapshot_worktree};
use crate::store::{ObjectId, Store};
use crate::workflow::external::ExternalTask;
use crate::workflow::plan::{self, Context, Decision};
use crate::workflow::{StepDef, Workflow};
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::RunId;
use std::collections::HashSet;

/// Why a pass stopped before its end, and what to do next.
pub(super) struct Stop {
    why: String,
    next: String,
    outcome: Outcome,
}

/// What a step's records carry beside its decision: the worktree when it was decided, its
/// input hash, and, where the decision needs them, its idempotency key and the session to
/// resume.
struct Prepared {
    snap: Snapshot,
    hash: String,
    key: Option<String>,
    session: Option<String>,
}

/// The state of one pass over the steps.
pub(super) struct Execution<'a> {
    store: &'a Store,
    run: &'a RunId,
    workflow: &'a Workflow,
    /// `git-blob:<id>` of the workflow's text, on every record.
    digest: String,
    policy: Policy,
    /// Steps whose command ran in this pass (their downstream steps run again).
    ran_now: HashSet<String>,
    /// External steps waiting for their workers, and the steps that need them.
    blocked: Vec<String>,
    out: RunReport,
}

impl<'a> Execution<'a> {
    pub(super) fn new(
        store: &'a Store,
        run: &'a RunId,
        workflow: &'a Workflow,
        digest: String,
        out: RunReport,
    ) -> Result<Self> {
        Ok(Execution {
            store,
            run,
            workflow,
            digest,
            policy: Policy::from_config(store)?,
            ran_now: HashSet::new(),
            blocked: vec![],
            out,
        })
    }

    /// The report of a pass that stopped.
    pub(super) fn stopped(mut self, stop: Stop) -> RunReport {
        self.out.stopped = Some(stop.why);
        self.out.outcome = stop.outcome;
        self.out.next_action = stop.next;
        if stop.outcome == Outcome::Waiting {
            self.out.waiting_on = Some(WaitingOn::Person);
        }
        self.out
    }

    /// Decide `step` and record what the decision says; `Some` when the pass stops here.
    pub(super) fn step(&mut self, step: &StepDef, opts: &mut ExecOptions) -> Result<Option<Stop>> {
        if let Some(up) = step
            .needs
            .iter()
            .find(|n| self.blocked.contains(&n.to_string()))
        {
            self.out.steps.push(report(
                step,
                StepAction::Waiting,
                format!("needs {up}, which waits for its worker"),
                None,
                None,
            ));
            self.blocked.push(step.name.to_string());
            return Ok(None);
        }
        let (decision, prepared) = self.decide(step, opts)?;
        match decision {
            Decision::Skip { reason } => {
                self.out
                    .steps
                    .push(report(step, StepAction::Skipped, reason, None, None));
                Ok(None)
            }
            Decision::SkipEffect { original } => self.skip_effect(step, prepared, original),
            Decision::OpenGate { reason } => self.open_gate(step, prepared, reason),
            Decision::PassGate { by } => self.pass_gate(step, prepared, by),
            Decision::Stop {
                reason,
                next_action,
                waiting,
            } => {
                self.out.steps.push(report(
                    step,
                    StepAction::Stopped,
                    reason.clone(),
                    None,
                    None,
                ));
                let outcome = if waiting {
                    Outcome::Waiting
                } else {
                    Outcome::Failed
                };
                Ok(Some(Stop {
                    why: reason,
                    next: next_action,
                    outcome,
                }))
            }
            Decision::AwaitWorker {
                attempt,
                checkpoint,
            } => self.await_worker(step, prepared, attempt, checkpoint),
            Decision::Run { reason } if step.external => {
                self.dispatch_external(step, prepared, reason, opts)
            }
            Decision::Run { reason } => self.run_step(step, prepared, reason, opts),
        }
    }

    /// The planner's decision for `step`, with what its records will need.
    fn decide(&self, step: &StepDef, opts: &ExecOptions) -> Result<(Decision, Prepared)> {
        let mut catalog = Catalog::new(self.store);
        let mut cx = Context {
            store: self.store,
            catalog: &mut catalog,
            run: self.run,
            workflow: self.workflow,
            retry: opts.retry,
            ran_now: &self.ran_now,
            rerun_interrupted: opts.rerun_interrupted,
        };
        let snap = snapshot_worktree(self.store, &self.policy)?;
        let hash = plan::inputs_hash(&mut cx, step, snap.tree)?;
        let decision = plan::decide(&mut cx, step, &hash)?;
        let needs_key = matches!(
            decision,
            Decision::SkipEffect { .. } | Decision::AwaitWorker { .. } | Decision::Run { .. }
        );
        let key = if step.kind == StepKind::Effect && needs_key {
            Some(plan::idempotency_key(&mut cx, step)?)
        } else {
            None
        };
        let session = if matches!(decision, Decision::Run { .. }) && !step.external {
            plan::resume_session(&mut cx)?
        } else {
            None
        };
        let prepared = Prepared {
            snap,
            hash,
            key,
            session,
        };
        Ok((decision, prepared))
    }

    /// A record of `step`: its kind, status, input hash and the workflow's digest, written
    /// even when the tree did not change.
    fn record(
        &self,
        step: &StepDef,
        hash: &str,
        event: Event,
        status: Status,
        tree: Option<&Snapshot>,
    ) -> Record {
        let mut r = Record::new(self.run.clone(), event);
        r.step = Some(step.name.clone());
        r.facts.kind = Some(step.kind);
        r.facts.status = Some(status);
        r.facts.inputs_hash = Some(hash.to_string());
        r.workflow_digest = Some(self.digest.clone());
        r.force = true;
        if let Some(snap) = tree {
            r.tree = TreeSource::Given {
                tree: snap.tree,
                excluded: snap.excluded.clone(),
            };
        }
        r
    }

    fn skip_effect(
        &mut self,
        step: &StepDef,
        p: Prepared,
        original: ObjectId,
    ) -> Result<Option<Stop>> {
        let mut r = self.record(step, &p.hash, Event::Finish, Status::Skipped, Some(&p.snap));
        r.facts.idempotency_key = p.key;
        r.facts
            .meta
            .insert("duplicate_of".into(), original.to_string());
        r.facts.next_action = Some("run the next step".into());
        let reason = format!(
            "its effect already completed at {}",
            crate::catalog::short(original)
        );
        let rec = append(self.store, r)?;
        self.out
            .steps
            .push(recorded(step, StepAction::SkippedEffect, reason, &rec));
        Ok(None)
    }

    fn open_gate(&mut self, step: &StepDef, p: Prepared, reason: String) -> Result<Option<Stop>> {
        let mut r = self.record(
            step,
            &p.hash,
            Event::Begin,
            Status::AwaitingApproval,
            Some(&p.snap),
        );
        r.facts.next_action = Some(format!("approve or reject gate {}", step.name));
        let rec = append(self.store, r)?;
        let next = crate::workflow::next::approve_gate(&rec.checkpoint.to_string());
        self.out
            .steps
            .push(recorded(step, StepAction::GateOpened, reason, &rec));
        Ok(Some(Stop {
            why: format!("gate {} is awaiting approval", step.name),
            next,
            outcome: Outcome::Waiting,
        }))
    }

    fn pass_gate(&mut self, step: &StepDef, p: Prepared, by: String) -> Result<Option<Stop>> {
        let mut r = self.record(
            step,
            &p.hash,
            Event::Finish,
            Status::Completed,
            Some(&p.snap),
        );
        r.facts.meta.insert("approved_by".into(), by.clone());
        r.facts.next_action = Some("run the next step".into());
        let rec = append(self.store, r)?;
        self.out.steps.push(recorded(
            step,
            StepAction::GatePassed,
            format!("approved by {by}"),
            &rec,
        ));
        Ok(None)
    }

    fn await_worker(
        &mut self,
        step: &StepDef,
        p: Prepared,
        attempt: u32,
        checkpoint: ObjectId,
    ) -> Result<Option<Stop>> {
        self.out.external.push(ExternalTask::new(
            self.run.as_str(),
            step.name.as_str(),
            attempt,
            checkpoint.to_string(),
            p.key,
        ));
        self.out.steps.push(StepReport {
            checkpoint: Some(checkpoint.to_string()),
            ..report(
                step,
                StepAction::Waiting,
                format!("attempt {attempt} waits for its worker's report"),
                Some(Status::Running),
                Some(attempt),
            )
        });
        self.blocked.push(step.name.to_string());
        Ok(None)
    }

    fn dispatch_external(
        &mut self,
        step: &StepDef,
        p: Prepared,
        reason: String,
        opts: &mut ExecOptions,
    ) -> Result<Option<Stop>> {
        let mut r = self.record(step, &p.hash, Event::Begin, Status::Running, Some(&p.snap));
        r.facts.idempotency_key = p.key.clone();
        r.facts.meta.insert("external".into(), "true".into());
        r.facts.next_action = Some("wait for its worker to report with `step end`".into());
        let rec = append(self.store, r)?;
        let task = ExternalTask::new(
            self.run.as_str(),
            step.name.as_str(),
            rec.line.attempt,
            rec.checkpoint.to_string(),
            p.key,
        );
        if let Some(f) = opts.on_launch.as_mut() {
            f(&launch(self.run, step, &rec, true, &reason));
        }
        self.out.external.push(task);
        self.out
            .steps
            .push(recorded(step, StepAction::Dispatched, reason, &rec));
        self.blocked.push(step.name.to_string());
        Ok(None)
    }

    /// `begin`, the step's command, `finish` with its outcome; a failure stops the pass.
    fn run_step(
        &mut self,
        step: &StepDef,
        p: Prepared,
        reason: String,
        opts: &mut ExecOptions,
    ) -> Result<Option<Stop>> {
        let mut r = self.record(step, &p.hash, Event::Begin, Status::Running, Some(&p.snap));
        r.facts.idempotency_key = p.key.clone();
        let begun = append(self.store, r)?;
        let attempt = begun.line.attempt;
        agent_rewind_core::crash_point!("runner:begun");
        if let Some(f) = opts.on_launch.as_mut() {
            f(&launch(self.run, step, &begun, false, &reason));
        }
        let code = run_command(
            self.store,
            self.run,
            step,
            attempt,
            p.session.as_deref(),
            p.key.as_deref(),
        )?;
        agent_rewind_core::crash_point!("runner:command-done");
        if agent_rewind_core::process::interrupt::caught() {
            return self.interrupted(step, &p.hash, p.key, reason, code);
        }
        let ok = code == Some(0);
        let status = if ok {
            Status::Completed
        } else {
            Status::Failed
        };
        let mut r = self.record(step, &p.hash, Event::Finish, status, None);
        r.facts.idempotency_key = p.key;
        r.facts.exit_code = code;
        r.facts.next_action = Some(if ok {
            "run the next step".into()
        } else {
            crate::workflow::next::after_failure(step.name.as_str(), step.rerun_safe())
        });
        let done = append(self.store, r)?;
        agent_rewind_core::crash_point!("runner:finished");
        self.ran_now.insert(step.name.to_string());
        self.out
            .steps
            .push(recorded(step, StepAction::Ran, reason, &done));
        if ok {
            return Ok(None);
        }
        let why = match code {
            Some(c) => format!("step {} failed with exit code {c}", step.name),
            None => format!("step {} was killed by a signal", step.name),
        };
        let next = if step.rerun_safe() {
            format!(
                "fix the cause, then `git agent-rewind resume` re-runs {}",
                step.name
            )
        } else {
            format!(
                "fix the cause, then `git agent-rewind resume --retry {}`",
                step.name
            )
        };
        Ok(Some(Stop {
            why,
            next,
            outcome: Outcome::Failed,
        }))
    }

    /// Ctrl-C while `step` ran: its attempt recorded `interrupted` (with the exit code the
    /// command gave, if any), and the pass stops for `resume` to run it again.
    fn interrupted(
        &mut self,
        step: &StepDef,
        hash: &str,
        key: Option<String>,
        reason: String,
        code: Option<i32>,
    ) -> Result<Option<Stop>> {
        let mut r = self.record(step, hash, Event::Finish, Status::Interrupted, None);
        r.facts.idempotency_key = key;
        r.facts.exit_code = code;
        let next = if step.rerun_safe() {
            format!("`git agent-rewind resume` runs step {} again", step.name)
        } else {
            format!(
                "`git agent-rewind resume --retry {}` runs it again",
                step.name
            )
        };
        r.facts.next_action = Some(next.clone());
        let done = append(self.store, r)?;
        self.ran_now.insert(step.name.to_string());
        self.out
            .steps
            .push(recorded(step, StepAction::Ran, reason, &done));
        Ok(Some(Stop {
            why: format!(
                "interrupted (Ctrl-C) while step {} ran; attempt {} recorded as interrupted",
                step.name, done.line.attempt
            ),
            next,
            outcome: Outcome::Interrupted,
        }))
    }

    /// The end of a pass that went through every step: waiting for workers, or the run
    /// recorded as completed on its root note (a newer checkpoint makes it active again).
    pub(super) fn finish(mut self) -> Result<RunReport> {
        if !self.blocked.is_empty() {
            let out = &mut self.out;
            let waiting: Vec<&str> = out.external.iter().map(|t| t.step.as_str()).collect();
            out.stopped = Some(format!("waiting for the workers of {}", waiting.join(", ")));
            out.outcome = Outcome::Waiting;
            out.waiting_on = Some(WaitingOn::Workers);
            out.next_action = match out.external.as_slice() {
                [one] => format!(
                    "the worker of {} reports with `{}` (or `--status failed`); `git agent-rewind watch` then goes on",
                    one.step, one.command
                ),
                _ => "each worker reports with the command given for its step; `git agent-rewind watch` then goes on".into(),
            };
            return Ok(self.out);
        }
        let mut catalog = Catalog::new(self.store);
        let tip = catalog.require_run_tip(self.run)?;
        let root = catalog.root_of(&tip)?;
        let already = root.note.completed_as_of(tip.line().ts);
        if !already {
            crate::journal::append_note_lines(
                self.store,
                self.run,
                root.id(),
                &[crate::model::NoteLine::RunStatus {
                    status: "completed".into(),
                    ts: agent_rewind_core::time::Timestamp::now(),
                    reason: Some(format!("workflow {} finished", self.workflow.name)),
                }],
            )?;
        }
        self.out.finished = true;
        self.out.outcome = Outcome::Completed;
        self.out.next_action = crate::workflow::next::COMPLETE.into();
        Ok(self.out)
    }
}

/// Ctrl-C between two steps: nothing was running; the pass stops before `next`.
pub(super) fn between_steps(next: &StepDef) -> Stop {
    Stop {
        why: format!("interrupted (Ctrl-C) before step {}", next.name),
        next: "`git agent-rewind resume` goes on".into(),
        outcome: Outcome::Interrupted,
    }
}
