//! The ref layout of DESIGN.md §3.1: the only place in the code base that spells ref names.
//!
//! ```text
//! refs/agent-runs/<run>/HEAD      newest checkpoint of the run (the chain tip)
//! refs/agent-runs/<run>/<step>    newest checkpoint of that step
//! refs/notes/agent-runs/<run>     the run's notes
//! refs/agent-runs-remote/<remote>/<run>/…, refs/notes/agent-runs-remote/<remote>/<run>
//! refs/agent-rewind/backups       safety snapshots taken before a worktree is overwritten
//! refs/heads/agent-runs/<run>     the branch a rewind/fork checks out (only on request)
//! ```
//!
//! Names passed in are already validated ([`crate::ids`]); this module must never accept a
//! raw string as a run or step.

use crate::ids::{RunId, StepName};

pub const RUNS_PREFIX: &str = "refs/agent-runs/";
pub const NOTES_PREFIX: &str = "refs/notes/agent-runs/";
pub const REMOTE_RUNS_PREFIX: &str = "refs/agent-runs-remote/";
pub const REMOTE_NOTES_PREFIX: &str = "refs/notes/agent-runs-remote/";
pub const BACKUPS_REF: &str = "refs/agent-rewind/backups";
/// The name of the chain-tip ref inside a run's folder.
pub const HEAD_LEAF: &str = "HEAD";
/// Glob for `git log --notes=…` and `notes.displayRef`.
pub const NOTES_DISPLAY_GLOB: &str = "refs/notes/agent-runs/*";
/// The part of a notes ref `git log --notes=` accepts (it prepends `refs/notes/`).
pub const NOTES_SHORT_GLOB: &str = "agent-runs/*";

pub fn run_prefix(run: &RunId) -> String {
    format!("{RUNS_PREFIX}{run}/")
}

pub fn run_head(run: &RunId) -> String {
    format!("{RUNS_PREFIX}{run}/{HEAD_LEAF}")
}

pub fn step_ref(run: &RunId, step: &StepName) -> String {
    format!("{RUNS_PREFIX}{run}/{step}")
}

pub fn notes_ref(run: &RunId) -> String {
    format!("{NOTES_PREFIX}{run}")
}

/// The `--ref` argument `git notes` takes for a run's notes.
pub fn notes_short(run: &RunId) -> String {
    format!("agent-runs/{run}")
}

pub fn remote_run_prefix(remote: &str) -> String {
    format!("{REMOTE_RUNS_PREFIX}{remote}/")
}

pub fn remote_run_head(remote: &str, run: &RunId) -> String {
    format!("{REMOTE_RUNS_PREFIX}{remote}/{run}/{HEAD_LEAF}")
}

pub fn remote_notes_ref(remote: &str, run: &RunId) -> String {
    format!("{REMOTE_NOTES_PREFIX}{remote}/{run}")
}

/// Branch name (without `refs/heads/`) a rewind/fork creates by default.
pub fn default_branch(run: &RunId) -> String {
    format!("agent-runs/{run}")
}

pub fn branch_ref(branch: &str) -> String {
    format!("refs/heads/{branch}")
}

/// What a full ref name under [`RUNS_PREFIX`] means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunRef {
    Head(String),
    Step(String, String),
}

/// Split `refs/agent-runs/<run>/<leaf>` into its parts (names not validated).
pub fn parse_run_ref(full: &str) -> Option<RunRef> {
    let rest = full.strip_prefix(RUNS_PREFIX)?;
    let (run, leaf) = rest.split_once('/')?;
    if leaf.contains('/') {
        return None;
    }
    Some(if leaf == HEAD_LEAF {
        RunRef::Head(run.to_string())
    } else {
        RunRef::Step(run.to_string(), leaf.to_string())
    })
}

/// Refspecs that push one run: its ref folder and its notes ref.
pub fn push_refspecs(run: &RunId) -> [String; 2] {
    [
        format!("{RUNS_PREFIX}{run}/*:{RUNS_PREFIX}{run}/*"),
        format!("{NOTES_PREFIX}{run}:{NOTES_PREFIX}{run}"),
    ]
}

/// Refspecs that fetch every run of `remote` into the staging namespace.
pub fn fetch_refspecs(remote: &str) -> [String; 2] {
    [
        format!("+{RUNS_PREFIX}*:{REMOTE_RUNS_PREFIX}{remote}/*"),
        format!("+{NOTES_PREFIX}*:{REMOTE_NOTES_PREFIX}{remote}/*"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let run = RunId::new("r1").unwrap();
        let step = StepName::new("plan").unwrap();
        assert_eq!(
            parse_run_ref(&run_head(&run)),
            Some(RunRef::Head("r1".into()))
        );
        assert_eq!(
            parse_run_ref(&step_ref(&run, &step)),
            Some(RunRef::Step("r1".into(), "plan".into()))
        );
        assert_eq!(parse_run_ref("refs/agent-runs/r1"), None);
        assert_eq!(parse_run_ref("refs/agent-runs/r1/a/b"), None);
        assert_eq!(notes_ref(&run), "refs/notes/agent-runs/r1");
    }
}
