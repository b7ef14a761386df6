//! `revert`: take back what one run did and keep everyone else's work, through
//! the binary against real git: per-file three-way merges, conflicts refused with nothing
//! written, creations/deletions/renames/modes/symlinks, step and checkpoint scopes, after a
//! rewind, and on a run fetched from a remote; every write undoable byte for byte.

mod hostile;

use crate::common;
use crate::common::stderr;

use common::worktree::{file_action, worktree_state};
use common::{Repo, git_in, json_in, ok_in, run_in};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Start run `run` (active from then on), let `work` change the worktree, checkpoint it.
fn run_that(r: &Repo, run: &str, step: &str, work: impl FnOnce(&Repo)) {
    r.ok(&["start", "--run", run]);
    work(r);
    r.ok(&["checkpoint", step, "--run", run]);
}

/// The paths a revert's JSON output lists, in order.
fn paths_of(out: &serde_json::Value) -> Vec<String> {
    out["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn reverting_one_run_keeps_the_other_runs_edits() {
    let r = Repo::new();
    r.write("a.txt", "a1\n");
    r.write("b.txt", "b1\n");
    r.git(&["add", "-A"]);
    r.git(&["commit", "-qm", "base"]);
    run_that(&r, "ra", "edit", |r| r.write("a.txt", "a1\nfrom run a\n"));
    run_that(&r, "rb", "edit", |r| r.write("b.txt", "b1\nfrom run b\n"));
    let status_before = r.git(&["status", "--porcelain"]);

    let out = json_in(r.path(), &["revert", "ra"]);
    assert_eq!(out["rule"], "diff");
    assert_eq!(out["files"][0]["path"], "a.txt");
    assert_eq!(out["files"][0]["action"], "revert");
    assert_eq!(out["files"].as_array().unwrap().len(), 1);
    assert_eq!(r.read("a.txt"), "a1\n", "run a's edit is taken back");
    assert_eq!(
        r.read("b.txt"),
        "b1\nfrom run b\n",
        "run b's edit is intact"
    );
    assert_eq!(r.git(&["status", "--porcelain"]), " M b.txt\n");

    // The record is on the run, and undo brings the state before the revert back.
    let shown = json_in(r.path(), &["show", "ra"]);
    let record = &shown["records"][0];
    assert_eq!(
        record["type"], "revert",
        "show lists the revert record: {shown}"
    );
    assert_eq!(record["files"][0]["path"], "a.txt");
    // Who reverted is the git identity, as for every other record.
    assert_eq!(record["by"], "Test User <test@example.com>");
    assert!(record["ts"].is_string());
    let human = r.ok(&["show", "ra"]);
    assert!(human.contains("\"type\":\"revert\""), "{human}");
    let runs = json_in(r.path(), &["list"]);
    let ra = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["run"] == "ra")
        .unwrap();
    assert_eq!(
        ra["reverted"], true,
        "list says the run was reverted: {runs}"
    );
    assert!(r.ok(&["list"]).contains("reverted"));
    r.ok(&["undo"]);
    assert_eq!(r.read("a.txt"), "a1\nfrom run a\n");
    assert_eq!(r.git(&["status", "--porcelain"]), status_before);
    r.assert_fsck();
}

#[test]
fn a_later_edit_by_someone_else_is_merged_or_refused() {
    let r = Repo::new();
    let lines: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    r.write("f.txt", &lines);
    r.git(&["add", "-A"]);
    r.git(&["commit", "-qm", "base"]);
    // The run changes line 2; the user then changes line 18 (far away): a clean merge.
    run_that(&r, "r1", "edit", |r| {
        r.write("f.txt", &lines.replace("line 2\n", "line 2 by agent\n"))
    });
    let user = lines
        .replace("line 2\n", "line 2 by agent\n")
        .replace("line 18\n", "line 18 by user\n");
    r.write("f.txt", &user);
    let out = json_in(r.path(), &["revert", "r1"]);
    assert_eq!(out["files"][0]["action"], "merge");
    assert_eq!(
        r.read("f.txt"),
        lines.replace("line 18\n", "line 18 by user\n"),
        "the agent's line is back, the user's stays"
    );

    // A second run changes line 5; the user edits the same line: a real conflict.
    let now = r.read("f.txt");
    run_that(&r, "r2", "edit", |r| {
        r.write("f.txt", &now.replace("line 5\n", "line 5 by agent\n"))
    });
    let conflicted = now.replace("line 5\n", "line 5 by user\n");
    r.write("f.txt", &conflicted);
    let backups = r.git(&["rev-list", "--count", "refs/agent-rewind/backups"]);
    let out = run_in(r.path(), &["revert", "r2"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("f.txt"),
        "names the file: {}",
        stderr(&out)
    );
    assert_eq!(r.read("f.txt"), conflicted, "nothing written");
    assert_eq!(
        r.git(&["rev-list", "--count", "refs/agent-rewind/backups"]),
        backups,
        "no backup taken"
    );
    // The dry run shows the conflict (exit 1: the revert would be refused) and writes
    // nothing either.
    let out = run_in(r.path(), &["--json", "revert", "r2", "--dry-run"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["files"][0]["action"], "conflict");
    assert_eq!(r.read("f.txt"), conflicted);

    // With markers: git-style markers are written, after a backup.
    let out = json_in(r.path(), &["revert", "r2", "--conflict=markers"]);
    assert_eq!(out["files"][0]["action"], "markers");
    let text = r.read("f.txt");
    assert!(
        text.contains("<<<<<<< worktree\nline 5 by user\n=======\nline 5\n>>>>>>> r2 (before)\n"),
        "{text}"
    );
    r.ok(&["undo"]);
    assert_eq!(
        r.read("f.txt"),
        conflicted,
        "undo brings the conflicted state back"
    );
}

#[test]
fn a_merged_file_takes_back_the_runs_mode_change_too() {
    let r = Repo::new();
    let lines: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    r.write("s.sh", &lines);
    r.git(&["add", "-A"]);
    r.git(&["commit", "-qm", "base"]);
    let script = r.path().join("s.sh");
    run_that(&r, "r1", "edit", |r| {
        r.write("s.sh", &lines.replace("line 1\n", "#!/bin/sh\n"));
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    });
    r.write(
        "s.sh",
        &lines
            .replace("line 1\n", "#!/bin/sh\n")
            .replace("line 19\n", "line 19 by user\n"),
    );
    let out = json_in(r.path(), &["revert", "r1"]);
    assert_eq!(out["files"][0]["action"], "merge");
    assert_eq!(
        r.read("s.sh"),
        lines.replace("line 19\n", "line 19 by user\n")
    );
    let mode = std::fs::metadata(&script).unwrap().permissions().mode();
    assert_eq!(mode & 0o111, 0, "the run's exec bit is taken back");
}

#[test]
fn creations_deletions_renames_modes_and_symlinks() {
    let r = Repo::new();
    r.write("gone.txt", "to be deleted\n");
    r.write("old-name.txt", "renamed content\n");
    r.write("tool.sh", "#!/bin/sh\n");
    std::os::unix::fs::symlink("README.md", r.path().join("link")).unwrap();
    r.git(&["add", "-A"]);
    r.git(&["commit", "-qm", "base"]);
    let before = worktree_state(r.path());
    run_that(&r, "r1", "edit", |r| {
        r.write("new.txt", "created by the run\n");
        r.write("kept-new.txt", "created, then changed by the user\n");
        std::fs::remove_file(r.path().join("gone.txt")).unwrap();
        std::fs::rename(r.path().join("old-name.txt"), r.path().join("new-name.txt")).unwrap();
        let sh = r.path().join("tool.sh");
        std::fs::set_permissions(&sh, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::remove_file(r.path().join("link")).unwrap();
        std::os::unix::fs::symlink("new.txt", r.path().join("link")).unwrap();
    });
    // Since the run: the user changed one of its creations.
    r.write("kept-new.txt", "created, then changed by the user\nmore\n");

    let out = json_in(r.path(), &["revert", "r1"]);
    let action = |p: &str| file_action(&out, p);
    assert_eq!(action("new.txt").as_deref(), Some("revert"));
    assert_eq!(action("kept-new.txt").as_deref(), Some("keep"));
    assert_eq!(action("gone.txt").as_deref(), Some("revert"));
    assert_eq!(action("tool.sh").as_deref(), Some("revert"));
    assert_eq!(action("link").as_deref(), Some("revert"));
    let mut expected = before.clone();
    expected.push((
        "kept-new.txt".into(),
        "x=false created, then changed by the user\nmore\n".into(),
    ));
    expected.sort();
    assert_eq!(worktree_state(r.path()), expected);
    assert_eq!(r.git(&["status", "--porcelain"]), "?? kept-new.txt\n");

    // A deletion is not restored over a path re-created since.
    run_that(&r, "r2", "edit", |r| {
        std::fs::remove_file(r.path().join("gone.txt")).unwrap()
    });
    r.write("gone.txt", "someone else's new file\n");
    let out = json_in(r.path(), &["revert", "r2"]);
    assert_eq!(out["files"][0]["action"], "keep");
    assert_eq!(r.read("gone.txt"), "someone else's new file\n");
    r.assert_fsck();
}

#[test]
fn a_step_in_the_middle_of_a_run_and_a_single_checkpoint() {
    let r = Repo::new();
    r.ok(&["start", "--run", "r1"]);
    r.ok(&["step", "begin", "plan"]);
    r.write("plan.md", "the plan\n");
    r.ok(&["step", "end", "plan", "--status", "completed"]);
    r.ok(&["step", "begin", "implement"]);
    r.write("code.rs", "fn main() {}\n");
    r.ok(&["checkpoint", "implement"]);
    r.write("code.rs", "fn main() { work() }\n");
    r.ok(&["step", "end", "implement", "--status", "completed"]);
    r.ok(&["step", "begin", "test"]);
    r.write("test.rs", "#[test] fn t() {}\n");
    r.ok(&["step", "end", "test", "--status", "completed"]);

    let out = json_in(r.path(), &["revert", "r1/implement"]);
    assert_eq!(out["scope"], "step implement");
    assert_eq!(paths_of(&out), ["code.rs"]);
    assert!(
        !r.path().join("code.rs").exists(),
        "implement's file is gone"
    );
    assert_eq!(r.read("plan.md"), "the plan\n", "plan's work stays");
    assert_eq!(
        r.read("test.rs"),
        "#[test] fn t() {}\n",
        "test's work stays"
    );
    r.ok(&["undo"]);
    assert_eq!(r.read("code.rs"), "fn main() { work() }\n");

    // One checkpoint: only what it changed against its predecessor.
    let cps = common::checkpoints(r.path(), "r1");
    let seq = cps
        .iter()
        .find(|c| c["step"] == "implement" && c["event"] == "finish")
        .unwrap()["seq"]
        .as_u64()
        .unwrap();
    let out = json_in(r.path(), &["revert", &format!("r1@{seq}")]);
    assert_eq!(out["files"][0]["path"], "code.rs");
    assert_eq!(
        r.read("code.rs"),
        "fn main() {}\n",
        "back to the earlier draft"
    );

    // The first checkpoint changed nothing: a usage error, nothing written.
    let out = run_in(r.path(), &["revert", "r1@0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn revert_after_a_rewind_only_takes_back_the_new_runs_own_work() {
    let r = Repo::new();
    r.ok(&["start", "--run", "r1"]);
    r.ok(&["step", "begin", "plan"]);
    r.write("plan.md", "v1\n");
    r.ok(&["step", "end", "plan", "--status", "completed"]);
    r.ok(&["step", "begin", "implement"]);
    r.write("code.txt", "first try\n");
    r.ok(&["step", "end", "implement", "--status", "completed"]);
    r.ok(&["rewind", "r1", "--to", "implement", "--run", "r2"]);
    assert!(!r.path().join("code.txt").exists());
    r.ok(&["step", "begin", "implement"]);
    r.write("code.txt", "second try\n");
    r.ok(&["step", "end", "implement", "--status", "completed"]);

    let out = json_in(r.path(), &["revert", "r2"]);
    assert_eq!(paths_of(&out), ["code.txt"], "r1's plan is not r2's work");
    assert!(!r.path().join("code.txt").exists());
    assert_eq!(r.read("plan.md"), "v1\n");
}

#[test]
fn a_run_fetched_from_a_remote_can_be_reverted() {
    let remote = tempfile::tempdir().unwrap();
    git_in(remote.path(), &["init", "-q", "--bare"]);
    let a = Repo::new();
    a.git(&["remote", "add", "origin", remote.path().to_str().unwrap()]);
    a.git(&["push", "-q", "origin", "main"]);
    run_that(&a, "shared", "edit", |r| {
        r.write("agent.txt", "from a teammate's agent\n")
    });
    a.ok(&["push", "origin", "shared"]);

    let b = tempfile::tempdir().unwrap();
    git_in(
        b.path(),
        &["clone", "-q", remote.path().to_str().unwrap(), "."],
    );
    git_in(b.path(), &["config", "user.name", "B"]);
    git_in(b.path(), &["config", "user.email", "b@example.com"]);
    ok_in(b.path(), &["fetch", "origin", "shared"]);
    // B applies the run's work by hand (as a cherry-pick of its state would), then reverts it.
    std::fs::write(b.path().join("agent.txt"), "from a teammate's agent\n").unwrap();
    std::fs::write(b.path().join("mine.txt"), "b's own work\n").unwrap();
    let out = json_in(b.path(), &["revert", "shared"]);
    assert_eq!(out["files"][0]["path"], "agent.txt");
    assert_eq!(out["files"][0]["action"], "revert");
    assert!(!b.path().join("agent.txt").exists());
    assert_eq!(
        std::fs::read_to_string(b.path().join("mine.txt")).unwrap(),
        "b's own work\n"
    );
}

#[test]
fn nothing_is_written_during_a_merge_or_with_the_index_locked() {
    let r = Repo::new();
    run_that(&r, "r1", "edit", |r| r.write("a.txt", "agent\n"));
    std::fs::write(r.path().join(".git/index.lock"), "").unwrap();
    let out = run_in(r.path(), &["revert", "r1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(r.read("a.txt"), "agent\n");
    std::fs::remove_file(r.path().join(".git/index.lock")).unwrap();
    let out = json_in(r.path(), &["revert", "r1", "--dry-run"]);
    assert_eq!(out["dry_run"], true);
    assert_eq!(r.read("a.txt"), "agent\n", "a dry run writes nothing");
    assert!(out["backup"].is_null());
}

/// With the agent's file-edit hooks, only the paths the agent touched are its changes: a
/// user's edit made between two of its turns, in another file, is never taken back.
#[test]
fn only_the_paths_the_agent_touched_count_when_its_hooks_recorded_them() {
    let r = Repo::new();
    r.write("agent.txt", "a\n");
    r.write("user.txt", "u\n");
    r.git(&["add", "-A"]);
    r.git(&["commit", "-qm", "base"]);
    let dir = r.path();
    let claude = |name: &str, edit: Option<&str>| {
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fixtures/claude")
                .join(name),
        )
        .unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["cwd"] = dir.to_str().unwrap().into();
        v["transcript_path"] = serde_json::Value::Null;
        if let Some(file) = edit {
            v["tool_input"]["file_path"] = dir.join(file).to_str().unwrap().into();
        }
        let out = common::tool_stdin(
            dir,
            &["--json", "hook", "claude"],
            v.to_string().as_bytes(),
            &[],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let started = claude("session-start.json", None);
    let run = started["run"].as_str().unwrap().to_string();
    // The agent edits agent.txt (its hook notes the path); the user edits user.txt meanwhile.
    r.write("agent.txt", "a\nby the agent\n");
    claude("post-tool-use-edit.json", Some("agent.txt"));
    r.write("user.txt", "u\nby the user\n");
    claude("stop.json", None);

    let out = json_in(dir, &["revert", &run]);
    assert_eq!(out["rule"], "touched");
    assert_eq!(paths_of(&out), ["agent.txt"]);
    assert_eq!(r.read("agent.txt"), "a\n");
    assert_eq!(
        r.read("user.txt"),
        "u\nby the user\n",
        "the user's edit is not the agent's"
    );
}
