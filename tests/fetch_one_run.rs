//! `fetch RUN` against a bare remote and through `git daemon`: a new run's notes come in a
//! second `git fetch` that sends no `have` (one negotiation round each, read from git's own
//! trace2 events), and the fetch still brings every object the run and its notes need, into
//! a repository that shares history with the remote and into one that shares none; a run
//! that already has notes here is updated by one fetch. Checked with `git fsck --strict` and
//! `git rev-list --objects`.

mod common;

use common::{Daemon, Repo, checkpoints, git_in, refs, tool_cmd};
use serde_json::Value;
use std::path::Path;

/// The author's repository: `main` pushed to a new bare `r.git` under `base`, and a run `r1`
/// of three checkpoints (two steps) pushed there too.
fn author(base: &Path) -> Repo {
    git_in(base, &["init", "-q", "--bare", "r.git"]);
    let a = Repo::new();
    a.write("src.txt", "one\n");
    a.git(&["add", "-A"]);
    a.git(&["commit", "-q", "-m", "second"]);
    let url = base.join("r.git");
    a.git(&["remote", "add", "origin", url.to_str().unwrap()]);
    a.git(&["push", "-q", "origin", "main"]);
    a.ok(&["start", "--run", "r1"]);
    a.write("src.txt", "two\n");
    a.ok(&["checkpoint", "plan", "--status", "completed"]);
    a.write("new.txt", "untracked, in the snapshot\n");
    a.ok(&["checkpoint", "implement", "--status", "completed"]);
    let pushed = a.json(&["push", "origin", "r1"]);
    assert_eq!(pushed["runs"][0]["result"], "pushed", "{pushed}");
    a
}

/// `fetch origin <runs…>` in `dir` with git's trace2 events written to a file; returns the
/// report and, per git process that negotiated, (haves sent in its first round, rounds).
fn fetch_traced(dir: &Path, runs: &[&str]) -> (Value, Vec<(i64, i64)>) {
    let events = tempfile::NamedTempFile::new().unwrap();
    let mut cmd = tool_cmd(dir);
    cmd.args(["--json", "fetch", "origin"])
        .args(runs)
        .env("GIT_TRACE2_EVENT", events.path())
        .env("GIT_TRACE2_EVENT_NESTING", "10");
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "fetch failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Per process (sid): the first `haves_added` and `total_rounds` of negotiation_v2.
    let mut by_sid: std::collections::BTreeMap<String, (Option<i64>, Option<i64>)> =
        Default::default();
    for line in std::fs::read_to_string(events.path()).unwrap().lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        if e["event"] != "data" || e["category"] != "negotiation_v2" {
            continue;
        }
        let value = e["value"].as_str().and_then(|v| v.parse().ok());
        let slot = by_sid
            .entry(e["sid"].as_str().unwrap().to_string())
            .or_default();
        match e["key"].as_str() {
            Some("haves_added") if slot.0.is_none() => slot.0 = value,
            Some("total_rounds") => slot.1 = value,
            _ => {}
        }
    }
    let fetches = by_sid
        .into_values()
        .filter_map(|(h, r)| Some((h?, r?)))
        .collect();
    (report, fetches)
}

/// The run's refs and notes ref here equal the remote's, and every object is present.
fn assert_complete(b: &Repo, remote: &Path, run: &str) {
    let ours = [
        refs(b.path(), &format!("refs/agent-runs/{run}/")),
        refs(b.path(), &format!("refs/notes/agent-runs/{run}")),
    ]
    .concat();
    let theirs = [
        refs(remote, &format!("refs/agent-runs/{run}/")),
        refs(remote, &format!("refs/notes/agent-runs/{run}")),
    ]
    .concat();
    assert_eq!(ours, theirs);
    assert_eq!(b.missing_objects_under_our_refs(), None);
    b.assert_fsck();
}

fn clone(url: &str) -> Repo {
    let b = Repo::empty();
    b.git(&["remote", "add", "origin", url]);
    b.git(&["fetch", "-q", "origin"]);
    b.git(&["reset", "-q", "--hard", "origin/main"]);
    b
}

fn new_run_in_one_round_each(url: &str, remote: &Path, a: &Repo) {
    let b = clone(url);
    let (report, fetches) = fetch_traced(b.path(), &["r1"]);
    assert_eq!(report["runs"][0]["result"], "new", "{report}");
    assert_complete(&b, remote, "r1");
    assert_eq!(checkpoints(b.path(), "r1").len(), 3);
    // Two fetches, each done in one round; the notes one sent no `have` at all.
    let mut fetches = fetches;
    fetches.sort();
    assert_eq!(fetches.len(), 2, "{fetches:?}");
    assert_eq!(fetches[0], (0, 1), "the notes fetch: {fetches:?}");
    assert!(fetches[1].0 > 0 && fetches[1].1 == 1, "{fetches:?}");

    // The run moves on there: its notes exist here now, so one fetch updates both.
    a.write("src.txt", "three\n");
    a.ok(&[
        "checkpoint",
        "implement",
        "--run",
        "r1",
        "--status",
        "completed",
    ]);
    let pushed = a.json(&["push", "origin", "r1"]);
    assert_eq!(pushed["runs"][0]["result"], "pushed", "{pushed}");
    let (report, fetches) = fetch_traced(b.path(), &["r1"]);
    assert_eq!(report["runs"][0]["result"], "fast-forwarded", "{report}");
    assert_eq!(report["runs"][0]["notes"], "fast-forwarded", "{report}");
    assert_eq!(fetches.len(), 1, "{fetches:?}");
    assert_complete(&b, remote, "r1");
    assert_eq!(checkpoints(b.path(), "r1").len(), 4);
    let (report, _) = fetch_traced(b.path(), &["nosuch"]);
    assert_eq!(report["runs"][0]["result"], "not on remote", "{report}");
    assert!(refs(b.path(), "refs/agent-runs/nosuch/").is_empty());

    // A repository that shares no history with the remote gets everything the run needs.
    let c = Repo::new();
    c.git(&["remote", "add", "origin", url]);
    let (report, _) = fetch_traced(c.path(), &["r1"]);
    assert_eq!(report["runs"][0]["result"], "new", "{report}");
    assert_complete(&c, remote, "r1");
    assert_eq!(checkpoints(c.path(), "r1").len(), 4);
    let shown = c.json(&["show", "r1"]);
    assert!(shown.to_string().contains("implement"), "{shown}");
}

#[test]
fn fetch_run_from_a_bare_remote() {
    let base = tempfile::tempdir().unwrap();
    let a = author(base.path());
    let remote = base.path().join("r.git");
    new_run_in_one_round_each(remote.to_str().unwrap(), &remote, &a);
}

#[test]
fn fetch_run_through_git_daemon() {
    let base = tempfile::tempdir().unwrap();
    let a = author(base.path());
    let daemon = Daemon::start(base.path());
    let url = daemon.url("r.git");
    let remote = base.path().join("r.git");
    new_run_in_one_round_each(&url, &remote, &a);
    drop(daemon);
}
