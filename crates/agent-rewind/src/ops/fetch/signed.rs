//! `fetch --require-signed` / `agentRewind.requireSigned`: before any staged run is
//! imported, every checkpoint and notes commit it adds must be signed as git accepts
//! (`ops::signatures`). A run that holds one that is not is refused by name, with why; the
//! others are imported. Read-only: it never imports, and never lets a refused run through.

use super::ImportReport;
use crate::ops::signatures::{Unaccepted, refusal_reason};
use crate::remote::staged::{LocalRun, StagedRun};
use crate::store::Store;
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::RemoteName;

/// `agentRewind.requireSigned`.
pub fn require_signed_config(store: &Store) -> Result<bool> {
    Ok(store
        .config()
        .bool("agentRewind.requireSigned")?
        .unwrap_or(false))
}

/// Take out of `selected` each run that would change here and holds a commit git does not
/// accept as signed; returns the report (`refused`, with why) of each, in `selected`'s
/// order. One `git log` process for all of them.
pub(super) fn refuse_unsigned(
    store: &Store,
    staging: &RemoteName,
    selected: &mut Vec<&StagedRun>,
    locals: &std::collections::HashMap<String, LocalRun>,
) -> Result<Vec<ImportReport>> {
    let none = LocalRun::default();
    let pairs: Vec<(&StagedRun, &LocalRun)> = selected
        .iter()
        .map(|s| (*s, locals.get(&s.name).unwrap_or(&none)))
        .filter(|(s, l)| !l.same_as(s))
        .collect();
    let bad: std::collections::HashMap<String, Vec<Unaccepted>> =
        crate::ops::signatures::unsigned_staged(store, &pairs)?
            .into_iter()
            .collect();
    if bad.is_empty() {
        return Ok(vec![]);
    }
    let mut refused = vec![];
    selected.retain(|s| {
        let Some(commits) = bad.get(&s.name) else {
            return true;
        };
        let list: Vec<String> = commits.iter().map(Unaccepted::describe).collect();
        refused.push(ImportReport::new(&s.name, "refused").detail(format!(
            "{} ({}); nothing of it imported from {staging} (agentRewind.requireSigned / --require-signed)",
            refusal_reason(commits),
            list.join("; ")
        )));
        false
    });
    Ok(refused)
}
