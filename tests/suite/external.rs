//! External steps: the runner begins an `external = true` step and waits for a
//! worker; the worker reports the outcome of exactly its attempt (`step end --attempt N`),
//! may record that its process exited (`step exit`), and under `require_commit` completes
//! only with its work committed. Everything through the binary, checked with real git.

use crate::common::stderr;

use crate::common::external_workflow::{Ext, workflow};

#[test]
fn the_runner_begins_an_external_step_and_waits_for_its_worker() {
    let e = Ext::new(&workflow("deterministic", ""));
    let v = e.start("r1");
    let ext = v["external"].as_array().unwrap();
    assert_eq!(ext.len(), 1, "{v:#}");
    assert_eq!(ext[0]["run"], "r1");
    assert_eq!(ext[0]["step"], "implement");
    assert_eq!(ext[0]["attempt"], 1);
    assert_eq!(
        ext[0]["command"],
        "git agent-rewind step end implement --run r1 --attempt 1 --status completed"
    );
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps[0]["action"], "dispatched");
    assert_eq!(steps[1]["action"], "waiting", "test needs implement: {v:#}");
    assert!(e.starts("test").is_empty());
    assert_eq!(
        e.history("r1"),
        vec![("implement".into(), 1, "begin".into(), "running".into())]
    );
    // `status` says what the run waits for.
    let status = e.code(0, &["status"]);
    assert!(
        status.contains("waits for its worker, which reports with `git agent-rewind step end implement --run r1 --attempt 1 --status completed`"),
        "{status}"
    );
    // The human output prints the command too, and the exit status is 3.
    let human = e.code(3, &["resume", "r1"]);
    assert!(
        human.contains(
            "git agent-rewind step end implement --run r1 --attempt 1 --status completed"
        ),
        "{human}"
    );
    // A second resume neither begins a new attempt nor marks the step interrupted.
    assert_eq!(
        e.history("r1"),
        vec![("implement".into(), 1, "begin".into(), "running".into())]
    );
    // The worker reports; the next resume runs what needed the step, once.
    let out = e.report("r1", 1, "completed");
    assert!(out.status.success(), "{}", stderr(&out));
    let v = e.json(0, &["resume", "r1"]);
    assert_eq!(v["outcome"], "completed", "{v:#}");
    assert_eq!(e.starts("test"), vec!["1"]);
    let v = e.json(0, &["resume", "r1"]);
    assert_eq!(v["steps"][0]["action"], "skipped", "{v:#}");
    assert_eq!(e.starts("test"), vec!["1"]);
    e.repo.assert_fsck();
}

#[test]
fn a_stale_or_unknown_attempt_is_refused_and_writes_nothing() {
    let e = Ext::new(&workflow("deterministic", ""));
    // Never begun: no run, then a run where the step has no attempt.
    let out = e.report("r1", 1, "completed");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    e.start("r1");
    let out = e.out(&[
        "step",
        "end",
        "test",
        "--run",
        "r1",
        "--attempt",
        "1",
        "--status",
        "completed",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("never begun"), "{}", stderr(&out));
    // Attempt 1 fails; a retry begins attempt 2.
    assert!(e.report("r1", 1, "failed").status.success());
    let v = e.json(1, &["resume", "r1"]);
    assert_eq!(
        v["outcome"], "failed",
        "an agent step that failed waits for --retry: {v:#}"
    );
    let v = e.json(3, &["resume", "r1", "--retry", "implement"]);
    assert_eq!(v["external"][0]["attempt"], 2, "{v:#}");
    let before = e.refs();
    // The stale worker of attempt 1 wakes up and reports: refused, nothing written.
    let out = e.report("r1", 1, "completed");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("attempt 1 of step implement is stale"),
        "{}",
        stderr(&out)
    );
    // An attempt that does not exist yet: refused too.
    let out = e.report("r1", 3, "completed");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no attempt 3"), "{}", stderr(&out));
    // A status that is not an outcome: a usage error.
    assert_eq!(e.report("r1", 2, "running").status.code(), Some(2));
    assert_eq!(e.refs(), before, "a refused report writes nothing");
    let v = e.json(3, &["resume", "r1"]);
    assert!(
        e.starts("test").is_empty(),
        "nothing ran on a stale report: {v:#}"
    );
    // The newest attempt's report counts.
    assert!(e.report("r1", 2, "completed").status.success());
    e.json(0, &["resume", "r1"]);
    assert_eq!(e.starts("test"), vec!["1"]);
    e.repo.assert_fsck();
}

#[test]
fn a_repeated_report_is_a_no_op_and_a_different_one_is_refused() {
    let e = Ext::new(&workflow("deterministic", ""));
    e.start("r1");
    let first = e.json(
        0,
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
    assert_eq!(first["status"], "completed");
    let before = e.refs();
    let again = e.report("r1", 1, "completed");
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(
        text.contains("already recorded") && text.contains("nothing written"),
        "{text}"
    );
    let v = e.json(
        0,
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
    assert_eq!(v["already_recorded"], true, "{v:#}");
    assert_eq!(v["checkpoint"], first["checkpoint"]);
    let other = e.report("r1", 1, "failed");
    assert_eq!(other.status.code(), Some(1));
    assert!(
        stderr(&other).contains("already ended completed"),
        "{}",
        stderr(&other)
    );
    assert_eq!(
        e.refs(),
        before,
        "repeated and conflicting reports write nothing"
    );
    assert_eq!(
        e.history("r1").iter().filter(|h| h.2 == "finish").count(),
        1
    );
    e.repo.assert_fsck();
}

#[test]
fn a_worker_exit_is_recorded_on_its_own_and_never_completes_the_step() {
    let e = Ext::new(&workflow("deterministic", ""));
    let v = e.start("r1");
    let begin = v["external"][0]["checkpoint"].as_str().unwrap().to_string();
    let o = e.json(
        0,
        &[
            "step",
            "exit",
            "implement",
            "--run",
            "r1",
            "--attempt",
            "1",
            "--observed-at",
            "2026-12-01T10:00:00Z",
        ],
    );
    assert_eq!(o["checkpoint"], begin.as_str());
    assert_eq!(o["already"], false);
    // The same observation again: nothing written.
    let before = e.refs();
    let o = e.json(
        0,
        &[
            "step",
            "exit",
            "implement",
            "--run",
            "r1",
            "--attempt",
            "1",
            "--observed-at",
            "2026-12-01T10:00:00Z",
        ],
    );
    assert_eq!(o["already"], true);
    assert_eq!(e.refs(), before);
    // An attempt that was never begun, a bad time.
    let out = e.out(&["step", "exit", "implement", "--run", "r1", "--attempt", "4"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let out = e.out(&[
        "step",
        "exit",
        "implement",
        "--run",
        "r1",
        "--attempt",
        "1",
        "--observed-at",
        "noon",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(e.refs(), before);
    // show and list show it; the step is still running and nothing downstream ran.
    let show = e.code(0, &["show", &begin]);
    assert!(
        show.contains("worker-exit") && show.contains("2026-12-01T10:00:00"),
        "{show}"
    );
    let list = e.list("r1");
    let rec = list
        .iter()
        .find(|c| c["checkpoint"] == begin.as_str())
        .unwrap();
    assert_eq!(rec["status"], "running");
    assert_eq!(rec["records"][0]["type"], "worker-exit", "{rec:#}");
    let human = e.code(0, &["list", "r1"]);
    assert!(human.contains("worker exited"), "{human}");
    let v = e.json(3, &["resume", "r1"]);
    assert_eq!(v["waiting_on"], "workers", "{v:#}");
    assert!(e.starts("test").is_empty());
    e.repo.assert_fsck();
}

#[test]
fn require_commit_refuses_until_the_work_is_committed() {
    let e = Ext::new(&workflow("deterministic", "require_commit = true"));
    e.start("r1");
    // Nothing done yet: HEAD has not moved.
    let out = e.report("r1", 1, "completed");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("HEAD has not moved past"),
        "{}",
        stderr(&out)
    );
    // Work in the worktree, uncommitted: refused, naming the files.
    e.repo.write("src/feature.rs", "fn f() {}\n");
    e.repo.write("README.md", "hello, changed\n");
    let before = e.refs();
    let out = e.report("r1", 1, "completed");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("README.md") && err.contains("src/feature.rs"),
        "{err}"
    );
    // Committing one file is not enough.
    e.repo.git(&["add", "README.md"]);
    e.repo.git(&["commit", "-q", "-m", "half"]);
    let out = e.report("r1", 1, "completed");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("src/feature.rs") && !err.contains("README.md"),
        "{err}"
    );
    assert_eq!(
        e.refs()
            .iter()
            .filter(|r| r.0.starts_with("refs/agent-runs/"))
            .collect::<Vec<_>>(),
        before
            .iter()
            .filter(|r| r.0.starts_with("refs/agent-runs/"))
            .collect::<Vec<_>>(),
        "refused completions record nothing"
    );
    // A failure needs no commit.
    // Everything committed: accepted, and the run goes on.
    e.repo.git(&["add", "-A"]);
    e.repo.git(&["commit", "-q", "-m", "feature"]);
    let out = e.report("r1", 1, "completed");
    assert!(out.status.success(), "{}", stderr(&out));
    e.json(0, &["resume", "r1"]);
    assert_eq!(e.starts("test"), vec!["1"]);
    e.repo.assert_fsck();
}

#[test]
fn step_end_require_commit_works_without_a_workflow() {
    let e = Ext::new(&workflow("deterministic", ""));
    e.code(0, &["step", "begin", "plan", "--run", "m1"]);
    e.repo.write("plan.md", "the plan\n");
    let out = e.out(&[
        "step",
        "end",
        "plan",
        "--run",
        "m1",
        "--status",
        "completed",
        "--require-commit",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("plan.md"), "{}", stderr(&out));
    e.repo.git(&["add", "-A"]);
    e.repo.git(&["commit", "-q", "-m", "plan"]);
    e.code(
        0,
        &[
            "step",
            "end",
            "plan",
            "--run",
            "m1",
            "--status",
            "completed",
            "--require-commit",
        ],
    );
    e.repo.assert_fsck();
}

#[test]
fn an_external_step_with_a_command_is_a_usage_error() {
    let e = Ext::new(
        "[workflow]\nname = \"x\"\n[[steps]]\nname = \"a\"\nexternal = true\nrun = \"true\"\n",
    );
    let out = e.out(&["run", "wf.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("wf.toml:6: steps[0].run: an external step"),
        "{}",
        stderr(&out)
    );
    assert!(
        e.refs()
            .iter()
            .all(|r| !r.0.starts_with("refs/agent-runs/"))
    );
}

#[test]
fn racing_reports_write_one_finish() {
    let e = Ext::new(&workflow("deterministic", ""));
    e.start("r1");
    let outs: Vec<std::process::Output> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|_| s.spawn(|| e.report("r1", 1, "completed")))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for o in &outs {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    }
    let recorded = outs
        .iter()
        .filter(|o| String::from_utf8_lossy(&o.stdout).starts_with("recorded"))
        .count();
    assert_eq!(
        recorded, 1,
        "one report writes, the others say already recorded"
    );
    assert_eq!(
        e.history("r1").iter().filter(|h| h.2 == "finish").count(),
        1
    );
    e.repo.assert_fsck();
}

#[test]
fn a_run_rewound_past_a_begun_external_step_hands_out_its_own_attempt() {
    let e = Ext::new(&workflow("deterministic", ""));
    e.start("r1");
    e.code(0, &["checkpoint", "notes", "--run", "r1", "-m", "later"]);
    e.code(
        0,
        &[
            "rewind",
            "r1",
            "--to",
            "r1@2",
            "--no-checkout",
            "--run",
            "r2",
        ],
    );
    let v = e.json(3, &["resume", "r2"]);
    assert_eq!(v["external"][0]["run"], "r2", "{v:#}");
    assert_eq!(v["external"][0]["attempt"], 2, "{v:#}");
    // The source run's worker reports to its own run; the new run's worker to r2.
    let out = e.out(&[
        "step",
        "end",
        "implement",
        "--run",
        "r2",
        "--attempt",
        "1",
        "--status",
        "completed",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    e.code(
        0,
        &[
            "step",
            "end",
            "implement",
            "--run",
            "r2",
            "--attempt",
            "2",
            "--status",
            "completed",
        ],
    );
    e.json(0, &["resume", "r2"]);
    assert_eq!(e.starts("test"), vec!["1"]);
    e.repo.assert_fsck();
}
