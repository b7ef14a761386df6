//! Which checkpoints a `revert` or a `pick` goes between: a whole run (its own root to its
//! newest), the latest attempt of one step, one checkpoint against the one before it, or the
//! checkpoints after `@a` up to `@b`; and which paths count as the range's changes (the
//! `touched` paths its hooks recorded, else every path that differs).
//!
//! Reads the catalog only; never writes.

use crate::catalog::{Catalog, Checkpoint, short};
use crate::store::ByteSlice;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::{CheckpointSpec, RunId, StepName};
use serde::Serialize;
use std::collections::BTreeSet;

/// Which paths counted as the range's changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PathRule {
    /// The `touched` paths recorded by the agent's file-edit hooks.
    Touched,
    /// Every path that differs between the two checkpoints.
    Diff,
}

/// The two checkpoints an operation goes between, and the ones whose `touched` paths count.
#[derive(Debug, Clone)]
pub struct Range {
    pub run: RunId,
    /// `run`, `step <name>`, `checkpoint @<seq>` or `checkpoints @<a>..@<b>`.
    pub scope: String,
    /// The state before the range's changes.
    pub from: Checkpoint,
    /// The state the range's changes left.
    pub to: Checkpoint,
    /// The checkpoints whose `touched` paths are the range's (a step's own only).
    pub within: Vec<Checkpoint>,
    /// Every checkpoint after `from` up to `to`, oldest first: the changes the range's diff
    /// holds (a step's range also holds other steps' checkpoints between its own).
    pub span: Vec<Checkpoint>,
}

/// The range of `spec`; `verb` (`revert`, `pick`) words the errors.
pub fn resolve(catalog: &mut Catalog, spec: &CheckpointSpec, verb: &str) -> Result<Range> {
    match spec {
        CheckpointSpec::RunHead(run) => {
            let chain = catalog.run_chain(run)?;
            let (Some(first), Some(last)) = (chain.first(), chain.last()) else {
                return Err(crate::catalog::unknown_run(run));
            };
            Ok(Range {
                run: run.clone(),
                scope: "run".into(),
                from: first.clone(),
                to: last.clone(),
                within: chain[1..].to_vec(),
                span: chain[1..].to_vec(),
            })
        }
        CheckpointSpec::Step(run, step) => step_range(catalog, run, step, verb),
        other => {
            let cp = catalog.resolve(other)?;
            let run = RunId::new(cp.line().run.clone())?;
            let seq = cp.line().seq;
            let parent = cp.commit.parents.first().copied();
            let from = match parent {
                Some(p) if seq > 0 => catalog.try_checkpoint(p)?,
                _ => None,
            };
            let from = from.ok_or_else(|| {
                Error::usage(format!(
                    "checkpoint {} is where run {run} began; it changed nothing to {verb}",
                    short(cp.id())
                ))
                .with_hint(format!(
                    "{verb} the whole run with `git agent-rewind {verb} {run}`"
                ))
            })?;
            Ok(Range {
                run,
                scope: format!("checkpoint @{seq}"),
                from,
                to: cp.clone(),
                within: vec![cp.clone()],
                span: vec![cp],
            })
        }
    }
}

/// The checkpoints after `from` up to `to`, both of one run's own chain, `from` the older.
pub fn between(
    catalog: &mut Catalog,
    from: &CheckpointSpec,
    to: &CheckpointSpec,
    verb: &str,
) -> Result<Range> {
    let from = catalog.resolve(from)?;
    let to = catalog.resolve(to)?;
    let run = RunId::new(to.line().run.clone())?;
    if from.line().run != run.as_str() {
        return Err(Error::usage(format!(
            "{} is a checkpoint of run {}, {} of run {run}: a range is of one run",
            short(from.id()),
            from.line().run,
            short(to.id())
        )));
    }
    let chain = catalog.run_chain(&run)?;
    let at = |c: &Checkpoint| chain.iter().position(|x| x.id() == c.id());
    let (Some(a), Some(b)) = (at(&from), at(&to)) else {
        return Err(Error::usage(format!(
            "checkpoints @{}..@{} are not both in run {run}'s own chain",
            from.line().seq,
            to.line().seq
        )));
    };
    if a >= b {
        return Err(Error::usage(format!(
            "@{}..@{} of run {run} holds no change to {verb}: the first must be older than the second",
            from.line().seq,
            to.line().seq
        ))
        .with_hint(format!(
            "name the older checkpoint first: {run}@{}..@{}",
            to.line().seq.min(from.line().seq),
            to.line().seq.max(from.line().seq)
        )));
    }
    Ok(Range {
        scope: format!("checkpoints @{}..@{}", from.line().seq, to.line().seq),
        run,
        within: chain[a + 1..=b].to_vec(),
        span: chain[a + 1..=b].to_vec(),
        from,
        to,
    })
}

/// A step's latest attempt: from the checkpoint before its first checkpoint to its last.
fn step_range(catalog: &mut Catalog, run: &RunId, step: &StepName, verb: &str) -> Result<Range> {
    let last_id = catalog.step_commit(run, step)?;
    let last = catalog.checkpoint(last_id)?;
    if last.line().run != run.as_str() {
        return Err(Error::usage(format!(
            "step {step} of run {run} was inherited from run {}; {verb} it there",
            last.line().run
        )));
    }
    let chain = catalog.run_chain(run)?;
    let end = chain
        .iter()
        .position(|c| c.id() == last.id())
        .ok_or_else(|| Error::corrupt(format!("step {step} is not in the chain of run {run}")))?;
    let attempt = last.line().attempt;
    let in_attempt = |c: &Checkpoint| {
        c.line().step.as_deref() == Some(step.as_str()) && c.line().attempt == attempt
    };
    // The attempt's first checkpoint (its begin, or its first record): other steps'
    // checkpoints may lie between it and the last one.
    let begin = chain[..=end]
        .iter()
        .position(in_attempt)
        .expect("the last checkpoint is in the attempt");
    let from = match begin.checked_sub(1) {
        Some(i) => chain[i].clone(),
        None => {
            return Err(Error::corrupt(format!(
                "step {step} of run {run} has no checkpoint before it"
            )));
        }
    };
    Ok(Range {
        run: run.clone(),
        scope: format!("step {step}"),
        from,
        to: last,
        within: chain[begin..=end]
            .iter()
            .filter(|c| in_attempt(c))
            .cloned()
            .collect(),
        span: chain[begin..=end].to_vec(),
    })
}

/// The touched paths recorded in `within`, when there are any.
fn touched_paths(within: &[Checkpoint]) -> (PathRule, Option<BTreeSet<String>>) {
    let touched: BTreeSet<String> = within
        .iter()
        .flat_map(|c| c.line().touched.iter().cloned())
        .collect();
    if touched.is_empty() {
        (PathRule::Diff, None)
    } else {
        (PathRule::Touched, Some(touched))
    }
}

impl Range {
    /// The changes between the range's two checkpoints that count, and the rule that chose
    /// them: only the paths its turns reported editing when every checkpoint within says
    /// (`touched`), else every path that differs.
    pub fn changes(
        &self,
        store: &crate::store::Store,
    ) -> Result<(PathRule, Vec<crate::store::TreeChange>)> {
        let (rule, touched) = touched_paths(&self.within);
        let mut changes = store
            .objects()
            .diff_trees(self.from.commit.tree, self.to.commit.tree)?;
        if let Some(touched) = &touched {
            changes.retain(|c| c.path.to_str().is_ok_and(|p| touched.contains(p)));
        }
        Ok((rule, changes))
    }
}
