//! The everyday surface (issue 12), driven through the binary against real git: exit codes
//! scripts can trust, `--json` errors, the writer's identity, paths resolved where the
//! command was started, help and man pages, completion, readable list/diff output, and
//! terminal-safe rendering of fields that came from a user or a remote.

mod common;

use common::{Repo, tool_cmd};
use serde_json::Value;
use std::path::Path;
use std::process::Output;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Run the tool in `dir` with extra environment.
fn tool(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = tool_cmd(dir);
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run git-agent-rewind")
}

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", text(&out.stdout), text(&out.stderr)))
}

// ---------------------------------------------------------------------------------------
// 1. Exit codes of `run` and `resume`.

fn workflow_repo(steps: &str) -> Repo {
    let r = Repo::new();
    r.write("wf.toml", &format!("[workflow]\nname = \"wf\"\n\n{steps}"));
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "workflow"]);
    r
}

const OK_STEP: &str = "[[steps]]\nname = \"build\"\nkind = \"deterministic\"\nrun = \"true\"\n\n";

#[test]
fn run_exits_0_only_when_the_run_completed() {
    let r = workflow_repo(OK_STEP);
    let out = r.run(&["--json", "run", "wf.toml", "--run", "r1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = stdout_json(&out);
    assert_eq!(doc["outcome"], "completed", "{doc:#}");
    assert_eq!(doc["finished"], true, "{doc:#}");
    // Resuming a completed run is still a completed run.
    let out = r.run(&["resume", "r1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn a_failed_step_exits_1_and_a_rejected_gate_exits_1() {
    let r = workflow_repo(
        "[[steps]]\nname = \"build\"\nkind = \"deterministic\"\nrun = \"sh -c 'exit 3'\"\n",
    );
    let out = r.run(&["run", "wf.toml", "--run", "r1"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("failed with exit code 3"));
    let out = r.run(&["--json", "resume", "r1"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout_json(&out)["outcome"], "failed");

    let r = workflow_repo(&format!(
        "{OK_STEP}[[steps]]\nname = \"review\"\nkind = \"gate\"\n"
    ));
    let out = r.run(&["--json", "run", "wf.toml", "--run", "r1"]);
    assert_eq!(out.status.code(), Some(3));
    r.ok(&["reject", "r1/review", "--by", "boss"]);
    let out = r.run(&["--json", "resume", "r1"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert_eq!(stdout_json(&out)["outcome"], "failed");
}

#[test]
fn a_gate_awaiting_approval_exits_3_until_approved() {
    let r = workflow_repo(&format!(
        "{OK_STEP}[[steps]]\nname = \"review\"\nkind = \"gate\"\n\n{}",
        OK_STEP.replace("build", "deploy")
    ));
    let out = r.run(&["--json", "run", "wf.toml", "--run", "r1"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let doc = stdout_json(&out);
    assert_eq!(doc["outcome"], "waiting", "{doc:#}");
    // Human output: same exit status, says why.
    let out = r.run(&["resume", "r1"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stdout).contains("awaiting approval"));
    // `run … && deploy` does not deploy.
    let sh = std::process::Command::new("sh")
        .current_dir(r.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .arg("-c")
        .arg(format!(
            "{} resume r1 >/dev/null && echo deployed",
            common::bin().display()
        ))
        .output()
        .unwrap();
    assert_eq!(text(&sh.stdout), "");

    let gate = r.rev("refs/agent-runs/r1/review");
    r.ok(&["approve", &gate, "--by", "boss"]);
    let out = r.run(&["--json", "resume", "r1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert_eq!(stdout_json(&out)["outcome"], "completed");
}

// ---------------------------------------------------------------------------------------
// 9. Machine-readable errors; the writer is git's identity.

#[test]
fn json_errors_are_a_document_on_stdout_with_the_same_exit_code() {
    let r = Repo::new();
    r.ok(&["start", "--run", "r1"]);
    let cases: [(&[&str], &str, i32); 4] = [
        (&["--json", "show", "nosuch"], "not-found", 1),
        (&["--json", "checkpoint", "bad name!"], "usage", 2),
        (&["list", "--json", "--no-such-flag"], "usage", 2),
        (&["--json", "start", "--run", "r1"], "refused", 1),
    ];
    for (args, kind, code) in cases {
        let out = r.run(args);
        assert_eq!(out.status.code(), Some(code), "{args:?}");
        let doc = stdout_json(&out);
        assert_eq!(doc["error"]["kind"], kind, "{args:?}: {doc:#}");
        let message = doc["error"]["message"].as_str().unwrap();
        assert!(!message.is_empty(), "{doc:#}");
        assert!(doc["error"].get("hint").is_some(), "{doc:#}");
        // stderr keeps the human line.
        let err = text(&out.stderr);
        assert!(err.starts_with("error: "), "{args:?}: {err}");
    }
    // Without --json nothing is printed on stdout.
    let out = r.run(&["show", "nosuch"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
}

#[test]
fn the_writer_is_the_git_identity_and_the_environment_only_without_one() {
    let r = Repo::new();
    let out = tool_cmd(r.path())
        .args(["checkpoint", "s1", "--run", "r1"])
        .env_remove("USER")
        .env_remove("EMAIL")
        .env_remove("GIT_AUTHOR_NAME")
        .env_remove("GIT_AUTHOR_EMAIL")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        r.json(&["show", "r1"])["writer"],
        "Test User <test@example.com>"
    );

    // No identity anywhere: the machine's user and host.
    r.git(&["config", "--unset", "user.name"]);
    r.git(&["config", "--unset", "user.email"]);
    let out = tool_cmd(r.path())
        .args(["checkpoint", "s2", "--run", "r1"])
        .env("USER", "someone")
        .env_remove("EMAIL")
        .env_remove("GIT_AUTHOR_NAME")
        .env_remove("GIT_AUTHOR_EMAIL")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let writer = r.json(&["show", "r1"])["writer"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(writer.starts_with("someone@"), "{writer}");
}
