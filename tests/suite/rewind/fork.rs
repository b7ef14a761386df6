//! A fork into a linked worktree and concurrent work in both.

use super::{
    add_all_tree_at, assert_files_eq, assert_refused, begin, end, field, git_view, json_in, put,
    start, worktree_files,
};
use crate::common::{Repo, git_in, tool_cmd};
use serde_json::Value;
use std::path::Path;
use std::process::Stdio;

/// The checkpoint ids of `list RUN --json`, in order.
fn checkpoints_of(dir: &Path, run: &str) -> Vec<String> {
    json_in(dir, &["list", run])
        .as_array()
        .unwrap()
        .iter()
        .map(|c| field(c, "checkpoint"))
        .collect()
}

// ---------------------------------------------------------------------------------------
// 5. A fork into a linked worktree and concurrent work in both.
// ---------------------------------------------------------------------------------------

/// `rounds` rounds of a checkpoint in the main worktree of `repo` (run r1) and one in the
/// linked worktree `wt` (run f1) started at once, each after a new file of its own: neither
/// changes a worktree's files or git's view of it, and each holds its own worktree's file
/// only. The checkpoints made, in the main worktree and in the linked one.
fn checkpoint_concurrently(repo: &Repo, wt: &Path, rounds: usize) -> (Vec<String>, Vec<String>) {
    let d = repo.path();
    let mut made_main = vec![];
    let mut made_wt = vec![];
    for round in 0..rounds {
        put(
            d,
            &format!("main-{round}.txt"),
            format!("main {round}\n"),
            0o644,
        );
        put(
            wt,
            &format!("wt-{round}.txt"),
            format!("wt {round}\n"),
            0o644,
        );
        let main_now = worktree_files(d);
        let wt_now = worktree_files(wt);
        let main_view_now = git_view(d);
        let wt_view_now = git_view(wt);
        let spawn = |dir: &Path| {
            tool_cmd(dir)
                .args([
                    "--json",
                    "checkpoint",
                    "work",
                    "-m",
                    &format!("round {round}"),
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let a = spawn(d);
        let b = spawn(wt);
        for (child, dir, made, run) in [(a, d, &mut made_main, "r1"), (b, wt, &mut made_wt, "f1")] {
            let o = child.wait_with_output().unwrap();
            assert!(
                o.status.success(),
                "checkpoint in {} failed: {}",
                dir.display(),
                String::from_utf8_lossy(&o.stderr)
            );
            let v: Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(v["run"], run);
            made.push(field(&v, "checkpoint"));
        }
        assert_files_eq(&worktree_files(d), &main_now, "main worktree after a round");
        assert_files_eq(
            &worktree_files(wt),
            &wt_now,
            "linked worktree after a round",
        );
        assert_eq!(git_view(d), main_view_now);
        assert_eq!(git_view(wt), wt_view_now);
        // Each checkpoint holds its own worktree's files only.
        let main_cp = made_main.last().unwrap();
        let wt_cp = made_wt.last().unwrap();
        let has = |cp: &str, p: &str| !repo.git(&["ls-tree", cp, p]).trim().is_empty();
        assert!(has(main_cp, &format!("main-{round}.txt")));
        assert!(!has(main_cp, &format!("wt-{round}.txt")));
        assert!(has(wt_cp, &format!("wt-{round}.txt")));
        assert!(!has(wt_cp, &format!("main-{round}.txt")));
    }
    (made_main, made_wt)
}

#[test]
fn fork_into_a_linked_worktree_and_checkpoint_concurrently_in_both() {
    let repo = Repo::new();
    let d = repo.path();
    put(d, "shared.txt", "base\n", 0o644);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "base"]);
    start(d, "r1");
    begin(d, "plan", "S1");
    put(d, "shared.txt", "after plan\n", 0o644);
    let plan_e = end(d, "plan", "S1");
    begin(d, "implement", "S2");
    put(d, "shared.txt", "main implement\n", 0o644);
    put(d, "main-only.txt", "main\n", 0o644);
    end(d, "implement", "S2");

    let main_view = git_view(d);
    let main_files = worktree_files(d);
    let main_status = repo.git(&["status", "--porcelain"]);
    let tmp = tempfile::tempdir().unwrap();
    let wt = tmp.path().join("fork-wt");
    let out = repo.json(&[
        "fork",
        "r1",
        "--to",
        "implement",
        "--worktree",
        wt.to_str().unwrap(),
        "--run",
        "f1",
    ]);
    assert_eq!(field(&out, "from_checkpoint"), plan_e);
    assert!(
        out["backup"].is_null(),
        "a fork into a new worktree needs no backup"
    );
    // The main worktree is untouched.
    assert_eq!(repo.git(&["status", "--porcelain"]), main_status);
    assert_eq!(git_view(d), main_view);
    assert_files_eq(
        &worktree_files(d),
        &main_files,
        "main worktree after the fork",
    );
    // The linked worktree holds the checkpoint.
    assert_eq!(
        std::fs::read_to_string(wt.join("shared.txt")).unwrap(),
        "after plan\n"
    );
    assert!(!wt.join("main-only.txt").exists());
    assert_eq!(
        add_all_tree_at(&wt),
        repo.rev(&format!("{plan_e}^{{tree}}")),
        "the linked worktree holds exactly the checkpoint"
    );
    assert_eq!(
        git_in(&wt, &["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/agent-runs/f1"
    );
    assert_eq!(json_in(&wt, &["status"])["run"], "f1");
    assert_eq!(json_in(d, &["status"])["run"], "r1");

    let r1_before = checkpoints_of(d, "r1");
    let f1_before = checkpoints_of(d, "f1");
    const ROUNDS: usize = 4;
    let (made_main, made_wt) = checkpoint_concurrently(&repo, &wt, ROUNDS);
    let r1_after = checkpoints_of(d, "r1");
    let f1_after = checkpoints_of(d, "f1");
    assert_eq!(r1_after.len(), r1_before.len() + ROUNDS, "{r1_after:?}");
    assert_eq!(f1_after.len(), f1_before.len() + ROUNDS, "{f1_after:?}");
    assert_eq!(r1_after[r1_before.len()..], made_main[..]);
    assert_eq!(f1_after[f1_before.len()..], made_wt[..]);
    assert_eq!(checkpoints_of(&wt, "f1"), f1_after);
    assert_eq!(json_in(&wt, &["status"])["run"], "f1");
    assert_eq!(json_in(d, &["status"])["run"], "r1");
    assert_eq!(
        git_in(&wt, &["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/agent-runs/f1"
    );
    assert_eq!(
        repo.git(&["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/main"
    );

    // Backups belong to their worktree: a restore in the linked one is undone there, and
    // the main worktree (which never had a backup) has nothing to undo.
    let wt_files = worktree_files(&wt);
    let main_files = worktree_files(d);
    json_in(&wt, &["restore", &plan_e]);
    assert!(!wt.join("wt-0.txt").exists());
    assert_refused(d, &["undo"], &[1], "nothing to undo");
    json_in(&wt, &["undo"]);
    assert_files_eq(
        &worktree_files(&wt),
        &wt_files,
        "linked worktree after undo",
    );
    assert_files_eq(&worktree_files(d), &main_files, "main worktree");
    repo.assert_fsck();
}

/// A `fork --worktree` killed after git made the worktree leaves it and its branch behind;
/// the same fork again, into the same folder and with the same id, takes them back and
/// succeeds. A leftover someone has since edited is refused and kept.
#[test]
fn a_killed_fork_into_a_worktree_can_be_retried() {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1"]);
    repo.write("a.txt", "one\n");
    repo.ok(&["checkpoint", "s1"]);
    let parent = tempfile::tempdir().unwrap();
    let wt = parent.path().join("try");
    let fork = [
        "fork",
        "r1",
        "--to",
        "r1@1",
        "--run",
        "f1",
        "--worktree",
        wt.to_str().unwrap(),
    ];
    let killed = tool_cmd(repo.path())
        .args(fork)
        .env("AGENT_REWIND_CRASH_AT", "fork:worktree-made")
        .output()
        .unwrap();
    assert!(!killed.status.success());
    assert!(
        wt.join("a.txt").exists(),
        "the killed fork left its worktree"
    );
    assert!(
        repo.git_output(&["rev-parse", "--verify", "refs/heads/agent-runs/f1"])
            .status
            .success()
    );

    let out = repo.json(&fork);
    assert_eq!(out["run"], "f1", "{out:#}");
    assert_eq!(std::fs::read_to_string(wt.join("a.txt")).unwrap(), "one\n");
    assert_eq!(
        git_in(&wt, &["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/agent-runs/f1"
    );
    let listed = repo.git(&["worktree", "list", "--porcelain"]);
    assert_eq!(listed.matches("worktree ").count(), 2, "{listed}");
    assert_eq!(
        crate::common::json_in(&wt, &["status"])["run"],
        "f1",
        "the retried fork's worktree has its active run"
    );

    // Killed again, then edited by someone: the folder is no leftover, nothing is removed.
    let again = ["fork", "r1", "--to", "r1@1", "--run", "f2", "--worktree"];
    let wt2 = parent.path().join("try2");
    let mut args = again.to_vec();
    args.push(wt2.to_str().unwrap());
    let killed = tool_cmd(repo.path())
        .args(&args)
        .env("AGENT_REWIND_CRASH_AT", "fork:worktree-made")
        .output()
        .unwrap();
    assert!(!killed.status.success());
    std::fs::write(wt2.join("a.txt"), "someone's edit\n").unwrap();
    let refused = repo.run(&args);
    assert_ne!(refused.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("is not empty"));
    assert_eq!(
        std::fs::read_to_string(wt2.join("a.txt")).unwrap(),
        "someone's edit\n"
    );
    repo.assert_fsck();
}

/// The worktree a fork made is named without `..`, as git records it.
#[test]
fn fork_names_its_new_worktree_without_dot_dot() {
    let r = Repo::new();
    put(r.path(), "a.txt", "a\n", 0o644);
    crate::common::ok_in(r.path(), &["checkpoint", "plan", "--run", "r1"]);
    let scratch = r.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let out = crate::common::ok_in(
        &scratch,
        &["fork", "r1", "--to", "plan", "--worktree", "../try-b"],
    );
    let made = r.path().canonicalize().unwrap().join("try-b");
    assert!(!out.contains(".."), "{out}");
    assert!(out.contains(&made.display().to_string()), "{out}");
    let listed = git_in(r.path(), &["worktree", "list", "--porcelain"]);
    assert!(
        listed.contains(&format!("worktree {}\n", made.display())),
        "{listed}"
    );
}
