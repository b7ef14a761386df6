//! The ref layout of docs/FORMAT.md "Refs": the only place in the code base that spells ref names.
//!
//! ```text
//! refs/agent-runs/<run>/HEAD      newest checkpoint of the run (the chain tip)
//! refs/agent-runs/<run>/<step>    newest checkpoint of that step
//! refs/notes/agent-runs/<run>     the run's notes
//! refs/agent-runs-remote/<remote>/<run>/…, refs/notes/agent-runs-remote/<remote>/<run>
//! refs/agent-rewind/backups       safety snapshots taken before a worktree is overwritten
//! refs/heads/agent-runs/<run>     the branch a rewind/fork checks out (only on request)
//! refs/agent-runs-tombstones/<run>/<tip>, …-remote/<remote>/<run>/<tip>,
//! …-from/<remote>/<run>/<tip>     tombstones: our gc's, a remote's staged, a remote's taken
//! ```
//!
//! Names passed in are already validated ([`agent_rewind_core::ids`]); this module must never accept a
//! raw string as a run or step.

use agent_rewind_core::ids::{RemoteName, RunId, StepName};

pub const RUNS_PREFIX: &str = "refs/agent-runs/";
pub const NOTES_PREFIX: &str = "refs/notes/agent-runs/";
pub const REMOTE_RUNS_PREFIX: &str = "refs/agent-runs-remote/";
/// Tombstones of runs this repository's `gc` deleted: `<prefix><run>/<tip>` → a JSON blob,
/// or a signed commit holding it as the note of `<tip>`. The only ones `push` carries.
pub const TOMBSTONES_PREFIX: &str = "refs/agent-runs-tombstones/";
/// Where a fetch stages a remote's tombstones: `<prefix><remote>/<run>/<tip>`.
pub const REMOTE_TOMBSTONES_PREFIX: &str = "refs/agent-runs-tombstones-remote/";
/// A remote's tombstones taken here: `<prefix><remote>/<run>/<tip>`. Each counts only for
/// the runs of that remote (fetched from it, pushed with `--all` to it).
pub const TAKEN_TOMBSTONES_PREFIX: &str = "refs/agent-runs-tombstones-from/";

/// The refspec that fetches a remote's tombstones into its staging namespace (forced:
/// staging is ours; `ops::tombstones` checks each before taking it).
pub fn fetch_tombstones_refspec(remote: &RemoteName) -> String {
    format!("+{TOMBSTONES_PREFIX}*:{REMOTE_TOMBSTONES_PREFIX}{remote}/*")
}

/// The refspec that pushes tombstones (never forced: one that exists stays as it is).
pub fn push_tombstones_refspec() -> String {
    format!("{TOMBSTONES_PREFIX}*:{TOMBSTONES_PREFIX}*")
}
pub const REMOTE_NOTES_PREFIX: &str = "refs/notes/agent-runs-remote/";
pub const BACKUPS_REF: &str = "refs/agent-rewind/backups";
/// Every folder of refs this tool owns (docs/FORMAT.md, "Refs"), without its last `/`.
const OWNED_FOLDERS: [&str; 9] = [
    "refs/agent-runs",
    "refs/notes/agent-runs",
    "refs/agent-runs-remote",
    "refs/notes/agent-runs-remote",
    "refs/agent-runs-tombstones",
    "refs/agent-runs-tombstones-remote",
    "refs/agent-runs-tombstones-from",
    "refs/agent-rewind",
    "refs/heads/agent-runs",
];

/// Whether the full ref name `name` is one of ours, or the folder of ours itself: a ref that
/// another writer (git-ai's notes, say) must never be given. Compared without regard to
/// case, as a case-insensitive file system would store it.
pub fn is_owned_ref(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    OWNED_FOLDERS.iter().any(|folder| {
        lower
            .strip_prefix(folder)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}
/// Where local branches live.
pub const BRANCHES_PREFIX: &str = "refs/heads/";
/// Tags and remote-tracking branches: with branches, what the user's history holds.
pub const TAGS_PREFIX: &str = "refs/tags/";
pub const REMOTES_PREFIX: &str = "refs/remotes/";
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

/// A ref in a run's folder by the leaf name it was listed under (not validated: for deleting
/// whatever is there).
pub fn listed_run_ref(run: &RunId, leaf: &str) -> String {
    format!("{RUNS_PREFIX}{run}/{leaf}")
}

pub fn notes_ref(run: &RunId) -> String {
    format!("{NOTES_PREFIX}{run}")
}

/// The `--ref` argument `git notes` takes for a run's notes.
pub fn notes_short(run: &RunId) -> String {
    format!("agent-runs/{run}")
}

/// The staging folder of every run fetched from `remote`.
pub fn remote_run_prefix(remote: &RemoteName) -> String {
    format!("{REMOTE_RUNS_PREFIX}{remote}/")
}

/// The staging folder of the notes refs fetched from `remote`.
pub fn remote_notes_prefix(remote: &RemoteName) -> String {
    format!("{REMOTE_NOTES_PREFIX}{remote}/")
}

/// The staging folder of the tombstones fetched from `remote`.
pub fn remote_tombstones_prefix(remote: &RemoteName) -> String {
    format!("{REMOTE_TOMBSTONES_PREFIX}{remote}/")
}

/// The folder of the tombstones taken from `remote`.
pub fn taken_tombstones_prefix(remote: &RemoteName) -> String {
    format!("{TAKEN_TOMBSTONES_PREFIX}{remote}/")
}

/// The staging folder of one run fetched from `remote`.
pub fn remote_run_refs_prefix(remote: &RemoteName, run: &RunId) -> String {
    format!("{REMOTE_RUNS_PREFIX}{remote}/{run}/")
}

pub fn remote_run_head(remote: &RemoteName, run: &RunId) -> String {
    format!("{REMOTE_RUNS_PREFIX}{remote}/{run}/{HEAD_LEAF}")
}

pub fn remote_notes_ref(remote: &RemoteName, run: &RunId) -> String {
    format!("{REMOTE_NOTES_PREFIX}{remote}/{run}")
}

/// Branch name (without `refs/heads/`) a rewind/fork creates by default.
pub fn default_branch(run: &RunId) -> String {
    format!("agent-runs/{run}")
}

pub fn branch_ref(branch: &str) -> String {
    format!("{BRANCHES_PREFIX}{branch}")
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

/// Refspecs that push one run: its ref folder and its notes ref (never forced: no `+`).
pub fn push_refspecs(run: &RunId) -> [String; 2] {
    [
        format!("{RUNS_PREFIX}{run}/*:{RUNS_PREFIX}{run}/*"),
        format!("{NOTES_PREFIX}{run}:{NOTES_PREFIX}{run}"),
    ]
}

/// Refspecs that push every run but `excluded` (names as listed locally, possibly invalid:
/// they are what is left out) with two globs and negative refspecs, so the command line does
/// not grow with the number of runs.
pub fn push_all_refspecs(excluded: &[String]) -> Vec<String> {
    let mut v = vec![
        format!("{RUNS_PREFIX}*:{RUNS_PREFIX}*"),
        format!("{NOTES_PREFIX}*:{NOTES_PREFIX}*"),
    ];
    for run in excluded {
        v.push(format!("^{RUNS_PREFIX}{run}/*"));
        v.push(format!("^{NOTES_PREFIX}{run}"));
    }
    v
}

/// Refspecs that fetch every run of `remote` into the staging namespace (forced: staging is
/// ours to overwrite, import decides what reaches the run's own refs).
pub fn fetch_refspecs(remote: &RemoteName) -> [String; 2] {
    [
        format!("+{RUNS_PREFIX}*:{REMOTE_RUNS_PREFIX}{remote}/*"),
        format!("+{NOTES_PREFIX}*:{REMOTE_NOTES_PREFIX}{remote}/*"),
    ]
}

/// Refspecs that fetch one run of `remote` into the staging namespace. The notes refspec is
/// a prefix glob (`<run>*`) so a run the remote does not have is simply not fetched instead
/// of failing the whole fetch; it may stage other runs whose names start with `<run>`.
pub fn fetch_run_refspecs(remote: &RemoteName, run: &RunId) -> [String; 2] {
    [
        format!("+{RUNS_PREFIX}{run}/*:{REMOTE_RUNS_PREFIX}{remote}/{run}/*"),
        format!("+{NOTES_PREFIX}{run}*:{REMOTE_NOTES_PREFIX}{remote}/{run}*"),
    ]
}

/// A ref found in a staging namespace, split into the run name and what follows it (names
/// not validated: they came from another machine).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StagedRef {
    /// `refs/agent-runs-remote/<remote>/<run>/<rest>`; `rest` may contain `/` (invalid).
    Run(String, String),
    /// `refs/notes/agent-runs-remote/<remote>/<run>`; `run` may contain `/` (invalid).
    Notes(String),
}

/// Parse a full ref name under the staging namespace of `remote`.
pub fn parse_staged_ref(remote: &RemoteName, full: &str) -> Option<StagedRef> {
    if let Some(rest) = full.strip_prefix(&remote_run_prefix(remote)) {
        let (run, leaf) = rest.split_once('/')?;
        return Some(StagedRef::Run(run.to_string(), leaf.to_string()));
    }
    full.strip_prefix(&remote_notes_prefix(remote))
        .map(|run| StagedRef::Notes(run.to_string()))
}

/// The run a full ref name under [`NOTES_PREFIX`] belongs to (not validated).
pub fn parse_notes_ref(full: &str) -> Option<String> {
    let run = full.strip_prefix(NOTES_PREFIX)?;
    (!run.is_empty() && !run.contains('/')).then(|| run.to_string())
}

/// The remote and run of a ref under either staging namespace (names not validated).
pub fn parse_any_staged_ref(full: &str) -> Option<(String, String)> {
    if let Some(rest) = full.strip_prefix(REMOTE_RUNS_PREFIX) {
        let (remote, rest) = rest.split_once('/')?;
        let (run, _) = rest.split_once('/')?;
        return Some((remote.to_string(), run.to_string()));
    }
    let rest = full.strip_prefix(REMOTE_NOTES_PREFIX)?;
    let (remote, run) = rest.split_once('/')?;
    Some((remote.to_string(), run.to_string()))
}

/// The staging remote name `import` uses for the runs of a bundle file.
pub const BUNDLE_REMOTE: &str = "bundle";

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
        assert_eq!(
            parse_notes_ref("refs/notes/agent-runs/r1"),
            Some("r1".into())
        );
        assert_eq!(parse_notes_ref("refs/notes/agent-runs/a/b"), None);
    }

    #[test]
    fn owned_refs_are_recognised_in_any_case() {
        let run = RunId::new("r1").unwrap();
        let o = RemoteName::new("origin").unwrap();
        for ours in [
            notes_ref(&run),
            run_head(&run),
            remote_notes_ref(&o, &run),
            BACKUPS_REF.to_string(),
            "refs/notes/agent-runs".to_string(),
            "refs/notes/Agent-Runs/r1".to_string(),
            format!("{TOMBSTONES_PREFIX}r1/00"),
        ] {
            assert!(is_owned_ref(&ours), "{ours}");
        }
        for theirs in [
            "refs/notes/ai",
            "refs/notes/agent-runsX/r1",
            "refs/heads/main",
        ] {
            assert!(!is_owned_ref(theirs), "{theirs}");
        }
    }

    #[test]
    fn staged_names_round_trip() {
        let run = RunId::new("r1").unwrap();
        let o = RemoteName::new("origin").unwrap();
        assert_eq!(
            parse_staged_ref(&o, &remote_run_head(&o, &run)),
            Some(StagedRef::Run("r1".into(), "HEAD".into()))
        );
        assert_eq!(
            parse_staged_ref(&o, &remote_notes_ref(&o, &run)),
            Some(StagedRef::Notes("r1".into()))
        );
        assert_eq!(
            parse_staged_ref(&o, "refs/agent-runs-remote/other/r1/HEAD"),
            None
        );
        assert_eq!(
            parse_any_staged_ref(&remote_run_head(&o, &run)),
            Some(("origin".into(), "r1".into()))
        );
        assert_eq!(
            parse_any_staged_ref(&remote_notes_ref(&o, &run)),
            Some(("origin".into(), "r1".into()))
        );
        assert_eq!(
            parse_any_staged_ref("refs/agent-runs-remote/origin/r1"),
            None
        );
    }
}
