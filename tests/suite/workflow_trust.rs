//! A run brings its workflow's text with it (the root note), so `fetch` can bring commands
//! written elsewhere. They never run just because they arrived: `resume` and `watch` refuse
//! a stored workflow that was not run here and is in no file of this worktree, until the
//! user says `resume --trust` (or gives `--workflow FILE`). Workflows run here stay trusted
//! when their file is gone.

use crate::common;

use common::{Repo, git_in, refs, tool_cmd};
use std::path::Path;
use std::process::Output;

const FLOW: &str = r#"[workflow]
name = "trust"

[[steps]]
name = "a"
kind = "deterministic"
run = "echo ran-a >> \"$TRUST_LOG\""

[[steps]]
name = "b"
kind = "deterministic"
run = "test -f go.txt && echo ran-b >> \"$TRUST_LOG\""
needs = ["a"]
"#;

fn tool(dir: &Path, log: &Path, args: &[&str]) -> Output {
    tool_cmd(dir)
        .args(args)
        .env("TRUST_LOG", log)
        .output()
        .expect("run git-agent-rewind")
}

fn log_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_fetched_runs_workflow_runs_only_when_trusted() {
    let tmp = tempfile::tempdir().unwrap();
    let bare = tmp.path().join("remote.git");
    git_in(
        tmp.path(),
        &["init", "-q", "--bare", "-b", "main", "remote.git"],
    );
    let url = format!("file://{}", bare.display());

    // Machine A runs the workflow from a file it never commits; step b fails there.
    let a = Repo::new();
    a.git(&["remote", "add", "origin", &url]);
    a.git(&["push", "-q", "origin", "main"]);
    a.write("flow.toml", FLOW);
    let log_a = tmp.path().join("a.log");
    let o = tool(a.path(), &log_a, &["run", "flow.toml", "--run", "w1"]);
    assert_eq!(o.status.code(), Some(1), "b fails on A: {}", stderr(&o));
    assert_eq!(log_lines(&log_a), ["ran-a"]);
    assert!(
        tool(a.path(), &log_a, &["push", "origin", "w1"])
            .status
            .success()
    );

    // Machine B fetches it. Its worktree has no flow.toml.
    let b_dir = tempfile::tempdir().unwrap();
    git_in(b_dir.path(), &["clone", "-q", &url, "."]);
    let b = Repo { dir: b_dir };
    b.git(&["config", "user.name", "B"]);
    b.git(&["config", "user.email", "b@example.com"]);
    let log_b = tmp.path().join("b.log");
    let o = tool(b.path(), &log_b, &["fetch", "origin", "w1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    b.write("go.txt", "go\n");

    // resume refuses, runs nothing and records nothing.
    let before = refs(b.path(), "refs/");
    let o = tool(b.path(), &log_b, &["resume", "w1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("was not run in this repository"), "{err}");
    assert!(err.contains("resume w1 --trust"), "{err}");
    assert_eq!(log_lines(&log_b), Vec::<String>::new());
    assert_eq!(
        refs(b.path(), "refs/"),
        before,
        "a refused resume wrote refs"
    );

    // So does the watcher.
    let o = tool(b.path(), &log_b, &["watch", "w1", "--once"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("--trust"), "{}", stderr(&o));
    assert_eq!(log_lines(&log_b), Vec::<String>::new());
    assert_eq!(
        refs(b.path(), "refs/"),
        before,
        "a refused watch wrote refs"
    );

    // --trust runs it (a finished, b again) and remembers it.
    let o = tool(b.path(), &log_b, &["resume", "w1", "--trust"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(log_lines(&log_b), ["ran-b"]);
    let o = tool(b.path(), &log_b, &["resume", "w1"]);
    assert_eq!(o.status.code(), Some(0), "trusted now: {}", stderr(&o));
    b.assert_fsck();
}

/// A run of FLOW started here whose step b failed (no go.txt), then `remove` deleted, then
/// go.txt written and `resume` run: it must finish, running b only.
fn resume_here_after_removing(remove: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let r = Repo::new();
    r.write("flow.toml", FLOW);
    let log = tmp.path().join("r.log");
    let o = tool(r.path(), &log, &["run", "flow.toml", "--run", "w1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    std::fs::remove_file(r.path().join(remove)).unwrap();
    r.write("go.txt", "go\n");
    let o = tool(r.path(), &log, &["resume", "w1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(log_lines(&log), ["ran-a", "ran-b"]);
}

#[test]
fn a_workflow_run_here_stays_runnable_when_its_file_is_gone() {
    resume_here_after_removing("flow.toml");
}

#[test]
fn a_stored_workflow_whose_file_is_in_the_worktree_runs() {
    // A run recorded before the trusted list existed: its list entry is missing, but the
    // file it was stored from is here with the same content.
    resume_here_after_removing(".git/agent-rewind/trusted-workflows");
}
