//! `steer`: change a run's inputs and invalidate steps. Shows the blast radius (which steps
//! the next `resume` re-runs, and why) and only applies with `--yes`: then it backs up the
//! worktree, writes the edited files, and records a `steer` checkpoint as the audit receipt
//! (edits, invalidations, who, when). A run that a runner is executing is never steered.

use super::run::find_workflow;
use crate::journal::{Record, append};
use crate::materialize::{self, Backup};
use crate::model::Event;
use crate::store::Store;
use crate::workflow::{lock, plan::STEER_INVALIDATE_META};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::{RunId, StepName};
use serde::Serialize;
use std::path::{Component, Path, PathBuf};

#[derive(Debug, Clone, Serialize)]
pub struct Impact {
    pub step: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SteerOutcome {
    pub run: String,
    pub applied: bool,
    pub edits: Vec<String>,
    pub invalidated: Vec<String>,
    /// Steps the next `resume` re-runs, in workflow order, with the reason.
    pub blast_radius: Vec<Impact>,
    /// The `steer` checkpoint (when applied).
    pub checkpoint: Option<String>,
    pub backup: Option<Backup>,
}

pub fn steer(
    store: &Store,
    run: &RunId,
    edits: &[(String, PathBuf)],
    invalidate: &[StepName],
    apply: bool,
) -> Result<SteerOutcome> {
    if store.refs().run_head(run)?.is_none() {
        return Err(crate::catalog::unknown_run(run));
    }
    if lock::is_running(store, run)? {
        return Err(Error::refused(format!(
            "run {run} is running; a running run is not steered"
        ))
        .with_hint("wait for the runner to stop, then steer"));
    }
    if edits.is_empty() && invalidate.is_empty() {
        return Err(Error::usage(
            "nothing to steer: give --edit PATH=FILE and/or --invalidate STEP",
        ));
    }
    let wf = find_workflow(store, run)?.workflow;
    for s in invalidate {
        if wf.step(s.as_str()).is_none() {
            return Err(Error::usage(format!(
                "--invalidate {s}: the workflow {} has no such step",
                wf.name
            )));
        }
    }
    let mut contents = vec![];
    for (path, file) in edits {
        check_relative(path)?;
        store.worktree().check_user_write_path(path)?;
        let data = std::fs::read(file)
            .map_err(|e| Error::usage(format!("--edit {path}={}: {e}", file.display())))?;
        contents.push((path.clone(), data));
    }

    // Blast radius: invalidated steps, steps reading an edited file, and what depends on them.
    let mut radius: Vec<Impact> = vec![];
    for s in &wf.steps {
        let mut why = None;
        if invalidate.contains(&s.name) {
            why = Some("invalidated".to_string());
        } else if let Some((p, _)) = contents
            .iter()
            .find(|(p, _)| s.inputs.iter().any(|g| crate::store::glob_match(g, p)))
        {
            why = Some(format!("its input {p} is edited"));
        } else if let Some(up) = s
            .needs
            .iter()
            .find(|n| radius.iter().any(|i| i.step == n.as_str()))
        {
            why = Some(format!("depends on {up}"));
        }
        if let Some(reason) = why {
            radius.push(Impact {
                step: s.name.to_string(),
                reason,
            });
        }
    }

    let mut outcome = SteerOutcome {
        run: run.to_string(),
        applied: false,
        edits: contents.iter().map(|(p, _)| p.clone()).collect(),
        invalidated: invalidate.iter().map(|s| s.to_string()).collect(),
        blast_radius: radius,
        checkpoint: None,
        backup: None,
    };
    if !apply {
        return Ok(outcome);
    }
    let root = store.worktree().root()?.to_path_buf();
    if !contents.is_empty() {
        let runs =
            materialize::RunFacts::active(crate::journal::worktree_active_run(store)?.as_ref());
        let touched: Vec<crate::store::BString> =
            contents.iter().map(|(p, _)| p.as_str().into()).collect();
        outcome.backup = Some(materialize::take_backup(
            store,
            &format!("steer {run}"),
            &touched,
            runs,
        )?);
        for (path, data) in &contents {
            // Checked again right before writing: the worktree may have changed meanwhile.
            store.worktree().check_user_write_path(path)?;
            write_atomically(&root.join(path), data)?;
        }
    }
    agent_rewind_core::crash_point!("steer:written");
    let mut rec = Record::new(run.clone(), Event::Steer);
    rec.facts
        .meta
        .insert(STEER_INVALIDATE_META.into(), outcome.invalidated.join(","));
    rec.facts
        .meta
        .insert("edits".into(), outcome.edits.join(","));
    rec.facts.meta.insert(
        "by".into(),
        store
            .config()
            .identity()
            .unwrap_or_else(agent_rewind_core::time::writer_id),
    );
    rec.facts.message = Some(format!(
        "steer: edited [{}], invalidated [{}]; will re-run [{}]",
        outcome.edits.join(", "),
        outcome.invalidated.join(", "),
        outcome
            .blast_radius
            .iter()
            .map(|i| i.step.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    rec.facts.next_action = Some("`git agent-rewind resume` re-runs the steered steps".into());
    rec.force = true;
    let recorded = append(store, rec)?;
    outcome.checkpoint = Some(recorded.checkpoint.to_string());
    outcome.applied = true;
    Ok(outcome)
}

fn check_relative(path: &str) -> Result<()> {
    let p = Path::new(path);
    if path.is_empty()
        || p.is_absolute()
        || p.components().any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err(Error::usage(format!(
            "--edit {path:?}: give a path relative to the worktree root, without '..'"
        )));
    }
    if p.components()
        .any(|c| c.as_os_str().eq_ignore_ascii_case(".git"))
    {
        return Err(Error::usage(format!(
            "--edit {path:?}: refusing to write inside .git"
        )));
    }
    Ok(())
}

/// Replace `path` atomically, keeping the permissions it had.
fn write_atomically(path: &Path, data: &[u8]) -> Result<()> {
    let mode = std::fs::metadata(path)
        .ok()
        .map(|m| agent_rewind_core::platform::mode::permission_bits(&m));
    agent_rewind_core::private::write_atomic(path, data, mode)
}
