//! The planner: for one step of a workflow run, what the run's record says about it and
//! what to do next — skip (completed with the same input hash), run (new, changed,
//! invalidated, retried, or interrupted but safe to re-run), stop (interrupted or failed agent
//! and effect steps wait for `--retry`; gates wait for an approval of their exact checkpoint),
//! or skip an effect whose idempotency key already completed in the lineage.
//!
//! Reads the store; never writes (the runner records what the planner decided).

use crate::catalog::{Catalog, Checkpoint};
use crate::model::{NoteLine, Status, StepKind};
use crate::store::ObjectId;
use crate::store::Store;
use crate::workflow::{StepDef, Workflow};
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::RunId;
use std::collections::HashSet;

/// What to do with a step now.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Completed (or skipped) with the same input hash: nothing to do.
    Skip { reason: String },
    /// Run the step's command as a new attempt.
    Run { reason: String },
    /// An effect whose idempotency key already completed: record it as skipped.
    SkipEffect { original: ObjectId },
    /// An external step whose attempt is begun and not reported yet: wait for its worker.
    AwaitWorker { attempt: u32, checkpoint: ObjectId },
    /// Record a new gate checkpoint awaiting approval, then stop.
    OpenGate { reason: String },
    /// The gate's exact checkpoint was approved: record it completed and go on.
    PassGate { by: String },
    /// Stop the run here: because something failed, or (`waiting`) until a person acts (a
    /// gate awaiting approval, an interrupted step that needs `resume --retry`).
    Stop {
        reason: String,
        next_action: String,
        waiting: bool,
    },
}

/// Everything the planner needs about the run.
pub struct Context<'a, 's> {
    pub store: &'s Store,
    pub catalog: &'a mut Catalog<'s>,
    pub run: &'a RunId,
    pub workflow: &'a Workflow,
    pub retry: Option<&'a str>,
    /// Steps that ran during this invocation: whatever depends on them runs again.
    pub ran_now: &'a HashSet<String>,
    /// Whether an interrupted deterministic (or idempotent) step may be started again
    /// without asking (`resume`: yes; the watcher: no, a launch is never repeated).
    pub rerun_interrupted: bool,
}

/// The newest checkpoint of `step` in the run (its step ref, possibly inherited).
pub fn latest(cx: &mut Context, step: &str) -> Result<Option<Checkpoint>> {
    let Ok(name) = agent_rewind_core::ids::StepName::new(step) else {
        return Ok(None);
    };
    match crate::catalog::step_tip(cx.store, cx.run, &name)? {
        Some(id) => cx.catalog.try_checkpoint(id),
        None => Ok(None),
    }
}

/// Digest of the step definition, the blob ids of its input files in `tree`, and the output
/// trees of its upstream steps.
pub fn inputs_hash(cx: &mut Context, step: &StepDef, tree: ObjectId) -> Result<String> {
    let mut text = String::from("agent-rewind inputs v1\n");
    text.push_str(&format!(
        "step {}\n",
        serde_json::to_string(step).expect("serializable")
    ));
    if !step.inputs.is_empty() {
        for (path, oid, _) in cx.store.objects().tree_entries(tree)? {
            if step
                .inputs
                .iter()
                .any(|g| crate::store::glob_match(g, &path.to_string()))
            {
                text.push_str(&format!("input {path} {oid}\n"));
            }
        }
    }
    for need in &step.needs {
        let out = latest(cx, need.as_str())?
            .filter(|c| matches!(c.status(), Some(Status::Completed | Status::Skipped)))
            .map(|c| c.commit.tree.to_string())
            .unwrap_or_else(|| "none".into());
        text.push_str(&format!("upstream {need} {out}\n"));
    }
    // Labelled with the hash that made it: `sha1:` or `sha256:`, the repository's.
    let objects = cx.store.objects();
    Ok(format!(
        "{}:{}",
        objects.object_hash(),
        objects.blob_id(text.as_bytes())?
    ))
}

/// The idempotency key of an effect step: the first run of the lineage and the step name.
pub fn idempotency_key(cx: &mut Context, step: &StepDef) -> Result<String> {
    let first = lineage_runs(cx)?
        .last()
        .cloned()
        .unwrap_or_else(|| cx.run.clone());
    let objects = cx.store.objects();
    Ok(format!(
        "{}:{}",
        objects.object_hash(),
        objects.blob_id(format!("effect {first} {}", step.name).as_bytes())?
    ))
}

/// This run and every run it was rewound or forked from, newest first.
pub fn lineage_runs(cx: &mut Context) -> Result<Vec<RunId>> {
    let mut out = vec![cx.run.clone()];
    let mut seen: HashSet<String> = HashSet::new();
    let mut cur = cx.run.clone();
    while seen.insert(cur.to_string()) {
        let Some(tip) = cx.catalog.run_tip(&cur)? else {
            break;
        };
        let root = cx.catalog.root_of(&tip)?;
        let Some((link, _)) = root.line().origin() else {
            break;
        };
        let Ok(next) = RunId::new(link.run.clone()) else {
            break;
        };
        out.push(next.clone());
        cur = next;
    }
    Ok(out)
}

/// A completed record of `key` in this run or any run of its lineage.
fn completed_effect(cx: &mut Context, key: &str) -> Result<Option<ObjectId>> {
    for run in lineage_runs(cx)? {
        if cx.store.refs().run_head(&run)?.is_none() {
            continue;
        }
        for c in cx.catalog.run_chain(&run)?.into_iter().rev() {
            if c.line().idempotency_key.as_deref() == Some(key)
                && c.status() == Some(Status::Completed)
            {
                return Ok(Some(c.id()));
            }
        }
    }
    Ok(None)
}

/// What the plan knows of a step before deciding: its latest checkpoint and how the step
/// stands against it.
struct Facts {
    latest: Option<Checkpoint>,
    status: Option<Status>,
    same_inputs: bool,
    /// Why the step must run again whatever its status (a steer, an upstream step re-run).
    forced_by: Option<String>,
    retry: bool,
}

/// Decide what to do with `step`, given the input hash it has now.
pub fn decide(cx: &mut Context, step: &StepDef, hash: &str) -> Result<Decision> {
    let name = step.name.as_str();
    let latest = latest(cx, name)?;
    let status = latest.as_ref().and_then(|c| c.status());
    let same_inputs = latest
        .as_ref()
        .and_then(|c| c.line().inputs_hash.as_deref())
        == Some(hash);
    let forced_by = match latest.as_ref().map(|c| c.id()) {
        Some(since) => {
            steered_since(cx, name, since)?.map(|c| format!("steer {}", crate::catalog::short(c)))
        }
        None => None,
    }
    .or_else(|| {
        step.needs
            .iter()
            .find(|n| cx.ran_now.contains(n.as_str()))
            .map(|n| format!("upstream step {n} ran again"))
    });
    // Where a step found done was last recorded: `@<seq>` in this run, `<run>@<seq>` in
    // the run it was rewound or forked from.
    let since = latest.as_ref().map(|c| {
        let line = c.line();
        if line.run == cx.run.as_str() {
            format!("@{}", line.seq)
        } else {
            format!("{}@{}", line.run, line.seq)
        }
    });
    let facts = Facts {
        latest,
        status,
        same_inputs,
        forced_by,
        retry: cx.retry == Some(name),
    };
    if step.kind == StepKind::Gate {
        return Ok(decide_gate(name, facts));
    }
    let reason = match run_reason(cx, step, facts)? {
        Ok(Some(reason)) => reason,
        Ok(None) => {
            return Ok(Decision::Skip {
                reason: match since {
                    Some(at) => format!("inputs unchanged since {at}"),
                    None => "inputs unchanged".into(),
                },
            });
        }
        Err(decision) => return Ok(decision),
    };
    if step.kind == StepKind::Effect && cx.retry != Some(name) {
        let key = idempotency_key(cx, step)?;
        if let Some(original) = completed_effect(cx, &key)? {
            return Ok(Decision::SkipEffect { original });
        }
    }
    Ok(Decision::Run { reason })
}

/// A gate: passed, rejected or still waiting on its latest checkpoint when nothing changed,
/// else opened again.
fn decide_gate(name: &str, f: Facts) -> Decision {
    if let Some(c) = &f.latest
        && f.same_inputs
        && f.forced_by.is_none()
        && !f.retry
    {
        match f.status {
            Some(Status::Completed) => {
                return Decision::Skip {
                    reason: "approved".into(),
                };
            }
            Some(Status::AwaitingApproval) => return gate_verdict(name, c),
            _ => {}
        }
    }
    let reason = match (&f.latest, f.forced_by) {
        (None, _) => "not run yet".to_string(),
        (_, Some(why)) => why,
        _ if f.retry => "--retry".into(),
        _ => "its inputs changed".into(),
    };
    Decision::OpenGate { reason }
}

/// The newest approval or rejection of the gate's checkpoint `c`, or that it still waits.
fn gate_verdict(name: &str, c: &Checkpoint) -> Decision {
    let decision = c
        .note
        .approvals()
        .filter_map(|l| match l {
            NoteLine::Approval {
                approved, by, ts, ..
            } => Some((*ts, *approved, by.clone())),
            _ => None,
        })
        .max_by(|a, b| a.0.cmp(&b.0));
    match decision {
        Some((_, true, by)) => Decision::PassGate { by },
        Some((_, false, by)) => Decision::Stop {
            reason: format!("gate {name} was rejected by {by}"),
            waiting: false,
            next_action: crate::workflow::next::gate_rejected(name, &by, &c.id().to_string()),
        },
        None => Decision::Stop {
            reason: format!("gate {name} is awaiting approval"),
            waiting: true,
            next_action: crate::workflow::next::approve_gate(&c.id().to_string()),
        },
    }
}

/// Why a step that is not a gate runs (`Ok(Some)`), that it is done (`Ok(None)`), or the
/// decision that stops or waits instead (`Err`).
fn run_reason(
    cx: &mut Context,
    step: &StepDef,
    f: Facts,
) -> Result<std::result::Result<Option<String>, Decision>> {
    let name = step.name.as_str();
    if f.retry {
        return Ok(Ok(Some("--retry".to_string())));
    }
    Ok(match (f.status, &f.latest) {
        (None, _) | (_, None) => Ok(Some("not run yet".into())),
        // Begun in the run this one was rewound or forked from: its worker reports
        // there, so this run hands out an attempt of its own.
        (Some(Status::Running), Some(c)) if step.external && c.line().run != cx.run.as_str() => {
            Ok(Some(format!(
                "its attempt {} was begun in run {}",
                c.line().attempt,
                c.line().run
            )))
        }
        (Some(Status::Running), Some(c)) if step.external => Err(Decision::AwaitWorker {
            attempt: c.line().attempt,
            checkpoint: begin_of(cx, c)?,
        }),
        (Some(Status::Running | Status::Interrupted), Some(c)) => {
            if step.rerun_safe() && cx.rerun_interrupted {
                Ok(Some(format!(
                    "attempt {} was interrupted, {} steps are re-run",
                    c.line().attempt,
                    step.kind
                )))
            } else {
                Err(Decision::Stop {
                    reason: format!(
                        "{} step {name} was interrupted in attempt {}",
                        step.kind,
                        c.line().attempt
                    ),
                    next_action: format!(
                        "check its work, then `git agent-rewind resume --retry {name}`"
                    ),
                    waiting: true,
                })
            }
        }
        (Some(Status::Failed), Some(c)) => {
            if step.rerun_safe() {
                Ok(Some(format!(
                    "attempt {} failed, {} steps are re-run",
                    c.line().attempt,
                    step.kind
                )))
            } else {
                Err(Decision::Stop {
                    reason: format!(
                        "{} step {name} failed in attempt {}",
                        step.kind,
                        c.line().attempt
                    ),
                    next_action: crate::workflow::next::after_failure(name, false),
                    waiting: false,
                })
            }
        }
        (Some(Status::Pending), _) => Ok(Some("invalidated".into())),
        (Some(Status::AwaitingApproval), _) => {
            Ok(Some("awaiting approval, but not a gate any more".into()))
        }
        (Some(Status::Completed | Status::Skipped), _) => Ok(match f.forced_by {
            Some(why) => Some(why),
            None if !f.same_inputs => Some("its inputs changed".into()),
            None => None,
        }),
    })
}

/// The `begin` checkpoint of the attempt `c` belongs to (`c` itself when it is the begin;
/// else the newest begin of that step and attempt in the run's chain).
pub fn begin_of(cx: &mut Context, c: &Checkpoint) -> Result<ObjectId> {
    if c.line().event == crate::model::Event::Begin {
        return Ok(c.id());
    }
    let (step, attempt) = (c.line().step.clone(), c.line().attempt);
    Ok(cx
        .catalog
        .run_chain(cx.run)?
        .into_iter()
        .rev()
        .find(|b| {
            b.line().event == crate::model::Event::Begin
                && b.line().step == step
                && b.line().attempt == attempt
        })
        .map(|b| b.id())
        .unwrap_or(c.id()))
}

/// Meta key of a `steer` checkpoint listing the steps it invalidated (comma-separated).
pub const STEER_INVALIDATE_META: &str = "invalidate";

/// The newest `steer` checkpoint of this run, newer than `since`, that invalidated `step`.
fn steered_since(cx: &mut Context, step: &str, since: ObjectId) -> Result<Option<ObjectId>> {
    for c in cx.catalog.run_chain(cx.run)?.into_iter().rev() {
        if c.id() == since {
            break;
        }
        if c.line().event == crate::model::Event::Steer
            && c.line()
                .meta
                .get(STEER_INVALIDATE_META)
                .is_some_and(|v| v.split(',').any(|s| s == step))
        {
            return Ok(Some(c.id()));
        }
    }
    Ok(None)
}

/// A `begin` whose process died: mark it interrupted (appended to its note) so it is
/// reconciled exactly once. Returns the reconciled steps.
pub fn reconcile_interrupted(cx: &mut Context) -> Result<Vec<String>> {
    let mut out = vec![];
    for step in &cx.workflow.steps.clone() {
        // An external step runs elsewhere: its runner never had it.
        if step.external {
            continue;
        }
        let Some(c) = latest(cx, step.name.as_str())? else {
            continue;
        };
        if c.line().run == cx.run.as_str() && c.status() == Some(Status::Running) {
            crate::journal::append_note_lines(
                cx.store,
                cx.run,
                c.id(),
                &[NoteLine::Status {
                    status: Status::Interrupted,
                    ts: agent_rewind_core::time::Timestamp::now(),
                    reason: Some("its runner died before the step finished".into()),
                }],
            )?;
            out.push(step.name.to_string());
        }
    }
    if !out.is_empty() {
        cx.catalog.refresh();
    }
    Ok(out)
}

/// The newest agent session id recorded in the run's lineage (what a resumed agent continues).
pub fn resume_session(cx: &mut Context) -> Result<Option<String>> {
    let Some(tip) = cx.store.refs().run_head(cx.run)? else {
        return Ok(None);
    };
    Ok(cx
        .catalog
        .lineage_chain(tip, usize::MAX)?
        .into_iter()
        .find_map(|c| c.line().sdk_session_id.clone()))
}
