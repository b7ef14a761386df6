//! Concurrent pushes of different runs, invalid runs on the remote skipped with a warning,
//! and remotes that do not exist changing nothing.

use super::{Bare, clone, js, make_run, result_of, stderr};
use crate::common::{Daemon, Repo, ok_in, refs, run_in};
use serde_json::Value;

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
    let out = run_in(r.path(), &["push", "--remote", "origin", "r1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("git push"), "{}", stderr(&out));
    assert_eq!(refs(r.path(), "refs/"), before);
    // A push that failed does not remember its remote.
    assert!(
        r.git_output(&["config", "agentRewind.remote"])
            .stdout
            .is_empty()
    );
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
