//! `trust [<run>]`: the one way to let a workflow that was not run from a file of yours run
//! here. It reads the workflow `resume` and `watch` would execute for the run (the copy
//! stored in its lineage, or for an old run the file recorded at its start), says what it
//! would run, and — once the person has seen that and said yes, which the CLI asks for —
//! puts that text's digest on this repository's trusted list (`workflow::trust`).
//!
//! Owns the decision of what is shown and what is trusted: exactly the digest that was
//! shown, so a fetch between showing and accepting cannot slip another text in. Never runs
//! a step, never asks anything itself (the CLI owns the terminal), never trusts a text
//! because a file with the same content exists somewhere.

use super::run::find_workflow;
use crate::error::Result;
use crate::ids::RunId;
use crate::store::Store;
use crate::workflow::schema::StepDef;
use crate::workflow::trust;
use serde::Serialize;

/// What `trust <run>` would accept: the workflow's steps and where its text is stored.
#[derive(Debug, Clone, Serialize)]
pub struct TrustPlan {
    pub run: String,
    /// The run whose root note stores the text (an ancestor for a rewound or forked run).
    pub holder: String,
    /// The workflow's name (from its `[workflow]` table).
    pub workflow: String,
    /// In words: the stored copy (and of which file), or the file.
    pub from: String,
    /// `git-blob:<hex>` of the text, computed here from the text itself.
    pub digest: String,
    /// Steps in workflow order, each with its command (`run`).
    pub steps: Vec<StepDef>,
    /// Already on the trusted list (then nothing is asked or written).
    pub already_trusted: bool,
    /// Put on the trusted list by this command.
    pub trusted: bool,
}

/// What trusting `run`'s workflow means, without trusting it.
pub fn inspect(store: &Store, run: &RunId) -> Result<TrustPlan> {
    if store.refs().run_head(run)?.is_none() {
        return Err(crate::catalog::unknown_run(run));
    }
    let found = find_workflow(store, run)?;
    Ok(TrustPlan {
        run: run.to_string(),
        holder: found.holder,
        workflow: found.workflow.name.clone(),
        from: found.from,
        digest: found.digest,
        steps: found.workflow.steps,
        already_trusted: found.trusted,
        trusted: false,
    })
}

/// Put the text `plan` showed on the trusted list (the person accepted it).
pub fn accept(store: &Store, mut plan: TrustPlan) -> Result<TrustPlan> {
    if !plan.already_trusted {
        trust::trust(store, &plan.digest)?;
        plan.trusted = true;
    }
    Ok(plan)
}
