//! Running a workflow: end to end then an idle resume, the runner SIGKILLed during each step
//! in turn, and one runner per run.

use super::{FEATURE, FEATURE_STEPS, Wf, action, assert_all_skipped, stderr, step_of};
use crate::common::refs;
use serde_json::Value;
use std::path::Path;

// ---------------------------------------------------------------------------------------
// 1. End to end, then an idle resume.

#[test]
fn runs_end_to_end_and_resume_right_after_does_nothing() {
    let wf = Wf::feature();
    let report = wf.json(&["run", FEATURE, "--run", "r1"]);
    assert_eq!(report["run"], "r1");
    assert_eq!(report["workflow"], "feature");
    assert_eq!(report["finished"], true, "{report:#}");
    assert!(report["stopped"].is_null(), "{report:#}");
    let reported: Vec<&str> = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect();
    assert_eq!(reported, FEATURE_STEPS);
    for s in FEATURE_STEPS {
        let r = step_of(&report, s);
        assert_eq!(r["action"], "ran", "{r}");
        assert_eq!(r["status"], "completed", "{r}");
        assert_eq!(r["attempt"], 1, "{r}");
        assert_eq!(r["exit_code"], 0, "{r}");
        // The reported checkpoint is the step's ref.
        assert_eq!(
            r["checkpoint"].as_str().unwrap(),
            wf.repo.rev(&format!("refs/agent-runs/r1/{s}")),
            "{s}"
        );
    }
    assert_eq!(wf.counts(&FEATURE_STEPS), [1, 1, 1, 1]);
    // The fake agent really wrote its outputs in the worktree.
    assert!(wf.repo.read("out/pr.txt").starts_with("# open-pr (run r1)"));
    // The effect got its idempotency key, and the record carries it.
    let key = wf.invocations("open-pr")[0]
        .split("key=")
        .nth(1)
        .unwrap()
        .to_string();
    assert!(!key.is_empty(), "no AGENT_IDEMPOTENCY_KEY for the effect");
    let pr = wf.json(&["show", "r1/open-pr"]);
    assert_eq!(pr["idempotency_key"], key.as_str(), "{pr:#}");
    assert_eq!(pr["step_kind"], "effect");
    assert_eq!(pr["status"], "completed");

    let before = refs(wf.path(), "refs/agent-runs/");
    let notes_before = refs(wf.path(), "refs/notes/agent-runs/");
    let again = wf.json(&["resume", "r1"]);
    assert_all_skipped(&again, &FEATURE_STEPS);
    assert_eq!(again["reconciled"].as_array().unwrap().len(), 0);
    assert_eq!(
        wf.counts(&FEATURE_STEPS),
        [1, 1, 1, 1],
        "resume re-ran a step"
    );
    assert_eq!(
        refs(wf.path(), "refs/agent-runs/"),
        before,
        "an idle resume recorded a checkpoint"
    );
    assert_eq!(
        refs(wf.path(), "refs/notes/agent-runs/"),
        notes_before,
        "an idle resume appended to the notes"
    );
    wf.repo.assert_fsck();
}

// ---------------------------------------------------------------------------------------
// 2. The runner is SIGKILLed during each step in turn.

fn kill_during(step: &str) {
    let wf = Wf::feature();
    let idx = FEATURE_STEPS.iter().position(|s| *s == step).unwrap();
    let mut runner = wf.spawn_sleeping(&["run", FEATURE, "--run", "r1"], step);
    let dead_pid = runner.pid();
    runner.kill();

    let mut expected: Vec<usize> = FEATURE_STEPS
        .iter()
        .enumerate()
        .map(|(i, _)| usize::from(i <= idx))
        .collect();
    assert_eq!(wf.counts(&FEATURE_STEPS), expected, "before resume");

    let report = wf.json(&["resume", "r1"]);
    assert_eq!(
        report["reconciled"],
        serde_json::json!([step]),
        "{report:#}"
    );
    let took_over = report["took_over_from"]
        .as_str()
        .unwrap_or_else(|| panic!("took_over_from is not set after the runner died: {report:#}"));
    assert!(
        took_over.contains(&format!("pid {dead_pid}")),
        "took_over_from does not name the dead runner {dead_pid}: {took_over}"
    );
    for s in &FEATURE_STEPS[..idx] {
        assert_eq!(action(&report, s), "skipped", "{s}: {report:#}");
    }

    if step == "test" {
        // A deterministic step is re-run by itself.
        assert_eq!(report["finished"], true, "{report:#}");
        let t = step_of(&report, "test");
        assert_eq!(t["action"], "ran", "{t}");
        assert_eq!(t["attempt"], 2, "{t}");
        assert_eq!(t["status"], "completed", "{t}");
        assert_eq!(action(&report, "open-pr"), "ran");
    } else {
        // Agent and effect steps are not re-run blindly.
        assert_eq!(report["finished"], false, "{report:#}");
        assert_eq!(report["outcome"], "waiting", "{report:#}");
        assert!(
            report["stopped"]
                .as_str()
                .is_some_and(|s| s.contains("interrupted")),
            "{report:#}"
        );
        let next = report["next_action"].as_str().unwrap();
        assert!(
            next.contains(&format!("--retry {step}")),
            "next action does not say how to retry: {next}"
        );
        assert_eq!(action(&report, step), "stopped");
        assert_eq!(
            wf.counts(&FEATURE_STEPS),
            expected,
            "resume re-ran an interrupted {step} step without --retry"
        );
        // Resuming again without --retry still stops, and does not reconcile twice.
        let again = wf.json(&["resume", "r1"]);
        assert_eq!(again["finished"], false, "{again:#}");
        assert_eq!(again["reconciled"], serde_json::json!([]), "{again:#}");
        assert_eq!(wf.counts(&FEATURE_STEPS), expected);

        let retried = wf.json(&["resume", "r1", "--retry", step]);
        assert_eq!(retried["finished"], true, "{retried:#}");
        let r = step_of(&retried, step);
        assert_eq!(r["action"], "ran", "{r}");
        assert_eq!(r["attempt"], 2, "{r}");
        assert_eq!(r["status"], "completed", "{r}");
        for s in &FEATURE_STEPS[idx + 1..] {
            assert_eq!(action(&retried, s), "ran", "{s}: {retried:#}");
        }
    }

    // Steps completed before the kill ran exactly once; the interrupted one twice; the
    // rest once.
    expected[idx] = 2;
    for e in expected.iter_mut().skip(idx + 1) {
        *e = 1;
    }
    assert_eq!(
        wf.counts(&FEATURE_STEPS),
        expected,
        "after the run finished"
    );
    assert!(
        wf.invocations(step)[1].starts_with("attempt=2 "),
        "{:?}",
        wf.invocations(step)
    );

    // The record: the interrupted attempt, then a later, completed one.
    let list = wf.list("r1");
    let interrupted: Vec<&Value> = list
        .iter()
        .filter(|c| c["step"] == step && c["status"] == "interrupted")
        .collect();
    assert_eq!(interrupted.len(), 1, "{list:#?}");
    assert_eq!(interrupted[0]["attempt"], 1);
    assert_eq!(interrupted[0]["event"], "begin");
    let later = list
        .iter()
        .find(|c| c["step"] == step && c["event"] == "finish")
        .unwrap_or_else(|| panic!("no finish of {step}: {list:#?}"));
    assert_eq!(later["attempt"], 2, "{later}");
    assert_eq!(later["status"], "completed", "{later}");
    assert!(later["seq"].as_u64() > interrupted[0]["seq"].as_u64());

    // And now the run is done for good.
    let idle = wf.json(&["resume", "r1"]);
    assert_all_skipped(&idle, &FEATURE_STEPS);
    assert_eq!(wf.counts(&FEATURE_STEPS), expected);
    wf.repo.assert_fsck();
}

#[test]
fn killed_during_plan_stops_for_retry() {
    kill_during("plan");
}

#[test]
fn killed_during_implement_stops_for_retry() {
    kill_during("implement");
}

#[test]
fn killed_during_test_is_rerun_by_resume() {
    kill_during("test");
}

#[test]
fn killed_during_open_pr_stops_for_retry() {
    kill_during("open-pr");
}

// ---------------------------------------------------------------------------------------
// 8. One runner per run.

#[test]
fn a_second_runner_on_the_same_run_is_refused() {
    let wf = Wf::feature();
    let mut runner = wf.spawn_sleeping(&["run", FEATURE, "--run", "r1"], "plan");
    let refs_before = wf.all_refs();
    for args in [
        &["resume", "r1"][..],
        &["resume", "r1", "--retry", "plan"][..],
    ] {
        let out = wf.out(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains(&format!("pid {}", runner.pid())),
            "{args:?}: the refusal does not name the runner: {err}"
        );
    }
    assert_eq!(wf.all_refs(), refs_before, "a refused runner wrote refs");
    assert_eq!(wf.counts(&FEATURE_STEPS), [1, 0, 0, 0]);
    runner.kill();
}

/// `list` and `status` show a run's steps in its workflow's order, not by name, whether the
/// summary is computed or read from the list cache.
#[test]
fn steps_appear_in_workflow_order() {
    let repo = crate::common::Repo::new();
    repo.write(
        "order.toml",
        "[workflow]\nname = \"order\"\n\n[[steps]]\nname = \"zeta\"\nkind = \"deterministic\"\nrun = \"true\"\n\n[[steps]]\nname = \"alpha\"\nkind = \"deterministic\"\nrun = \"true\"\nneeds = [\"zeta\"]\n\n[[steps]]\nname = \"mid\"\nkind = \"deterministic\"\nrun = \"true\"\nneeds = [\"alpha\"]\n",
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "workflow"]);
    repo.ok(&["run", "order.toml", "--run", "w1"]);
    for pass in ["computed", "cached"] {
        let listed = repo.json(&["list"]);
        assert_eq!(
            listed[0]["steps"],
            serde_json::json!(["zeta", "alpha", "mid"]),
            "{pass}: {listed:#}"
        );
        let table = repo.ok(&["list"]);
        assert!(table.contains("zeta,alpha,mid"), "{pass}: {table}");
    }
    let status = repo.json(&["status"]);
    assert_eq!(
        status["summary"]["steps"],
        serde_json::json!(["zeta", "alpha", "mid"]),
        "{status:#}"
    );
}

// ---------------------------------------------------------------------------------------
// An agent's session after the workflow completed.

/// A Claude session that starts after a workflow run completed, while that run is still the
/// worktree's active run, never files its turn under the run's last step: its turn goes into
/// a new run whose lineage points at the finished one, the finished run stays complete, and
/// blame credits the new lines to the turn that wrote them.
#[test]
fn an_agents_turn_after_a_completed_run_starts_a_run_after_it() {
    use crate::common::agent_fixtures::{hook, payload};
    let wf = Wf::feature();
    let report = wf.json(&["run", FEATURE, "--run", "r1"]);
    assert_eq!(report["finished"], true, "{report:#}");
    let tip = wf.repo.rev("refs/agent-runs/r1/HEAD");
    let d = wf.path();
    let transcript = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/claude/transcript.jsonl");

    let started = hook(
        "claude",
        &payload("claude", "session-start.json", d, &transcript),
        &[],
    );
    let new_run = started["run"].as_str().expect("a run").to_string();
    assert_ne!(new_run, "r1", "{started}");
    wf.repo.write("src/cart.rs", "let mut total = 0;\n");
    hook(
        "claude",
        &payload("claude", "post-tool-use-edit.json", d, &transcript),
        &[],
    );
    let turn = hook(
        "claude",
        &payload("claude", "stop.json", d, &transcript),
        &[],
    );
    assert_eq!(turn["run"], new_run.as_str(), "{turn}");

    // The finished run is untouched and still complete.
    assert_eq!(wf.repo.rev("refs/agent-runs/r1/HEAD"), tip);
    let runs = wf.json(&["list"]);
    let r1 = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run"] == "r1")
        .unwrap_or_else(|| panic!("r1 in {runs:#}"));
    assert_eq!(r1["status"], "completed", "{r1:#}");
    // The new run's lineage points at the finished run's last checkpoint.
    let root = wf.repo.rev(&format!("refs/agent-runs/{new_run}/HEAD~1"));
    assert_eq!(wf.repo.rev(&format!("{root}^1")), tip);
    let checkpoints = wf.list(&new_run);
    let first = &checkpoints[0];
    assert_eq!(first["forked_from"]["run"], "r1", "{first:#}");
    // Blame credits the new line to the claude turn of the new run.
    let blame = wf.json(&["blame", "src/cart.rs"]);
    let turn = &blame["lines"][0]["agent"];
    assert_eq!(turn["agent"], "claude", "{blame:#}");
    assert_eq!(turn["run"], new_run.as_str(), "{blame:#}");
    assert_eq!(turn["step"], "turn", "{blame:#}");
    wf.repo.assert_fsck();
}
