//! Diverged runs: the remote continuation imported as a fork, approvals on both sides
//! merged by union, a remote ahead fast-forwarded and a local one left alone.

use super::{Bare, clone, js, make_run, open_gate, result_of, run_refs, stderr};
use crate::common::{ok_in, refs, run_in};
use serde_json::Value;

// ---------------------------------------------------------------------------------------
// Divergence and notes

/// A remote holding run r1, made and pushed by alice's clone and fetched into bob's.
fn run_r1_shared_by_alice_and_bob() -> (Bare, crate::common::Repo, crate::common::Repo) {
    let bare = Bare::new();
    let a = clone(&bare.url(), "alice");
    let b = clone(&bare.url(), "bob");
    make_run(&a, "r1");
    ok_in(a.path(), &["push", "r1"]);
    ok_in(b.path(), &["fetch"]);
    (bare, a, b)
}
// ---------------------------------------------------------------------------------------

#[test]
fn diverged_runs_keep_local_and_import_the_remote_continuation_as_a_fork() {
    let (bare, a, b) = run_r1_shared_by_alice_and_bob();

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
    let (_bare, a, b) = run_r1_shared_by_alice_and_bob();
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

/// Once `fetch` imported the remote side of a diverged run, `push --all`
/// pushes every other run and exits 0, reporting the diverged one with a hint that names
/// the way out (no "fetch first" that fetch answers with "already imported"); following
/// the hint shares the local continuation.
#[test]
fn a_diverged_run_already_imported_does_not_fail_push_all_and_its_hint_names_the_way_out() {
    let (bare, a, b) = run_r1_shared_by_alice_and_bob();
    a.write("a.txt", "alice's test\n");
    ok_in(a.path(), &["checkpoint", "test", "--run", "r1"]);
    ok_in(a.path(), &["push", "r1"]);
    b.write("b.txt", "bob's review\n");
    ok_in(b.path(), &["checkpoint", "review", "--run", "r1"]);
    let fetched = js(b.path(), &["fetch"]);
    let fork = result_of(&fetched, "r1")["imported_as"]
        .as_str()
        .unwrap()
        .to_string();
    make_run(&b, "r2");

    let remote_r1 = bare.git(&["rev-parse", "refs/agent-runs/r1/HEAD"]);
    let out = run_in(b.path(), &["--json", "push", "--all"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result_of(&report, "r2")["result"], "pushed", "{report:#}");
    assert_eq!(result_of(&report, &fork)["result"], "pushed", "{report:#}");
    let r1 = result_of(&report, "r1");
    assert_eq!(r1["result"], "diverged", "{report:#}");
    let hint = r1["hint"].as_str().unwrap();
    assert!(!hint.contains("fetch"), "{hint}");
    assert!(hint.contains(&fork), "{hint}");
    assert!(hint.contains("fork r1"), "{hint}");
    assert_eq!(
        bare.git(&["rev-parse", "refs/agent-runs/r1/HEAD"]),
        remote_r1,
        "the remote copy is never overwritten"
    );
    // Naming the run still fails (it was not pushed), with the same way out.
    let out = run_in(b.path(), &["--json", "push", "r1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result_of(&report, "r1")["hint"], hint);
    // The way out: the local continuation under its own name.
    ok_in(
        b.path(),
        &[
            "fork",
            "r1",
            "--to",
            "r1/HEAD",
            "--no-checkout",
            "--run",
            "r1-bob",
        ],
    );
    let pushed = js(b.path(), &["push", "r1-bob"]);
    assert_eq!(result_of(&pushed, "r1-bob")["result"], "pushed");
    let fetched = js(a.path(), &["fetch"]);
    assert_eq!(
        result_of(&fetched, "r1-bob")["result"],
        "new",
        "{fetched:#}"
    );
    // Alice now has Bob's continuation: the new run starts at his review, whose commit
    // (and tree) came with it.
    let log = js(a.path(), &["log", "r1-bob"]);
    let link = &log[0]["forked_from"];
    assert_eq!(link["step"], "review", "{log:#}");
    assert_eq!(
        link["checkpoint"].as_str().unwrap(),
        b.rev("refs/agent-runs/r1/HEAD")
    );
    a.git(&["cat-file", "-e", link["checkpoint"].as_str().unwrap()]);
    a.assert_fsck();
    b.assert_fsck();
}
