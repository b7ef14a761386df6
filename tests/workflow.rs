//! Workflows, resume and steer (DESIGN.md §5), end to end against real git repositories:
//! the scripted fake agent (fixtures/agents/fake-agent.sh) counts its invocations per step in
//! `$COUNT_DIR/<step>` (a folder outside the repository), so every test can check how often
//! each step really ran.

mod common;

use common::{Repo, refs, tool_cmd};
use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The steps of fixtures/workflows/feature.toml, in order.
const FEATURE_STEPS: [&str; 4] = ["plan", "implement", "test", "open-pr"];
const FEATURE: &str = "fixtures/feature.toml";

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

fn feature_text() -> String {
    std::fs::read_to_string(fixture("workflows/feature.toml")).unwrap()
}

/// A repository holding the fake agent and a workflow file (both committed), plus a
/// counting folder outside the repository.
struct Wf {
    repo: Repo,
    counts: tempfile::TempDir,
}

impl Wf {
    /// A repository with `workflow` written (and committed) at `rel`, and `TASK.md`.
    fn new(rel: &str, workflow: &str) -> Wf {
        let repo = Repo::new();
        for entry in std::fs::read_dir(fixture("agents")).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().into_string().unwrap();
            let text = std::fs::read_to_string(entry.path()).unwrap();
            repo.write(&format!("fixtures/agents/{name}"), &text);
        }
        repo.write(rel, workflow);
        repo.write("TASK.md", "task v1\n");
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", "workflow"]);
        Wf {
            repo,
            counts: tempfile::tempdir().unwrap(),
        }
    }

    /// The 4-step fixture workflow at fixtures/feature.toml.
    fn feature() -> Wf {
        Wf::new(FEATURE, &feature_text())
    }

    fn path(&self) -> &Path {
        self.repo.path()
    }

    /// The tool, with COUNT_DIR set and none of the fake agent's failure switches.
    fn cmd(&self) -> Command {
        let mut c = tool_cmd(self.path());
        c.env("COUNT_DIR", self.counts.path())
            .env_remove("SLEEP_STEP")
            .env_remove("SLEEP_SECS")
            .env_remove("FAIL_STEP");
        c
    }

    fn out(&self, args: &[&str]) -> Output {
        self.cmd()
            .args(args)
            .output()
            .expect("run git-agent-rewind")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.out(args);
        assert!(
            out.status.success(),
            "git-agent-rewind {args:?} failed ({:?}): {}{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// The JSON document of a command that did its work; for `run`/`resume` the exit status
    /// must be the one its `outcome` promises (0 completed, 1 failed, 3 waiting for a person).
    fn json(&self, args: &[&str]) -> Value {
        let mut a = vec!["--json"];
        a.extend_from_slice(args);
        let out = self.out(&a);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let v: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
        let expected = match v.get("outcome").and_then(Value::as_str) {
            Some("failed") => 1,
            Some("waiting") => 3,
            Some(o) => {
                assert_eq!(o, "completed", "{v:#}");
                assert_eq!(v["finished"], true, "{v:#}");
                0
            }
            None => 0,
        };
        assert_eq!(
            out.status.code(),
            Some(expected),
            "git-agent-rewind {a:?}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        v
    }

    /// The lines the fake agent appended for `step` (one per invocation).
    fn invocations(&self, step: &str) -> Vec<String> {
        match std::fs::read_to_string(self.counts.path().join(step)) {
            Ok(t) => t.lines().map(str::to_string).collect(),
            Err(_) => vec![],
        }
    }

    fn count(&self, step: &str) -> usize {
        self.invocations(step).len()
    }

    fn counts(&self, steps: &[&str]) -> Vec<usize> {
        steps.iter().map(|s| self.count(s)).collect()
    }

    /// `list <run> --json`.
    fn list(&self, run: &str) -> Vec<Value> {
        self.json(&["list", run])
            .as_array()
            .expect("list prints an array")
            .clone()
    }

    /// Every ref of the repository (ours, the user's, notes, backups).
    fn all_refs(&self) -> Vec<(String, String)> {
        refs(self.path(), "refs/")
    }

    /// Start the tool with `args` in its own process group, with the fake agent sleeping in
    /// `step`; returns once that step's command has started.
    fn spawn_sleeping(&self, args: &[&str], step: &str) -> Sleeper {
        let child = self
            .cmd()
            .args(args)
            .env("SLEEP_STEP", step)
            .env("SLEEP_SECS", "30")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("spawn the runner");
        let mut s = Sleeper {
            child,
            reaped: false,
        };
        let marker = self.counts.path().join(step);
        // A guard against hanging forever, not a timing assertion.
        let deadline = Instant::now() + Duration::from_secs(120);
        // The shell creates the file (`>>`) before it writes the line: wait for the line.
        let started = || std::fs::read_to_string(&marker).is_ok_and(|t| t.ends_with('\n'));
        while !started() {
            if let Some(status) = s.child.try_wait().unwrap() {
                s.reaped = true;
                panic!("the runner exited ({status}) before step {step} started");
            }
            assert!(Instant::now() < deadline, "step {step} never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        s
    }
}

/// A runner started in its own process group; the whole group is SIGKILLed on `kill` or
/// when dropped (so a failing test leaves no sleeping process behind).
struct Sleeper {
    child: Child,
    reaped: bool,
}

impl Sleeper {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn kill(&mut self) {
        if self.reaped {
            return;
        }
        let status = kill_group(self.child.id());
        assert!(status.success(), "kill -9 -- -{} failed", self.child.id());
        self.child.wait().unwrap();
        self.reaped = true;
    }
}

/// SIGKILL the whole process group `pgid`. The `--` matters: procps-ng 4.0.2's `kill -9 -PGID`
/// parses `-PGID` wrongly (it sends the signal to process group 2 instead), so the group id
/// must come after `--`.
fn kill_group(pgid: u32) -> std::process::ExitStatus {
    Command::new("kill")
        .args(["-9", "--", &format!("-{pgid}")])
        .status()
        .expect("run kill")
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        if !self.reaped {
            let _ = kill_group(self.child.id());
            let _ = self.child.wait();
        }
    }
}

/// The report entry of `step` (panics when the report has none).
fn step_of<'a>(report: &'a Value, step: &str) -> &'a Value {
    report["steps"]
        .as_array()
        .expect("steps array")
        .iter()
        .find(|s| s["step"] == step)
        .unwrap_or_else(|| panic!("no step {step} in report {report:#}"))
}

fn action<'a>(report: &'a Value, step: &str) -> &'a str {
    step_of(report, step)["action"].as_str().unwrap()
}

/// The steps of a report whose action is `what`, in order.
fn with_action(report: &Value, what: &str) -> Vec<String> {
    report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["action"] == what)
        .map(|s| s["step"].as_str().unwrap().to_string())
        .collect()
}

fn assert_all_skipped(report: &Value, steps: &[&str]) {
    for s in steps {
        assert_eq!(action(report, s), "skipped", "{s}: {report:#}");
    }
    assert_eq!(report["finished"], true, "{report:#}");
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

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
// 3. Input changes cascade downstream, and only downstream.

#[test]
fn changed_input_reruns_what_depends_on_it() {
    let wf = Wf::feature();
    wf.json(&["run", FEATURE, "--run", "r1"]);
    assert_eq!(wf.counts(&FEATURE_STEPS), [1, 1, 1, 1]);
    let pr = wf.repo.rev("refs/agent-runs/r1/open-pr");

    // A file no step reads changes nothing.
    wf.repo.write("README.md", "hello, changed\n");
    wf.repo.write("NOTES.txt", "scratch\n");
    let idle = wf.json(&["resume", "r1"]);
    assert_all_skipped(&idle, &FEATURE_STEPS);
    assert_eq!(wf.counts(&FEATURE_STEPS), [1, 1, 1, 1]);

    wf.repo.write("TASK.md", "task v2\n");
    let report = wf.json(&["resume", "r1"]);
    assert_eq!(report["finished"], true, "{report:#}");
    assert_eq!(
        with_action(&report, "ran"),
        ["plan", "implement", "test"],
        "{report:#}"
    );
    assert!(
        step_of(&report, "plan")["reason"]
            .as_str()
            .unwrap()
            .contains("inputs changed"),
        "{report:#}"
    );
    // The effect downstream is reconsidered, but its idempotency key already completed in
    // this run, so it is not repeated (DESIGN.md §5).
    let effect = step_of(&report, "open-pr");
    assert_eq!(effect["action"], "skipped-effect", "{effect}");
    assert_eq!(
        wf.json(&["show", "r1/open-pr"])["meta"]["duplicate_of"],
        pr.as_str()
    );
    assert_eq!(wf.counts(&FEATURE_STEPS), [2, 2, 2, 1]);
    assert!(wf.repo.read("out/plan.md").contains("task v2"));
    assert!(wf.repo.read("out/code.txt").contains("task v2"));

    // Settled: nothing more to do.
    let idle = wf.json(&["resume", "r1"]);
    assert_all_skipped(&idle, &FEATURE_STEPS);
    assert_eq!(wf.counts(&FEATURE_STEPS), [2, 2, 2, 1]);
    wf.repo.assert_fsck();
}

const CHAINS: &str = r#"# Two independent chains: a -> b and c -> d.
[workflow]
name = "chains"

[[steps]]
name = "a"
kind = "agent"
run = "sh fixtures/agents/fake-agent.sh out/a.txt A.txt"
inputs = ["A.txt"]

[[steps]]
name = "b"
kind = "deterministic"
run = "sh fixtures/agents/fake-agent.sh out/b.txt out/a.txt"

[[steps]]
name = "c"
kind = "agent"
run = "sh fixtures/agents/fake-agent.sh out/c.txt C.txt"
inputs = ["C.txt"]
needs = []

[[steps]]
name = "d"
kind = "deterministic"
run = "sh fixtures/agents/fake-agent.sh out/d.txt out/c.txt"
"#;

#[test]
fn independent_chains_rerun_only_the_changed_one() {
    let wf = Wf::new("fixtures/chains.toml", CHAINS);
    wf.repo.write("A.txt", "a v1\n");
    wf.repo.write("C.txt", "c v1\n");
    let steps = ["a", "b", "c", "d"];
    let report = wf.json(&["run", "fixtures/chains.toml", "--run", "r1"]);
    assert_eq!(report["finished"], true, "{report:#}");
    assert_eq!(wf.counts(&steps), [1, 1, 1, 1]);

    wf.repo.write("C.txt", "c v2\n");
    let report = wf.json(&["resume", "r1"]);
    assert_eq!(report["finished"], true, "{report:#}");
    assert_eq!(with_action(&report, "ran"), ["c", "d"], "{report:#}");
    assert_eq!(with_action(&report, "skipped"), ["a", "b"], "{report:#}");
    assert_eq!(wf.counts(&steps), [1, 1, 2, 2]);
    assert!(wf.repo.read("out/d.txt").contains("c v2"));

    wf.repo.write("A.txt", "a v2\n");
    let report = wf.json(&["resume", "r1"]);
    assert_eq!(with_action(&report, "ran"), ["a", "b"], "{report:#}");
    assert_eq!(with_action(&report, "skipped"), ["c", "d"], "{report:#}");
    assert_eq!(wf.counts(&steps), [2, 2, 2, 2]);

    let idle = wf.json(&["resume", "r1"]);
    assert_all_skipped(&idle, &steps);
    assert_eq!(wf.counts(&steps), [2, 2, 2, 2]);
}

// ---------------------------------------------------------------------------------------
// 4. Rewind, then resume: earlier steps are inherited, the effect is not repeated, and the
//    re-entered step gets the agent session recorded at that point.

/// feature.toml, where plan records agent session S-1 and open-pr session S-2 (as an agent
/// hook would, with a `turn` checkpoint of the running step).
fn feature_with_sessions() -> String {
    let bin = common::bin().display().to_string();
    assert!(
        !bin.contains(['"', '\\', '\'']),
        "unusual binary path {bin}"
    );
    let turn = |session: &str, step: &str| {
        format!(
            " && '{bin}' checkpoint {step} --run \\\"$AGENT_RUN\\\" --event turn --session-id {session}"
        )
    };
    let text = feature_text();
    let plan = "run = \"sh fixtures/agents/fake-agent.sh out/plan.md TASK.md";
    let pr = "run = \"sh fixtures/agents/fake-agent.sh out/pr.txt out/test.log";
    assert!(text.contains(plan) && text.contains(pr), "fixture changed");
    text.replace(plan, &format!("{plan}{}", turn("S-1", "plan")))
        .replace(pr, &format!("{pr}{}", turn("S-2", "open-pr")))
}

#[test]
fn rewind_then_resume_skips_inherited_steps_and_the_done_effect() {
    let wf = Wf::new(FEATURE, &feature_with_sessions());
    let report = wf.json(&["run", FEATURE, "--run", "r1"]);
    assert_eq!(report["finished"], true, "{report:#}");
    assert_eq!(wf.counts(&FEATURE_STEPS), [1, 1, 1, 1]);
    // The sessions were recorded, and later steps of r1 were handed the newest one.
    let list = wf.list("r1");
    let turns: Vec<(&str, &str)> = list
        .iter()
        .filter(|c| c["event"] == "turn")
        .map(|c| {
            (
                c["step"].as_str().unwrap(),
                c["sdk_session_id"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(turns, [("plan", "S-1"), ("open-pr", "S-2")], "{list:#?}");
    assert!(wf.invocations("plan")[0].contains("session= "));
    assert!(wf.invocations("test")[0].contains("session=S-1 "));
    let pr = wf.repo.rev("refs/agent-runs/r1/open-pr");
    let pr_key = wf.json(&["show", "r1/open-pr"])["idempotency_key"].clone();
    assert!(pr_key.is_string());

    let rw = wf.json(&["rewind", "r1", "--to", "test", "--run", "r2"]);
    assert_eq!(rw["run"], "r2");
    assert_eq!(rw["from_step"], "test");
    let inherited: Vec<&str> = rw["inherited_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(inherited, ["implement", "plan"], "{rw:#}");
    assert_eq!(rw["sdk_session_id"], "S-1", "{rw:#}");
    // The state before test: its output and the PR are not there.
    assert!(wf.path().join("out/code.txt").exists());
    assert!(!wf.path().join("out/test.log").exists());
    assert!(!wf.path().join("out/pr.txt").exists());
    assert_eq!(wf.json(&["status"])["run"], "r2");

    // `resume` without a run continues the active one: r2.
    let report = wf.json(&["resume"]);
    assert_eq!(report["run"], "r2");
    assert_eq!(report["finished"], true, "{report:#}");
    assert_eq!(action(&report, "plan"), "skipped");
    assert_eq!(action(&report, "implement"), "skipped");
    let t = step_of(&report, "test");
    assert_eq!(t["action"], "ran", "{t}");
    assert_eq!(t["status"], "completed", "{t}");
    let effect = step_of(&report, "open-pr");
    assert_eq!(effect["action"], "skipped-effect", "{report:#}");
    assert_eq!(effect["status"], "skipped", "{effect}");
    assert_eq!(wf.counts(&FEATURE_STEPS), [1, 1, 2, 1]);

    // The re-entered step got the session recorded at the rewind point, not the later one.
    let test_calls = wf.invocations("test");
    assert!(
        test_calls[1].contains("session=S-1 "),
        "AGENT_RESUME_SESSION of the re-entered step: {test_calls:?}"
    );

    // The skipped effect points at the original.
    let dup = wf.json(&["show", "r2/open-pr"]);
    assert_eq!(dup["status"], "skipped", "{dup:#}");
    assert_eq!(dup["meta"]["duplicate_of"], pr.as_str(), "{dup:#}");
    assert_eq!(dup["idempotency_key"], pr_key, "{dup:#}");
    assert_eq!(
        effect["checkpoint"].as_str().unwrap(),
        wf.repo.rev("refs/agent-runs/r2/open-pr")
    );
    // The source run is untouched.
    assert_eq!(wf.repo.rev("refs/agent-runs/r1/open-pr"), pr);

    let idle = wf.json(&["resume", "r2"]);
    assert_all_skipped(&idle, &FEATURE_STEPS);
    assert_eq!(wf.counts(&FEATURE_STEPS), [1, 1, 2, 1]);
    wf.repo.assert_fsck();
}

// ---------------------------------------------------------------------------------------
// 5. Gates.

fn gated_text() -> String {
    let text = feature_text();
    let at = text
        .find("[[steps]]\nname = \"open-pr\"")
        .expect("fixture changed");
    format!(
        "{}[[steps]]\nname = \"review\"\nkind = \"gate\"\n\n{}",
        &text[..at],
        &text[at..]
    )
}

#[test]
fn gate_passes_only_with_an_approval_of_its_exact_checkpoint() {
    let wf = Wf::new("fixtures/gated.toml", &gated_text());
    let steps = ["plan", "implement", "test", "open-pr"];
    let report = wf.json(&["run", "fixtures/gated.toml", "--run", "r1"]);
    assert_eq!(report["finished"], false, "{report:#}");
    let gate = step_of(&report, "review");
    assert_eq!(gate["action"], "gate-opened", "{gate}");
    assert_eq!(gate["status"], "awaiting_approval", "{gate}");
    let gate_cp = gate["checkpoint"].as_str().unwrap().to_string();
    assert_eq!(gate_cp, wf.repo.rev("refs/agent-runs/r1/review"));
    assert!(
        report["next_action"]
            .as_str()
            .unwrap()
            .contains(&format!("approve {gate_cp}")),
        "{report:#}"
    );
    assert_eq!(wf.counts(&steps), [1, 1, 1, 0]);

    // Resume stops at the gate and names the same checkpoint.
    let stops_at_gate = |what: &str| -> Value {
        let r = wf.json(&["resume", "r1"]);
        assert_eq!(r["finished"], false, "{what}: {r:#}");
        assert_eq!(action(&r, "review"), "stopped", "{what}: {r:#}");
        assert!(
            r["stopped"]
                .as_str()
                .is_some_and(|s| s.contains("awaiting approval")),
            "{what}: {r:#}"
        );
        r
    };
    let r = stops_at_gate("no approval yet");
    assert!(
        r["next_action"]
            .as_str()
            .unwrap()
            .contains(&format!("approve {gate_cp}")),
        "{r:#}"
    );
    assert_eq!(wf.counts(&steps), [1, 1, 1, 0]);

    // Files that look like approvals never count.
    wf.repo.write("APPROVED", "approved by everyone\n");
    wf.repo.write(".agent-rewind/approved", "yes\n");
    stops_at_gate("an APPROVED file on disk");
    assert_eq!(wf.counts(&steps), [1, 1, 1, 0]);

    // Approving a checkpoint that is not a gate is refused, and writes nothing.
    let notes = wf.repo.rev("refs/notes/agent-runs/r1");
    let out = wf.out(&["approve", "r1/test", "--by", "alice"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not a gate"), "{err}");
    // An empty --by is refused.
    let out = wf.out(&["approve", &gate_cp, "--by", " "]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(wf.repo.rev("refs/notes/agent-runs/r1"), notes);
    stops_at_gate("approval of the test checkpoint refused");
    assert_eq!(wf.counts(&steps), [1, 1, 1, 0]);

    // The gate's own checkpoint approved: resume passes and runs the rest.
    let approval = wf.json(&["approve", &gate_cp, "--by", "bob", "-m", "looks good"]);
    assert_eq!(approval["checkpoint"], gate_cp.as_str(), "{approval:#}");
    let r = wf.json(&["resume", "r1"]);
    assert_eq!(r["finished"], true, "{r:#}");
    let passed = step_of(&r, "review");
    assert_eq!(passed["action"], "gate-passed", "{passed}");
    assert!(
        passed["reason"].as_str().unwrap().contains("bob"),
        "{passed}"
    );
    assert_eq!(action(&r, "open-pr"), "ran");
    assert_eq!(wf.counts(&steps), [1, 1, 1, 1]);

    // New upstream work: the chain re-runs and the gate asks again, on a new checkpoint.
    wf.repo.write("TASK.md", "task v2\n");
    let r = wf.json(&["resume", "r1"]);
    assert_eq!(r["finished"], false, "{r:#}");
    assert_eq!(
        with_action(&r, "ran"),
        ["plan", "implement", "test"],
        "{r:#}"
    );
    let reopened = step_of(&r, "review");
    assert_eq!(reopened["action"], "gate-opened", "{reopened}");
    let gate2 = reopened["checkpoint"].as_str().unwrap().to_string();
    assert_ne!(gate2, gate_cp);
    assert_eq!(wf.counts(&steps), [2, 2, 2, 1]);
    // The old approval is void; approving the old checkpoint again is an error naming the
    // new one and what changed.
    stops_at_gate("old approval");
    let out = wf.out(&["approve", &gate_cp, "--by", "bob"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("superseded by") && err.contains(&gate2[..12]) && err.contains("opened again"),
        "{err}"
    );
    let r = stops_at_gate("old checkpoint approved again");
    assert!(
        r["next_action"]
            .as_str()
            .unwrap()
            .contains(&format!("approve {gate2}")),
        "{r:#}"
    );
    assert_eq!(wf.counts(&steps), [2, 2, 2, 1]);

    // Rejected: resume stops and says so.
    wf.ok(&["reject", &gate2, "--by", "carol", "-m", "not like this"]);
    let r = wf.json(&["resume", "r1"]);
    assert_eq!(r["finished"], false, "{r:#}");
    assert_eq!(action(&r, "review"), "stopped", "{r:#}");
    let why = r["stopped"].as_str().unwrap();
    assert!(why.contains("rejected") && why.contains("carol"), "{r:#}");
    assert_eq!(wf.counts(&steps), [2, 2, 2, 1]);
    wf.repo.assert_fsck();
}

// ---------------------------------------------------------------------------------------
// 6. Steer.

const STEERED: &str = r#"[workflow]
name = "steered"

[[steps]]
name = "plan"
kind = "agent"
run = "sh fixtures/agents/fake-agent.sh out/plan.md TASK.md"
inputs = ["TASK.md"]

[[steps]]
name = "implement"
kind = "agent"
run = "sh fixtures/agents/fake-agent.sh out/code.txt out/plan.md"

[[steps]]
name = "test"
kind = "deterministic"
run = "sh fixtures/agents/fake-agent.sh out/test.log out/code.txt"

[[steps]]
name = "docs"
kind = "deterministic"
run = "sh fixtures/agents/fake-agent.sh out/docs.txt DOCS.md"
inputs = ["DOCS.md"]
needs = []
"#;

fn radius(outcome: &Value) -> Vec<String> {
    outcome["blast_radius"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["step"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn steer_shows_the_blast_radius_then_applies_and_resume_reruns_exactly_it() {
    let wf = Wf::new("fixtures/steered.toml", STEERED);
    wf.repo.write("DOCS.md", "docs v1\n");
    let steps = ["plan", "implement", "test", "docs"];
    wf.json(&["run", "fixtures/steered.toml", "--run", "r1"]);
    assert_eq!(wf.counts(&steps), [1, 1, 1, 1]);

    let new_task = wf.counts.path().join("new-task.md");
    std::fs::write(&new_task, "task v2, steered\n").unwrap();
    let edit = format!("TASK.md={}", new_task.display());

    // Dry runs (explicit, and the default without --yes) change nothing.
    let refs_before = wf.all_refs();
    let tree_before = wf.repo.add_all_tree();
    let dry = wf.json(&["steer", "r1", "--edit", &edit, "--dry-run"]);
    assert_eq!(dry["applied"], false, "{dry:#}");
    assert!(dry["checkpoint"].is_null(), "{dry:#}");
    assert_eq!(dry["edits"], serde_json::json!(["TASK.md"]));
    assert_eq!(radius(&dry), ["plan", "implement", "test"], "{dry:#}");
    assert!(
        dry["blast_radius"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("TASK.md"),
        "{dry:#}"
    );
    let default = wf.json(&["steer", "r1", "--invalidate", "docs"]);
    assert_eq!(default["applied"], false, "{default:#}");
    assert_eq!(radius(&default), ["docs"], "{default:#}");
    assert_eq!(wf.all_refs(), refs_before, "a dry-run steer wrote refs");
    assert_eq!(wf.repo.read("TASK.md"), "task v1\n");
    assert_eq!(
        wf.repo.add_all_tree(),
        tree_before,
        "a dry-run steer wrote files"
    );
    // Nothing changed, so nothing re-runs.
    assert_all_skipped(&wf.json(&["resume", "r1"]), &steps);
    assert_eq!(wf.counts(&steps), [1, 1, 1, 1]);

    // Applied: the file is written and a steer checkpoint is the receipt.
    let applied = wf.json(&["steer", "r1", "--edit", &edit, "--yes"]);
    assert_eq!(applied["applied"], true, "{applied:#}");
    assert_eq!(radius(&applied), ["plan", "implement", "test"]);
    assert_eq!(wf.repo.read("TASK.md"), "task v2, steered\n");
    let receipt = applied["checkpoint"].as_str().unwrap().to_string();
    assert_eq!(wf.repo.rev("refs/agent-runs/r1/HEAD"), receipt);
    let last = wf.list("r1").last().cloned().unwrap();
    assert_eq!(last["checkpoint"], receipt.as_str());
    assert_eq!(last["event"], "steer", "{last:#}");
    assert_eq!(last["meta"]["edits"], "TASK.md", "{last:#}");
    assert_eq!(last["meta"]["invalidate"], "", "{last:#}");

    let r = wf.json(&["resume", "r1"]);
    assert_eq!(r["finished"], true, "{r:#}");
    assert_eq!(
        with_action(&r, "ran"),
        ["plan", "implement", "test"],
        "{r:#}"
    );
    assert_eq!(action(&r, "docs"), "skipped");
    assert_eq!(wf.counts(&steps), [2, 2, 2, 1]);
    assert!(wf.repo.read("out/code.txt").contains("task v2, steered"));

    // Invalidate one step: it and what depends on it re-run, nothing else.
    let applied = wf.json(&["steer", "r1", "--invalidate", "implement", "--yes"]);
    assert_eq!(applied["applied"], true, "{applied:#}");
    assert_eq!(applied["invalidated"], serde_json::json!(["implement"]));
    assert_eq!(radius(&applied), ["implement", "test"], "{applied:#}");
    let last = wf.list("r1").last().cloned().unwrap();
    assert_eq!(last["event"], "steer", "{last:#}");
    assert_eq!(last["meta"]["invalidate"], "implement", "{last:#}");
    let r = wf.json(&["resume", "r1"]);
    assert_eq!(with_action(&r, "ran"), ["implement", "test"], "{r:#}");
    assert_eq!(wf.counts(&steps), [2, 3, 3, 1]);

    // Steered once: the next resume has nothing left to do.
    assert_all_skipped(&wf.json(&["resume", "r1"]), &steps);
    assert_eq!(wf.counts(&steps), [2, 3, 3, 1]);
    wf.repo.assert_fsck();
}

#[test]
fn a_running_run_is_not_steered() {
    let wf = Wf::feature();
    let mut runner = wf.spawn_sleeping(&["run", FEATURE, "--run", "r1"], "implement");
    let refs_before = wf.all_refs();
    let out = wf.out(&["steer", "r1", "--invalidate", "plan", "--yes"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("running"), "{}", stderr(&out));
    assert_eq!(wf.all_refs(), refs_before, "a refused steer wrote refs");
    runner.kill();
    // Once the runner is gone, the run can be steered.
    let applied = wf.json(&["steer", "r1", "--invalidate", "plan", "--yes"]);
    assert_eq!(applied["applied"], true, "{applied:#}");
}

// ---------------------------------------------------------------------------------------
// 7. Bad workflow files.

/// 1-based number of the `nth` (0-based) line of `text` that contains `needle`.
fn line_of(text: &str, needle: &str, nth: usize) -> usize {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .nth(nth)
        .unwrap_or_else(|| panic!("{needle:?} not in {text}"))
        .0
        + 1
}

#[test]
fn bad_workflow_files_get_precise_errors_and_record_nothing() {
    let wf = Wf::feature();
    let head = "[workflow]\nname = \"bad\"\n\n";
    let step = |name: &str, extra: &str| {
        format!("[[steps]]\nname = \"{name}\"\nrun = \"true\"\n{extra}\n")
    };
    // (file name, text, expected prefix after `<file>:`, text the message must contain)
    let mut cases: Vec<(&str, String, String, &str)> = vec![];

    let t = format!("{head}{}", step("a", "kind = \"robot\""));
    let l = line_of(&t, "robot", 0);
    cases.push(("kind.toml", t, format!("{l}: steps[0].kind:"), "robot"));

    let t = format!("{head}{}{}", step("a", ""), step("a", ""));
    let l = line_of(&t, "name = \"a\"", 1);
    cases.push(("dup.toml", t, format!("{l}: steps[1].name:"), "duplicate"));

    let t = format!(
        "{head}{}{}{}",
        step("a", "needs = [\"c\"]"),
        step("b", ""),
        step("c", "")
    );
    let l = line_of(&t, "name = \"a\"", 0);
    cases.push(("cycle.toml", t, format!("{l}: needs:"), "cycle"));

    let t = format!("{head}{}{}", step("a", ""), step("b", "needs = [\"zz\"]"));
    let l = line_of(&t, "zz", 0);
    cases.push((
        "upstream.toml",
        t,
        format!("{l}: steps[1].needs:"),
        "\"zz\"",
    ));

    let t = format!("{head}{}", step("a/b", ""));
    let l = line_of(&t, "a/b", 0);
    cases.push(("name.toml", t, format!("{l}: steps[0].name:"), "a/b"));

    let t = format!("{head}[[steps]]\nname = \"a\"\nrun = \n");
    let l = line_of(&t, "run =", 0);
    cases.push(("syntax.toml", t, format!("{l}:"), ""));

    let t = format!("[workflow]\n\n{}", step("a", ""));
    cases.push(("noname.toml", t, "1: workflow.name:".into(), "missing"));

    let t = format!(
        "{head}{}[[steps]]\nname = \"review\"\nkind = \"gate\"\nrun = \"echo ok\"\n",
        step("a", "")
    );
    let l = line_of(&t, "echo ok", 0);
    cases.push(("gate.toml", t, format!("{l}: steps[1].run:"), "gate"));

    let t = format!("{head}{}", step("a", "colour = \"blue\""));
    let l = line_of(&t, "colour", 0);
    cases.push(("unknown.toml", t, format!("{l}: steps[0]"), "colour"));

    let mut failures = vec![];
    for (name, text, prefix, needle) in &cases {
        let rel = format!("fixtures/{name}");
        wf.repo.write(&rel, text);
        let out = wf.out(&["run", &rel, "--run", "bad"]);
        let err = stderr(&out);
        let first = err.lines().next().unwrap_or("");
        let msg = first.strip_prefix("error: ").unwrap_or(first);
        let expected = format!("{rel}:{prefix}");
        if out.status.code() != Some(2) || !msg.starts_with(&expected) || !msg.contains(needle) {
            failures.push(format!(
                "{name}: exit {:?}, expected a message starting with {expected:?} and \
                 containing {needle:?}, got {first:?}",
                out.status.code()
            ));
        }
        assert!(
            refs(wf.path(), "refs/agent-runs/").is_empty()
                && refs(wf.path(), "refs/notes/agent-runs/").is_empty(),
            "{name}: a bad workflow recorded something"
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
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

// ---------------------------------------------------------------------------------------
// 9. Workflows that travel (issue 13 item 6) and what a rewind inherits (item 7).

impl Wf {
    /// `--json` report of run/resume, whatever the exit status (a stopped run may exit
    /// non-zero); panics on anything but 0, 1 or 3 or on output that is not a report.
    fn report(&self, args: &[&str], env: &[(&str, &str)]) -> Value {
        let mut c = self.cmd();
        c.arg("--json").args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        assert!(
            matches!(out.status.code(), Some(0 | 1 | 3)),
            "{args:?}: {:?} {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{args:?}: not JSON ({e}): {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
    }

    /// The JSON lines of the note of `run`'s root checkpoint.
    fn root_note(&self, run: &str) -> Vec<Value> {
        let root = self.json(&["show", &format!("{run}@0")])["checkpoint"]
            .as_str()
            .unwrap()
            .to_string();
        self.repo
            .git(&["notes", &format!("--ref=agent-runs/{run}"), "show", &root])
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

#[test]
fn a_workflow_file_anywhere_is_stored_with_the_run() {
    // The repository has the fake agent but the workflow lives in another folder.
    let wf = Wf::new("fixtures/unused.toml", "[workflow]\nname = \"unused\"\n");
    let elsewhere = tempfile::tempdir().unwrap();
    let file = elsewhere.path().join("flow.toml");
    std::fs::write(&file, feature_text()).unwrap();
    let r = wf.report(
        &["run", file.to_str().unwrap(), "--run", "r1"],
        &[("FAIL_STEP", "test")],
    );
    assert_eq!(r["finished"], false, "{r:#}");
    assert_eq!(wf.counts(&FEATURE_STEPS), [1, 1, 1, 0]);

    // The root note holds the workflow's text, path and digest.
    let note = wf.root_note("r1");
    let stored: Vec<&Value> = note.iter().filter(|l| l["type"] == "workflow").collect();
    assert_eq!(stored.len(), 1, "{note:?}");
    assert_eq!(stored[0]["text"], feature_text().as_str());
    assert_eq!(stored[0]["name"], "feature");
    let canonical = std::fs::canonicalize(&file).unwrap();
    assert_eq!(stored[0]["path"], canonical.to_str().unwrap());

    // The file is gone: resume runs from the stored copy.
    drop(elsewhere);
    assert!(!file.exists());
    let r = wf.report(&["resume", "r1"], &[]);
    assert_eq!(r["finished"], true, "{r:#}");
    assert_eq!(with_action(&r, "ran"), ["test", "open-pr"], "{r:#}");
    assert!(
        r["workflow_from"]
            .as_str()
            .unwrap()
            .contains("stored with run r1"),
        "{r:#}"
    );
    assert_eq!(wf.counts(&FEATURE_STEPS), [1, 1, 2, 1]);
    wf.repo.assert_fsck();
}

#[test]
fn a_pushed_run_resumes_on_another_machine_without_the_file() {
    let wf = Wf::feature();
    let r = wf.report(&["run", FEATURE, "--run", "r1"], &[("FAIL_STEP", "test")]);
    assert_eq!(r["finished"], false, "{r:#}");
    let remote = tempfile::tempdir().unwrap();
    common::git_in(remote.path(), &["init", "-q", "--bare"]);
    wf.repo
        .git(&["remote", "add", "origin", remote.path().to_str().unwrap()]);
    wf.repo.git(&["push", "-q", "origin", "main"]);
    wf.ok(&["push", "origin", "r1"]);

    // Another machine: a clone without the workflow file, the run fetched.
    let other = tempfile::tempdir().unwrap();
    let clone = other.path().join("clone");
    common::git_in(
        other.path(),
        &[
            "clone",
            "-q",
            "-b",
            "main",
            remote.path().to_str().unwrap(),
            "clone",
        ],
    );
    common::git_in(&clone, &["config", "user.name", "Other"]);
    common::git_in(&clone, &["config", "user.email", "other@example.com"]);
    common::git_in(&clone, &["rm", "-q", FEATURE]);
    common::git_in(&clone, &["commit", "-q", "-m", "no workflow file here"]);
    common::ok_in(&clone, &["fetch", "origin", "r1"]);
    // The stored workflow came with the fetch: it runs once the user trusts it
    // (tests/workflow_trust.rs covers the refusal).
    let out = tool_cmd(&clone)
        .env("COUNT_DIR", wf.counts.path())
        .env_remove("FAIL_STEP")
        .args(["--json", "resume", "r1", "--trust"])
        .output()
        .unwrap();
    let r: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(r["finished"], true, "{r:#}");
    assert_eq!(with_action(&r, "ran"), ["test", "open-pr"], "{r:#}");
    assert_eq!(wf.counts(&FEATURE_STEPS), [1, 1, 2, 1]);
    let fsck = common::git_cmd(&clone)
        .args(["fsck", "--strict", "--no-progress"])
        .output()
        .unwrap();
    assert!(
        fsck.status.success(),
        "{}",
        String::from_utf8_lossy(&fsck.stderr)
    );
}

#[test]
fn resume_says_when_the_file_changed_and_uses_the_stored_copy() {
    let wf = Wf::feature();
    let r = wf.report(&["run", FEATURE, "--run", "r1"], &[("FAIL_STEP", "test")]);
    assert_eq!(r["finished"], false, "{r:#}");
    // The file now breaks `test` differently: a step that fails whatever the agent does.
    let changed = feature_text().replace(
        "run = \"sh fixtures/agents/fake-agent.sh out/test.log out/code.txt\"",
        "run = \"exit 7\"",
    );
    assert_ne!(changed, feature_text());
    wf.repo.write(FEATURE, &changed);

    let r = wf.report(&["resume", "r1"], &[]);
    assert_eq!(r["workflow_file_changed"], FEATURE, "{r:#}");
    assert_eq!(r["finished"], true, "the stored copy ran: {r:#}");

    // Told to use the file: it runs (and fails with its own command), and becomes the
    // stored copy.
    wf.repo.write("TASK.md", "task v2\n");
    let r = wf.report(&["resume", "r1", "--workflow", FEATURE], &[]);
    assert!(r["workflow_file_changed"].is_null(), "{r:#}");
    assert_eq!(r["finished"], false, "{r:#}");
    assert!(
        r["stopped"].as_str().unwrap().contains("exit code 7"),
        "{r:#}"
    );
    let stored: Vec<Value> = wf
        .root_note("r1")
        .into_iter()
        .filter(|l| l["type"] == "workflow")
        .collect();
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[1]["text"], changed.as_str());
    // Without --workflow now: the newest stored copy, which matches the file.
    let r = wf.report(&["resume", "r1"], &[]);
    assert!(r["workflow_file_changed"].is_null(), "{r:#}");
    assert!(
        r["stopped"].as_str().unwrap().contains("exit code 7"),
        "{r:#}"
    );
}

#[test]
fn resume_of_a_run_with_a_changed_file_says_so_in_words() {
    let wf = Wf::feature();
    wf.report(&["run", FEATURE, "--run", "r1"], &[("FAIL_STEP", "test")]);
    wf.repo
        .write(FEATURE, &format!("{}\n# edited\n", feature_text()));
    let out = wf.out(&["resume", "r1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "{FEATURE} changed since the run stored it; using the stored copy"
        )),
        "{text}"
    );
}

#[test]
fn workflow_files_with_credentials_are_not_stored() {
    let wf = Wf::feature();
    let leaky = feature_text().replace(
        "inputs = [\"TASK.md\"]",
        "inputs = [\"TASK.md\"]\nenv = { GH = \"ghp_0123456789abcdefghijABCDEFGHIJ\" }",
    );
    wf.repo.write("leaky.toml", &leaky);
    let before = wf.all_refs();
    let out = wf.out(&["run", "leaky.toml"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("leaky.toml:10: this looks like a credential"),
        "{err}"
    );
    assert_eq!(wf.all_refs(), before, "nothing recorded");
}

#[test]
fn a_rewind_inherits_every_step_recorded_before_the_point() {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1"]);
    // Steps recorded with plain checkpoints (no status), one completed, one plain after.
    repo.write("a.txt", "plan\n");
    repo.ok(&["checkpoint", "plan", "-m", "planned"]);
    repo.write("a.txt", "implement\n");
    repo.ok(&["checkpoint", "implement"]);
    repo.ok(&["step", "begin", "test", "--kind", "deterministic"]);
    repo.ok(&["step", "end", "test", "--status", "completed"]);
    repo.write("a.txt", "review\n");
    repo.ok(&["checkpoint", "review"]);

    let out = repo.json(&[
        "rewind",
        "r1",
        "--to",
        "review",
        "--no-checkout",
        "--run",
        "r2",
    ]);
    assert_eq!(
        out["inherited_steps"],
        serde_json::json!(["implement", "plan", "test"]),
        "{out:#}"
    );
    for step in ["plan", "implement", "test"] {
        assert_eq!(
            repo.rev(&format!("refs/agent-runs/r2/{step}")),
            repo.rev(&format!("refs/agent-runs/r1/{step}")),
            "{step}"
        );
        assert_eq!(repo.json(&["show", &format!("r2/{step}")])["step"], step);
    }
    // The step being re-entered is not inherited.
    assert!(
        repo.git_output(&["rev-parse", "--verify", "-q", "refs/agent-runs/r2/review"])
            .stdout
            .is_empty()
    );
    // Rewinding to before test began: test is not inherited either (it lies after).
    let out = repo.json(&[
        "rewind",
        "r1",
        "--to",
        "test",
        "--no-checkout",
        "--run",
        "r3",
    ]);
    assert_eq!(
        out["inherited_steps"],
        serde_json::json!(["implement", "plan"]),
        "{out:#}"
    );
    repo.assert_fsck();
}

#[test]
fn inherited_steps_that_did_not_complete_are_not_done_for_resume() {
    let wf = Wf::feature();
    // implement (an agent step) fails; a plain checkpoint of test follows.
    let r = wf.report(
        &["run", FEATURE, "--run", "r1"],
        &[("FAIL_STEP", "implement")],
    );
    assert_eq!(r["finished"], false, "{r:#}");
    wf.repo.write("notes.txt", "looked at it\n");
    wf.ok(&["checkpoint", "test", "-m", "manual look"]);
    let out = wf.json(&["rewind", "r1", "--to", "r1@-1", "--run", "r2"]);
    assert_eq!(
        out["inherited_steps"],
        serde_json::json!(["implement", "plan"]),
        "{out:#}"
    );
    // plan completed: skipped; implement failed: not done, the agent step waits for --retry.
    let r = wf.report(&["resume", "r2"], &[]);
    assert_eq!(action(&r, "plan"), "skipped", "{r:#}");
    assert_eq!(action(&r, "implement"), "stopped", "{r:#}");
    assert!(r["stopped"].as_str().unwrap().contains("failed"), "{r:#}");
    assert_eq!(wf.counts(&FEATURE_STEPS), [1, 1, 0, 0]);
}
