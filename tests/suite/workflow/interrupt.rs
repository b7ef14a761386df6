//! What `status` and `list` say about a run whose runner is gone, what
//! Ctrl-C during `run` does, and what `status` advises after a fork of a run recorded by
//! hand (no workflow for `resume` to run).

use super::{FEATURE, Wf, interrupt_group};
use crate::common::{Repo, tool_cmd};
use std::process::Stdio;

#[test]
fn a_runner_that_died_is_shown_interrupted_runner_gone() {
    let wf = Wf::feature();
    let mut runner = wf.spawn_sleeping(&["run", FEATURE, "--run", "r1"], "implement");
    // While it runs: running, nothing about a runner gone.
    let live = wf.json(&["status"]);
    assert_eq!(live["summary"]["status"], "running", "{live:#}");
    assert_eq!(live["runner_gone"], false, "{live:#}");
    runner.kill();

    let st = wf.json(&["status"]);
    assert_eq!(st["summary"]["status"], "interrupted", "{st:#}");
    assert_eq!(st["runner_gone"], true, "{st:#}");
    assert!(
        st["next_action"].as_str().unwrap().contains("resume"),
        "{st:#}"
    );
    let human = wf.ok(&["status"]);
    assert!(human.contains("interrupted (runner gone)"), "{human}");
    let table = String::from_utf8(
        wf.cmd()
            .env("COLUMNS", "200")
            .arg("list")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let line = table
        .lines()
        .find(|l| l.get(2..).is_some_and(|r| r.starts_with("r1 ")))
        .unwrap();
    assert!(line.contains("interrupted (runner gone)"), "{table}");
    // Nothing was written by looking: resume still takes the lock over and reconciles.
    let report = wf.json(&["resume", "r1"]);
    assert_eq!(report["reconciled"], serde_json::json!(["implement"]));
    wf.repo.assert_fsck();
}

#[test]
fn ctrl_c_during_run_records_the_step_interrupted_and_exits_130() {
    let wf = Wf::feature();
    let out = wf.counts.path().join("stdout");
    let err = wf.counts.path().join("stderr");
    let mut runner = wf.spawn_sleeping_to(
        &["run", FEATURE, "--run", "r1"],
        "implement",
        Stdio::from(std::fs::File::create(&out).unwrap()),
        Stdio::from(std::fs::File::create(&err).unwrap()),
    );
    interrupt_group(runner.pid());
    let status = runner.child.wait().unwrap();
    runner.reaped = true;
    let said = std::fs::read_to_string(&out).unwrap() + &std::fs::read_to_string(&err).unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}: {said}");
    assert!(
        said.contains("interrupted (Ctrl-C) while step implement ran"),
        "{said}"
    );
    assert!(said.contains("resume --retry implement"), "{said}");

    let list = wf.list("r1");
    let last = list.last().unwrap();
    assert_eq!(last["step"], "implement", "{list:#?}");
    assert_eq!(last["event"], "finish", "{last:#}");
    assert_eq!(last["status"], "interrupted", "{last:#}");
    // The runner ended itself: no runner gone, nothing left running.
    let st = wf.json(&["status"]);
    assert_eq!(st["runner_gone"], false, "{st:#}");
    assert_eq!(st["unfinished"], serde_json::json!([]), "{st:#}");
    // And it goes on where it stopped.
    let retried = wf.json(&["resume", "r1", "--retry", "implement"]);
    assert_eq!(retried["finished"], true, "{retried:#}");
    wf.repo.assert_fsck();
}

#[test]
fn after_a_fork_of_a_run_without_a_workflow_status_advises_what_works() {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1"]);
    repo.ok(&["step", "begin", "plan"]);
    repo.write("a.txt", "a\n");
    repo.ok(&["step", "end", "plan", "--status", "completed"]);
    repo.ok(&["checkpoint", "implement"]);
    repo.ok(&["fork", "r1", "--to", "plan", "--run", "f1"]);
    let st = repo.json(&["status"]);
    assert_eq!(st["run"], "f1");
    let next = st["next_action"].as_str().unwrap();
    assert!(!next.contains("resume"), "{next}");
    assert!(next.contains("step begin plan"), "{next}");
    // What it advises works.
    repo.ok(&["step", "begin", "plan"]);
    let out = tool_cmd(repo.path()).arg("resume").output().unwrap();
    assert!(!out.status.success(), "resume has no workflow to run");
    repo.assert_fsck();
}
