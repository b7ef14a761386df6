//! `revert` and `undo` against crafted runs and awkward worktrees: a run whose tree holds
//! `.git/…` is refused before any backup is taken, a backup never holds a path inside `.git`
//! and `undo` can reach every older backup; decisions never read through a symlink leading out
//! of the repository; `list` stops saying "reverted" once the revert is undone; a dry run with
//! a conflict exits 1.

use crate::common;
use crate::common::stderr;

use common::{Repo, git_stdin, json_in, run_in};
use serde_json::Value;

/// The note of `commit` in `run`'s notes, one JSON value per line.
fn note(r: &Repo, run: &str, commit: &str) -> Vec<Value> {
    r.git(&["notes", &format!("--ref=agent-runs/{run}"), "show", commit])
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Append to `run` a checkpoint (seq + 1, step `x`) whose tree is the tip's with `extra`
/// (`mktree` lines of the top folder: `<mode> <type> <id>\t<name>`) added, as a remote
/// could have crafted it; returns the new checkpoint.
fn craft_on_top(r: &Repo, run: &str, extra: &[String]) -> String {
    let tip = r.rev(&format!("refs/agent-runs/{run}/HEAD"));
    let mut top: Vec<String> = r
        .git(&["ls-tree", &format!("{tip}^{{tree}}")])
        .lines()
        .map(str::to_string)
        .collect();
    top.extend_from_slice(extra);
    let tree = git_stdin(r.path(), &["mktree"], top.join("\n").as_bytes());
    let mut lines = note(r, run, &tip);
    let cp = lines
        .iter_mut()
        .find(|l| l["type"] == "checkpoint")
        .unwrap();
    let seq = cp["seq"].as_u64().unwrap() + 1;
    cp["seq"] = seq.into();
    cp["step"] = "x".into();
    cp["event"] = "manual".into();
    let sha = cp["git_commit_sha"].as_str().unwrap().to_string();
    let msg = format!(
        "agent-rewind: {run} manual x\n\nAgent-Run: {run}\nAgent-Step: x\nAgent-Attempt: 1\nAgent-Event: manual\nAgent-Schema: 1\n"
    );
    let c = r
        .git(&["commit-tree", &tree, "-p", &tip, "-p", &sha, "-m", &msg])
        .trim()
        .to_string();
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(r.path().join(".git/crafted-note"), body).unwrap();
    r.git(&[
        "notes",
        &format!("--ref=agent-runs/{run}"),
        "add",
        "-f",
        "-F",
        ".git/crafted-note",
        &c,
    ]);
    std::fs::remove_file(r.path().join(".git/crafted-note")).unwrap();
    r.git(&[
        "update-ref",
        &format!("refs/agent-runs/{run}/HEAD"),
        &c,
        &tip,
    ]);
    c
}

/// A `.git` folder entry holding `HEAD` with `content`, for [`craft_on_top`].
fn dot_git_with_head(r: &Repo, content: &str) -> String {
    let blob = git_stdin(
        r.path(),
        &["hash-object", "-w", "--stdin"],
        content.as_bytes(),
    );
    let git = git_stdin(
        r.path(),
        &["mktree"],
        format!("100644 blob {blob}\tHEAD\n").as_bytes(),
    );
    format!("040000 tree {git}\t.git")
}

/// `git fsck --strict`, but for the `.git` folder the test itself crafted into a tree.
fn fsck_but_the_crafted_git_folder(r: &Repo) {
    let out = r.git_output(&[
        "-c",
        "fsck.hasDotgit=ignore",
        "fsck",
        "--strict",
        "--no-progress",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

fn backups_tip(r: &Repo) -> Option<String> {
    let out = r.git_output(&["rev-parse", "-q", "--verify", "refs/agent-rewind/backups"]);
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A run `r1` (seq 1: `a.txt` created), then `r1@2` crafted on top with `.git/HEAD` holding
/// exactly what this repository's HEAD file holds.
fn run_with_crafted_git_head(r: &Repo) {
    r.ok(&["start", "--run", "r1"]);
    r.write("a.txt", "a\n");
    r.ok(&["checkpoint", "s1", "--run", "r1"]);
    let head_file = r.read(".git/HEAD");
    let git = dot_git_with_head(r, &head_file);
    craft_on_top(r, "r1", &[git]);
}

#[test]
fn a_revert_of_a_run_holding_git_head_is_refused_before_any_backup() {
    let r = Repo::new();
    run_with_crafted_git_head(&r);
    // An older backup, taken by a restore of `a.txt`.
    r.write("a.txt", "edited\n");
    r.ok(&["restore", "r1@1", "--", "a.txt"]);
    let older = backups_tip(&r).expect("the restore took a backup");
    let head_file = r.read(".git/HEAD");
    let status = r.git(&["status", "--porcelain", "--untracked-files=all"]);

    for args in [&["revert", "r1@2"][..], &["revert", "r1"][..]] {
        let out = run_in(r.path(), args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(".git"), "{}", stderr(&out));
        assert_eq!(
            backups_tip(&r).as_deref(),
            Some(older.as_str()),
            "no backup"
        );
        assert_eq!(r.read(".git/HEAD"), head_file);
        assert_eq!(
            r.git(&["status", "--porcelain", "--untracked-files=all"]),
            status
        );
    }
    // After a branch change, `undo` still works and brings back the restore's backup.
    r.git(&["checkout", "-q", "-b", "other"]);
    let out = run_in(r.path(), &["undo"]);
    assert!(out.status.success(), "undo: {}", stderr(&out));
    assert_eq!(r.read("a.txt"), "edited\n");
    fsck_but_the_crafted_git_folder(&r);
}

/// A backup as an older version wrote it for a refused revert of such a run: the newest
/// backup with `.git/HEAD` in its tree.
fn poison_newest_backup(r: &Repo) {
    let tip = backups_tip(r).unwrap();
    let tree = r.rev(&format!("{tip}^{{tree}}"));
    let mut top: Vec<String> = r
        .git(&["ls-tree", &tree])
        .lines()
        .map(str::to_string)
        .collect();
    top.push(dot_git_with_head(r, "ref: refs/heads/main\n"));
    let poisoned = git_stdin(r.path(), &["mktree"], top.join("\n").as_bytes());
    let raw = r.git(&["cat-file", "commit", &tip]);
    let raw = raw.replacen(&format!("tree {tree}"), &format!("tree {poisoned}"), 1);
    let c = git_stdin(
        r.path(),
        &["hash-object", "-t", "commit", "-w", "--stdin"],
        raw.as_bytes(),
    );
    r.git(&["update-ref", "refs/agent-rewind/backups", &c, &tip]);
}

#[test]
fn undo_reaches_every_older_backup_and_never_writes_inside_git() {
    let r = Repo::new();
    r.ok(&["start", "--run", "r1"]);
    r.write("a.txt", "one\n");
    r.ok(&["checkpoint", "s1", "--run", "r1"]);
    r.write("a.txt", "two\n");
    r.ok(&["restore", "r1@1", "--", "a.txt"]); // backup 1 holds "two"
    r.write("a.txt", "three\n");
    r.ok(&["restore", "r1@1", "--", "a.txt"]); // backup 2 holds "three"
    let listed = json_in(r.path(), &["undo", "--list"]);
    let listed = listed.as_array().expect("an array of backups");
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(listed[0]["reason"].as_str().unwrap().starts_with("restore"));
    let older = listed[1]["commit"].as_str().unwrap().to_string();
    let human = r.ok(&["undo", "--list"]);
    assert!(human.contains(&older[..12]), "{human}");

    // The newest backup is one an older version poisoned with `.git/HEAD`: after a branch
    // change, `undo` still works and leaves `.git` alone.
    poison_newest_backup(&r);
    r.git(&["checkout", "-q", "-b", "other"]);
    let out = run_in(r.path(), &["undo"]);
    assert!(out.status.success(), "undo: {}", stderr(&out));
    assert_eq!(r.read("a.txt"), "three\n");
    assert_eq!(
        r.read(".git/HEAD"),
        "ref: refs/heads/main\n",
        "HEAD as the backup had it"
    );

    // `undo <backup>` brings back any older one by its (abbreviated) id.
    let out = run_in(r.path(), &["undo", &older[..12]]);
    assert!(out.status.success(), "undo <backup>: {}", stderr(&out));
    assert_eq!(r.read("a.txt"), "two\n");
    let out = run_in(r.path(), &["undo", "no-such-backup"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = run_in(r.path(), &["undo", "deadbeef"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("undo --list"), "{}", stderr(&out));
    fsck_but_the_crafted_git_folder(&r);
}

#[test]
fn revert_never_decides_through_a_symlink_out_of_the_repository() {
    let r = Repo::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("victim"), "outside\n").unwrap();
    r.write("lnk/victim", "inside\n");
    r.git(&["add", "-A"]);
    r.git(&["commit", "-qm", "base"]);
    r.ok(&["start", "--run", "r1"]);
    std::fs::remove_dir_all(r.path().join("lnk")).unwrap();
    std::os::unix::fs::symlink(outside.path(), r.path().join("lnk")).unwrap();
    r.ok(&["checkpoint", "s1", "--run", "r1"]);

    let out = json_in(r.path(), &["revert", "r1"]);
    let files = out["files"].as_array().unwrap();
    let victim = files.iter().find(|f| f["path"] == "lnk/victim").unwrap();
    assert_eq!(victim["action"], "revert", "{out}");
    let md = std::fs::symlink_metadata(r.path().join("lnk")).unwrap();
    assert!(md.is_dir(), "lnk is a folder again");
    assert_eq!(r.read("lnk/victim"), "inside\n");
    assert_eq!(
        std::fs::read_to_string(outside.path().join("victim")).unwrap(),
        "outside\n",
        "nothing outside the repository is touched"
    );
    assert_eq!(r.git(&["status", "--porcelain"]), "");
    r.assert_fsck();
}

#[test]
fn list_stops_saying_reverted_once_the_revert_is_undone() {
    let r = Repo::new();
    r.ok(&["start", "--run", "ra"]);
    r.write("a.txt", "from run a\n");
    r.ok(&["checkpoint", "edit", "--run", "ra"]);
    let reverted = |r: &Repo| {
        let runs = json_in(r.path(), &["list"]);
        runs.as_array()
            .unwrap()
            .iter()
            .find(|x| x["run"] == "ra")
            .unwrap()["reverted"]
            .clone()
    };
    r.ok(&["revert", "ra"]);
    assert_eq!(reverted(&r), true);
    r.ok(&["undo"]);
    assert_eq!(r.read("a.txt"), "from run a\n");
    assert_ne!(reverted(&r), true, "the revert was undone");
    assert!(!r.ok(&["list"]).contains("reverted"));
    // An undo of the undo takes the run's work back again.
    r.ok(&["undo"]);
    assert!(!r.path().join("a.txt").exists());
    assert_eq!(reverted(&r), true);
    r.assert_fsck();
}

#[test]
fn a_dry_run_whose_plan_has_a_conflict_exits_1() {
    let r = Repo::new();
    r.write("a.txt", "one\n");
    r.git(&["add", "-A"]);
    r.git(&["commit", "-qm", "base"]);
    r.ok(&["start", "--run", "r1"]);
    r.write("a.txt", "run\n");
    r.ok(&["checkpoint", "s1", "--run", "r1"]);
    r.write("a.txt", "someone else\n");
    let out = run_in(r.path(), &["--json", "revert", "r1", "--dry-run"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["files"][0]["action"], "conflict", "{plan}");
    assert_eq!(r.read("a.txt"), "someone else\n");
    // Without a conflict, a dry run exits 0.
    r.write("a.txt", "run\n");
    let out = run_in(r.path(), &["revert", "r1", "--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_held_notes_lock_refuses_a_revert_before_any_file_changes() {
    let r = Repo::new();
    r.ok(&["start", "--run", "r1"]);
    r.write("a.txt", "from the run\n");
    r.ok(&["checkpoint", "s1", "--run", "r1"]);
    let lock = r.path().join(".git/refs/notes/agent-runs/r1.lock");
    std::fs::write(&lock, "").unwrap();
    let backups = backups_tip(&r);
    let out = run_in(r.path(), &["revert", "r1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("r1.lock") && stderr(&out).contains("rm '"));
    assert_eq!(r.read("a.txt"), "from the run\n", "nothing written");
    assert_eq!(backups_tip(&r), backups, "no backup");
    std::fs::remove_file(&lock).unwrap();
    r.ok(&["revert", "r1"]);
    assert!(!r.path().join("a.txt").exists());
    r.assert_fsck();
}
