//! Every lock a rewind or undo needs is checked before the first file
//! changes; a restore that fails part-way names the files it changed and says that
//! `undo` helps; files left in place — an untracked nested repository, a
//! skip-worktree file with local edits — are listed in `left_in_place`.

use super::{assert_refused, git_view, put, start, worktree_files};
use crate::common::stderr;
use crate::common::{Repo, tool_cmd};
use serde_json::Value;
use std::path::Path;

/// A run `r1` whose first checkpoint is the clean commit, then one with `new.txt` added and
/// `README.md` edited.
fn run_with_two_checkpoints(repo: &Repo) {
    let d = repo.path();
    start(d, "r1");
    put(d, "new.txt", "new\n", 0o644);
    put(d, "README.md", "edited\n", 0o644);
    repo.ok(&["checkpoint", "work", "--run", "r1"]);
}

#[test]
fn a_held_head_or_branch_lock_refuses_a_rewind_before_any_file_changes() {
    let repo = Repo::new();
    let d = repo.path();
    run_with_two_checkpoints(&repo);
    for lock in [".git/HEAD.lock", ".git/refs/heads/agent-runs/r2.lock"] {
        let path = d.join(lock);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "").unwrap();
        // The refusal names the lock and how to remove it, and changes nothing.
        assert_refused(
            d,
            &["rewind", "r1", "--to", "r1@0", "--run", "r2"],
            &[1],
            lock,
        );
        let out = tool_cmd(d)
            .args(["rewind", "r1", "--to", "r1@0", "--run", "r2"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("rm '"), "{err}");
        assert!(path.exists(), "someone else's lock is never removed");
        std::fs::remove_file(&path).unwrap();
    }
    repo.ok(&["rewind", "r1", "--to", "r1@0", "--run", "r2"]);
    assert!(!d.join("new.txt").exists());

    // undo moves HEAD back: a held HEAD.lock refuses it before any file changes.
    std::fs::write(d.join(".git/HEAD.lock"), "").unwrap();
    assert_refused(d, &["undo"], &[1], ".git/HEAD.lock");
    std::fs::remove_file(d.join(".git/HEAD.lock")).unwrap();
    // It un-archives r1 (a note) after the files too: that lock is checked before as well.
    let notes_lock = ".git/refs/notes/agent-runs/r1.lock";
    std::fs::write(d.join(notes_lock), "").unwrap();
    assert_refused(d, &["undo"], &[1], notes_lock);
    std::fs::remove_file(d.join(notes_lock)).unwrap();
    repo.ok(&["undo"]);
    assert!(d.join("new.txt").exists());
    repo.assert_fsck();
}

#[test]
fn a_restore_that_fails_part_way_names_the_files_it_changed_and_undo_brings_them_back() {
    let repo = Repo::new();
    let d = repo.path();
    run_with_two_checkpoints(&repo);
    put(d, "a.txt", "a later\n", 0o644);
    put(d, "b.txt", "b later\n", 0o644);
    put(d, "README.md", "later\n", 0o644);
    let before_files = worktree_files(d);
    let before_view = git_view(d);

    let o = tool_cmd(d)
        .args(["restore", "r1@0"])
        .env("AGENT_REWIND_FAIL_AT", "worktree:remove#2")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    let now = worktree_files(d);
    let changed: Vec<&String> = before_files
        .keys()
        .filter(|p| now.get(*p) != before_files.get(*p))
        .collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert!(err.contains(changed[0].as_str()), "{err}");
    assert!(
        err.contains("1 file of the worktree had been changed"),
        "{err}"
    );
    assert!(err.contains("git agent-rewind undo"), "{err}");

    repo.ok(&["undo"]);
    super::assert_files_eq(&worktree_files(d), &before_files, "after undo");
    assert_eq!(git_view(d), before_view);
    repo.assert_fsck();
}

/// The `left_in_place` entries of a command's JSON output, as (path, reason).
fn left_in_place(out: &Value) -> Vec<(String, String)> {
    out["left_in_place"]
        .as_array()
        .or_else(|| out["backup"]["left_in_place"].as_array())
        .unwrap_or_else(|| panic!("no left_in_place in {out}"))
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_string(),
                e["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The kind of change a command's JSON output reports for `path`, if any.
fn change_of(out: &Value, path: &str) -> Option<String> {
    out["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .map(|f| f["change"].to_string())
}

fn nested_repo(d: &Path) {
    let nested = d.join("nested");
    std::fs::create_dir_all(&nested).unwrap();
    crate::common::git_in(&nested, &["init", "-q", "-b", "main"]);
    std::fs::write(nested.join("inner.txt"), "inner\n").unwrap();
    crate::common::git_in(&nested, &["add", "-A"]);
    crate::common::git_in(
        &nested,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-qm",
            "inner",
        ],
    );
}

#[test]
fn an_untracked_nested_repository_is_left_in_place_and_listed() {
    let repo = Repo::new();
    let d = repo.path();
    start(d, "r1");
    nested_repo(d);
    repo.ok(&["checkpoint", "work", "--run", "r1"]);
    for args in [
        &["--json", "restore", "r1@0"][..],
        &["--json", "rewind", "r1", "--to", "r1@0", "--run", "r2"][..],
    ] {
        let out: Value = serde_json::from_str(&repo.ok(args)).unwrap();
        assert_eq!(change_of(&out, "nested"), None, "{args:?}: {out}");
        let left = left_in_place(&out);
        let nested = left.iter().find(|(p, _)| p == "nested");
        assert!(
            nested.is_some_and(|(_, why)| why.contains("repository")),
            "{args:?}: {left:?}"
        );
        assert_eq!(
            std::fs::read_to_string(d.join("nested/inner.txt")).unwrap(),
            "inner\n"
        );
        repo.ok(&["undo"]);
    }
    repo.assert_fsck();
}

#[test]
fn a_skip_worktree_file_with_local_edits_is_kept_and_listed() {
    let repo = Repo::new();
    let d = repo.path();
    put(d, "sparse.txt", "committed\n", 0o644);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "sparse"]);
    start(d, "r1");
    put(d, "new.txt", "new\n", 0o644);
    repo.ok(&["checkpoint", "work", "--run", "r1"]);
    repo.git(&["update-index", "--skip-worktree", "sparse.txt"]);
    put(d, "sparse.txt", "local edit\n", 0o644);

    let out: Value =
        serde_json::from_str(&repo.ok(&["--json", "rewind", "r1", "--to", "r1@0", "--run", "r2"]))
            .unwrap();
    assert_eq!(
        std::fs::read_to_string(d.join("sparse.txt")).unwrap(),
        "local edit\n",
        "kept, as git checkout keeps it"
    );
    let left = left_in_place(&out);
    assert!(
        left.iter()
            .any(|(p, why)| p == "sparse.txt" && why.contains("skip-worktree")),
        "{left:?}"
    );
    assert!(!d.join("new.txt").exists());
    repo.assert_fsck();
}

#[test]
fn a_rewind_failing_after_its_files_were_written_says_so_and_undo_brings_them_back() {
    let repo = Repo::new();
    let d = repo.path();
    run_with_two_checkpoints(&repo);
    let before_files = worktree_files(d);
    let before_view = git_view(d);
    // Moving HEAD fails once the files are written (as git failing on a lock would).
    let o = tool_cmd(d)
        .args(["rewind", "r1", "--to", "r1@0", "--run", "r2"])
        .env("AGENT_REWIND_FAIL_AT", "head:move")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(!d.join("new.txt").exists(), "the files were written");
    assert!(
        err.contains("2 files of the worktree had been changed")
            && err.contains("new.txt")
            && err.contains("README.md"),
        "{err}"
    );
    assert!(err.contains("git agent-rewind undo"), "{err}");
    repo.ok(&["undo"]);
    super::assert_files_eq(&worktree_files(d), &before_files, "after undo");
    assert_eq!(git_view(d), before_view);
    repo.assert_fsck();
}

#[test]
fn an_undo_failing_after_its_files_were_written_says_so() {
    let repo = Repo::new();
    let d = repo.path();
    run_with_two_checkpoints(&repo);
    repo.git(&["checkout", "-q", "--detach"]);
    repo.ok(&["rewind", "r1", "--to", "r1@0", "--run", "r2"]);
    let rewound_files = worktree_files(d);
    // Moving HEAD back (detached, as it was) fails once the files are written.
    let o = tool_cmd(d)
        .args(["undo"])
        .env("AGENT_REWIND_FAIL_AT", "head:move")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(d.join("new.txt").exists(), "the files were written");
    assert!(
        err.contains("2 files of the worktree had been changed") && err.contains("new.txt"),
        "{err}"
    );
    assert!(err.contains("git agent-rewind undo"), "{err}");
    // The next undo brings back the state before the failed one.
    repo.ok(&["undo"]);
    super::assert_files_eq(&worktree_files(d), &rewound_files, "after the second undo");
    repo.assert_fsck();
}

#[test]
fn a_target_needing_the_path_of_a_nested_repository_is_refused() {
    let repo = Repo::new();
    let d = repo.path();
    start(d, "r1");
    put(d, "nested", "a file first\n", 0o644);
    repo.ok(&["checkpoint", "work", "--run", "r1"]);
    std::fs::remove_file(d.join("nested")).unwrap();
    nested_repo(d);
    // Its files are in no backup: never removed to make room for the file.
    assert_refused(d, &["restore", "r1@1"], &[1], "nested git repository");
    assert_refused(
        d,
        &["rewind", "r1", "--to", "r1@1", "--run", "r2"],
        &[1],
        "nested",
    );
    assert_eq!(
        std::fs::read_to_string(d.join("nested/inner.txt")).unwrap(),
        "inner\n"
    );
}
