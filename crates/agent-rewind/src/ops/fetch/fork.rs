//! The remote continuation of a diverged run, imported as a run of its own
//! (`<run>-<remote>-<8 hex>`): its root checkpoint has the remote tip as first parent, it
//! inherits the remote's step refs and is `forked_from` the last common checkpoint. It never
//! changes the local run, and finds the run an earlier fetch imported instead of making a
//! second one.

use super::ValidRun;
use crate::catalog::{Catalog, short};
use crate::journal::{Origin, Record, TreeSource, append};
use crate::model::{Event, LineageLink};
use crate::store::{ObjectId, Store, UserHead};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::{RemoteName, RunId};

/// The new run for the remote continuation of a diverged run: its root checkpoint has the
/// remote tip as first parent (so the remote's checkpoints are in its first-parent chain),
/// inherits the remote's step refs, and is `forked_from` the last common checkpoint.
/// Returns the run, and whether it had been imported by an earlier fetch.
pub(super) fn import_fork(
    store: &Store,
    staging: &RemoteName,
    v: &ValidRun,
    local_head: ObjectId,
) -> Result<(RunId, bool)> {
    let mut catalog = Catalog::new(store);
    let tip = catalog.checkpoint(v.head)?;
    let base = store.objects().merge_base(local_head, v.head)?;
    let base_cp = match base {
        Some(b) => catalog.try_checkpoint(b)?,
        None => None,
    };
    let link = match &base_cp {
        Some(cp) => LineageLink {
            run: cp.line().run.clone(),
            step: cp.line().step.clone(),
            checkpoint: cp.id().to_string(),
        },
        // No common checkpoint (two machines created runs of the same name).
        None => LineageLink {
            run: v.run.to_string(),
            step: tip.line().step.clone(),
            checkpoint: v.head.to_string(),
        },
    };
    let mut name = None;
    for n in 1..=20 {
        let candidate = fork_name(&v.run, staging, v.head, n)?;
        match catalog.run_tip(&candidate)? {
            None => {
                name = Some(candidate);
                break;
            }
            Some(existing) => {
                let root = catalog.root_of(&existing)?;
                if root.commit.parents.first() == Some(&v.head) && root.line().event == Event::Root
                {
                    return Ok((candidate, true));
                }
            }
        }
    }
    let name = name.ok_or_else(|| {
        Error::conflict(format!(
            "no free run id for the remote continuation of {}",
            v.run
        ))
    })?;
    let line = tip.line().clone();
    let session = catalog
        .lineage_chain(v.head, 10_000)?
        .into_iter()
        .find_map(|c| c.line().sdk_session_id.clone());
    let label = catalog.root_of(&tip)?.note.label().map(str::to_string);
    let mut rec = Record::new(name.clone(), Event::Root);
    rec.tree = TreeSource::Given {
        tree: tip.commit.tree,
        excluded: line.excluded.clone(),
    };
    rec.origin = Some(Origin {
        link,
        rewound: false,
        checkpoint: v.head,
        inherited_steps: v.steps.clone(),
    });
    rec.new_run = true;
    rec.facts.session_id = session;
    rec.label = label;
    rec.facts.user_head = Some(UserHead {
        commit: line
            .git_commit_sha
            .as_deref()
            .and_then(|h| ObjectId::from_hex(h.as_bytes()).ok()),
        branch: line.head_ref.clone(),
    });
    rec.facts.message = Some(format!(
        "run {} diverged: this is its continuation fetched from {staging} (tip {}); the local run was left untouched",
        v.run,
        short(v.head)
    ));
    rec.facts.next_action = Some(format!(
        "continue the run as recorded on {staging} (`git agent-rewind resume {name}`)"
    ));
    append(store, rec)?;
    Ok((name, false))
}

/// `<run>-<remote>-<8 hex of the remote tip>` (`-<n>` appended for n > 1), cut to 64
/// characters by shortening the run part.
pub fn fork_name(run: &RunId, staging: &RemoteName, tip: ObjectId, n: u32) -> Result<RunId> {
    let hex = tip.to_hex_with_len(8).to_string();
    let n = if n > 1 {
        format!("-{n}")
    } else {
        String::new()
    };
    let mut suffix = format!("-{staging}-{hex}{n}");
    if suffix.len() > 48 {
        suffix = format!("-{hex}{n}"); // a very long remote name
    }
    let head: String = run.as_str().chars().take(64 - suffix.len()).collect();
    RunId::new(format!("{head}{suffix}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fork_names_are_valid_and_bounded() {
        let tip = ObjectId::from_hex(b"0123456789abcdef0123456789abcdef01234567").unwrap();
        let o = RemoteName::new("origin").unwrap();
        let r = RunId::new("r1").unwrap();
        assert_eq!(
            fork_name(&r, &o, tip, 1).unwrap().as_str(),
            "r1-origin-01234567"
        );
        assert_eq!(
            fork_name(&r, &o, tip, 2).unwrap().as_str(),
            "r1-origin-01234567-2"
        );
        let long = RunId::new("a".repeat(64)).unwrap();
        let n = fork_name(&long, &o, tip, 1).unwrap();
        assert_eq!(n.as_str().len(), 64);
        assert!(n.as_str().ends_with("-origin-01234567"));
    }
}
