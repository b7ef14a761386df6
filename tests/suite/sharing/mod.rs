//! Sharing and retention against real git (docs/SHARING.md): push/fetch through a bare
//! repository over `file://` and through `git daemon` on 127.0.0.1, the five import cases,
//! notes merged by union, concurrent pushes (twenty writers at once over `file://` and smart
//! HTTP), validation of fetched data, delete, gc, and
//! export/import as a git bundle.

use crate::common;
use crate::common::stderr;

mod bundles;
mod divergence;
mod host_limits;
mod http_server;
mod remote_choice;
mod remote_retention;
mod retain_policy;
mod retention;
mod round_trip;
mod signed_fetch;
mod signing;
mod tombstones;
mod validation;
mod writers;

use common::{Repo, git_in, ok_in, refs};
use serde_json::Value;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// A bare repository holding one commit on `main`, to push runs to.
struct Bare {
    dir: tempfile::TempDir,
}

impl Bare {
    fn new() -> Bare {
        Bare::new_with(&[])
    }
    /// [`Bare::new`] with more `git init` options (its seed repository gets them too).
    fn new_with(init: &[&str]) -> Bare {
        let dir = tempfile::tempdir().unwrap();
        git_in(
            dir.path(),
            &[
                &["init", "-q", "--bare", "-b", "main"],
                init,
                &["remote.git"],
            ]
            .concat(),
        );
        let seed = Repo::new_with(init);
        let url = format!("file://{}", dir.path().join("remote.git").display());
        seed.git(&["push", "-q", &url, "main"]);
        Bare { dir }
    }
    fn path(&self) -> PathBuf {
        self.dir.path().join("remote.git")
    }
    fn url(&self) -> String {
        format!("file://{}", self.path().display())
    }
    fn git(&self, args: &[&str]) -> String {
        git_in(&self.path(), args)
    }
}

/// A clone of `url` with its own identity, whose runs go to `origin` (agentRewind.remote).
fn clone(url: &str, who: &str) -> Repo {
    clone_with(url, who, &[])
}

/// [`clone`] with more `git clone` options.
fn clone_with(url: &str, who: &str, options: &[&str]) -> Repo {
    let dir = tempfile::tempdir().unwrap();
    git_in(
        dir.path(),
        &[&["clone", "-q"], options, &[url, "."]].concat(),
    );
    let r = Repo { dir };
    r.git(&["config", "user.name", who]);
    r.git(&["config", "user.email", &format!("{who}@example.com")]);
    r.git(&["config", "commit.gpgsign", "false"]);
    r.git(&["config", "agentRewind.remote", "origin"]);
    r
}

fn js(dir: &Path, args: &[&str]) -> Value {
    let mut a = vec!["--json"];
    a.extend_from_slice(args);
    let out = ok_in(dir, &a);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// The result of one run in a push/fetch report.
fn result_of(report: &Value, run: &str) -> Value {
    report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run"] == run)
        .cloned()
        .unwrap_or_else(|| panic!("no {run} in {report:#}"))
}

/// A run with a few checkpoints: start, plan (completed), implement (completed).
fn make_run(r: &Repo, run: &str) {
    ok_in(r.path(), &["start", "--run", run, "--label", "shared work"]);
    r.write("PLAN.md", &format!("plan of {run}\n"));
    ok_in(
        r.path(),
        &["checkpoint", "plan", "--run", run, "--status", "completed"],
    );
    r.write("src.txt", &format!("implementation of {run}\n"));
    // An untracked file is part of the snapshot, so it is shared too.
    r.write("notes/scratch.txt", "scratch\n");
    ok_in(
        r.path(),
        &[
            "checkpoint",
            "implement",
            "--run",
            run,
            "--status",
            "completed",
        ],
    );
}

/// Every ref and notes ref of a run: (name, id).
fn run_refs(dir: &Path, run: &str) -> Vec<(String, String)> {
    let mut v = refs(dir, &format!("refs/agent-runs/{run}/"));
    v.extend(
        refs(dir, "refs/notes/agent-runs/")
            .into_iter()
            .filter(|(n, _)| n == &format!("refs/notes/agent-runs/{run}")),
    );
    v
}

/// A gate checkpoint of `step` awaiting approval in `run` (only a gate takes approvals).
fn open_gate(dir: &Path, run: &str, step: &str) {
    ok_in(
        dir,
        &[
            "checkpoint",
            step,
            "--run",
            run,
            "--kind",
            "gate",
            "--status",
            "awaiting_approval",
        ],
    );
}
