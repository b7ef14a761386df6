//! Reading what a new checkpoint continues: the run's tip and notes tip, the step's ref and
//! its last checkpoint. Read again on every attempt of the publish loop (another writer may
//! have appended in between). Reads only; never writes.

use crate::catalog::{Catalog, Checkpoint, step_ref_lags};
use crate::journal::Record;
use crate::store::{ObjectId, Store};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::StepName;

/// The refs an append compares against and the checkpoints they point at.
pub(super) struct Context {
    /// The run's `HEAD` (the chain tip), if the run exists.
    pub head: Option<ObjectId>,
    /// The run's notes commit.
    pub notes_tip: Option<ObjectId>,
    /// The step's ref as it is, when the record names a step: the compare-and-swap value.
    pub step_ref: Option<ObjectId>,
    /// The step's newest checkpoint: `step_ref`, or `head` when a crash left the ref
    /// behind it (`catalog::step_tip`).
    pub step_tip: Option<ObjectId>,
    /// Another step whose ref a crash left behind `head` (`head` is its checkpoint), with
    /// the ref's value: this append moves it to `head` too, so one write repairs it.
    pub lagging: Option<(StepName, Option<ObjectId>)>,
    /// The checkpoint at `head`.
    pub prev: Option<Checkpoint>,
    /// The checkpoint at `step_tip` (the step's latest attempt).
    pub step_prev: Option<Checkpoint>,
}

/// Read the context of `rec` now.
pub(super) fn read(store: &Store, rec: &Record) -> Result<Context> {
    let mut catalog = Catalog::new(store);
    let head = store.refs().run_head(&rec.run)?;
    let notes_tip = store.refs().notes_tip(&rec.run)?;
    if rec.new_run && head.is_some() {
        return Err(Error::refused(format!("run {} already exists", rec.run))
            .with_hint("choose another --run id, or leave it out to generate one"));
    }
    let prev = match head {
        Some(h) => Some(
            catalog
                .checkpoint(h)
                .map_err(|e| e.context(format!("cannot append to run {}", rec.run)))?,
        ),
        None => None,
    };
    let step_ref = match &rec.step {
        Some(s) => store.refs().step_tip(&rec.run, s)?,
        None => None,
    };
    // The step of the checkpoint at HEAD, and whether its ref lags behind HEAD.
    let head_step = prev
        .as_ref()
        .and_then(|p| p.line().step.as_deref())
        .and_then(|s| StepName::new(s).ok());
    let mut step_tip = step_ref;
    let mut lagging = None;
    if let (Some(p), Some(hs)) = (&prev, &head_step) {
        if rec.step.as_ref() == Some(hs) {
            if step_ref_lags(store, &rec.run, hs, &p.commit, step_ref)? {
                step_tip = Some(p.id());
            }
        } else {
            let r = store.refs().step_tip(&rec.run, hs)?;
            if step_ref_lags(store, &rec.run, hs, &p.commit, r)? {
                lagging = Some((hs.clone(), r));
            }
        }
    }
    let step_prev = match step_tip {
        Some(id) => catalog.try_checkpoint(id)?,
        None => None,
    };
    Ok(Context {
        head,
        notes_tip,
        step_ref,
        step_tip,
        lagging,
        prev,
        step_prev,
    })
}
