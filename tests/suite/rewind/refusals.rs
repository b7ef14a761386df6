//! Refusals: a clear error, the right exit code, nothing changed.

use super::{assert_refused, begin, end, json_in, put, ref_exists, start, worktree_files};
use crate::common::Repo;

// ---------------------------------------------------------------------------------------
// 6. Refusals: a clear error, the right exit code, nothing changed.
// ---------------------------------------------------------------------------------------

/// A repository on `main` with a branch `other` that conflicts with it on README.md, and a
/// run r1: plan and implement completed, test begun and never finished.
fn refusal_repo() -> Repo {
    let repo = Repo::new();
    let d = repo.path();
    repo.git(&["checkout", "-q", "-b", "other"]);
    put(d, "README.md", "changed on other\n", 0o644);
    repo.git(&["commit", "-q", "-am", "other"]);
    repo.git(&["checkout", "-q", "main"]);
    put(d, "README.md", "changed on main\n", 0o644);
    repo.git(&["commit", "-q", "-am", "main"]);
    start(d, "r0");
    start(d, "r1");
    begin(d, "plan", "S1");
    put(d, "PLAN.md", "plan\n", 0o644);
    end(d, "plan", "S1");
    begin(d, "implement", "S2");
    put(d, "code.rs", "code\n", 0o644);
    end(d, "implement", "S2");
    begin(d, "test", "S3");
    put(d, "wip.txt", "wip\n", 0o644);
    repo
}

/// [`refusal_repo`] with its work committed and one backup taken (a path restore), so `undo`
/// has something it could bring back.
fn refusal_repo_with_a_backup() -> Repo {
    let repo = refusal_repo();
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "wip"]);
    repo.json(&["restore", "r1/plan", "--", "PLAN.md"]);
    repo
}

/// Commands that overwrite this worktree, all of which must be refused.
fn assert_overwriting_commands_refused(repo: &Repo, needle: &str) {
    let d = repo.path();
    // (The callers take one backup first, so `undo` has something it could bring back.)
    for args in [
        &["rewind", "r1", "--to", "implement"][..],
        &["rewind", "r1", "--to", "implement", "--run", "n1"][..],
        &["fork", "r1", "--to", "plan", "--run", "n2"][..],
        &["restore", "r1/plan"][..],
        &["restore", "r1/plan", "--", "PLAN.md"][..],
        &["undo"][..],
    ] {
        assert_refused(d, args, &[1], needle);
    }
}

/// A rewind in place whose new run cannot be published (another process holds the lock of
/// its ref) fails after its backup was taken: the backup is taken back by compare-and-swap,
/// so `undo` cannot pick a backup of a rewind that never happened. Both with an earlier
/// backup (the ref moves back to it) and without one (the ref goes).
#[test]
fn a_rewind_whose_run_cannot_be_published_leaves_no_backup() {
    for with_earlier_backup in [true, false] {
        let repo = if with_earlier_backup {
            refusal_repo_with_a_backup()
        } else {
            refusal_repo()
        };
        let d = repo.path();
        let lock = d.join(".git/refs/agent-runs/blocked/HEAD.lock");
        std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
        std::fs::write(&lock, "").unwrap();
        assert_refused(
            d,
            &["rewind", "r1", "--to", "implement", "--run", "blocked"],
            &[1],
            "HEAD.lock",
        );
        std::fs::remove_file(&lock).unwrap();
        repo.assert_fsck();
    }
}

#[test]
fn refuses_during_a_merge_with_conflicts() {
    // One backup to undo to, taken before the conflict.
    let repo = refusal_repo_with_a_backup();
    let d = repo.path();
    let merge = repo.git_output(&["merge", "-q", "other"]);
    assert!(!merge.status.success(), "the merge should conflict");
    assert!(repo.git(&["ls-files", "-u"]).contains("README.md"));
    assert_overwriting_commands_refused(&repo, "merge");
    repo.git(&["merge", "--abort"]);
    // Once the merge is gone, the same command works.
    repo.json(&["rewind", "r1", "--to", "implement", "--run", "n1"]);
    assert!(ref_exists(d, "refs/agent-runs/n1/HEAD"));
}

#[test]
fn refuses_with_unmerged_paths_and_no_operation_in_progress() {
    let repo = refusal_repo_with_a_backup();
    let d = repo.path();
    // A stash that conflicts on apply leaves unmerged entries but no MERGE_HEAD.
    put(d, "README.md", "stashed edit\n", 0o644);
    repo.git(&["stash", "-q"]);
    put(d, "README.md", "committed edit\n", 0o644);
    repo.git(&["commit", "-q", "-am", "conflicting"]);
    let apply = repo.git_output(&["stash", "apply", "-q"]);
    assert!(!apply.status.success(), "the stash apply should conflict");
    assert!(repo.git(&["ls-files", "-u"]).contains("README.md"));
    assert!(!d.join(".git/MERGE_HEAD").exists());
    assert_overwriting_commands_refused(&repo, "conflict");
}

#[test]
fn refuses_during_a_stopped_rebase() {
    let repo = refusal_repo_with_a_backup();
    let d = repo.path();
    let rebase = repo.git_output(&["rebase", "-q", "other"]);
    assert!(!rebase.status.success(), "the rebase should stop");
    assert!(d.join(".git/rebase-merge").exists() || d.join(".git/rebase-apply").exists());
    assert_overwriting_commands_refused(&repo, "rebase");
    repo.git(&["rebase", "--abort"]);
}

#[test]
fn refuses_during_a_stopped_cherry_pick() {
    let repo = refusal_repo_with_a_backup();
    let d = repo.path();
    let pick = repo.git_output(&["cherry-pick", "other"]);
    assert!(!pick.status.success(), "the cherry-pick should conflict");
    assert!(d.join(".git/CHERRY_PICK_HEAD").exists());
    assert_overwriting_commands_refused(&repo, "cherry-pick");
}

#[test]
fn refuses_bad_targets_and_taken_names_without_changing_anything() {
    let repo = refusal_repo();
    let d = repo.path();
    let r0_start = json_in(d, &["list", "r0"])[0]["checkpoint"]
        .as_str()
        .unwrap()
        .to_string();
    for cmd in ["rewind", "fork"] {
        // Unknown step, unknown checkpoints, a step that never finished.
        assert_refused(d, &[cmd, "r1", "--to", "nosuchstep"], &[1], "nosuchstep");
        assert_refused(d, &[cmd, "r1", "--to", "r1@99"], &[1], "@99");
        assert_refused(
            d,
            &[cmd, "r1", "--to", "deadbeefdeadbeef"],
            &[1],
            "deadbeef",
        );
        assert_refused(
            d,
            &[cmd, "r1", "--after", "--to", "test"],
            &[1],
            "never finished",
        );
        assert_refused(
            d,
            &[cmd, "r1", "--after", "--to", "nosuchstep"],
            &[1, 2],
            "nosuchstep",
        );
        // A checkpoint of another run's lineage.
        assert_refused(d, &[cmd, "r1", "--to", &r0_start], &[1], "lineage");
        // Unknown source run.
        assert_refused(d, &[cmd, "nosuchrun", "--to", "plan"], &[1], "nosuchrun");
        // Taken names.
        assert_refused(
            d,
            &[cmd, "r1", "--to", "implement", "--run", "r0"],
            &[1],
            "r0",
        );
        assert_refused(
            d,
            &[cmd, "r1", "--to", "implement", "--run", "r1"],
            &[1],
            "r1",
        );
        assert_refused(
            d,
            &[cmd, "r1", "--to", "implement", "--branch", "other"],
            &[1],
            "other",
        );
        assert_refused(
            d,
            &[
                cmd,
                "r1",
                "--to",
                "implement",
                "--branch",
                "main",
                "--no-checkout",
            ],
            &[1],
            "main",
        );
        // A --worktree path that exists and is not empty.
        let tmp = tempfile::tempdir().unwrap();
        put(tmp.path(), "keep.txt", "mine\n", 0o644);
        let wt = tmp.path().to_str().unwrap();
        assert_refused(
            d,
            &[cmd, "r1", "--to", "implement", "--worktree", wt],
            &[1],
            "not empty",
        );
        assert_eq!(
            worktree_files(tmp.path()).keys().collect::<Vec<_>>(),
            vec!["keep.txt"]
        );
        // Usage errors.
        assert_refused(d, &[cmd, "r1"], &[2], "--to");
        assert_refused(
            d,
            &[cmd, "r1", "--to", "plan", "--run", "bad..id"],
            &[2],
            "bad..id",
        );
        assert_refused(
            d,
            &[cmd, "r1", "--to", "plan", "--branch", "bad..name"],
            &[2],
            "bad..name",
        );
        assert_refused(
            d,
            &[cmd, "r1", "--to", "plan", "--no-checkout", "--worktree", wt],
            &[2],
            "",
        );
    }
    // Nothing to undo yet.
    assert_refused(d, &["undo"], &[1], "nothing to undo");
    assert_refused(d, &["restore", "nosuchrun"], &[1], "nosuchrun");
    assert_refused(
        d,
        &["restore", "r1/plan", "--", "no/such/path"],
        &[1],
        "no/such/path",
    );
    assert!(!ref_exists(d, "refs/agent-rewind/backups"));
}
