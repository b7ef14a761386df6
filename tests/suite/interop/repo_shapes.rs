//! Recording in a linked worktree, on a detached HEAD and on an unborn branch.

use super::{lines, parents};
use crate::common::{Repo, add_all_tree_in, git_in, ok_in};
use serde_json::Value;
use std::path::Path;

fn json_in(dir: &Path, args: &[&str]) -> Value {
    let mut a = vec!["--json"];
    a.extend_from_slice(args);
    let out = ok_in(dir, &a);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

#[test]
fn works_in_a_linked_worktree() {
    let repo = Repo::new();
    let holder = tempfile::tempdir().unwrap();
    let wt = holder.path().join("wt");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "wt-branch",
        wt.to_str().unwrap(),
    ]);
    let wt_head = git_in(&wt, &["rev-parse", "HEAD"]).trim().to_string();
    let index_path = wt.join(git_in(&wt, &["rev-parse", "--git-path", "index"]).trim());
    let main_index = repo.index_bytes();

    let started = json_in(&wt, &["start", "--run", "wt-run"]);
    std::fs::write(wt.join("README.md"), "changed in the linked worktree\n").unwrap();
    std::fs::write(wt.join("new.txt"), "untracked\n").unwrap();
    let expected = add_all_tree_in(&wt);
    let wt_index = std::fs::read(&index_path).unwrap();
    // No --run: the linked worktree's active run is used.
    let cp = json_in(&wt, &["checkpoint", "edit"]);
    assert_eq!(cp["run"], "wt-run");
    assert_eq!(cp["seq"], 1);
    assert_eq!(cp["head_ref"], "refs/heads/wt-branch");
    assert_eq!(cp["git_commit_sha"], wt_head.as_str());
    let id = cp["checkpoint"].as_str().unwrap();
    assert_eq!(
        git_in(&wt, &["rev-parse", &format!("{id}^{{tree}}")]).trim(),
        expected
    );
    assert_eq!(
        git_in(&wt, &["log", "-1", "--format=%P", id]).trim(),
        format!("{} {wt_head}", started["checkpoint"].as_str().unwrap())
    );
    assert_eq!(std::fs::read(&index_path).unwrap(), wt_index);
    assert!(
        repo.index_bytes() == main_index,
        "main worktree index changed"
    );
    // The main worktree's files are not what was snapshot.
    assert_eq!(repo.read("README.md"), "hello\n");

    // Refs and notes are shared: plain git in the main worktree sees them.
    assert_eq!(repo.rev("refs/agent-runs/wt-run/HEAD"), id);
    let note = repo.git(&["notes", "--ref=agent-runs/wt-run", "show", id]);
    assert!(note.contains("\"step\":\"edit\""), "{note}");
    let listed = repo.json(&["list", "wt-run"]);
    assert_eq!(listed.as_array().unwrap().len(), 2);
    // The active run belongs to the linked worktree only.
    assert_eq!(repo.json(&["status"])["run"], Value::Null);
    assert_eq!(json_in(&wt, &["status"])["run"], "wt-run");
    repo.assert_fsck();
}

#[test]
fn works_on_a_detached_head() {
    let repo = Repo::new();
    repo.write("a.txt", "a\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "second"]);
    repo.git(&["checkout", "-q", "--detach", "HEAD~1"]);
    let head = repo.rev("HEAD");
    let start = repo.json(&["start", "--run", "det"]);
    assert_eq!(start["head_ref"], Value::Null);
    assert_eq!(start["git_commit_sha"], head.as_str());
    repo.write("b.txt", "b\n");
    let expected = add_all_tree_in(repo.path());
    let cp = repo.json(&["checkpoint", "work"]);
    let id = cp["checkpoint"].as_str().unwrap();
    assert_eq!(cp["head_ref"], Value::Null);
    assert_eq!(cp["git_commit_sha"], head.as_str());
    assert_eq!(repo.rev(&format!("{id}^{{tree}}")), expected);
    assert_eq!(
        parents(&repo, id),
        vec![
            start["checkpoint"].as_str().unwrap().to_string(),
            head.clone()
        ]
    );
    // Still detached, at the same commit.
    assert!(
        !repo
            .git_output(&["symbolic-ref", "-q", "HEAD"])
            .status
            .success()
    );
    assert_eq!(repo.rev("HEAD"), head);
    repo.assert_fsck();
}

#[test]
fn works_on_an_unborn_branch() {
    let repo = Repo::empty();
    repo.write("a.txt", "a\n");
    repo.write("dir/b.txt", "b\n");
    assert!(repo.index_bytes().is_none());
    // No commit and no index at all yet.
    let expected0 = add_all_tree_in(repo.path());
    let first = repo.json(&["checkpoint", "plan", "--run", "u"]);
    assert!(repo.index_bytes().is_none(), "the tool created an index");
    let list = repo.json(&["list", "u"]);
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2, "implicit start + plan: {list:?}");
    let root = list[0]["checkpoint"].as_str().unwrap();
    assert_eq!(list[0]["event"], "start");
    assert_eq!(list[0]["git_commit_sha"], Value::Null);
    assert_eq!(list[0]["head_ref"], "refs/heads/main");
    assert_eq!(
        parents(&repo, root),
        Vec::<String>::new(),
        "root has no parent"
    );
    let id1 = first["checkpoint"].as_str().unwrap();
    assert_eq!(parents(&repo, id1), vec![root.to_string()]);
    assert_eq!(repo.rev(&format!("{id1}^{{tree}}")), expected0);
    assert!(
        !repo
            .git_output(&["rev-parse", "--verify", "-q", "HEAD"])
            .status
            .success()
    );

    // With an index but still no commit.
    repo.git(&["add", "a.txt"]);
    repo.write("a.txt", "a changed\n");
    let idx = repo.index_bytes();
    let expected1 = add_all_tree_in(repo.path());
    let second = repo.json(&["checkpoint", "plan", "--run", "u", "--meta", "n=2"]);
    assert!(repo.index_bytes() == idx, "index changed");
    let id2 = second["checkpoint"].as_str().unwrap();
    assert_eq!(repo.rev(&format!("{id2}^{{tree}}")), expected1);
    assert_eq!(parents(&repo, id2), vec![id1.to_string()]);

    // The first user commit becomes the second parent.
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "first"]);
    let head = repo.rev("HEAD");
    let third = repo.json(&["checkpoint", "plan", "--run", "u", "--meta", "n=3"]);
    let id3 = third["checkpoint"].as_str().unwrap();
    assert_eq!(parents(&repo, id3), vec![id2.to_string(), head.clone()]);
    assert_eq!(third["git_commit_sha"], head.as_str());
    let walked = lines(&repo.git(&[
        "log",
        "--first-parent",
        "--format=%H",
        "refs/agent-runs/u/HEAD",
    ]));
    assert_eq!(
        walked,
        vec![
            id3.to_string(),
            id2.to_string(),
            id1.to_string(),
            root.to_string()
        ]
    );
    repo.assert_fsck();
}
