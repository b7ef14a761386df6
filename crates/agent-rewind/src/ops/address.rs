//! What the user typed → a run or a checkpoint address, shared by the operations: run ids
//! abbreviated to a unique prefix, and the active run of this worktree as the default when
//! no run is named (`show`, `log`, `diff X`, `@-1`, `rewind --to plan`).
//!
//! Reads the store and the active-run file; never writes.

use crate::catalog::Catalog;
use crate::journal::active_run;
use crate::store::Store;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::{CheckpointSpec, RunId};

/// A run the user named: its full id, or the one run whose id starts with `name`.
pub fn run(store: &Store, name: &str) -> Result<RunId> {
    Catalog::new(store).run_named(&RunId::new(name)?)
}

/// A run the user named where a new run may be started: the existing run it names (full id
/// or unique prefix, as every command resolves it), or `None` when no run has this id or
/// starts with it. An ambiguous prefix is an error.
pub fn existing_run(store: &Store, name: &RunId) -> Result<Option<RunId>> {
    Catalog::new(store).run_matching(name)
}

/// The run named, or the active run of this worktree when none is.
pub fn run_or_active(store: &Store, name: Option<&str>) -> Result<RunId> {
    match name {
        Some(n) => run(store, n),
        None => require_active(store),
    }
}

/// The active run of this worktree, or an error saying how to name one.
pub fn require_active(store: &Store) -> Result<RunId> {
    active_run(store)?.ok_or_else(|| {
        Error::usage("no run given and this worktree has no active run")
            .with_hint("name a run (`git agent-rewind list`), or start one")
    })
}

/// A checkpoint address with every run expanded to its full id; without an address, the
/// active run's newest checkpoint; an address without a run (`@-1`, `@3`) is the active
/// run's.
pub fn spec(store: &Store, text: Option<&str>) -> Result<CheckpointSpec> {
    let Some(text) = text else {
        return Ok(CheckpointSpec::RunHead(require_active(store)?));
    };
    let mut catalog = Catalog::new(store);
    Ok(match CheckpointSpec::parse(text)? {
        CheckpointSpec::RunHead(r) => CheckpointSpec::RunHead(catalog.run_named(&r)?),
        CheckpointSpec::Step(r, s) => CheckpointSpec::Step(catalog.run_named(&r)?, s),
        CheckpointSpec::Seq(Some(r), p) => CheckpointSpec::Seq(Some(catalog.run_named(&r)?), p),
        CheckpointSpec::Seq(None, p) => CheckpointSpec::Seq(Some(require_active(store)?), p),
        c @ CheckpointSpec::Commit(_) => c,
    })
}
