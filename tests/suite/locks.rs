//! Locks someone else holds: a `packed-refs.lock` blocks neither a checkpoint nor a commit
//! with our hook (updates lock only the refs they move, as git's do); a held lock a command
//! needs makes it fail promptly with an error naming the file and how to remove it; the
//! post-commit hook then warns and never holds or fails the commit. A `gc` killed while it
//! holds the locks of the refs it deletes leaves none that the next command cannot remove.
//! (Every other crash point is driven by tests/suite/crash_points/.)

use crate::common;
use crate::common::stderr;

use common::{Repo, bin, bounded, checkpoints, git_cmd};
use std::os::unix::process::ExitStatusExt;
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

/// Every `*.lock` file under `.git/refs` and `.git/packed-refs.lock`, relative to `.git`.
fn ref_locks(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, at: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(at).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if p.extension().is_some_and(|x| x == "lock") {
                out.push(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let git = dir.join(".git");
    let mut out = vec![];
    walk(&git, &git.join("refs"), &mut out);
    if git.join("packed-refs.lock").exists() {
        out.push("packed-refs.lock".into());
    }
    out.sort();
    out
}

#[test]
fn a_gc_killed_while_it_holds_the_locks_of_the_refs_it_deletes_blocks_nothing() {
    let repo = Repo::new();
    let dir = repo.path();
    for run in ["old1", "old2", "old3", "new1"] {
        repo.ok(&["start", "--run", run]);
        repo.write(&format!("{run}.txt"), "one\n");
        repo.ok(&["checkpoint", "plan", "--run", run]);
        repo.write(&format!("{run}.txt"), "two\n");
        repo.ok(&["checkpoint", "build", "--run", run]);
    }
    // Some refs packed and some loose: the delete edits packed-refs and removes loose files.
    repo.git(&["pack-refs", "--all"]);
    repo.write("old2.txt", "three\n");
    repo.ok(&["checkpoint", "test", "--run", "old2"]);
    repo.write("new1.txt", "three\n");
    repo.ok(&["checkpoint", "test", "--run", "new1"]);
    let mut gc = common::tool_cmd(dir);
    gc.args(["gc", "--keep", "1"])
        .env("AGENT_REWIND_CRASH_AT", "delete:refs-locked");
    let o = bounded(gc, "gc killed while deleting");
    assert_eq!(o.status.signal(), Some(6), "{}", stderr(&o));
    // It died holding a lock on each ref it was deleting, and on packed-refs.
    let left = ref_locks(dir);
    assert!(
        left.contains(&"refs/agent-runs/old2/HEAD.lock".to_string())
            && left.contains(&"packed-refs.lock".to_string()),
        "{left:?}"
    );
    repo.assert_fsck();

    // A write to one of those runs goes through ...
    repo.write("old2.txt", "four\n");
    let o = tool(dir, &["checkpoint", "ship", "--run", "old2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(checkpoints(dir, "old2").len(), 5);
    // ... and so does the next gc, which deletes them all and leaves no lock behind.
    let o = tool(dir, &["--json", "gc", "--keep", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // (old2 is the newest run now, new1 the active one: both stay.)
    let deleted: Vec<&str> = out["deleted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["run"].as_str().unwrap())
        .collect();
    assert_eq!(deleted, ["old3", "old1"], "{out:#}");
    assert_eq!(ref_locks(dir), Vec::<String>::new());
    let left = repo.git(&["for-each-ref", "--format=%(refname)", "refs/agent-runs/"]);
    assert!(
        left.lines()
            .all(|l| l.starts_with("refs/agent-runs/old2/")
                || l.starts_with("refs/agent-runs/new1/")),
        "{left}"
    );
    repo.assert_fsck();
}
