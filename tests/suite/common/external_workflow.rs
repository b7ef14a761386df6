//! A repository holding a workflow whose first step is external (done by a "worker": the
//! test itself) and whose second step is a command that appends its attempt to
//! `$COUNT_DIR/<step>` (a folder outside the repository), so a test counts how often each
//! step really started. `HOLD=<file>` makes
//! that command wait (at most a minute) until the file exists.
#![allow(dead_code)]

use super::{Repo, bin};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The command of a counted step.
pub const COUNTED: &str = "echo \"$AGENT_ATTEMPT\" >> \"$COUNT_DIR/$AGENT_STEP\"; \
if [ -n \"$HOLD\" ]; then i=0; while [ ! -e \"$HOLD\" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; fi";

/// `implement` (external) then `test` (a counted command of `kind`), with `extra` added to
/// the external step's table.
pub fn workflow(kind: &str, extra: &str) -> String {
    format!(
        "[workflow]\nname = \"ext\"\n\n[[steps]]\nname = \"implement\"\nkind = \"agent\"\nexternal = true\n{extra}\n\n[[steps]]\nname = \"test\"\nkind = \"{kind}\"\nrun = '{COUNTED}'\n"
    )
}

pub struct Ext {
    pub repo: Repo,
    pub counts: tempfile::TempDir,
}

impl Ext {
    /// A repository with `workflow` committed as `wf.toml`.
    pub fn new(workflow: &str) -> Ext {
        let repo = Repo::new();
        repo.write("wf.toml", workflow);
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", "workflow"]);
        Ext {
            repo,
            counts: tempfile::tempdir().unwrap(),
        }
    }

    pub fn cmd(&self) -> Command {
        let mut c = crate::common::tool_cmd(self.repo.path());
        c.env("COUNT_DIR", self.counts.path()).env_remove("HOLD");
        c
    }

    pub fn out(&self, args: &[&str]) -> Output {
        self.cmd()
            .args(args)
            .output()
            .expect("run git-agent-rewind")
    }

    /// Run `args`, expecting exit status `code`; returns stdout.
    pub fn code(&self, code: i32, args: &[&str]) -> String {
        let out = self.out(args);
        assert_eq!(
            out.status.code(),
            Some(code),
            "git-agent-rewind {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// `--json` output of `args`, expecting exit status `code`.
    pub fn json(&self, code: i32, args: &[&str]) -> Value {
        let mut a = vec!["--json"];
        a.extend_from_slice(args);
        let text = self.code(code, &a);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    }

    /// `run wf.toml --run <run>`: it begins `implement` and waits for its worker (exit 3).
    pub fn start(&self, run: &str) -> Value {
        let v = self.json(3, &["run", "wf.toml", "--run", run]);
        assert_eq!(v["outcome"], "waiting", "{v:#}");
        assert_eq!(v["waiting_on"], "workers", "{v:#}");
        v
    }

    /// The attempts `step`'s command recorded, one per start.
    pub fn starts(&self, step: &str) -> Vec<String> {
        match std::fs::read_to_string(self.counts.path().join(step)) {
            Ok(t) => t.lines().map(str::to_string).collect(),
            Err(_) => vec![],
        }
    }

    /// `list <run> --json`.
    pub fn list(&self, run: &str) -> Vec<Value> {
        self.json(0, &["list", run]).as_array().unwrap().clone()
    }

    /// (step, attempt, event, status) of every checkpoint of `run`.
    pub fn history(&self, run: &str) -> Vec<(String, u64, String, String)> {
        self.list(run)
            .iter()
            .filter(|c| c["step"].is_string())
            .map(|c| {
                (
                    c["step"].as_str().unwrap().to_string(),
                    c["attempt"].as_u64().unwrap(),
                    c["event"].as_str().unwrap().to_string(),
                    c["status"].as_str().unwrap_or("-").to_string(),
                )
            })
            .collect()
    }

    /// Every ref and its value: what "nothing written" compares.
    pub fn refs(&self) -> Vec<(String, String)> {
        crate::common::refs(self.repo.path(), "refs/")
    }

    /// `step end implement --run <run> --attempt <n> --status <status>`.
    pub fn report(&self, run: &str, attempt: u32, status: &str) -> Output {
        self.out(&[
            "step",
            "end",
            "implement",
            "--run",
            run,
            "--attempt",
            &attempt.to_string(),
            "--status",
            status,
        ])
    }

    /// Start `watch <args>` in its own process group, its stdout into a file.
    pub fn spawn_watch(&self, args: &[&str], env: &[(&str, &str)]) -> Watcher {
        let out = tempfile::NamedTempFile::new().unwrap();
        let mut c = self.cmd();
        c.arg("watch").args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        c.stdin(Stdio::null())
            .stdout(Stdio::from(out.reopen().unwrap()))
            .stderr(Stdio::null());
        agent_rewind_core::platform::process::own_process_group(&mut c);
        let child = c.spawn().expect("spawn the watcher");
        Watcher {
            child,
            out,
            status: None,
        }
    }
}

/// A watcher running in its own process group; the whole group is killed when dropped.
pub struct Watcher {
    pub child: Child,
    out: tempfile::NamedTempFile,
    pub status: Option<i32>,
}

impl Watcher {
    /// What it printed so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(self.out.path()).unwrap()
    }

    /// Wait (bounded) until its output holds `text`.
    pub fn wait_for_output(&mut self, text: &str) {
        wait_for(&format!("the watcher to print {text:?}"), || {
            if let Some(s) = self.child.try_wait().unwrap() {
                panic!("the watcher exited ({s}): {}", self.output());
            }
            self.output().contains(text).then_some(())
        });
    }

    /// Its launch lines so far.
    pub fn launches(&self) -> Vec<String> {
        self.output()
            .lines()
            .filter(|l| l.starts_with("launched ") || l.starts_with("dispatched "))
            .map(str::to_string)
            .collect()
    }

    /// Wait (bounded) for it to exit by itself; its exit status.
    pub fn wait(&mut self) -> i32 {
        if let Some(s) = self.status {
            return s;
        }
        let status = wait_for("the watcher to exit", || self.child.try_wait().unwrap());
        self.status = Some(status.code().unwrap_or(-1));
        self.status.unwrap()
    }

    pub fn running(&mut self) -> bool {
        self.status.is_none() && self.child.try_wait().unwrap().is_none()
    }

    /// SIGKILL its whole process group (the watcher and the step it runs).
    pub fn kill(&mut self) {
        if self.status.is_some() {
            return;
        }
        kill_group(self.child.id());
        let _ = self.child.wait();
        self.status = Some(-9);
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.kill();
    }
}

fn kill_group(pgid: u32) {
    let _ = Command::new("kill")
        .args(["-9", "--", &format!("-{pgid}")])
        .status();
}

/// Poll `f` until it gives a value; a guard of two minutes against hanging, not a timing
/// assertion.
pub fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A file path in `dir` that does not exist yet (to release a held step by creating it).
pub fn hold_file(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("release")
}

pub fn bin_path() -> PathBuf {
    bin()
}
