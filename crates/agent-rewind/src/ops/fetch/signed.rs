//! `fetch --require-signed` / `agentRewind.requireSigned` (issue 33 item 1): before any
//! staged run is imported, every checkpoint and notes commit it adds must be signed as git
//! accepts (`ops::signatures`), or the whole import is refused. Read-only.

use crate::catalog::short;
use crate::error::{Error, Result};
use crate::ids::RemoteName;
use crate::remote::staged::{LocalRun, StagedRun};
use crate::store::Store;

/// `agentRewind.requireSigned`.
pub fn require_signed_config(store: &Store) -> Result<bool> {
    Ok(store
        .config_bool("agentRewind.requireSigned")?
        .unwrap_or(false))
}

/// With `require_signed`: refuse (an error, nothing imported) when a run of `selected`
/// that would change here holds a commit git does not accept as signed.
pub(super) fn refuse_unsigned(
    store: &Store,
    staging: &RemoteName,
    selected: &[&StagedRun],
    locals: &std::collections::HashMap<String, LocalRun>,
) -> Result<()> {
    let none = LocalRun::default();
    let pairs: Vec<(&StagedRun, &LocalRun)> = selected
        .iter()
        .map(|s| (*s, locals.get(&s.name).unwrap_or(&none)))
        .filter(|(s, l)| !l.same_as(s))
        .collect();
    let bad = crate::ops::signatures::unsigned_staged(store, &pairs)?;
    if bad.is_empty() {
        return Ok(());
    }
    let described: Vec<String> = bad
        .iter()
        .map(|(run, commits)| {
            let list: Vec<String> = commits
                .iter()
                .map(|(id, why)| format!("{} {why}", short(*id)))
                .collect();
            format!("run {run}: {}", list.join("; "))
        })
        .collect();
    Err(Error::refused(format!(
        "fetch from {staging} refused: {} run(s) hold commits that are not signed as required: {}",
        bad.len(),
        described.join(" | ")
    ))
    .with_hint("nothing was imported (agentRewind.requireSigned / --require-signed); `git agent-rewind verify` after a fetch without it shows every signer, and the staged copies are under refs/agent-runs-remote/"))
}
