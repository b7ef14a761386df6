//! A file whose name is near the 255-byte limit survives a rewind and its
//! undo (no temp name is derived from a user's file name), and a checkout that fails
//! part-way names every file it had already changed and says that `undo` brings them back —
//! which it then does, exactly.

use super::{assert_files_eq, begin, end, git_view, put, start, worktree_files};
use crate::common::stderr;
use crate::common::{Repo, tool_cmd};
use std::path::Path;

/// A file name of 250 bytes.
fn long_name(c: char) -> String {
    format!("{}.txt", c.to_string().repeat(246))
}

/// A run `u` whose first checkpoint `u@0` is the clean commit, then a worktree with
/// long-named untracked files (one in a deep folder), other untracked files, an edit and a
/// staged file, recorded by a step of `u`.
fn scenario(repo: &Repo) {
    let d = repo.path();
    put(d, "tracked.txt", "tracked\n", 0o644);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "base"]);
    start(d, "u");
    begin(d, "work", "S1");
    put(d, &long_name('a'), "long a\n", 0o644);
    let deep = format!("deep/er/and/deeper/{}", long_name('b'));
    put(d, &deep, "long b, deep\n", 0o755);
    put(d, "other.txt", "other\n", 0o644);
    put(d, "z/last.txt", "last\n", 0o644);
    put(d, "tracked.txt", "edited\n", 0o644);
    put(d, "staged.txt", "staged\n", 0o644);
    repo.git(&["add", "staged.txt"]);
    end(d, "work", "S1");
}

fn tool(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut c = tool_cmd(dir);
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn undo_after_a_rewind_brings_back_files_with_250_byte_names_and_everything_else() {
    let repo = Repo::new();
    let d = repo.path();
    scenario(&repo);
    let before_view = git_view(d);
    let before_files = worktree_files(d);

    let o = tool(d, &["rewind", "u", "--to", "u@0"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!d.join(long_name('a')).exists(), "the rewind removed it");
    assert!(!d.join("other.txt").exists());

    let o = tool(d, &["undo"], &[]);
    assert!(o.status.success(), "undo: {}", stderr(&o));
    assert_files_eq(&worktree_files(d), &before_files, "after undo");
    let after = git_view(d);
    assert_eq!(after.status, before_view.status, "git status --porcelain");
    assert_eq!(after.cached, before_view.cached);
    assert_eq!(after.diff, before_view.diff);
    repo.assert_fsck();
    // Nothing of ours is left in the temp folder.
    let tmp = d.join(".git/agent-rewind/tmp");
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .map(|r| r.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "temp files left: {left:?}");
}

/// Files whose content or presence differ between two snapshots of the worktree.
fn differing(a: &super::Files, b: &super::Files) -> Vec<String> {
    let paths: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    paths
        .into_iter()
        .filter(|p| a.get(*p) != b.get(*p))
        .cloned()
        .collect()
}

#[test]
fn a_rewind_that_fails_part_way_names_the_files_it_changed_and_undo_brings_them_back() {
    let repo = Repo::new();
    let d = repo.path();
    scenario(&repo);
    let before_view = git_view(d);
    let before_files = worktree_files(d);

    // The second removal fails (as on a full disk or an unwritable folder).
    let o = tool(
        d,
        &["rewind", "u", "--to", "u@0"],
        &[("AGENT_REWIND_FAIL_AT", "worktree:remove#2")],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    let changed = differing(&worktree_files(d), &before_files);
    assert_eq!(
        changed.len(),
        1,
        "one file removed before the failure: {changed:?}"
    );
    for p in &changed {
        assert!(err.contains(p.as_str()), "{p} is not named: {err}");
    }
    assert!(
        err.contains("1 file of the worktree had been changed"),
        "{err}"
    );
    assert!(err.contains("git agent-rewind undo"), "{err}");

    let o = tool(d, &["undo"], &[]);
    assert!(o.status.success(), "undo: {}", stderr(&o));
    assert_files_eq(&worktree_files(d), &before_files, "after undo");
    let after = git_view(d);
    assert_eq!(after.status, before_view.status, "git status --porcelain");
    assert_eq!(after.cached, before_view.cached);
    assert_eq!(after.diff, before_view.diff);
    repo.assert_fsck();
}

#[test]
fn an_undo_that_fails_part_way_names_the_files_and_the_next_undo_puts_them_back() {
    let repo = Repo::new();
    let d = repo.path();
    scenario(&repo);
    let o = tool(d, &["rewind", "u", "--to", "u@0"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rewound_view = git_view(d);
    let rewound_files = worktree_files(d);

    // The undo writes files back; the third write fails.
    let o = tool(
        d,
        &["undo"],
        &[("AGENT_REWIND_FAIL_AT", "worktree:write#3")],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    let changed = differing(&worktree_files(d), &rewound_files);
    assert_eq!(
        changed.len(),
        2,
        "two files written before the failure: {changed:?}"
    );
    for p in &changed {
        assert!(err.contains(p.as_str()), "{p} is not named: {err}");
    }
    assert!(err.contains("git agent-rewind undo"), "{err}");

    // `undo` brings back the worktree as it was before the failed undo.
    let o = tool(d, &["undo"], &[]);
    assert!(o.status.success(), "undo: {}", stderr(&o));
    assert_files_eq(&worktree_files(d), &rewound_files, "after the second undo");
    assert_eq!(git_view(d).status, rewound_view.status);
    repo.assert_fsck();
}
