//! Locks someone else holds (issue 18 item 2): a `packed-refs.lock` blocks neither a
//! checkpoint nor a commit with our hook (updates lock only the refs they move, as git's do);
//! a held lock a command needs makes it fail promptly with an error naming the file and how
//! to remove it; the post-commit hook then warns and never holds or fails the commit. (Locks
//! left by killed processes of ours are covered by tests/suite/crash_points/.)

use crate::common;

use common::{Repo, bin, bounded, checkpoints, git_cmd};
use std::path::Path;
use std::process::Output;

fn tool(dir: &Path, args: &[&str]) -> Output {
    let mut c = common::tool_cmd(dir);
    c.args(args);
    bounded(c, &format!("{args:?}"))
}

/// git with the binary under test on `PATH`, so the installed hooks find it.
fn git_hooked(dir: &Path, args: &[&str]) -> Output {
    let bin_dir = bin().parent().unwrap().to_path_buf();
    let mut paths = vec![bin_dir];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let mut c = git_cmd(dir);
    c.args(args)
        .env("PATH", std::env::join_paths(paths).unwrap())
        .env_remove("AGENT_RUN")
        .env_remove("AGENT_STEP");
    bounded(c, &format!("git {args:?}"))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_foreign_packed_refs_lock_blocks_neither_checkpoints_nor_commits() {
    let repo = Repo::new();
    let dir = repo.path();
    repo.ok(&["hooks", "install", "--git"]);
    repo.ok(&["start", "--run", "r2"]);
    repo.ok(&["start", "--run", "r1"]); // the active run: the hook records into it
    repo.git(&["pack-refs", "--all"]);
    let lock = dir.join(".git/packed-refs.lock");
    std::fs::write(&lock, "").unwrap();

    repo.write("a.txt", "a\n");
    let o = tool(dir, &["checkpoint", "s1", "--run", "r1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let before = checkpoints(dir, "r1").len();
    repo.git(&["add", "a.txt"]);
    let o = git_hooked(dir, &["commit", "-q", "-m", "with a held packed-refs.lock"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        checkpoints(dir, "r1").len(),
        before + 1,
        "the hook recorded"
    );

    // Deleting must edit packed-refs: it fails, naming the lock and how to remove it, and
    // changes nothing.
    let o = tool(dir, &["delete", "r2"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains(&lock.display().to_string()), "{err}");
    assert!(err.contains("hint:") && err.contains("rm '"), "{err}");
    assert!(lock.exists(), "someone else's lock is never removed");
    repo.git(&["rev-parse", "--verify", "refs/agent-runs/r2/HEAD"]);

    std::fs::remove_file(&lock).unwrap();
    repo.ok(&["delete", "r2"]);
    repo.assert_fsck();
}

#[test]
fn a_foreign_ref_lock_fails_the_command_and_never_the_commit() {
    let repo = Repo::new();
    let dir = repo.path();
    repo.ok(&["hooks", "install", "--git"]);
    repo.ok(&["start", "--run", "r1"]);
    let lock = dir.join(".git/refs/agent-runs/r1/HEAD.lock");
    std::fs::write(&lock, "").unwrap();

    repo.write("a.txt", "a\n");
    let o = tool(dir, &["checkpoint", "s1", "--run", "r1"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains(&lock.display().to_string()), "{err}");
    assert!(err.contains("rm '"), "{err}");
    assert_eq!(checkpoints(dir, "r1").len(), 1, "nothing recorded");

    // The commit goes through; the hook only warns.
    repo.git(&["add", "a.txt"]);
    let o = git_hooked(dir, &["commit", "-q", "-m", "with a held ref lock"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("HEAD.lock"), "{}", stderr(&o));
    assert_eq!(
        repo.git(&["log", "-1", "--format=%s"]).trim(),
        "with a held ref lock"
    );
    assert!(lock.exists(), "someone else's lock is never removed");

    std::fs::remove_file(&lock).unwrap();
    repo.ok(&["checkpoint", "s1", "--run", "r1"]);
    assert_eq!(checkpoints(dir, "r1").len(), 2);
    repo.assert_fsck();
}
