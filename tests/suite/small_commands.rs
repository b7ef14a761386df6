//! The read-only commands after their speed-ups: `show` lists exactly the
//! files `git diff-tree` lists between a checkpoint and its predecessor (tree diffs no longer
//! go through gix's blob-diff resource cache), and `diff` prints git's patch text after its
//! metadata lines while `--json` still carries every file with its patch.

use crate::common;

use common::Repo;
use std::collections::BTreeSet;

/// A run whose second checkpoint modifies, adds, deletes, turns a file into a folder,
/// a file into a symlink, and flips an executable bit.
fn varied_change() -> Repo {
    let r = Repo::new();
    r.write("keep.txt", "same\n");
    r.write("mod.txt", "one\ntwo\n");
    r.write("gone.txt", "bye\n");
    r.write("x", "a file named x\n");
    r.write("link", "a file, later a symlink\n");
    r.write("run.sh", "echo hi\n");
    r.write("deep/a/b/c.txt", "deep\n");
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "base"]);
    r.ok(&["checkpoint", "one", "--run", "r1"]);
    r.write("mod.txt", "one\n2\n");
    std::fs::remove_file(r.path().join("gone.txt")).unwrap();
    std::fs::remove_file(r.path().join("x")).unwrap();
    r.write("x/y.txt", "now a folder\n");
    std::fs::remove_file(r.path().join("link")).unwrap();
    agent_rewind_core::platform::links::create_symlink("keep.txt", r.path().join("link")).unwrap();
    agent_rewind_core::platform::mode::set_path_permission_bits(r.path().join("run.sh"), 0o755)
        .unwrap();
    r.write("deep/a/b/c.txt", "deeper\n");
    r.write("new/file.txt", "new\n");
    r.ok(&["checkpoint", "two", "--run", "r1"]);
    r
}

#[test]
fn show_lists_the_files_git_diff_tree_lists() {
    let r = varied_change();
    let cp = r.rev("refs/agent-runs/r1/two");
    let shown = r.json(&["show", "r1/two"]);
    let ours: BTreeSet<(String, String)> = shown["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["change"].as_str().unwrap().to_string(),
                f["path"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let git = r.git(&[
        "diff-tree",
        "-r",
        "--no-renames",
        "--name-status",
        &format!("{cp}^"),
        &cp,
    ]);
    let theirs: BTreeSet<(String, String)> = git
        .lines()
        .map(|l| {
            let (k, p) = l.split_once('\t').unwrap();
            (k.to_string(), p.to_string())
        })
        .collect();
    assert_eq!(ours, theirs);
    // Every kind of change is there.
    for kind in ["A", "M", "D", "T"] {
        assert!(ours.iter().any(|(k, _)| k == kind), "{kind}: {ours:?}");
    }
    assert!(ours.contains(&("D".into(), "x".into())));
    assert!(ours.contains(&("A".into(), "x/y.txt".into())));
}

#[test]
fn diff_prints_git_s_patch_and_json_keeps_every_patch() {
    let r = varied_change();
    let (a, b) = (
        r.rev("refs/agent-runs/r1/one"),
        r.rev("refs/agent-runs/r1/two"),
    );
    let out = r.ok(&["diff", "r1/one", "r1/two"]);
    // The metadata lines, a blank line, then exactly what `git diff` prints.
    let (meta, files) = out.split_once("\n\n").unwrap();
    assert!(meta.lines().all(|l| l.starts_with("metadata ")), "{meta}");
    assert_eq!(
        files.trim_end(),
        r.git(&["diff", "--no-color", &a, &b]).trim_end()
    );
    let doc = r.json(&["diff", "r1/one", "r1/two"]);
    let files = doc["files"].as_array().unwrap();
    let paths: BTreeSet<&str> = files.iter().map(|f| f["path"].as_str().unwrap()).collect();
    let git_paths = r.git(&["diff", "--no-renames", "--name-only", &a, &b]);
    assert_eq!(paths, git_paths.lines().collect::<BTreeSet<_>>());
    let m = files.iter().find(|f| f["path"] == "mod.txt").unwrap();
    let patch = m["patch"].as_str().unwrap();
    assert!(patch.contains("-two") && patch.contains("+2"), "{patch}");
    assert!(!doc["metadata"].as_array().unwrap().is_empty());
}
