//! `watch [<run>…] [--once]`: drive workflow runs to the end. Each pass looks at every
//! watched run's refs (its chain tip and its notes); when they moved since the watcher last
//! acted on the run — a worker reported, anything was recorded here or fetched — it executes
//! the run once under the run's runner lock (the same lock as `run`/`resume`), which launches
//! every step that became ready. A launch is its `begin` record, written before the step
//! starts, so a restarted watcher, a second watcher or a pass that sees the same state again
//! finds the step begun and never starts it twice; an interrupted step is left for a person
//! (`resume --retry STEP`), never started again by the watcher.
//!
//! Between passes it sleeps, backing off from [`MIN_POLL`] to [`MAX_POLL`] while nothing
//! changes: no busy loop, and a change is noticed within `MAX_POLL`. It never decides what a
//! step is (the planner does) and never prints (the caller hears of launches).

use crate::store::{ObjectId, Store};
use crate::workflow::external::Launch;
use crate::workflow::lock;
use crate::workflow::runner::{self, ExecOptions, Outcome, RunReport, WaitingOn};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::RunId;
use serde::Serialize;
use std::collections::HashMap;
use std::time::Duration;

/// The first sleep after a pass that changed something.
pub const MIN_POLL: Duration = Duration::from_millis(100);
/// The longest sleep between two looks at the refs: the bound on how late a change is seen.
pub const MAX_POLL: Duration = Duration::from_secs(1);

/// How a watched run ended (or stood, after `--once`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunEnd {
    pub run: String,
    pub outcome: Outcome,
    pub waiting_on: Option<WaitingOn>,
    pub stopped: Option<String>,
    pub next_action: String,
    /// Another runner held the run's lock at the last look (`--once`).
    pub busy: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct WatchReport {
    /// Every launch of this watcher, in order.
    pub launches: Vec<Launch>,
    pub runs: Vec<RunEnd>,
    /// As `run`: 0 every run completed, 1 one failed, 3 one waits (for a person, or for
    /// workers after `--once`).
    pub exit_code: i32,
}

/// What the caller hears while the watcher works.
#[derive(Debug, Clone)]
pub enum WatchEvent {
    /// A step was launched: its `begin` is recorded, the step starts now.
    Launched(Launch),
    /// A pass left the run waiting for its workers (said once per change of the run).
    Waiting(RunEnd),
}

/// Watch `runs` until each completes, fails or waits for a person (`once`: one pass).
/// `on_event` hears of each launch right after its `begin` is recorded.
pub fn watch(
    store: &Store,
    runs: &[RunId],
    once: bool,
    on_event: &mut dyn FnMut(&WatchEvent),
) -> Result<WatchReport> {
    if runs.is_empty() {
        return Err(Error::usage("no run to watch").with_hint(
            "git agent-rewind watch <run>… (default: the active run of this worktree)",
        ));
    }
    for run in runs {
        if store.refs().run_head(run)?.is_none() {
            return Err(Error::not_found(format!("no run {run}")));
        }
        super::run::find_workflow(store, run)?.require_trusted(run)?;
    }
    let mut launches: Vec<Launch> = vec![];
    let mut seen: HashMap<String, (Option<ObjectId>, Option<ObjectId>)> = HashMap::new();
    let mut ended: HashMap<String, RunEnd> = HashMap::new();
    let mut standing: HashMap<String, RunEnd> = HashMap::new();
    let mut delay = MIN_POLL;
    loop {
        let mut changed = false;
        for run in runs {
            if ended.contains_key(run.as_str()) {
                continue;
            }
            let now = (store.refs().run_head(run)?, store.refs().notes_tip(run)?);
            if seen.get(run.as_str()) == Some(&now) {
                continue;
            }
            let runner = match lock::try_acquire(store, run)? {
                Ok(l) => l,
                Err(holder) => {
                    // Another runner (or watcher) drives it now: look again later, backing
                    // off as when nothing changed.
                    standing.insert(run.to_string(), busy(run, holder));
                    continue;
                }
            };
            changed = true;
            // Checked again on every pass: a fetch may have brought a new stored copy.
            let found = super::run::find_workflow(store, run)?;
            found.require_trusted(run)?;
            let workflow = found.workflow;
            let mut heard = |l: &Launch| {
                launches.push(l.clone());
                on_event(&WatchEvent::Launched(l.clone()));
            };
            let report = runner::execute_locked(
                store,
                run,
                &workflow,
                ExecOptions {
                    retry: None,
                    rerun_interrupted: false,
                    on_launch: Some(&mut heard),
                },
                runner,
            )?;
            // What this pass acted on is the state read before it, not after: a worker's
            // report that lands while the pass runs must make the next pass look again. The
            // records the pass wrote itself cost one more pass, which finds nothing new.
            seen.insert(run.to_string(), now);
            let end = run_end(&report);
            if report.outcome == Outcome::Waiting && report.waiting_on == Some(WaitingOn::Workers) {
                if standing.get(run.as_str()) != Some(&end) {
                    on_event(&WatchEvent::Waiting(end.clone()));
                }
                standing.insert(run.to_string(), end);
            } else {
                standing.remove(run.as_str());
                ended.insert(run.to_string(), end);
            }
        }
        if once || ended.len() == runs.len() {
            break;
        }
        delay = if changed {
            MIN_POLL
        } else {
            (delay * 2).min(MAX_POLL)
        };
        std::thread::sleep(delay);
    }
    let ends: Vec<RunEnd> = runs
        .iter()
        .filter_map(|r| {
            ended
                .remove(r.as_str())
                .or_else(|| standing.remove(r.as_str()))
        })
        .collect();
    let exit_code = if ends.iter().any(|e| e.outcome == Outcome::Failed) {
        1
    } else if ends.iter().any(|e| e.outcome != Outcome::Completed) {
        3
    } else {
        0
    };
    Ok(WatchReport {
        launches,
        runs: ends,
        exit_code,
    })
}

fn run_end(r: &RunReport) -> RunEnd {
    RunEnd {
        run: r.run.clone(),
        outcome: r.outcome,
        waiting_on: r.waiting_on,
        stopped: r.stopped.clone(),
        next_action: r.next_action.clone(),
        busy: None,
    }
}

fn busy(run: &RunId, holder: String) -> RunEnd {
    RunEnd {
        run: run.to_string(),
        outcome: Outcome::Waiting,
        waiting_on: None,
        stopped: Some(format!("another runner is executing it ({holder})")),
        next_action: "wait for that runner; `git agent-rewind watch` looks again".into(),
        busy: Some(holder),
    }
}
