//! The user's `post-agent-rewind` hook (docs/HOOKS.md): after `rewind`, `fork`, `restore`,
//! `revert` and `undo`, the executable hook of git's hooks folder runs in the worktree's top
//! folder with the operation, the source and target checkpoints and the backup; a dry run
//! runs nothing; a failing hook is a warning and the operation stays done; `core.hooksPath`
//! is honoured; a hook that is not executable is not run, as git does.

use crate::common::{Repo, stderr};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// A hook that appends its arguments and its folder to `calls` and exits `code`.
fn install_hook(dir: &Path, calls: &Path, code: i32) {
    std::fs::create_dir_all(dir).unwrap();
    let hook = dir.join("post-agent-rewind");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\necho \"$1 $2 $3 $4 $(pwd)\" >> '{}'\necho hook-output\nexit {code}\n",
            calls.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn calls(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split(' ').map(str::to_string).collect())
        .collect()
}

fn two_steps() -> Repo {
    let r = Repo::new();
    r.write("a.txt", "first\n");
    r.ok(&["checkpoint", "s1", "--run", "r1"]);
    r.write("a.txt", "changed\n");
    r.ok(&["checkpoint", "s2", "--run", "r1"]);
    r
}

#[test]
fn every_operation_that_changes_files_runs_the_hook_with_its_checkpoints() {
    let r = two_steps();
    let log = r.path().join(".git/hook-calls");
    install_hook(&r.path().join(".git/hooks"), &log, 0);
    let root = std::fs::canonicalize(r.path()).unwrap();
    let root = root.display().to_string();
    let s1 = r
        .git(&["rev-parse", "refs/agent-runs/r1/s1"])
        .trim()
        .to_string();
    let null = "0".repeat(40);

    // A dry run changes nothing and runs nothing.
    r.ok(&["rewind", "r1", "--to", "s2", "--dry-run"]);
    assert!(calls(&log).is_empty());

    let out = r.json(&["rewind", "r1", "--to", "s2", "--run", "r2"]);
    let c = calls(&log);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0][0], "rewind");
    assert_eq!(c[0][1], out["from_checkpoint"].as_str().unwrap());
    assert_eq!(c[0][2], out["checkpoint"].as_str().unwrap());
    assert_eq!(c[0][3], out["backup"]["commit"].as_str().unwrap());
    assert_eq!(c[0][4], root);

    r.ok(&["undo"]);
    let c = calls(&log);
    assert_eq!(c[1][0], "undo");
    assert_eq!(c[1][2], null, "undo has no target checkpoint");

    r.write("a.txt", "mine\n");
    r.ok(&["restore", "r1/s1", "--", "a.txt"]);
    let c = calls(&log);
    assert_eq!(c[2][0], "restore");
    assert_eq!(c[2][1], s1);
    assert_eq!(
        r.read("a.txt"),
        r.git(&["show", "refs/agent-runs/r1/s1:a.txt"])
    );

    r.ok(&["fork", "r1", "--to", "s2", "--run", "f1", "--no-checkout"]);
    assert_eq!(calls(&log)[3][0], "fork");
    assert_eq!(
        calls(&log)[3][3],
        null,
        "a fork that checks nothing out takes no backup"
    );

    r.write("a.txt", "changed\n");
    let out = r.json(&["revert", "r1/s2"]);
    let c = calls(&log);
    assert_eq!(c[4][0], "revert");
    assert_eq!(c[4][1], out["from"].as_str().unwrap());
    assert_eq!(c[4][2], out["to"].as_str().unwrap());
    assert_eq!(c.len(), 5);
}

#[test]
fn a_failing_hook_is_a_warning_and_the_operation_stays_done() {
    let r = two_steps();
    let log = r.path().join(".git/hook-calls");
    install_hook(&r.path().join(".git/hooks"), &log, 3);
    r.write("a.txt", "mine\n");
    let out = r.run(&["restore", "r1/s1", "--json", "--", "a.txt"]);
    let stderr = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("post-agent-rewind hook exited 3"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hook-output"),
        "the hook's output goes to stderr: {stderr}"
    );
    // stdout is the command's JSON alone.
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(json["backup"]["commit"].is_string());
    assert_ne!(r.read("a.txt"), "mine\n");
    assert_eq!(calls(&log).len(), 1);
}

#[test]
fn core_hooks_path_is_honoured_and_a_hook_that_is_not_executable_is_not_run() {
    let r = two_steps();
    let log = r.path().join(".git/hook-calls");
    // Not executable in the default folder: git would not run it, nor do we.
    install_hook(&r.path().join(".git/hooks"), &log, 0);
    let default = r.path().join(".git/hooks/post-agent-rewind");
    std::fs::set_permissions(&default, std::fs::Permissions::from_mode(0o644)).unwrap();
    r.write("a.txt", "mine\n");
    r.ok(&["restore", "r1/s1", "--", "a.txt"]);
    assert!(calls(&log).is_empty());
    // core.hooksPath names another folder: its hook runs.
    install_hook(&r.path().join("my-hooks"), &log, 0);
    r.git(&["config", "core.hooksPath", "my-hooks"]);
    r.write("a.txt", "mine again\n");
    r.ok(&["restore", "r1/s1", "--", "a.txt"]);
    assert_eq!(calls(&log).len(), 1);
    assert_eq!(calls(&log)[0][0], "restore");
}
