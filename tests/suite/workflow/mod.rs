//! Workflows, resume and steer (docs/COMMANDS.md "Workflows"), end to end against real git
//! repositories: the scripted fake agent (fixtures/agents/fake-agent.sh) counts its
//! invocations per step in `$COUNT_DIR/<step>` (a folder outside the repository), so every
//! test can check how often each step really ran.

use crate::common;
use crate::common::stderr;

mod bad_files;
mod gates;
mod interrupt;
mod resume;
mod run;
mod screens;
mod steer;
mod travel;
mod trust;

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
        self.spawn_sleeping_to(args, step, Stdio::null(), Stdio::null())
    }

    /// [`Self::spawn_sleeping`] with the tool's stdout and stderr sent where the test says.
    fn spawn_sleeping_to(&self, args: &[&str], step: &str, out: Stdio, err: Stdio) -> Sleeper {
        let child = self
            .cmd()
            .args(args)
            .env("SLEEP_STEP", step)
            .env("SLEEP_SECS", "30")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
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

/// Send SIGINT to the whole process group `pgid`, as Ctrl-C at a terminal does.
fn interrupt_group(pgid: u32) {
    let status = Command::new("kill")
        .args(["-INT", "--", &format!("-{pgid}")])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -INT -- -{pgid} failed");
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
