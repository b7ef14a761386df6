//! restore, whole and by path, with a backup that undo brings back.

use super::{assert_files_eq, chmod, field, git_view, put, rm, start, tree_files, worktree_files};
use crate::common::Repo;

// ---------------------------------------------------------------------------------------
// 7. restore, whole and by path, with a backup that undo brings back.
// ---------------------------------------------------------------------------------------

#[test]
fn restore_whole_or_selected_paths_takes_a_backup_that_undo_brings_back() {
    let repo = Repo::new();
    let d = repo.path();
    let files = ["path/one", "path/two", "dir/a", "dir/sub/b", "other.txt"];
    for f in files {
        put(d, f, format!("{f} v0\n"), 0o644);
    }
    put(d, "run.sh", "#!/bin/sh\n", 0o755);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "base"]);
    start(d, "r1");
    for f in files {
        put(d, f, format!("{f} v1\n"), 0o644);
    }
    put(d, "dir/u1", "untracked v1\n", 0o644);
    let c1 = field(
        &repo.json(&["checkpoint", "plan", "--status", "completed"]),
        "checkpoint",
    );
    let c1_files = tree_files(d, &c1);
    for f in files {
        put(d, f, format!("{f} v2\n"), 0o644);
    }
    rm(d, "dir/a");
    rm(d, "dir/u1");
    put(d, "dir/new", "new in v2\n", 0o644);
    chmod(d, "run.sh", 0o644);
    repo.json(&["checkpoint", "implement"]);
    put(d, "other.txt", "other v3, never checkpointed\n", 0o644);
    put(d, "path/one", "one v3, never checkpointed\n", 0o644);

    let before_view = git_view(d);
    let before_files = worktree_files(d);
    let before_tree = repo.add_all_tree();

    // Selected paths only.
    let out = repo.json(&["restore", "r1/plan", "--", "path/one", "dir/"]);
    assert_eq!(field(&out, "checkpoint"), c1);
    let backup = field(&out["backup"], "commit");
    assert_eq!(repo.rev("refs/agent-rewind/backups"), backup);
    assert_eq!(repo.rev(&format!("{backup}^{{tree}}")), before_tree);
    let now = worktree_files(d);
    let mut expected = before_files.clone();
    expected.retain(|p, _| !p.starts_with("dir/"));
    for (p, e) in &c1_files {
        if p == "path/one" || p.starts_with("dir/") {
            expected.insert(p.clone(), e.clone());
        }
    }
    assert_files_eq(&now, &expected, "after restore -- path/one dir/");
    assert_eq!(repo.read("path/two"), "path/two v2\n");
    assert_eq!(repo.read("other.txt"), "other v3, never checkpointed\n");
    assert!(!d.join("dir/new").exists());
    let v = git_view(d);
    assert_eq!(
        (v.head_ref, v.head, v.stage),
        (
            before_view.head_ref.clone(),
            before_view.head.clone(),
            before_view.stage.clone()
        ),
        "restore must leave HEAD and the index alone"
    );

    let undone = repo.json(&["undo"]);
    assert_eq!(field(&undone["restored"], "commit"), backup);
    assert_eq!(git_view(d), before_view);
    assert_files_eq(
        &worktree_files(d),
        &before_files,
        "after undoing a path restore",
    );

    // The whole checkpoint.
    let backups_before = repo.rev("refs/agent-rewind/backups");
    let out = repo.json(&["restore", &c1]);
    let backup = field(&out["backup"], "commit");
    assert_ne!(backup, backups_before);
    assert_eq!(repo.rev("refs/agent-rewind/backups"), backup);
    assert_eq!(repo.add_all_tree(), repo.rev(&format!("{c1}^{{tree}}")));
    assert_files_eq(&worktree_files(d), &c1_files, "after a whole restore");
    let v = git_view(d);
    assert_eq!(
        (v.head_ref, v.head, v.stage),
        (
            before_view.head_ref.clone(),
            before_view.head.clone(),
            before_view.stage.clone()
        )
    );
    repo.json(&["undo"]);
    assert_eq!(git_view(d), before_view);
    assert_files_eq(
        &worktree_files(d),
        &before_files,
        "after undoing a whole restore",
    );
    repo.assert_fsck();
}

/// On a branch with no commit yet the user's index is empty: the backup a restore takes
/// records it as the empty tree, whose object must exist for `git fsck --strict`.
#[test]
fn a_backup_on_an_unborn_branch_leaves_fsck_clean() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    crate::common::git_in(d, &["init", "-q"]);
    std::fs::write(d.join("a.txt"), "a\n").unwrap();
    crate::common::ok_in(d, &["checkpoint", "s1", "--run", "r1"]);
    std::fs::write(d.join("a.txt"), "b\n").unwrap();
    crate::common::ok_in(d, &["restore", "r1/s1", "--", "a.txt"]);
    assert_eq!(std::fs::read_to_string(d.join("a.txt")).unwrap(), "a\n");
    crate::common::git_in(d, &["fsck", "--strict"]);
}
