//! delete and gc: what they refuse, what a dry run lists, old backups, and deleted runs
//! not brought back by a fetch of everything.

use super::{Bare, clone, js, make_run, result_of, run_refs, stderr};
use crate::common::{Repo, ok_in, refs, run_in};
use std::time::Duration;

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
    // Without a selection, gc applies the retention policy: by default 5GiB, which these
    // runs are far from.
    let by_policy = js(r.path(), &["gc", "--dry-run"]);
    assert_eq!(by_policy["policy"]["text"], "5GiB", "{by_policy:#}");
    assert_eq!(by_policy["deleted"], serde_json::json!([]));
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
