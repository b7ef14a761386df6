//! Undo after an in-place rewind, and the finer rewind/undo semantics: attempts, unborn and
//! detached HEADs, file/folder swaps, an ignored file in the way.

use super::{
    add_all_tree_at, assert_files_eq, begin, chmod, end, field, git_view, is_ancestor, json_in,
    put, ref_exists, rm, start, symlink, worktree_files,
};
use crate::common::Repo;
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

// ---------------------------------------------------------------------------------------
// 1. Undo after an in-place rewind restores a dirty worktree exactly; undo is undoable.
// ---------------------------------------------------------------------------------------

#[test]
fn undo_after_rewind_restores_a_dirty_worktree_exactly_and_is_itself_undoable() {
    let repo = Repo::new();
    let d = repo.path();
    put(d, "tracked.txt", "tracked\n", 0o644);
    put(d, "staged.txt", "staged\n", 0o644);
    put(d, "partial.txt", "partial\n", 0o644);
    put(d, "gone.txt", "gone\n", 0o644);
    put(d, "unstaged_rm.txt", "will be git rm'd\n", 0o644);
    put(d, "run.sh", "#!/bin/sh\necho run\n", 0o755);
    put(d, "becomes_exec.sh", "#!/bin/sh\necho later\n", 0o644);
    symlink(d, "link", "tracked.txt");
    symlink(d, "link2file", "tracked.txt");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "base"]);

    start(d, "r1");
    begin(d, "plan", "S-plan");
    put(d, "PLAN.md", "the plan\n", 0o644);
    end(d, "plan", "S-plan");
    begin(d, "implement", "S-impl");
    put(d, "tracked.txt", "implemented\n", 0o644);
    repo.git(&["commit", "-q", "-am", "implement"]);
    end(d, "implement", "S-impl");

    // A dirty worktree with every kind of change.
    put(d, "tracked.txt", "modified, not staged\n", 0o644);
    put(d, "staged.txt", "staged change\n", 0o644);
    repo.git(&["add", "staged.txt"]);
    put(d, "partial.txt", "partial: staged\n", 0o644);
    repo.git(&["add", "partial.txt"]);
    put(
        d,
        "partial.txt",
        "partial: staged, then changed again\n",
        0o644,
    );
    put(d, "new_staged.txt", "a staged new file\n", 0o644);
    repo.git(&["add", "new_staged.txt"]);
    rm(d, "gone.txt");
    repo.git(&["rm", "-q", "unstaged_rm.txt"]);
    put(d, "untracked.txt", "untracked\n", 0o644);
    put(d, "bin.dat", (0u8..=255).rev().collect::<Vec<u8>>(), 0o644);
    put(d, "tool.sh", "#!/bin/sh\nexit 0\n", 0o755);
    chmod(d, "becomes_exec.sh", 0o755);
    chmod(d, "run.sh", 0o644);
    symlink(d, "link", "staged.txt");
    symlink(d, "newlink", "deep/new/dir/file.txt");
    put(d, "deep/new/dir/file.txt", "in a new subdirectory\n", 0o644);
    put(
        d,
        "link2file",
        "a regular file where a symlink was\n",
        0o644,
    );

    let before_view = git_view(d);
    let before_files = worktree_files(d);
    assert_eq!(before_view.head_ref, "refs/heads/main");
    assert!(
        before_view.cached.contains("new_staged.txt") && before_view.diff.contains("partial"),
        "the scenario must have staged and unstaged changes: {before_view:#?}"
    );

    let out = repo.json(&["rewind", "r1", "--to", "implement", "--run", "r2"]);
    let backup = field(&out["backup"], "commit");
    assert_eq!(repo.rev("refs/agent-rewind/backups"), backup);
    let rewound_view = git_view(d);
    let rewound_files = worktree_files(d);
    assert_eq!(rewound_view.head_ref, "refs/heads/agent-runs/r2");
    assert_ne!(rewound_files, before_files, "the rewind changed nothing");
    assert_eq!(repo.read("tracked.txt"), "tracked\n");
    assert!(!d.join("untracked.txt").exists());
    assert!(
        std::fs::symlink_metadata(d.join("link2file"))
            .unwrap()
            .is_symlink()
    );

    // Undo: everything as it was, byte for byte and mode for mode.
    let undone = repo.json(&["undo"]);
    assert_eq!(field(&undone["restored"], "commit"), backup);
    let undo_view = git_view(d);
    assert_eq!(undo_view, before_view, "git's view after undo");
    assert_files_eq(&worktree_files(d), &before_files, "after undo");
    assert_eq!(
        std::fs::read_link(d.join("link")).unwrap(),
        PathBuf::from("staged.txt")
    );
    assert_eq!(
        repo.git(&["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/main"
    );
    let mode = |rel: &str| {
        std::fs::symlink_metadata(d.join(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o111
    };
    assert_ne!(mode("tool.sh"), 0);
    assert_ne!(mode("becomes_exec.sh"), 0);
    assert_eq!(mode("run.sh"), 0);

    // Undo again: back to the rewound state.
    let redo = repo.json(&["undo"]);
    assert_eq!(
        field(&redo["restored"], "commit"),
        field(&undone["backup"], "commit")
    );
    assert_eq!(
        git_view(d),
        rewound_view,
        "git's view after the second undo"
    );
    assert_files_eq(&worktree_files(d), &rewound_files, "after the second undo");
    repo.assert_fsck();
}

// ---------------------------------------------------------------------------------------
// More rewind/undo semantics: attempts, unborn and detached HEADs, file/folder swaps, and
// a refusal that comes after the backup was taken.
// ---------------------------------------------------------------------------------------

#[test]
fn to_a_step_means_just_before_its_latest_attempt_and_after_means_its_last_finish() {
    let repo = Repo::new();
    let d = repo.path();
    start(d, "r1");
    begin(d, "plan", "P");
    let plan_e = end(d, "plan", "P");
    // Attempt 1 of implement fails; a manual checkpoint follows; attempt 2 has a
    // checkpoint in the middle and completes.
    let a1_b = begin(d, "implement", "I1");
    put(d, "a.txt", "attempt 1\n", 0o644);
    let a1_e = field(
        &repo.json(&["step", "end", "implement", "--status", "failed"]),
        "checkpoint",
    );
    let after_a1 = field(
        &repo.json(&["checkpoint", "implement", "-m", "notes"]),
        "checkpoint",
    );
    assert_eq!(repo.rev(&format!("{after_a1}^1")), a1_e);
    let a2_b = begin(d, "implement", "I2");
    put(d, "a.txt", "attempt 2\n", 0o644);
    let a2_mid = field(
        &repo.json(&["checkpoint", "implement", "-m", "mid"]),
        "checkpoint",
    );
    let a2_e = end(d, "implement", "I2");
    assert_ne!(a1_b, a2_b);

    let point = |flags: &[&str], id: &str| -> Value {
        let mut args = vec!["fork", "r1", "--no-checkout", "--run", id];
        args.extend_from_slice(flags);
        repo.json(&args)
    };
    let to = point(&["--to", "implement"], "x1");
    assert_eq!(
        field(&to, "from_checkpoint"),
        after_a1,
        "--to implement: {to:#}"
    );
    let after = point(&["--after", "--to", "implement"], "x2");
    assert_eq!(field(&after, "from_checkpoint"), a2_e);
    assert_eq!(field(&after, "sdk_session_id"), "I2");
    let to_plan_after = point(&["--after", "--to", "plan"], "x3");
    assert_eq!(field(&to_plan_after, "from_checkpoint"), plan_e);
    let exact = point(&["--to", "r1@5"], "x4");
    assert_eq!(
        field(&exact, "from_checkpoint"),
        json_in(d, &["list", "r1"])[5]["checkpoint"]
            .as_str()
            .unwrap()
    );
    let by_id = point(&["--to", &a2_mid[..12]], "x5");
    assert_eq!(field(&by_id, "from_checkpoint"), a2_mid);

    // A third attempt begins and never finishes: --after still means the last finish,
    // --to means right before the third attempt.
    let a3_b = begin(d, "implement", "I3");
    let to = point(&["--to", "implement"], "x6");
    assert_eq!(field(&to, "from_checkpoint"), a2_e);
    let after = point(&["--after", "--to", "implement"], "x7");
    assert_eq!(field(&after, "from_checkpoint"), a2_e);
    assert!(!is_ancestor(d, &a3_b, "refs/agent-runs/x7/HEAD"));
    // `rewind --list` lists the run's checkpoints like `list RUN`.
    assert_eq!(
        json_in(d, &["rewind", "r1", "--list"]),
        json_in(d, &["list", "r1"])
    );
}

#[test]
fn rewind_to_a_point_on_an_unborn_branch_and_undo() {
    let repo = Repo::empty();
    let d = repo.path();
    start(d, "r1");
    put(d, "a.txt", "a\n", 0o644);
    begin(d, "plan", "S1");
    let plan_e = end(d, "plan", "S1");
    begin(d, "implement", "S2");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "first"]);
    put(d, "b.txt", "b\n", 0o644);
    end(d, "implement", "S2");
    let before = git_view(d);
    let files = worktree_files(d);
    let out = repo.json(&["rewind", "r1", "--to", "implement", "--run", "r2"]);
    assert_eq!(field(&out, "from_checkpoint"), plan_e);
    assert!(out["git_commit_sha"].is_null(), "{out:#}");
    // An unborn branch, an empty index, the checkpoint's files as untracked files.
    assert_eq!(
        repo.git(&["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/agent-runs/r2"
    );
    assert!(!ref_exists(d, "HEAD"));
    assert_eq!(repo.git(&["ls-files", "-s"]), "");
    assert_eq!(add_all_tree_at(d), repo.rev(&format!("{plan_e}^{{tree}}")));
    repo.json(&["undo"]);
    assert_eq!(git_view(d), before);
    assert_files_eq(&worktree_files(d), &files, "after undo");
}

/// A tracked file replaced by a folder of the same name (`f2d`), and a tracked folder
/// replaced by a file (`d2f`), both uncommitted: the rewind swaps them back, undo swaps
/// them again.
fn file_folder_swap(swap_f2d: bool, swap_d2f: bool) {
    let repo = Repo::new();
    let d = repo.path();
    put(d, "f2d", "a file that becomes a folder\n", 0o644);
    put(d, "d2f/inner.txt", "a folder that becomes a file\n", 0o644);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "base"]);
    start(d, "r1");
    begin(d, "implement", "S");
    put(d, "code.rs", "code\n", 0o644);
    end(d, "implement", "S");
    if swap_f2d {
        rm(d, "f2d");
        put(d, "f2d/child.txt", "now a folder\n", 0o644);
    }
    if swap_d2f {
        std::fs::remove_dir_all(d.join("d2f")).unwrap();
        put(d, "d2f", "now a file\n", 0o644);
    }
    let before = git_view(d);
    let files = worktree_files(d);
    repo.json(&["rewind", "r1", "--to", "implement", "--run", "r2"]);
    assert_eq!(repo.read("f2d"), "a file that becomes a folder\n");
    assert_eq!(repo.read("d2f/inner.txt"), "a folder that becomes a file\n");
    repo.json(&["undo"]);
    assert_eq!(git_view(d), before);
    assert_files_eq(&worktree_files(d), &files, "after undo");
}

#[test]
fn rewind_and_undo_turn_a_folder_back_into_a_file() {
    file_folder_swap(true, false);
}

#[test]
fn rewind_and_undo_turn_a_file_back_into_a_folder() {
    file_folder_swap(false, true);
}

#[test]
fn undo_brings_back_a_detached_head() {
    let repo = Repo::new();
    let d = repo.path();
    start(d, "r1");
    begin(d, "implement", "S");
    put(d, "code.rs", "v1\n", 0o644);
    end(d, "implement", "S");
    repo.git(&["commit", "-q", "--allow-empty", "-m", "later"]);
    repo.git(&["checkout", "-q", "--detach", "HEAD"]);
    put(d, "README.md", "edited while detached\n", 0o644);
    let before = git_view(d);
    let files = worktree_files(d);
    assert_eq!(before.head_ref, "");
    repo.json(&["rewind", "r1", "--to", "implement", "--run", "r2"]);
    assert_eq!(
        repo.git(&["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/agent-runs/r2"
    );
    repo.json(&["undo"]);
    assert_eq!(git_view(d), before);
    assert_files_eq(&worktree_files(d), &files, "after undo");
}

#[test]
fn an_ignored_file_in_the_way_goes_into_the_backup_and_undo_brings_it_back() {
    let repo = Repo::new();
    let d = repo.path();
    start(d, "r1");
    begin(d, "plan", "S1");
    // Not ignored yet: the checkpoint holds it.
    put(d, "build/x", "from plan\n", 0o644);
    end(d, "plan", "S1");
    begin(d, "implement", "S2");
    put(d, ".gitignore", "build/\n", 0o644);
    put(d, "build/x", "precious, ignored now\n", 0o644);
    end(d, "implement", "S2");
    let before = worktree_files(d);

    // The rewind overwrites the ignored build/x: the backup holds it first…
    repo.json(&["rewind", "r1", "--to", "implement", "--run", "r2"]);
    assert_eq!(repo.read("build/x"), "from plan\n");
    // …so `undo` brings it back, byte for byte.
    repo.json(&["undo"]);
    assert_eq!(repo.read("build/x"), "precious, ignored now\n");
    assert_files_eq(&worktree_files(d), &before, "after undo");
    // A path restore over it too.
    repo.json(&["restore", "r1/plan", "--", "build/"]);
    assert_eq!(repo.read("build/x"), "from plan\n");
    repo.json(&["undo"]);
    assert_eq!(repo.read("build/x"), "precious, ignored now\n");
}
