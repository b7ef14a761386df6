//! `watch`: a long-running driver that launches every step that became ready,
//! exactly once — with the watcher already running when the worker reports, after a restart,
//! with two watchers — and never progresses on an invalid report. The watcher runs as a child
//! process; every wait polls a condition under a bound, and it is killed at the end.

use crate::common;
use crate::common::external_workflow;

use crate::common::external_workflow::{Ext, wait_for, workflow};

#[test]
fn a_running_watcher_launches_the_dependent_once_after_the_worker_reports() {
    let e = Ext::new(&workflow("deterministic", ""));
    e.start("r1");
    // begun → running
    assert_eq!(
        e.history("r1"),
        vec![("implement".into(), 1, "begin".into(), "running".into())]
    );
    let mut w = e.spawn_watch(&["r1"], &[]);
    w.wait_for_output("waiting: run r1");
    // A stale report and a worker's exit record while it watches: nothing to launch.
    let stale = e.report("r1", 7, "completed");
    assert_eq!(stale.status.code(), Some(1));
    e.code(
        0,
        &["step", "exit", "implement", "--run", "r1", "--attempt", "1"],
    );
    assert!(w.running(), "the watcher waits for the worker");
    // → completed (by the worker)
    let out = e.report("r1", 1, "completed");
    assert!(out.status.success());
    // → the dependent is launched by the watcher, which then stops: the run completed.
    assert_eq!(w.wait(), 0, "{}", w.output());
    assert_eq!(e.starts("test"), vec!["1"]);
    assert_eq!(w.launches().len(), 1, "{}", w.output());
    assert!(
        w.launches()[0].starts_with("launched r1/test attempt 1"),
        "{}",
        w.output()
    );
    assert_eq!(
        e.history("r1"),
        vec![
            ("implement".into(), 1, "begin".into(), "running".into()),
            ("implement".into(), 1, "finish".into(), "completed".into()),
            ("test".into(), 1, "begin".into(), "running".into()),
            ("test".into(), 1, "finish".into(), "completed".into()),
        ]
    );
    // Watching again launches nothing.
    let v = e.json(0, &["watch", "r1"]);
    assert_eq!(v["launches"].as_array().unwrap().len(), 0, "{v:#}");
    assert_eq!(e.starts("test"), vec!["1"]);
    e.repo.assert_fsck();
}

#[test]
fn once_does_one_pass_and_an_exit_record_or_invalid_report_never_progresses() {
    let e = Ext::new(&workflow("deterministic", "require_commit = true"));
    e.start("r1");
    let v = e.json(3, &["watch", "r1", "--once"]);
    assert_eq!(v["runs"][0]["waiting_on"], "workers", "{v:#}");
    assert!(v["launches"].as_array().unwrap().is_empty());
    e.code(
        0,
        &["step", "exit", "implement", "--run", "r1", "--attempt", "1"],
    );
    e.json(3, &["watch", "r1", "--once"]);
    // The revision check refuses: nothing recorded, nothing launched.
    e.repo.write("feature.txt", "work\n");
    assert_eq!(e.report("r1", 1, "completed").status.code(), Some(1));
    e.json(3, &["watch", "r1", "--once"]);
    assert!(e.starts("test").is_empty());
    // After a commit the same report is accepted and the watcher goes on.
    e.repo.git(&["add", "-A"]);
    e.repo.git(&["commit", "-q", "-m", "feature"]);
    assert!(e.report("r1", 1, "completed").status.success());
    let v = e.json(0, &["watch", "r1", "--once"]);
    assert_eq!(v["launches"][0]["step"], "test", "{v:#}");
    assert_eq!(e.starts("test"), vec!["1"]);
    e.repo.assert_fsck();
}

#[test]
fn a_watcher_killed_and_restarted_does_not_launch_again() {
    let e = Ext::new(&workflow("agent", ""));
    e.start("r1");
    assert!(e.report("r1", 1, "completed").status.success());
    // The watcher launches test, which holds until a file exists; kill it meanwhile.
    let hold = external_workflow::hold_file(&e.counts);
    let mut w = e.spawn_watch(&["r1"], &[("HOLD", hold.to_str().unwrap())]);
    wait_for("test to start", || {
        (!e.starts("test").is_empty()).then_some(())
    });
    w.kill();
    // Restarted: the launch is recorded, so it is not repeated; the interrupted agent step
    // waits for a person (exit 3).
    let mut again = e.spawn_watch(&["r1"], &[]);
    assert_eq!(again.wait(), 3, "{}", again.output());
    assert!(again.launches().is_empty(), "{}", again.output());
    assert_eq!(e.starts("test"), vec!["1"]);
    assert!(
        again.output().contains("resume --retry test"),
        "{}",
        again.output()
    );
    // Restarted again: still nothing launched.
    let v = e.json(3, &["watch", "r1"]);
    assert!(v["launches"].as_array().unwrap().is_empty(), "{v:#}");
    assert_eq!(e.starts("test"), vec!["1"]);
    e.repo.assert_fsck();
}

#[test]
fn a_deterministic_step_interrupted_under_the_watcher_is_not_started_twice() {
    let e = Ext::new(&workflow("deterministic", ""));
    e.start("r1");
    assert!(e.report("r1", 1, "completed").status.success());
    let hold = external_workflow::hold_file(&e.counts);
    let mut w = e.spawn_watch(&["r1"], &[("HOLD", hold.to_str().unwrap())]);
    wait_for("test to start", || {
        (!e.starts("test").is_empty()).then_some(())
    });
    w.kill();
    let v = e.json(3, &["watch", "r1"]);
    assert!(v["launches"].as_array().unwrap().is_empty(), "{v:#}");
    assert_eq!(v["runs"][0]["waiting_on"], "person", "{v:#}");
    assert_eq!(e.starts("test"), vec!["1"]);
    // `resume` re-runs it, as for any deterministic step.
    e.json(0, &["resume", "r1"]);
    assert_eq!(e.starts("test"), vec!["1", "2"]);
}

#[test]
fn two_watchers_launch_an_effect_once() {
    let e = Ext::new(&workflow("effect", ""));
    e.start("r1");
    let mut a = e.spawn_watch(&["r1"], &[]);
    let mut b = e.spawn_watch(&["r1"], &[]);
    a.wait_for_output("waiting: run r1");
    b.wait_for_output("waiting: run r1");
    assert!(e.report("r1", 1, "completed").status.success());
    assert_eq!(a.wait(), 0, "{}", a.output());
    assert_eq!(b.wait(), 0, "{}", b.output());
    assert_eq!(e.starts("test"), vec!["1"], "the effect ran once");
    let launched: Vec<String> = a.launches().into_iter().chain(b.launches()).collect();
    assert_eq!(launched.len(), 1, "{launched:?}");
    assert_eq!(
        e.history("r1")
            .iter()
            .filter(|h| h.0 == "test" && h.2 == "begin")
            .count(),
        1
    );
    e.repo.assert_fsck();
}

#[test]
fn watch_without_a_run_or_workflow_is_refused() {
    let e = Ext::new(&workflow("deterministic", ""));
    let out = e.out(&["watch"]);
    assert_eq!(out.status.code(), Some(2), "no active run");
    e.code(0, &["start", "--run", "plain"]);
    let out = e.out(&["watch", "plain"]);
    assert_eq!(out.status.code(), Some(1), "a run without a workflow");
    let out = e.out(&["watch", "nope"]);
    assert_eq!(out.status.code(), Some(1), "an unknown run");
    let help = e.code(0, &["watch", "--help"]);
    assert!(help.contains("--once"), "{help}");
}

#[test]
fn a_report_fetched_from_another_clone_is_noticed() {
    let e = Ext::new(&workflow("deterministic", ""));
    let bare = tempfile::tempdir().unwrap();
    common::git_in(bare.path(), &["init", "-q", "--bare"]);
    let url = bare.path().to_str().unwrap();
    e.repo.git(&["remote", "add", "origin", url]);
    e.repo.git(&["push", "-q", "origin", "main"]);
    e.start("r1");
    e.code(0, &["push", "origin", "r1"]);
    // The worker lives in another clone: it fetches the run, reports, pushes.
    let other = tempfile::tempdir().unwrap();
    common::git_in(other.path(), &["clone", "-q", url, "."]);
    common::git_in(other.path(), &["config", "user.name", "Worker"]);
    common::git_in(
        other.path(),
        &["config", "user.email", "worker@example.com"],
    );
    common::ok_in(other.path(), &["fetch", "origin", "r1"]);
    common::ok_in(
        other.path(),
        &[
            "step",
            "end",
            "implement",
            "--run",
            "r1",
            "--attempt",
            "1",
            "--status",
            "completed",
        ],
    );
    common::ok_in(other.path(), &["push", "origin", "r1"]);
    // Here the watcher waits; the fetch brings the report and it launches test, once.
    let mut w = e.spawn_watch(&["r1"], &[]);
    w.wait_for_output("waiting: run r1");
    assert!(e.starts("test").is_empty());
    e.code(0, &["fetch", "origin", "r1"]);
    assert_eq!(w.wait(), 0, "{}", w.output());
    assert_eq!(e.starts("test"), vec!["1"]);
    assert_eq!(w.launches().len(), 1, "{}", w.output());
    e.repo.assert_fsck();
}
