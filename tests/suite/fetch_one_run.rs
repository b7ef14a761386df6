//! `fetch RUN` against a bare remote and through `git daemon`: a new run's notes are copied
//! in-process from a remote on this machine (one `git fetch` in all) and come in a second
//! `git fetch` that sends no `have` through `git daemon` (one negotiation round each, read
//! from git's own trace2 events), and the fetch still brings every object the run and its
//! notes need, into a repository that shares history with the remote and into one that
//! shares none; a run that already has notes here is updated by one fetch. Checked with
//! `git fsck --strict` and `git rev-list --objects`. The in-process copy leaves to git what
//! git would do differently (hidden refs, a remote owned by someone else), stages nothing
//! for notes the remote lacks, and refuses damaged notes without changing anything. git's
//! auto-maintenance process is started only when it could find work.

use crate::common;

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
    fetch_traced_from(dir, "origin", runs, &[])
}

/// [`fetch_traced`] from the remote `remote`, with more environment `env`.
fn fetch_traced_from(
    dir: &Path,
    remote: &str,
    runs: &[&str],
    env: &[(&str, &str)],
) -> (Value, Vec<(i64, i64)>) {
    let events = tempfile::NamedTempFile::new().unwrap();
    let mut cmd = tool_cmd(dir);
    cmd.args(["--json", "fetch", remote])
        .args(runs)
        .env("GIT_TRACE2_EVENT", events.path())
        .env("GIT_TRACE2_EVENT_NESTING", "10")
        .envs(env.iter().copied());
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

/// A new run's notes come in a second fetch that sends no `have` (`git daemon`), or are
/// copied in-process (a remote on this machine: `local`). Every fetch is done in one round
/// when this repository `shares` history with the remote (otherwise no `have` of the
/// run's fetch is known there, and git sends `done` in a second round, as for a branch).
fn assert_new_run_fetches(fetches: &[(i64, i64)], local: bool, shares: bool) {
    let mut fetches = fetches.to_vec();
    fetches.sort();
    let run_fetch = if local {
        assert_eq!(fetches.len(), 1, "{fetches:?}");
        fetches[0]
    } else {
        assert_eq!(fetches.len(), 2, "{fetches:?}");
        assert_eq!(fetches[0], (0, 1), "the notes fetch: {fetches:?}");
        fetches[1]
    };
    assert!(run_fetch.0 > 0, "{fetches:?}");
    if shares {
        assert_eq!(run_fetch.1, 1, "{fetches:?}");
    }
}

fn new_run_in_one_round_each(url: &str, remote: &Path, a: &Repo, local: bool) {
    let b = clone(url);
    let (report, fetches) = fetch_traced(b.path(), &["r1"]);
    assert_eq!(report["runs"][0]["result"], "new", "{report}");
    assert_complete(&b, remote, "r1");
    assert_eq!(checkpoints(b.path(), "r1").len(), 3);
    assert_new_run_fetches(&fetches, local, true);

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
    let (report, fetches) = fetch_traced(c.path(), &["r1"]);
    assert_eq!(report["runs"][0]["result"], "new", "{report}");
    assert_new_run_fetches(&fetches, local, false);
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
    new_run_in_one_round_each(remote.to_str().unwrap(), &remote, &a, true);
}

#[test]
fn fetch_run_through_git_daemon() {
    let base = tempfile::tempdir().unwrap();
    let a = author(base.path());
    let daemon = Daemon::start(base.path());
    let url = daemon.url("r.git");
    let remote = base.path().join("r.git");
    new_run_in_one_round_each(&url, &remote, &a, false);
    drop(daemon);
}

/// A second run `r10` (a name that starts with `r1`) pushed by the author.
fn push_r10(a: &Repo) {
    a.ok(&["start", "--run", "r10"]);
    let pushed = a.json(&["push", "origin", "r10"]);
    assert_eq!(pushed["runs"][0]["result"], "pushed", "{pushed}");
}

#[test]
fn local_remote_by_insteadof_file_url_or_worktree_copies_only_the_named_run() {
    let base = tempfile::tempdir().unwrap();
    let a = author(base.path());
    push_r10(&a);
    let remote = base.path().join("r.git");
    // `url.<base>.insteadOf` turns `here:r.git` into the path.
    let b = Repo::new();
    let prefix = format!("{}/", base.path().display());
    b.git(&["config", &format!("url.{prefix}.insteadOf"), "here:"]);
    b.git(&["remote", "add", "origin", "here:r.git"]);
    let (report, fetches) = fetch_traced(b.path(), &["r1"]);
    assert_eq!(report["runs"][0]["result"], "new", "{report}");
    assert_complete(&b, &remote, "r1");
    assert_new_run_fetches(&fetches, true, false);
    // Exactly the named run's notes were staged (git's prefix glob `r1*` would take r10's).
    let staged: Vec<String> = refs(b.path(), "refs/notes/agent-runs-remote/")
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert_eq!(staged, ["refs/notes/agent-runs-remote/origin/r1"]);

    // The author's own repository (with a worktree) by `file://` URL.
    let c = Repo::new();
    let url = format!("file://{}", a.path().display());
    c.git(&["remote", "add", "author", &url]);
    let (report, fetches) = fetch_traced_from(c.path(), "author", &["r10"], &[]);
    assert_eq!(report["runs"][0]["result"], "new", "{report}");
    assert_complete(&c, a.path(), "r10");
    assert_new_run_fetches(&fetches, true, false);
}

#[test]
fn local_remote_with_hidden_refs_is_left_to_git() {
    let base = tempfile::tempdir().unwrap();
    let _a = author(base.path());
    let remote = base.path().join("r.git");
    let url = remote.to_str().unwrap();
    // Any hidden ref: git's own two fetches, and the same result.
    git_in(
        &remote,
        &["config", "uploadpack.hideRefs", "refs/heads/secret"],
    );
    let b = clone(url);
    let (report, fetches) = fetch_traced(b.path(), &["r1"]);
    assert_eq!(report["runs"][0]["result"], "new", "{report}");
    assert_complete(&b, &remote, "r1");
    assert_new_run_fetches(&fetches, false, true);
    // Hidden notes stay hidden: the run comes without them, as from git alone.
    git_in(
        &remote,
        &["config", "--add", "uploadpack.hideRefs", "refs/notes/"],
    );
    let c = clone(url);
    let (report, _) = fetch_traced(c.path(), &["r1"]);
    assert_eq!(report["runs"][0]["result"], "skipped", "{report}");
    assert!(refs(c.path(), "refs/notes/").is_empty());
    assert!(refs(c.path(), "refs/agent-runs/").is_empty());
}

#[test]
fn local_remote_owned_by_another_user_is_left_to_git() {
    let uid = std::process::Command::new("id").arg("-u").output().unwrap();
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        // Giving the remote to another user takes root; the check is a plain owner
        // comparison (gix::sec::identity::is_path_owned_by_current_user).
        eprintln!("not run: needs root to give the remote to another user");
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let _a = author(base.path());
    let remote = base.path().join("r.git");
    let b = clone(remote.to_str().unwrap());
    let chown = std::process::Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(&remote)
        .status()
        .unwrap();
    assert!(chown.success());
    // git itself serves it only where `safe.directory` says so.
    let global = base.path().join("global-config");
    std::fs::write(&global, "[safe]\n\tdirectory = *\n").unwrap();
    let env = [("GIT_CONFIG_GLOBAL", global.to_str().unwrap())];
    let (report, fetches) = fetch_traced_from(b.path(), "origin", &["r1"], &env);
    assert_eq!(report["runs"][0]["result"], "new", "{report}");
    assert_new_run_fetches(&fetches, false, true);
    assert_eq!(b.missing_objects_under_our_refs(), None);
    b.assert_fsck();
}

#[test]
fn notes_missing_on_a_local_remote_leave_the_run_without_notes() {
    let base = tempfile::tempdir().unwrap();
    let _a = author(base.path());
    let remote = base.path().join("r.git");
    git_in(&remote, &["update-ref", "-d", "refs/notes/agent-runs/r1"]);
    let b = clone(remote.to_str().unwrap());
    // A staging ref left by an earlier fetch is pruned, as `git fetch --prune` does.
    let stale = "refs/notes/agent-runs-remote/origin/r1";
    b.git(&["update-ref", stale, "HEAD"]);
    let (report, fetches) = fetch_traced(b.path(), &["r1"]);
    assert_eq!(report["runs"][0]["result"], "skipped", "{report}");
    assert!(
        report["runs"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("no notes"),
        "{report}"
    );
    assert_eq!(fetches.len(), 1, "{fetches:?}");
    assert!(refs(b.path(), "refs/notes/").is_empty());
    assert!(refs(b.path(), "refs/agent-runs/").is_empty());
    b.assert_fsck();
}

#[test]
fn damaged_notes_on_a_local_remote_fail_and_change_nothing() {
    let base = tempfile::tempdir().unwrap();
    let _a = author(base.path());
    let remote = base.path().join("r.git");
    let url = remote.to_str().unwrap();
    // The notes blobs of r1: pushed as loose objects (a small push is unpacked).
    let notes_tree = git_in(&remote, &["ls-tree", "-r", "refs/notes/agent-runs/r1"]);
    let blob = notes_tree.lines().next().unwrap().split_whitespace().nth(2);
    let blob = blob.unwrap().to_string();
    let loose = remote.join("objects").join(&blob[..2]).join(&blob[2..]);
    assert!(loose.is_file(), "{} is not loose", loose.display());
    let intact = std::fs::read(&loose).unwrap();
    let other = git_in(&remote, &["rev-parse", "main^{tree}"]);
    let other = other.trim();
    let other = std::fs::read(remote.join("objects").join(&other[..2]).join(&other[2..]));
    for (damage, says) in [
        (Some(other.unwrap()), "does not match its id"),
        (None, "is missing"),
    ] {
        let _ = std::fs::remove_file(&loose);
        if let Some(bytes) = &damage {
            std::fs::write(&loose, bytes).unwrap();
        }
        let b = clone(url);
        // git fetched the run's refs into staging meanwhile; nothing else changed.
        let ours = |b: &Repo| -> Vec<(String, String)> {
            refs(b.path(), "refs/")
                .into_iter()
                .filter(|(name, _)| !name.starts_with("refs/agent-runs-remote/"))
                .collect()
        };
        let before = ours(&b);
        let out = tool_cmd(b.path())
            .args(["fetch", "origin", "r1"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(&blob) && stderr.contains(says), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_eq!(ours(&b), before);
        b.assert_fsck();
    }
    std::fs::write(&loose, intact).unwrap();
}

/// The `git maintenance run --auto` processes `fetch origin <runs…>` in `dir` started (read
/// from git's trace2 events), and the report.
fn maintenance_started(dir: &Path, runs: &[&str], env: &[(&str, &str)]) -> (Value, usize) {
    let events = tempfile::NamedTempFile::new().unwrap();
    let out = tool_cmd(dir)
        .args(["--json", "fetch", "origin"])
        .args(runs)
        .env("GIT_TRACE2_EVENT", events.path())
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fetch failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let started = std::fs::read_to_string(events.path())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| {
            e["event"] == "child_start"
                && e["argv"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|v| v == "maintenance"))
        })
        .count();
    (serde_json::from_slice(&out.stdout).unwrap(), started)
}

/// `git fetch` starts `git maintenance run --auto` after every fetch; ours does so only when
/// git's own `gc --auto` test (too many packs or loose objects) could find work, or when
/// anything else could matter (a `maintenance.*` setting, config given through the
/// environment). The runs are fetched the same either way.
fn auto_maintenance_only_when_due(url: &str, remote: &Path) {
    // Nothing due: no maintenance process.
    let b = clone(url);
    let (report, started) = maintenance_started(b.path(), &["r1"], &[]);
    assert_eq!(report["runs"][0]["result"], "new", "{report}");
    assert_eq!(started, 0);
    assert_complete(&b, remote, "r1");

    // Two packs, at most one allowed: git's gc --auto would repack, so git is left to run it.
    let c = clone(url);
    c.git(&["repack", "-q", "-d"]);
    c.git(&["commit", "-q", "--allow-empty", "-m", "another"]);
    c.git(&["repack", "-q", "-d"]);
    c.git(&["config", "gc.autoPackLimit", "1"]);
    // In the foreground, so that its repack is done before fsck looks at the packs.
    c.git(&["config", "gc.autoDetach", "false"]);
    let (report, started) = maintenance_started(c.path(), &["r1"], &[]);
    assert_eq!(report["runs"][0]["result"], "new", "{report}");
    assert_eq!(started, 1);
    assert_complete(&c, remote, "r1");

    // A maintenance setting, or config from the environment (`git -c`): left to git.
    let d = clone(url);
    d.git(&["config", "maintenance.strategy", "incremental"]);
    let (report, started) = maintenance_started(d.path(), &["r1"], &[]);
    assert_eq!(report["runs"][0]["result"], "new", "{report}");
    assert_eq!(started, 1);
    let e = clone(url);
    let env = [
        ("GIT_CONFIG_COUNT", "1"),
        ("GIT_CONFIG_KEY_0", "gc.auto"),
        ("GIT_CONFIG_VALUE_0", "1"),
    ];
    let (report, started) = maintenance_started(e.path(), &["r1"], &env);
    assert_eq!(report["runs"][0]["result"], "new", "{report}");
    assert_eq!(started, 1);
    assert_complete(&e, remote, "r1");

    // The largest `gc.auto` git accepts: nothing due, and no overflow working out the
    // loose-object estimate.
    let f = clone(url);
    f.git(&["config", "gc.auto", "9223372036854775807"]);
    let (report, started) = maintenance_started(f.path(), &["r1"], &[]);
    assert_eq!(report["runs"][0]["result"], "new", "{report}");
    assert_eq!(started, 0);
    assert_complete(&f, remote, "r1");
}

#[test]
fn auto_maintenance_only_when_due_from_a_bare_remote() {
    let base = tempfile::tempdir().unwrap();
    let _a = author(base.path());
    let remote = base.path().join("r.git");
    auto_maintenance_only_when_due(remote.to_str().unwrap(), &remote);
}

#[test]
fn auto_maintenance_only_when_due_through_git_daemon() {
    let base = tempfile::tempdir().unwrap();
    let _a = author(base.path());
    let daemon = Daemon::start(base.path());
    let remote = base.path().join("r.git");
    auto_maintenance_only_when_due(&daemon.url("r.git"), &remote);
    drop(daemon);
}
