//! `pick`: bring what a run did onto this worktree, through the binary against real git,
//! checked against an independent model (`git merge-file` per path): an A/B fork in another
//! worktree picked home, conflicts refused with nothing written or written as markers, a
//! dry run that writes nothing, `undo` back to the state before byte for byte, the index
//! untouched, a teammate's fetched run and a range of its checkpoints, untracked files.

mod blame;

use crate::common;
use crate::common::stderr;

use common::worktree::{file_action, worktree_state};
use common::{Repo, git_in, json_in, ok_in, run_in};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Twelve numbered lines, `line 1` … `line 12`.
fn twelve() -> String {
    (1..=12).map(|i| format!("line {i}\n")).collect()
}

/// `text` with line `n` replaced by `by`.
fn with_line(text: &str, n: usize, by: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            if i + 1 == n {
                format!("{by}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect()
}

/// The model: what git itself makes of one path the run changed, `git merge-file -p` of the
/// worktree's bytes (ours), the run's before (the ancestor) and its after, labelled as
/// `pick` labels them; and how many conflicts git found.
fn merge_file(dir: &Path, run: &str, ours: &str, before: &str, after: &str) -> (String, i32) {
    let tmp = tempfile::tempdir().unwrap();
    let p = |name: &str, text: &str| {
        let path = tmp.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let (o, b, a) = (p("ours", ours), p("before", before), p("after", after));
    let (lb, la) = (format!("{run} (before)"), format!("{run} (after)"));
    let out = common::git_cmd(dir)
        .args(["merge-file", "-p", "-L", "worktree", "-L", &lb, "-L", &la])
        .args([&o, &b, &a])
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        out.status.code().unwrap(),
    )
}

/// A repository whose main worktree works in run `a`, and a fork `b` of it in a second
/// worktree (returned with the folder that holds it); `files` are committed first.
fn fork_in_a_second_worktree(
    files: &[(&str, String)],
) -> (Repo, tempfile::TempDir, std::path::PathBuf) {
    let r = Repo::new();
    for (path, text) in files {
        r.write(path, text);
    }
    r.git(&["add", "-A"]);
    r.git(&["commit", "-qm", "base"]);
    r.ok(&["checkpoint", "setup", "--run", "a"]);
    let tmp = tempfile::tempdir().unwrap();
    let wt = tmp.path().join("try-b");
    r.ok(&[
        "fork",
        "a",
        "--to",
        "a@-1",
        "--worktree",
        wt.to_str().unwrap(),
        "--run",
        "b",
    ]);
    (r, tmp, wt)
}

#[test]
fn an_ab_fork_in_another_worktree_comes_home_as_git_merge_file_merges_each_path() {
    let base = twelve();
    let names = ["f1", "f2", "f3", "f4", "f5", "f6.sh", "f7"];
    let files: Vec<(&str, String)> = names.iter().map(|n| (*n, base.clone())).collect();
    let (r, _tmp, wt) = fork_in_a_second_worktree(&files);
    // Attempt b, in its own worktree.
    let theirs = [
        ("f1", with_line(&base, 2, "b's line 2")),
        ("f2", with_line(&base, 2, "b's line 2")),
        ("f3", with_line(&base, 3, "both wrote this")),
        ("f6.sh", with_line(&base, 1, "#!/bin/sh")),
        ("f7", format!("{base}b's tail\n")),
        ("new.txt", "created by b\n".to_string()),
    ];
    for (path, text) in &theirs {
        std::fs::write(wt.join(path), text).unwrap();
    }
    std::fs::set_permissions(wt.join("f6.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::remove_file(wt.join("f5")).unwrap();
    ok_in(&wt, &["checkpoint", "work", "--run", "b"]);
    // Attempt a, here, meanwhile.
    r.write("f2", &with_line(&base, 10, "a's line 10"));
    r.write("f3", &with_line(&base, 3, "both wrote this"));
    r.write("f4", &with_line(&base, 5, "a only"));
    r.write("f6.sh", &with_line(&base, 12, "a's last line"));
    r.write("f7", &format!("a's head\n{base}"));
    r.ok(&["checkpoint", "work", "--run", "a"]);
    r.git(&["add", "f4"]);
    let ours: Vec<(String, String)> = names.iter().map(|n| (n.to_string(), r.read(n))).collect();
    let before = worktree_state(r.path());
    let index = r.index_bytes();
    let staged = r.git(&["ls-files", "-s"]);
    let cached = r.git(&["diff", "--cached", "--name-only"]);
    let backups = r.git_output(&["rev-parse", "-q", "--verify", "refs/agent-rewind/backups"]);
    let tip = r.rev("refs/agent-runs/a/HEAD");

    // The plan first: nothing written, no backup, no checkpoint.
    let plan = json_in(r.path(), &["pick", "b", "--dry-run"]);
    assert_eq!(plan["dry_run"], true);
    assert_eq!(worktree_state(r.path()), before, "a dry run writes nothing");
    assert_eq!(
        r.git_output(&["rev-parse", "-q", "--verify", "refs/agent-rewind/backups"])
            .stdout,
        backups.stdout,
        "a dry run takes no backup"
    );
    assert_eq!(
        r.rev("refs/agent-runs/a/HEAD"),
        tip,
        "a dry run records nothing"
    );

    let out = json_in(r.path(), &["pick", "b"]);
    assert_eq!(out["files"], plan["files"], "the pick does what it planned");
    let action = |p: &str| file_action(&out, p);
    assert_eq!(action("f1").as_deref(), Some("pick"));
    assert_eq!(action("f2").as_deref(), Some("merge"));
    assert_eq!(action("f3").as_deref(), Some("keep"));
    assert_eq!(action("f4"), None, "b never changed f4");
    assert_eq!(action("new.txt").as_deref(), Some("pick"));
    assert_eq!(action("f5").as_deref(), Some("pick"));

    // Every path as git merge-file makes it of (here, before, b's after).
    for (path, here) in &ours {
        let after = theirs
            .iter()
            .find(|(p, _)| p == path)
            .map_or(base.clone(), |(_, t)| t.clone());
        if path == "f5" {
            assert!(
                !r.path().join("f5").exists(),
                "b deleted f5, unchanged here"
            );
            continue;
        }
        let (expected, conflicts) = merge_file(r.path(), "b", here, &base, &after);
        assert_eq!(conflicts, 0, "{path} merges cleanly in the model");
        assert_eq!(r.read(path), expected, "{path} as git merge-file has it");
    }
    assert_eq!(r.read("new.txt"), "created by b\n");
    let mode = std::fs::metadata(r.path().join("f6.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_ne!(mode & 0o111, 0, "b's exec bit comes home with the merge");

    // The index is as it was: staged content stays staged, picked files are changes.
    assert_eq!(r.index_bytes(), index, "the index file is untouched");
    assert_eq!(r.git(&["diff", "--cached", "--name-only"]), cached);
    let status = r.git(&["status", "--porcelain"]);
    assert!(
        status.contains(" M f1\n") && status.contains(" D f5\n"),
        "{status}"
    );
    assert!(
        status.contains("?? new.txt\n") && status.contains("M  f4\n"),
        "{status}"
    );

    // Recorded as a checkpoint of the active run, with where it came from.
    let recorded = out["checkpoint"].as_str().unwrap();
    assert_eq!(out["recorded_in"], "a");
    assert_eq!(r.rev("refs/agent-runs/a/HEAD"), recorded);
    let chain = r.json(&["log", "a"]);
    let newest = &chain[0];
    assert_eq!(newest["picked_from"]["run"], "b");
    assert_eq!(newest["picked_from"]["to"], out["to"]);
    assert_eq!(newest["picked_from"]["from"], out["from"]);
    assert!(r.ok(&["log", "a"]).contains("picked from run b"));
    let tree = r.git(&["ls-tree", "-r", "--name-only", recorded]);
    assert!(
        tree.lines().any(|l| l == "new.txt"),
        "the checkpoint holds the pick: {tree}"
    );
    r.assert_fsck();

    // Undo brings the state before the pick back, byte for byte.
    r.ok(&["undo"]);
    assert_eq!(worktree_state(r.path()), before);
    assert_eq!(
        r.git(&["ls-files", "-s"]),
        staged,
        "undo keeps what is staged"
    );
    // The other worktree was never touched.
    assert_eq!(std::fs::read_to_string(wt.join("f1")).unwrap(), theirs[0].1);
    r.assert_fsck();
}

#[test]
fn a_conflict_is_refused_with_nothing_written_or_written_as_markers() {
    let base = twelve();
    let (r, _tmp, wt) =
        fork_in_a_second_worktree(&[("f.txt", base.clone()), ("g.txt", base.clone())]);
    let b_side = with_line(&base, 5, "line 5 by b");
    std::fs::write(wt.join("f.txt"), &b_side).unwrap();
    std::fs::write(wt.join("g.txt"), with_line(&base, 1, "g by b")).unwrap();
    ok_in(&wt, &["checkpoint", "work", "--run", "b"]);
    let here = with_line(&base, 5, "line 5 here");
    r.write("f.txt", &here);
    let before = worktree_state(r.path());
    let tip = r.rev("refs/agent-runs/a/HEAD");

    let out = run_in(r.path(), &["pick", "b"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("f.txt"),
        "names the file: {}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("nothing was written"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        worktree_state(r.path()),
        before,
        "nothing written, not even g.txt"
    );
    assert!(
        !r.git_output(&["rev-parse", "-q", "--verify", "refs/agent-rewind/backups"])
            .status
            .success(),
        "no backup taken"
    );
    assert_eq!(r.rev("refs/agent-runs/a/HEAD"), tip, "nothing recorded");

    let out = run_in(r.path(), &["--json", "pick", "b", "--dry-run"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a dry run with a conflict exits 1"
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = plan["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "f.txt")
        .unwrap();
    assert_eq!(f["action"], "conflict");
    assert_eq!(worktree_state(r.path()), before);

    // With markers: exactly what git merge-file writes.
    let out = json_in(r.path(), &["pick", "b", "--conflict=markers"]);
    let (expected, conflicts) = merge_file(r.path(), "b", &here, &base, &b_side);
    assert_eq!(conflicts, 1, "the model sees the conflict too");
    assert_eq!(r.read("f.txt"), expected);
    assert!(
        expected.contains("<<<<<<< worktree\nline 5 here\n"),
        "{expected}"
    );
    assert_eq!(r.read("g.txt"), with_line(&base, 1, "g by b"));
    let f = out["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "f.txt")
        .unwrap();
    assert_eq!(f["action"], "markers");
    r.ok(&["undo"]);
    assert_eq!(worktree_state(r.path()), before);
    r.assert_fsck();
}

/// A path the run changed that this worktree deleted, or created differently (an untracked
/// file), is a conflict: taking either side silently would lose the other's work.
#[test]
fn deleted_here_or_created_here_differently_conflicts_and_an_equal_untracked_file_is_kept() {
    let base = twelve();
    let (r, _tmp, wt) = fork_in_a_second_worktree(&[("f.txt", base.clone())]);
    std::fs::write(wt.join("f.txt"), with_line(&base, 2, "b")).unwrap();
    std::fs::write(wt.join("same.txt"), "the same\n").unwrap();
    std::fs::write(wt.join("other.txt"), "b's version\n").unwrap();
    ok_in(&wt, &["checkpoint", "work", "--run", "b"]);
    std::fs::remove_file(r.path().join("f.txt")).unwrap();
    r.write("same.txt", "the same\n");
    r.write("other.txt", "my untracked version\n");
    let before = worktree_state(r.path());
    let out = run_in(r.path(), &["--json", "pick", "b", "--dry-run"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let action = |p: &str| file_action(&plan, p).expect("the plan names the path");
    assert_eq!(action("f.txt"), "conflict");
    assert_eq!(action("other.txt"), "conflict");
    assert_eq!(action("same.txt"), "keep");
    let out = run_in(r.path(), &["pick", "b", "--conflict=markers"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "no markers for a deletion: {}",
        stderr(&out)
    );
    assert_eq!(worktree_state(r.path()), before);
    assert_eq!(r.read("other.txt"), "my untracked version\n");
}

#[test]
fn a_teammates_fetched_run_or_a_range_of_its_checkpoints_comes_home_and_runs_the_hook() {
    let remote = tempfile::tempdir().unwrap();
    git_in(remote.path(), &["init", "-q", "--bare"]);
    let a = Repo::new();
    a.git(&["remote", "add", "origin", remote.path().to_str().unwrap()]);
    a.git(&["push", "-q", "origin", "main"]);
    a.ok(&["start", "--run", "shared"]);
    a.write("one.txt", "first turn\n");
    a.ok(&["checkpoint", "t1"]);
    a.write("two.txt", "second turn\n");
    a.ok(&["checkpoint", "t2"]);
    a.write("three.txt", "third turn\n");
    a.ok(&["checkpoint", "t3"]);
    a.ok(&["push", "origin", "shared"]);

    let b = tempfile::tempdir().unwrap();
    git_in(
        b.path(),
        &[
            "clone",
            "-q",
            "-b",
            "main",
            remote.path().to_str().unwrap(),
            ".",
        ],
    );
    git_in(b.path(), &["config", "user.name", "B"]);
    git_in(b.path(), &["config", "user.email", "b@example.com"]);
    ok_in(b.path(), &["fetch", "origin", "shared"]);
    std::fs::write(b.path().join("mine.txt"), "b's own work\n").unwrap();
    // The user's hook hears of the pick, as of every operation that changes files.
    let calls = b.path().join(".git/hook-calls");
    let hook = b.path().join(".git/hooks/post-agent-rewind");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::write(
        &hook,
        format!("#!/bin/sh\necho \"$1 $2 $3 $4\" >> '{}'\n", calls.display()),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();

    // Only checkpoints 2 and 3: the second and third turns, not the first.
    let out = json_in(b.path(), &["pick", "shared@1..@3"]);
    assert_eq!(out["scope"], "checkpoints @1..@3");
    let mut paths: Vec<&str> = out["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    paths.sort();
    assert_eq!(paths, ["three.txt", "two.txt"]);
    assert!(!b.path().join("one.txt").exists());
    assert_eq!(
        std::fs::read_to_string(b.path().join("two.txt")).unwrap(),
        "second turn\n"
    );
    assert_eq!(
        std::fs::read_to_string(b.path().join("mine.txt")).unwrap(),
        "b's own work\n"
    );
    let heard = std::fs::read_to_string(&calls).unwrap();
    let args: Vec<&str> = heard.split_whitespace().collect();
    assert_eq!(args[0], "pick");
    assert_eq!(args[1], out["to"].as_str().unwrap());
    assert_eq!(args[2], out["checkpoint"].as_str().unwrap());
    assert_eq!(args[3], out["backup"]["commit"].as_str().unwrap());
    // With no active run here, the pick started one.
    let recorded = out["recorded_in"].as_str().unwrap();
    assert_ne!(recorded, "shared");
    assert_eq!(git_in(b.path(), &["diff", "--cached"]), "");

    // Picking the whole run again brings only what is not here yet.
    let out = json_in(b.path(), &["pick", "shared"]);
    let fate = |p: &str| file_action(&out, p).expect("the plan names the path");
    assert_eq!(fate("one.txt"), "pick");
    assert_eq!(fate("two.txt"), "keep");

    // A range the wrong way round, or across runs, is a usage error and writes nothing.
    let out = run_in(b.path(), &["pick", "shared@3..@1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = run_in(b.path(), &["pick", &format!("shared@1..{recorded}@0")]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    common::assert_fsck_in(b.path(), "the clone");
}
