//! What a remote holds of our runs, with each ref's value: one `git ls-remote` of the runs'
//! and notes' namespaces, read into refs per run. Used where a command must know the values
//! there before it acts (`push` deleting covered runs, `delete --remote`, `gc --remote`).
//! It fetches nothing and writes nothing.

use crate::store::{ObjectId, Store, layout};
use agent_rewind_core::error::{Error, Result};
use std::collections::BTreeMap;

/// One run as the remote holds it: its refs (`HEAD`, steps, notes) with their values.
#[derive(Debug, Clone, Default)]
pub struct RemoteRun {
    /// `HEAD` and step refs, by full name.
    pub refs: BTreeMap<String, ObjectId>,
    /// Its notes ref's value, when the remote has one.
    pub notes: Option<ObjectId>,
}

impl RemoteRun {
    /// Its `HEAD` there.
    pub fn head(&self, run: &str) -> Option<ObjectId> {
        self.refs
            .get(&format!(
                "{}{run}/{}",
                layout::RUNS_PREFIX,
                layout::HEAD_LEAF
            ))
            .copied()
    }

    /// Every ref, notes ref last, with its value.
    pub fn all_refs(&self, run: &str) -> Vec<(String, ObjectId)> {
        let mut v: Vec<(String, ObjectId)> =
            self.refs.iter().map(|(n, id)| (n.clone(), *id)).collect();
        if let Some(n) = self.notes {
            v.push((format!("{}{run}", layout::NOTES_PREFIX), n));
        }
        v
    }
}

/// The runs of `remote`, by name (valid run ids or not: the caller decides), with their
/// refs' values, from one `git ls-remote`.
pub fn remote_run_refs(
    store: &Store,
    remote: &super::Remote,
) -> Result<BTreeMap<String, RemoteRun>> {
    let out = store.remote().ls_remote(
        &remote.target,
        &[
            &format!("{}*", layout::RUNS_PREFIX),
            &format!("{}*", layout::NOTES_PREFIX),
        ],
    )?;
    if !out.success {
        super::objectformat::refused_by_git(
            store,
            &format!("remote {}", remote.target),
            &out.stderr,
        )?;
        return Err(Error::git(format!(
            "`git ls-remote` of {} failed: {}",
            remote.target, out.stderr
        ))
        .with_hint("check that the remote is reachable with `git ls-remote`"));
    }
    let lines: Vec<(&str, &str)> = out
        .stdout
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .collect();
    super::objectformat::check_ids(
        store,
        &format!("remote {}", remote.target),
        lines.iter().map(|(id, _)| *id),
    )?;
    let mut runs: BTreeMap<String, RemoteRun> = BTreeMap::new();
    for (hex, name) in lines {
        let Ok(id) = ObjectId::from_hex(hex.as_bytes()) else {
            continue;
        };
        match super::run_of_ref(name) {
            Some((run, true)) => runs.entry(run).or_default().notes = Some(id),
            Some((run, false)) => {
                runs.entry(run)
                    .or_default()
                    .refs
                    .insert(name.to_string(), id);
            }
            None => {}
        }
    }
    Ok(runs)
}
