//! Where a rewind or fork goes back to: `--to` resolved against the source run's lineage
//! (a step, before its latest attempt or `--after` it, or a checkpoint address), the user's
//! commit recorded there, and what the lineage holds at that point (the steps the new run
//! inherits, the agent's session and its pointer into the conversation).
//!
//! Reads only; never writes a ref, a note or a file.

use crate::catalog::{Catalog, Checkpoint, short, unknown_run};
use crate::model::Event;
use crate::store::{ObjectId, Store};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::{CheckpointSpec, RunId, StepName};
use std::collections::BTreeMap;

use super::{RewindOptions, RewindTarget};

/// The chosen point in the source run's lineage.
pub(super) struct Point {
    pub(super) checkpoint: Checkpoint,
    pub(super) step: Option<String>,
}

/// The run's tip, its lineage chain and the point chosen in it. The run may grow while it
/// is read (its writers keep going): a choice that fails while the run's tip moved is made
/// again on a fresh read, so the point is chosen from one consistent chain.
pub(super) fn locate(
    store: &Store,
    catalog: &mut Catalog,
    source: &RunId,
    opts: &RewindOptions,
) -> Result<(Checkpoint, Vec<Checkpoint>, Point)> {
    let mut attempt = 0;
    loop {
        let tip = catalog
            .run_tip(source)?
            .ok_or_else(|| unknown_run(source))?;
        let chain = catalog.lineage_chain(tip.id(), usize::MAX)?;
        match choose_point(store, catalog, source, &chain, opts) {
            Ok(point) => return Ok((tip, chain, point)),
            Err(_) if attempt < 5 && store.refs().run_head(source)? != Some(tip.id()) => {
                attempt += 1
            }
            Err(e) => return Err(e),
        }
    }
}

/// The user's commit recorded at the chosen point, verified against the checkpoint commit.
pub(super) fn git_commit_of(store: &Store, point: &Point) -> Result<Option<ObjectId>> {
    crate::verify::git_commit(store, &point.checkpoint.commit, point.checkpoint.line()).map_err(
        |why| {
            Error::corrupt(format!("refusing to rewind: {why}")).with_hint(
                "the checkpoint's note was edited or crafted; inspect it with `git agent-rewind show`",
            )
        },
    )
}

/// Resolve `--to` against the run's lineage chain (newest first).
fn choose_point(
    store: &Store,
    catalog: &mut Catalog,
    source: &RunId,
    chain: &[Checkpoint],
    opts: &RewindOptions,
) -> Result<Point> {
    let RewindTarget::Named(name) = &opts.to;
    let as_step = StepName::new(name.clone()).ok().filter(|s| {
        crate::catalog::step_tip(store, source, s)
            .ok()
            .flatten()
            .is_some()
    });
    if let Some(step) = as_step {
        let latest = chain
            .iter()
            .position(|c| c.line().step.as_deref() == Some(step.as_str()))
            .ok_or_else(|| {
                Error::not_found(format!(
                    "step {step} has no checkpoint in the lineage of run {source}"
                ))
            })?;
        if opts.after {
            let done = chain[latest..]
                .iter()
                .find(|c| {
                    c.line().step.as_deref() == Some(step.as_str())
                        && c.line().event == Event::Finish
                })
                .ok_or_else(|| {
                    Error::not_found(format!("step {step} of run {source} never finished"))
                        .with_hint("rewind --to it (without --after) to re-enter it")
                })?;
            return Ok(Point {
                checkpoint: done.clone(),
                step: Some(step.to_string()),
            });
        }
        let attempt = chain[latest].line().attempt;
        let mut first = latest;
        for (i, c) in chain.iter().enumerate().skip(latest) {
            let l = c.line();
            if l.step.as_deref() == Some(step.as_str()) && l.attempt == attempt {
                first = i;
            }
        }
        let before = chain.get(first + 1).ok_or_else(|| {
            Error::not_found(format!(
                "step {step} has no checkpoint before it in run {source}"
            ))
            .with_hint(format!(
                "use --after {step}, or an exact checkpoint (`git agent-rewind list {source}`)"
            ))
        })?;
        return Ok(Point {
            checkpoint: before.clone(),
            step: Some(step.to_string()),
        });
    }
    if opts.after {
        return Err(Error::usage(format!(
            "--after needs a step of run {source}; {name:?} is not one"
        )));
    }
    let unknown_step = |catalog: &mut Catalog| -> Result<Error> {
        let e = catalog.unknown_step_error(source, name)?;
        Ok(Error::not_found(format!(
            "{}, and {name:?} is not a checkpoint address",
            e.message
        ))
        .with_hint(e.hint.unwrap_or_default()))
    };
    let spec = match CheckpointSpec::parse(name) {
        Ok(spec) => spec,
        Err(_) => return Err(unknown_step(catalog)?),
    };
    let spec = match spec {
        // A bare word that is not a step of this run.
        CheckpointSpec::RunHead(r) if store.refs().run_head(&r)?.is_none() => {
            return Err(unknown_step(catalog)?);
        }
        // `@-2`, `@5`: a position in the source run.
        CheckpointSpec::Seq(None, pos) => CheckpointSpec::Seq(Some(source.clone()), pos),
        s => s,
    };
    let cp = catalog.resolve(&spec)?;
    if !chain.iter().any(|c| c.id() == cp.id()) {
        return Err(Error::refused(format!(
            "checkpoint {} is not in the lineage of run {source}",
            short(cp.id())
        ))
        .with_hint("rewind or fork the run that checkpoint belongs to"));
    }
    let step = cp.line().step.clone();
    Ok(Point {
        checkpoint: cp,
        step,
    })
}

/// Every step recorded in `lineage` (the chain at the chosen point, newest first), each at
/// its newest checkpoint there, whatever its status: the step refs the new run inherits.
/// Only completed ones count as done for `resume` (the planner reads their status).
pub(super) fn inherited_steps(lineage: &[Checkpoint]) -> Vec<(StepName, ObjectId)> {
    let mut newest: BTreeMap<String, ObjectId> = BTreeMap::new();
    for c in lineage {
        if let Some(s) = &c.line().step {
            newest.entry(s.clone()).or_insert(c.id());
        }
    }
    newest
        .into_iter()
        .filter_map(|(s, id)| StepName::new(s).ok().map(|s| (s, id)))
        .collect()
}

/// The newest agent session id recorded in `lineage` (newest first), with the agent that
/// recorded it and the agent's pointer to that point of the conversation.
pub(super) fn session_at(
    lineage: &[Checkpoint],
) -> (Option<String>, Option<String>, Option<String>) {
    lineage
        .iter()
        .find_map(|c| {
            let l = c.line();
            l.sdk_session_id.clone().map(|s| {
                (
                    Some(s),
                    l.recording_agent().map(str::to_string),
                    l.meta.get("conversation_at").cloned(),
                )
            })
        })
        .unwrap_or((None, None, None))
}
