//! Sharing and retention against real git (DESIGN.md §6): push/fetch through a bare
//! repository over `file://` and through `git daemon` on 127.0.0.1, the five import cases,
//! notes merged by union, concurrent pushes, validation of fetched data, delete, gc, and
//! export/import as a git bundle.

mod common;

use common::{Daemon, Repo, git_in, ok_in, refs, run_in};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// A bare repository holding one commit on `main`, to push runs to.
struct Bare {
    dir: tempfile::TempDir,
}

impl Bare {
    fn new() -> Bare {
        let dir = tempfile::tempdir().unwrap();
        git_in(
            dir.path(),
            &["init", "-q", "--bare", "-b", "main", "remote.git"],
        );
        let seed = Repo::new();
        let url = format!("file://{}", dir.path().join("remote.git").display());
        seed.git(&["push", "-q", &url, "main"]);
        Bare { dir }
    }
    fn path(&self) -> PathBuf {
        self.dir.path().join("remote.git")
    }
    fn url(&self) -> String {
        format!("file://{}", self.path().display())
    }
    fn git(&self, args: &[&str]) -> String {
        git_in(&self.path(), args)
    }
}

/// A clone of `url` with its own identity.
fn clone(url: &str, who: &str) -> Repo {
    let dir = tempfile::tempdir().unwrap();
    git_in(dir.path(), &["clone", "-q", url, "."]);
    let r = Repo { dir };
    r.git(&["config", "user.name", who]);
    r.git(&["config", "user.email", &format!("{who}@example.com")]);
    r.git(&["config", "commit.gpgsign", "false"]);
    r
}

fn js(dir: &Path, args: &[&str]) -> Value {
    let mut a = vec!["--json"];
    a.extend_from_slice(args);
    let out = ok_in(dir, &a);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// The result of one run in a push/fetch report.
fn result_of(report: &Value, run: &str) -> Value {
    report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run"] == run)
        .cloned()
        .unwrap_or_else(|| panic!("no {run} in {report:#}"))
}

/// A run with a few checkpoints: start, plan (completed), implement (completed).
fn make_run(r: &Repo, run: &str) {
    ok_in(r.path(), &["start", "--run", run, "--label", "shared work"]);
    r.write("PLAN.md", &format!("plan of {run}\n"));
    ok_in(
        r.path(),
        &["checkpoint", "plan", "--run", run, "--status", "completed"],
    );
    r.write("src.txt", &format!("implementation of {run}\n"));
    // An untracked file is part of the snapshot, so it is shared too.
    r.write("notes/scratch.txt", "scratch\n");
    ok_in(
        r.path(),
        &[
            "checkpoint",
            "implement",
            "--run",
            run,
            "--status",
            "completed",
        ],
    );
}

/// Every ref and notes ref of a run: (name, id).
fn run_refs(dir: &Path, run: &str) -> Vec<(String, String)> {
    let mut v = refs(dir, &format!("refs/agent-runs/{run}/"));
    v.extend(
        refs(dir, "refs/notes/agent-runs/")
            .into_iter()
            .filter(|(n, _)| n == &format!("refs/notes/agent-runs/{run}")),
    );
    v
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

// ---------------------------------------------------------------------------------------
// Round trip: push from A, fetch into B, use it there, fork, push back, fetch in A
// ---------------------------------------------------------------------------------------

fn round_trip(url: &str) {
    let a = clone(url, "alice");
    let b = clone(url, "bob");
    make_run(&a, "r1");
    let pushed = js(a.path(), &["push", "r1"]);
    assert_eq!(result_of(&pushed, "r1")["result"], "pushed", "{pushed:#}");
    // Pushing again is a no-op.
    let again = js(a.path(), &["push", "origin", "r1"]);
    assert_eq!(result_of(&again, "r1")["result"], "up to date");

    let fetched = js(b.path(), &["fetch"]);
    assert_eq!(result_of(&fetched, "r1")["result"], "new", "{fetched:#}");
    assert_eq!(run_refs(a.path(), "r1"), run_refs(b.path(), "r1"));
    // Fetching again changes nothing.
    let again = js(b.path(), &["fetch", "origin"]);
    assert_eq!(again["up_to_date"], 1, "{again:#}");
    assert!(again["runs"].as_array().unwrap().is_empty(), "{again:#}");
    let again = js(b.path(), &["fetch", "origin", "r1"]);
    assert_eq!(result_of(&again, "r1")["result"], "up to date");

    // show, log, diff and rewind work on the fetched run.
    let shown = js(b.path(), &["show", "r1/implement"]);
    assert_eq!(shown["step"], "implement");
    let files: Vec<&str> = shown["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert!(files.contains(&"notes/scratch.txt"), "{files:?}");
    assert_eq!(js(b.path(), &["log", "r1"]).as_array().unwrap().len(), 3);
    let diff = ok_in(b.path(), &["diff", "r1/plan", "r1/implement"]);
    assert!(diff.contains("implementation of r1"), "{diff}");
    // A rewind of the fetched run checks its files out (here into a linked worktree).
    let wt = tempfile::tempdir().unwrap();
    let wt_path = wt.path().join("wt");
    let rewound = js(
        b.path(),
        &[
            "rewind",
            "r1",
            "--to",
            "implement",
            "--run",
            "r1-again",
            "--worktree",
            wt_path.to_str().unwrap(),
        ],
    );
    assert_eq!(rewound["run"], "r1-again");
    assert_eq!(
        std::fs::read_to_string(wt_path.join("PLAN.md")).unwrap(),
        "plan of r1\n"
    );
    assert!(!wt_path.join("src.txt").exists());
    let rewound = js(
        b.path(),
        &[
            "fork",
            "r1",
            "--to",
            "implement",
            "--run",
            "r1-bob",
            "--no-checkout",
        ],
    );
    assert_eq!(rewound["run"], "r1-bob");

    // B continues its fork and pushes it; A fetches it.
    ok_in(
        b.path(),
        &[
            "checkpoint",
            "implement",
            "--run",
            "r1-bob",
            "--status",
            "completed",
        ],
    );
    let pushed = js(b.path(), &["push", "r1-bob"]);
    assert_eq!(result_of(&pushed, "r1-bob")["result"], "pushed");
    let fetched = js(a.path(), &["fetch"]);
    assert_eq!(result_of(&fetched, "r1-bob")["result"], "new");
    assert_eq!(fetched["up_to_date"], 1, "{fetched:#}");
    assert_eq!(run_refs(a.path(), "r1-bob"), run_refs(b.path(), "r1-bob"));
    let graph = ok_in(a.path(), &["log", "--graph", "r1"]);
    assert!(
        graph.contains("r1-bob") && graph.contains("forked"),
        "{graph}"
    );
    // The fork inherits `plan` from r1: its checkpoint resolves in A too.
    js(a.path(), &["show", "r1-bob/plan"]);
    for r in [&a, &b] {
        r.assert_fsck();
    }
}

#[test]
fn round_trip_through_a_bare_repository() {
    let bare = Bare::new();
    round_trip(&bare.url());
}

#[test]
fn round_trip_through_git_daemon() {
    let bare = Bare::new();
    let daemon = Daemon::start(bare.dir.path());
    round_trip(&daemon.url("remote.git"));
    drop(daemon);
}

// ---------------------------------------------------------------------------------------
// Divergence and notes
// ---------------------------------------------------------------------------------------

#[test]
fn diverged_runs_keep_local_and_import_the_remote_continuation_as_a_fork() {
    let bare = Bare::new();
    let a = clone(&bare.url(), "alice");
    let b = clone(&bare.url(), "bob");
    make_run(&a, "r1");
    ok_in(a.path(), &["push", "r1"]);
    ok_in(b.path(), &["fetch"]);

    // Both extend the same run differently; A pushes first.
    a.write("a.txt", "alice's test\n");
    ok_in(
        a.path(),
        &["checkpoint", "test", "--run", "r1", "--status", "completed"],
    );
    ok_in(a.path(), &["push", "r1"]);
    b.write("b.txt", "bob's review\n");
    ok_in(
        b.path(),
        &["checkpoint", "review", "--run", "r1", "--status", "failed"],
    );

    // B's push is rejected (remote moved on), nothing overwritten.
    let remote_before = refs(&bare.path(), "refs/");
    let out = run_in(b.path(), &["--json", "push", "r1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r1 = result_of(&report, "r1");
    assert_eq!(r1["result"], "rejected");
    assert!(r1["reason"].as_str().unwrap().contains("moved on"), "{r1}");
    assert!(r1["hint"].as_str().unwrap().contains("fetch"), "{r1}");
    assert_eq!(refs(&bare.path(), "refs/"), remote_before);
    // With --all, the atomic push fails as a whole: the other runs are pushed again and land.
    make_run(&b, "r2");
    let out = run_in(b.path(), &["--json", "push", "--all"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result_of(&report, "r1")["result"], "rejected");
    assert_eq!(result_of(&report, "r2")["result"], "pushed", "{report:#}");
    assert_eq!(
        bare.git(&["rev-parse", "refs/agent-runs/r2/HEAD"]).trim(),
        b.rev("refs/agent-runs/r2/HEAD")
    );
    assert_eq!(
        bare.git(&["rev-parse", "refs/agent-runs/r1/HEAD"]).trim(),
        a.rev("refs/agent-runs/r1/HEAD")
    );

    // B fetches: local r1 untouched, A's continuation imported as a forked run.
    let local_before = refs(b.path(), "refs/agent-runs/r1/");
    let local_tip = b.rev("refs/agent-runs/r1/HEAD");
    let fetched = js(b.path(), &["fetch"]);
    let r1 = result_of(&fetched, "r1");
    assert_eq!(r1["result"], "diverged", "{fetched:#}");
    let fork = r1["imported_as"].as_str().unwrap().to_string();
    assert!(fork.starts_with("r1-origin-"), "{fork}");
    assert_eq!(refs(b.path(), "refs/agent-runs/r1/"), local_before);
    let list = js(b.path(), &["list", "r1"]);
    assert_eq!(list.as_array().unwrap().last().unwrap()["step"], "review");

    let runs = js(b.path(), &["list"]);
    let forked = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run"] == fork.as_str())
        .unwrap();
    // Forked from the last common checkpoint: r1's implement.
    let common = a.rev("refs/agent-runs/r1/implement");
    assert_eq!(forked["forked_from"]["checkpoint"], common.as_str());
    assert_eq!(forked["label"], "shared work");
    // Its chain walks A's continuation: the remote tip is its root's first parent.
    let lineage = js(b.path(), &["log", &fork]);
    let steps: Vec<&str> = lineage
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["step"].as_str().unwrap_or("-"))
        .collect();
    assert_eq!(
        steps,
        ["-", "test", "implement", "plan", "-"],
        "{lineage:#}"
    );
    assert_eq!(
        lineage[1]["checkpoint"].as_str().unwrap(),
        a.rev("refs/agent-runs/r1/HEAD")
    );
    assert_ne!(local_tip, a.rev("refs/agent-runs/r1/HEAD"));
    // It has A's step refs; `rewind` works on it.
    js(b.path(), &["show", &format!("{fork}/test")]);
    js(
        b.path(),
        &[
            "fork",
            &fork,
            "--to",
            "test",
            "--no-checkout",
            "--run",
            "again",
        ],
    );

    // A second fetch does not import it twice.
    let again = js(b.path(), &["fetch"]);
    let r1 = result_of(&again, "r1");
    assert_eq!(r1["imported_as"], fork.as_str(), "{again:#}");
    assert_eq!(
        js(b.path(), &["list"]).as_array().unwrap().len(),
        runs.as_array().unwrap().len() + 1 // + `again`
    );

    // B pushes the imported fork; A fetches it as a new run.
    let pushed = js(b.path(), &["push", &fork]);
    assert_eq!(result_of(&pushed, &fork)["result"], "pushed");
    let fetched = js(a.path(), &["fetch"]);
    assert_eq!(result_of(&fetched, &fork)["result"], "new");
    assert_eq!(result_of(&fetched, "r2")["result"], "new");
    assert_eq!(fetched["runs"].as_array().unwrap().len(), 2, "{fetched:#}");
    assert_eq!(fetched["up_to_date"], 1); // r1, left as A pushed it
    b.assert_fsck();
    a.assert_fsck();
}

#[test]
fn approvals_on_both_sides_are_merged_and_pushed() {
    let bare = Bare::new();
    let a = clone(&bare.url(), "alice");
    let b = clone(&bare.url(), "bob");
    make_run(&a, "r1");
    open_gate(a.path(), "r1", "review");
    ok_in(a.path(), &["push", "r1"]);
    ok_in(b.path(), &["fetch"]);

    ok_in(
        a.path(),
        &["approve", "r1/review", "--by", "alice", "-m", "looks good"],
    );
    ok_in(a.path(), &["push", "r1"]);
    ok_in(b.path(), &["approve", "r1/review", "--by", "bob"]);

    // B's notes diverged: push says to fetch first.
    let out = run_in(b.path(), &["--json", "push", "r1"]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r1 = result_of(&report, "r1");
    assert!(r1["reason"].as_str().unwrap().contains("notes"), "{r1}");
    assert!(r1["hint"].as_str().unwrap().contains("fetch"), "{r1}");

    let fetched = js(b.path(), &["fetch"]);
    let r1 = result_of(&fetched, "r1");
    assert_eq!(r1["result"], "up to date");
    assert_eq!(r1["notes"], "merged");
    let pushed = js(b.path(), &["push", "r1"]);
    assert_eq!(result_of(&pushed, "r1")["result"], "pushed");
    let fetched = js(a.path(), &["fetch"]);
    assert_eq!(result_of(&fetched, "r1")["notes"], "fast-forwarded");

    for r in [&a, &b] {
        let shown = js(r.path(), &["show", "r1/review"]);
        let by: Vec<&str> = shown["records"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| l["type"] == "approval")
            .map(|l| l["by"].as_str().unwrap())
            .collect();
        assert_eq!(by.len(), 2, "{shown:#}");
        assert!(by.contains(&"alice") && by.contains(&"bob"), "{by:?}");
        // Plain git reads the merged note as well.
        let plan = r.rev("refs/agent-runs/r1/review");
        let note = r.git(&["notes", "--ref=agent-runs/r1", "show", &plan]);
        assert!(note.contains("\"alice\"") && note.contains("\"bob\""));
        assert!(
            note.lines()
                .all(|l| serde_json::from_str::<Value>(l).is_ok())
        );
    }
    // Both sides hold the same notes.
    assert_eq!(
        a.rev("refs/notes/agent-runs/r1^{tree}"),
        b.rev("refs/notes/agent-runs/r1^{tree}")
    );
}

#[test]
fn remote_ahead_fast_forwards_and_local_ahead_is_left_alone() {
    let bare = Bare::new();
    let a = clone(&bare.url(), "alice");
    let b = clone(&bare.url(), "bob");
    make_run(&a, "r1");
    ok_in(a.path(), &["push", "r1"]);
    ok_in(b.path(), &["fetch"]);
    a.write("t.txt", "tested\n");
    ok_in(
        a.path(),
        &["checkpoint", "test", "--run", "r1", "--status", "completed"],
    );
    ok_in(a.path(), &["push", "r1"]);
    let fetched = js(b.path(), &["fetch", "origin", "r1"]);
    assert_eq!(result_of(&fetched, "r1")["result"], "fast-forwarded");
    assert_eq!(run_refs(a.path(), "r1"), run_refs(b.path(), "r1"));

    ok_in(b.path(), &["checkpoint", "review", "--run", "r1"]);
    let before = run_refs(b.path(), "r1");
    let fetched = js(b.path(), &["fetch"]);
    assert_eq!(result_of(&fetched, "r1")["result"], "local is ahead");
    assert_eq!(run_refs(b.path(), "r1"), before);
    // Named runs the remote does not have are reported.
    let fetched = js(b.path(), &["fetch", "nosuchrun"]);
    assert_eq!(result_of(&fetched, "nosuchrun")["result"], "not on remote");
}

// ---------------------------------------------------------------------------------------
// Concurrency, validation, errors
// ---------------------------------------------------------------------------------------

#[test]
fn two_clones_pushing_different_runs_at_once_both_land() {
    let bare = Bare::new();
    let daemon = Daemon::start(bare.dir.path());
    let url = daemon.url("remote.git");
    let a = clone(&url, "alice");
    let b = clone(&url, "bob");
    for i in 0..3 {
        make_run(&a, &format!("a{i}"));
        make_run(&b, &format!("b{i}"));
    }
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    let handles: Vec<_> = [a.path().to_path_buf(), b.path().to_path_buf()]
        .into_iter()
        .map(|dir| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                run_in(&dir, &["--json", "push", "--all"])
            })
        })
        .collect();
    for h in handles {
        let out = h.join().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            report["runs"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r["result"] == "pushed"),
            "{report:#}"
        );
    }
    for run in ["a0", "a1", "a2"] {
        assert_eq!(
            bare.git(&["rev-parse", &format!("refs/agent-runs/{run}/HEAD")])
                .trim(),
            a.rev(&format!("refs/agent-runs/{run}/HEAD"))
        );
    }
    for run in ["b0", "b1", "b2"] {
        assert_eq!(
            bare.git(&["rev-parse", &format!("refs/notes/agent-runs/{run}")])
                .trim(),
            b.rev(&format!("refs/notes/agent-runs/{run}"))
        );
    }
    let c = clone(&url, "carol");
    let fetched = js(c.path(), &["fetch"]);
    assert_eq!(fetched["runs"].as_array().unwrap().len(), 6);
    drop(daemon);
}

#[test]
fn invalid_runs_on_the_remote_are_skipped_with_a_warning() {
    let bare = Bare::new();
    let a = clone(&bare.url(), "alice");
    make_run(&a, "good");
    make_run(&a, "garbage");
    make_run(&a, "stepless");
    let head = a.rev("refs/agent-runs/good/HEAD");
    // Garbage notes: the HEAD checkpoint's note is not JSON.
    let tip = a.rev("refs/agent-runs/garbage/HEAD");
    a.git(&[
        "notes",
        "--ref=agent-runs/garbage",
        "add",
        "-f",
        "-m",
        "rm -rf / # not json",
        &tip,
    ]);
    // A notes ref that points at a blob.
    make_run(&a, "notesblob");
    let blob = a.rev("refs/agent-runs/notesblob/HEAD:PLAN.md");
    a.git(&["update-ref", "refs/notes/agent-runs/notesblob", &blob]);
    // An invalid run name and a nested ref.
    a.git(&["update-ref", "refs/agent-runs/-bad/HEAD", &head]);
    a.git(&[
        "update-ref",
        &format!("refs/agent-runs/{}/HEAD", "x".repeat(70)),
        &head,
    ]);
    a.git(&["update-ref", "refs/agent-runs/stepless/a/b", &head]);
    // A run whose HEAD is not one of its checkpoints.
    a.git(&["update-ref", "refs/agent-runs/impostor/HEAD", &head]);
    a.git(&[
        "update-ref",
        "refs/notes/agent-runs/impostor",
        "refs/notes/agent-runs/good",
    ]);
    a.git(&[
        "push",
        "-q",
        "origin",
        "refs/agent-runs/*:refs/agent-runs/*",
        "refs/notes/agent-runs/*:refs/notes/agent-runs/*",
    ]);

    let b = clone(&bare.url(), "bob");
    let out = run_in(b.path(), &["--json", "fetch"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result_of(&report, "good")["result"], "new");
    for bad in ["garbage", "-bad", "stepless", "impostor", "notesblob"] {
        assert_eq!(
            result_of(&report, bad)["result"],
            "skipped",
            "{bad}: {report:#}"
        );
    }
    let warnings = stderr(&out);
    assert!(
        warnings.contains("\"garbage\"") && warnings.contains("warning:"),
        "{warnings}"
    );
    assert!(warnings.contains("-bad"), "{warnings}");
    assert_eq!(
        report["warnings"].as_array().unwrap().len(),
        6,
        "{report:#}"
    );
    // Only the valid run exists locally.
    let runs: Vec<String> = js(b.path(), &["list"])
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(runs, ["good"]);
    assert!(refs(b.path(), "refs/notes/agent-runs/").len() == 1);
    b.assert_fsck();
}

#[test]
fn remotes_must_exist_and_nothing_changes_otherwise() {
    let r = Repo::new();
    ok_in(r.path(), &["start", "--run", "r1"]);
    let before = refs(r.path(), "refs/");
    let out = run_in(r.path(), &["push", "r1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no remote origin"),
        "{}",
        stderr(&out)
    );
    let out = run_in(r.path(), &["fetch"]);
    assert!(
        stderr(&out).contains("no remote origin"),
        "{}",
        stderr(&out)
    );
    let bare = Bare::new();
    r.git(&["remote", "add", "upstream", &bare.url()]);
    let out = run_in(r.path(), &["push", "upstream", "nosuch"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("unknown run nosuch"),
        "{}",
        stderr(&out)
    );
    r.git(&["remote", "add", "origin", "file:///nonexistent/repo.git"]);
    let out = run_in(r.path(), &["push", "r1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("git push"), "{}", stderr(&out));
    assert_eq!(refs(r.path(), "refs/"), before);
    // Push never touches branches, tags or refs/remotes of the remote.
    let bare_before = refs(&bare.path(), "refs/");
    ok_in(r.path(), &["push", "upstream", "r1"]);
    let bare_after = refs(&bare.path(), "refs/");
    assert!(
        bare_after
            .iter()
            .all(|(n, _)| bare_before.iter().any(|(b, _)| b == n)
                || n.starts_with("refs/agent-runs/r1/")
                || n == "refs/notes/agent-runs/r1")
    );
}

// ---------------------------------------------------------------------------------------
// Retention
// ---------------------------------------------------------------------------------------

#[test]
fn delete_refuses_a_run_another_run_comes_from() {
    let r = Repo::new();
    make_run(&r, "src");
    ok_in(
        r.path(),
        &[
            "fork",
            "src",
            "--to",
            "implement",
            "--run",
            "child",
            "--no-checkout",
        ],
    );
    let out = run_in(r.path(), &["delete", "src"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("lineage of child"),
        "{}",
        stderr(&out)
    );
    assert!(!refs(r.path(), "refs/agent-runs/src/").is_empty());
    let del = js(r.path(), &["delete", "child"]);
    assert_eq!(del["run"], "child");
    assert!(refs(r.path(), "refs/agent-runs/child/").is_empty());
    assert!(run_refs(r.path(), "child").is_empty());
    js(r.path(), &["delete", "src"]);
    assert!(refs(r.path(), "refs/agent-runs/").is_empty());
    assert!(refs(r.path(), "refs/notes/agent-runs/").is_empty());
    let out = run_in(r.path(), &["delete", "src"]);
    assert!(stderr(&out).contains("unknown run src"));
    r.assert_fsck();
}

#[test]
fn gc_dry_run_changes_nothing_and_gc_removes_exactly_what_it_listed() {
    let r = Repo::new();
    for run in ["old1", "old2", "old3", "new1", "new2"] {
        ok_in(r.path(), &["start", "--run", run]);
        std::thread::sleep(Duration::from_millis(5));
    }
    // old2 is the origin of a kept run: it must be kept, and said so.
    ok_in(
        r.path(),
        &[
            "fork",
            "old2",
            "--to",
            "old2@0",
            "--run",
            "new3",
            "--no-checkout",
        ],
    );
    r.write("x.txt", "x\n");
    ok_in(r.path(), &["checkpoint", "work", "--run", "new3"]);
    let before = refs(r.path(), "refs/");
    let dry = js(
        r.path(),
        &["gc", "--keep", "3", "--older-than", "0s", "--dry-run"],
    );
    assert_eq!(refs(r.path(), "refs/"), before, "--dry-run changed refs");
    let listed: Vec<&str> = dry["deleted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["run"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["old3", "old1"], "{dry:#}");
    let kept = &dry["kept"].as_array().unwrap()[0];
    assert_eq!(kept["run"], "old2");
    assert!(kept["reason"].as_str().unwrap().contains("new3"));

    let done = js(r.path(), &["gc", "--keep", "3", "--older-than", "0s"]);
    assert_eq!(done["deleted"], dry["deleted"]);
    assert_eq!(done["kept"], dry["kept"]);
    let left: Vec<String> = js(r.path(), &["list", "--all"])
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(left.len(), 4);
    for gone in ["old1", "old3"] {
        assert!(!left.contains(&gone.to_string()));
        assert!(run_refs(r.path(), gone).is_empty());
    }
    // Refs were packed, and git is happy.
    let packed = std::fs::read_to_string(r.path().join(".git/packed-refs")).unwrap();
    assert!(packed.contains("refs/agent-runs/new3/HEAD"));
    r.assert_fsck();
    // Without a selection, gc refuses.
    assert_eq!(run_in(r.path(), &["gc"]).status.code(), Some(2));
}

#[test]
fn gc_drops_old_backups_but_keeps_the_newest_of_each_worktree() {
    let r = Repo::new();
    let d = r.path();
    r.write("x.txt", "v0\n");
    ok_in(d, &["start", "--run", "r1"]);
    ok_in(d, &["checkpoint", "base"]);
    // A linked worktree with one backup of its own, taken first (the oldest).
    let wt_dir = tempfile::tempdir().unwrap();
    let wt = wt_dir.path().join("wt");
    r.git(&["worktree", "add", "-q", "--detach", wt.to_str().unwrap()]);
    std::fs::write(wt.join("x.txt"), "wt edit\n").unwrap();
    ok_in(&wt, &["restore", "r1@1"]);
    // Three backups in the main worktree.
    for v in ["v1", "v2", "v3"] {
        r.write("x.txt", &format!("{v}\n"));
        ok_in(d, &["restore", "r1@1"]);
    }
    // The backup commits (the first one's first parent is its index commit, then HEAD's
    // history).
    let chain = |spec: &str| -> Vec<String> {
        r.git(&["log", "--first-parent", "--format=%H %T %ct %s", spec])
            .lines()
            .filter(|l| l.contains(" agent-rewind backup: "))
            .map(str::to_string)
            .collect()
    };
    let before = chain("refs/agent-rewind/backups");
    assert_eq!(before.len(), 4);
    let tip_index_commit = r.rev("refs/agent-rewind/backups^2");

    let dry = js(d, &["gc", "--older-than", "0s", "--dry-run"]);
    assert_eq!(dry["backups"]["dropped"], 2, "{dry:#}");
    assert_eq!(dry["backups"]["after"], 2);
    assert_eq!(
        chain("refs/agent-rewind/backups"),
        before,
        "--dry-run changed nothing"
    );

    let done = js(d, &["gc", "--older-than", "0s"]);
    assert_eq!(done["backups"]["dropped"], 2, "{done:#}");
    let after = chain("refs/agent-rewind/backups");
    assert_eq!(after.len(), 2);
    // Kept: the main worktree's newest (v3) and the linked worktree's only backup, with
    // their trees, times and index commits.
    let tree_and_time = |l: &String| l.split_once(' ').unwrap().1.to_string();
    assert_eq!(tree_and_time(&after[0]), tree_and_time(&before[0]));
    assert_eq!(tree_and_time(&after[1]), tree_and_time(&before[3]));
    assert_eq!(r.rev("refs/agent-rewind/backups^2"), tip_index_commit);
    // The old chain's reflog entries are gone, so git gc can free its objects.
    let reflog = r.git(&["reflog", "show", "--format=%H", "refs/agent-rewind/backups"]);
    assert_eq!(reflog.lines().count(), 1, "{reflog}");
    r.assert_fsck();

    // Undo still works in both worktrees.
    ok_in(d, &["undo"]);
    assert_eq!(r.read("x.txt"), "v3\n");
    ok_in(&wt, &["undo"]);
    assert_eq!(
        std::fs::read_to_string(wt.join("x.txt")).unwrap(),
        "wt edit\n"
    );

    // Without --older-than, backups are left alone.
    let n = chain("refs/agent-rewind/backups").len();
    let out = js(d, &["gc", "--keep", "100"]);
    assert!(out["backups"].is_null());
    assert_eq!(chain("refs/agent-rewind/backups").len(), n);
}

#[test]
fn deleted_runs_are_not_brought_back_by_fetching_all() {
    let bare = Bare::new();
    let a = clone(&bare.url(), "alice");
    make_run(&a, "r1");
    make_run(&a, "r2");
    ok_in(a.path(), &["push", "--all"]);
    js(a.path(), &["delete", "r1"]);
    let fetched = js(a.path(), &["fetch"]);
    assert_eq!(fetched["deleted_here"], 1, "{fetched:#}");
    assert_eq!(fetched["up_to_date"], 1);
    assert!(run_refs(a.path(), "r1").is_empty());
    let fetched = js(a.path(), &["fetch", "r1"]);
    assert_eq!(result_of(&fetched, "r1")["result"], "new");
    assert!(!run_refs(a.path(), "r1").is_empty());
}

// ---------------------------------------------------------------------------------------
// Bundles
// ---------------------------------------------------------------------------------------

#[test]
fn export_and_import_reproduce_the_run_bit_for_bit() {
    let bare = Bare::new();
    let a = clone(&bare.url(), "alice");
    make_run(&a, "r1");
    open_gate(a.path(), "r1", "review");
    ok_in(a.path(), &["approve", "r1/review", "--by", "alice"]);
    let files = tempfile::tempdir().unwrap();
    let file = files.path().join("r1.bundle");
    let out = js(a.path(), &["export", "r1", "-o", file.to_str().unwrap()]);
    assert_eq!(out["runs"][0], "r1");
    // Plain git accepts the bundle.
    let fresh = clone(&bare.url(), "bob");
    git_in(
        fresh.path(),
        &["bundle", "verify", "-q", file.to_str().unwrap()],
    );

    let imported = js(fresh.path(), &["import", file.to_str().unwrap()]);
    assert_eq!(result_of(&imported, "r1")["result"], "new", "{imported:#}");
    assert_eq!(run_refs(a.path(), "r1"), run_refs(fresh.path(), "r1"));
    assert_eq!(
        a.git(&[
            "log",
            "--notes=agent-runs/*",
            "--format=%H %N",
            "refs/agent-runs/r1/HEAD"
        ]),
        fresh.git(&[
            "log",
            "--notes=agent-runs/*",
            "--format=%H %N",
            "refs/agent-runs/r1/HEAD"
        ])
    );
    // No staged copies are left behind; importing again is a no-op.
    assert!(refs(fresh.path(), "refs/agent-runs-remote/").is_empty());
    let again = js(fresh.path(), &["import", file.to_str().unwrap()]);
    assert_eq!(again["up_to_date"], 1, "{again:#}");
    fresh.assert_fsck();
    // Not a bundle: a clear error.
    let junk = files.path().join("junk");
    std::fs::write(&junk, "junk").unwrap();
    let out = run_in(fresh.path(), &["import", junk.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("not a valid bundle"),
        "{}",
        stderr(&out)
    );
}

/// A gate checkpoint of `step` awaiting approval in `run` (only a gate takes approvals).
fn open_gate(dir: &Path, run: &str, step: &str) {
    ok_in(
        dir,
        &[
            "checkpoint",
            step,
            "--run",
            run,
            "--kind",
            "gate",
            "--status",
            "awaiting_approval",
        ],
    );
}
