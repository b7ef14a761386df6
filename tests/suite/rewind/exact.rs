//! What rewind, restore, revert and undo must leave exactly as it was, or say exactly what
//! they did: every file's permission bits through a backup and its undo, a named path the
//! checkpoint never held, a folder restored under git's no-overlay rule, and a submodule whose
//! checked-out commit moved on (git leaves a submodule's worktree alone).

use super::{assert_refused, field, put, start};
use crate::common::{Repo, git_in};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn mode(root: &Path, rel: &str) -> u32 {
    std::fs::symlink_metadata(root.join(rel))
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
        .permissions()
        .mode()
        & 0o7777
}

/// Files whose permission bits no git mode holds: a backup must still bring them back.
const MODES: [(&str, u32); 5] = [
    ("private.txt", 0o600),
    ("tool", 0o700),
    ("shared.txt", 0o664),
    ("tracked.txt", 0o640),
    ("script.sh", 0o750),
];

fn assert_modes(root: &Path, ctx: &str) {
    for (f, m) in MODES {
        assert_eq!(mode(root, f), m, "{f}: mode {:o} {ctx}", mode(root, f));
    }
}

#[test]
fn undo_brings_back_each_files_permission_bits_exactly() {
    let repo = Repo::new();
    let d = repo.path();
    put(d, "tracked.txt", "tracked\n", 0o644);
    put(d, "script.sh", "#!/bin/sh\n", 0o755);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "base"]);
    start(d, "r1");
    let plan = field(&repo.json(&["checkpoint", "plan"]), "checkpoint");
    for (f, m) in MODES {
        put(d, f, format!("{f}, later\n"), m);
    }
    repo.json(&["checkpoint", "implement"]);

    // A rewind to before `implement` removes or rewrites all of them; undo puts them back.
    repo.json(&["rewind", "r1", "--to", "implement", "--run", "r2"]);
    assert!(!d.join("private.txt").exists());
    assert_eq!(repo.read("tracked.txt"), "tracked\n");
    repo.json(&["undo"]);
    assert_modes(d, "after undoing a rewind");

    // A whole restore, then its undo.
    repo.json(&["restore", &plan]);
    assert!(!d.join("tool").exists());
    repo.json(&["undo"]);
    assert_modes(d, "after undoing a restore");

    // A restore of one path, then its undo: the file is rewritten, its bits come back.
    repo.json(&["restore", &plan, "--", "tracked.txt"]);
    assert_eq!(repo.read("tracked.txt"), "tracked\n");
    repo.json(&["undo"]);
    assert_modes(d, "after undoing a path restore");

    // Undo of the undo keeps them too (the undo took a backup of its own).
    repo.json(&["undo"]);
    assert_eq!(repo.read("tracked.txt"), "tracked\n");
    repo.json(&["undo"]);
    assert_modes(d, "after undoing an undo twice");
    repo.assert_fsck();
}

#[test]
fn restore_of_a_path_the_checkpoint_never_held_is_refused_and_changes_nothing() {
    let repo = Repo::new();
    let d = repo.path();
    start(d, "r1");
    let cp = field(&repo.json(&["checkpoint", "plan"]), "checkpoint");
    put(d, "src/login.rs", "fn login() {}\n", 0o644);
    put(d, "README.md", "changed\n", 0o644);
    assert_refused(
        d,
        &["restore", &cp, "--", "src/login.rs"],
        &[1],
        "src/login.rs did not exist at checkpoint",
    );
    assert_eq!(repo.read("src/login.rs"), "fn login() {}\n");
    // Named beside a path it does hold: still refused as a whole.
    assert_refused(
        d,
        &["restore", &cp, "--", "README.md", "src/login.rs"],
        &[1],
        "src/login.rs did not exist at checkpoint",
    );
    assert_eq!(repo.read("README.md"), "changed\n");
    assert_eq!(repo.read("src/login.rs"), "fn login() {}\n");
    // A folder the checkpoint never held, too.
    assert_refused(
        d,
        &["restore", &cp, "--", "src"],
        &[1],
        "src did not exist at checkpoint",
    );
    assert_eq!(repo.read("src/login.rs"), "fn login() {}\n");
}

#[test]
fn restore_of_a_folder_removes_and_lists_what_the_checkpoint_lacks_and_reports_only_that_folder() {
    let repo = Repo::new();
    let d = repo.path();
    put(d, "sub/kept.txt", "v1\n", 0o644);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "base"]);
    start(d, "r1");
    let cp = field(&repo.json(&["checkpoint", "plan"]), "checkpoint");
    put(d, "sub/kept.txt", "v2\n", 0o644);
    put(d, "sub/new.txt", "not at the checkpoint\n", 0o644);
    put(d, "outside.txt", "not at the checkpoint either\n", 0o644);
    // Secret-looking files, which no snapshot holds, inside and outside the folder.
    put(d, ".env", "TOKEN=outside\n", 0o600);
    put(d, "sub/.env", "TOKEN=inside\n", 0o600);
    // And an untracked file too big for snapshots, outside it.
    repo.git(&["config", "agentRewind.maxUntrackedSize", "64"]);
    put(d, "big.bin", [7u8; 200], 0o644);

    let sub = d.join("sub");
    let out = crate::common::ok_in(&sub, &["restore", &cp, "--", "."]);
    assert!(out.contains("removed   sub/new.txt"), "{out}");
    assert!(out.contains("replaced  sub/kept.txt"), "{out}");
    let json = repo.json(&["undo"]);
    assert!(json["restored"].is_object(), "{json}");
    let out = repo.json(&["restore", &cp, "--", "sub/"]);
    assert!(!d.join("sub/new.txt").exists());
    assert_eq!(repo.read("sub/kept.txt"), "v1\n");
    assert_eq!(repo.read("outside.txt"), "not at the checkpoint either\n");
    let changed: Vec<&str> = out["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(changed, ["sub/kept.txt", "sub/new.txt"], "{out}");
    let left: Vec<&str> = out["left_in_place"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["path"].as_str().unwrap())
        .collect();
    assert_eq!(left, ["sub/.env"], "only what lies under sub/: {out}");
    assert_eq!(repo.read(".env"), "TOKEN=outside\n");
    assert_eq!(repo.read("sub/.env"), "TOKEN=inside\n");
}

/// A repository with a submodule `sub` whose checked-out commit moves on after `start`.
fn moved_submodule() -> (Repo, Repo, String, String) {
    let origin = Repo::new();
    let repo = Repo::new();
    repo.add_submodule(origin.path(), "sub");
    let d = repo.path();
    start(d, "r1");
    let cp = field(&repo.json(&["checkpoint", "plan"]), "checkpoint");
    put(d, "a.txt", "the agent's file\n", 0o644);
    repo.json(&["checkpoint", "implement"]);
    let inner = d.join("sub");
    git_in(&inner, &["config", "user.name", "T"]);
    git_in(&inner, &["config", "user.email", "t@t"]);
    git_in(&inner, &["commit", "-q", "--allow-empty", "-m", "inside"]);
    let moved = git_in(&inner, &["rev-parse", "HEAD"]).trim().to_string();
    (origin, repo, cp, moved)
}

fn left_paths(out: &serde_json::Value) -> Vec<(String, String)> {
    out["left_in_place"]
        .as_array()
        .unwrap_or_else(|| panic!("no left_in_place in {out}"))
        .iter()
        .map(|v| {
            (
                v["path"].as_str().unwrap().to_string(),
                v["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn changed_paths(out: &serde_json::Value, key: &str) -> Vec<String> {
    out[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {out}"))
        .iter()
        .map(|v| v["path"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn a_submodule_that_moved_on_is_left_in_place_and_said_so_by_rewind_restore_and_revert() {
    let (_origin, repo, cp, moved) = moved_submodule();
    let d = repo.path();
    let inner_head = || {
        git_in(&d.join("sub"), &["rev-parse", "HEAD"])
            .trim()
            .to_string()
    };

    let out = repo.json(&["restore", &cp]);
    assert!(
        !changed_paths(&out, "files").contains(&"sub".to_string()),
        "restore must not report the submodule as changed: {out}"
    );
    let left = left_paths(&out);
    assert!(
        left.iter()
            .any(|(p, why)| p == "sub" && why.contains("submodule")),
        "{out}"
    );
    assert_eq!(
        inner_head(),
        moved,
        "the submodule's worktree is left alone"
    );
    repo.json(&["undo"]);

    let out = repo.json(&["restore", &cp, "--", "sub"]);
    assert!(changed_paths(&out, "files").is_empty(), "{out}");
    assert!(left_paths(&out).iter().any(|(p, _)| p == "sub"), "{out}");
    repo.json(&["undo"]);

    let out = repo.json(&["rewind", "r1", "--to", "implement", "--run", "r2"]);
    let text = out.to_string();
    assert!(
        !changed_paths(&out, "files").contains(&"sub".to_string()),
        "rewind must not report the submodule as changed: {text}"
    );
    // A rewind that writes lists what it left in its backup's record, as for any file.
    assert!(
        left_paths(&out["backup"]).iter().any(|(p, _)| p == "sub"),
        "{text}"
    );
    assert_eq!(inner_head(), moved);
    repo.json(&["undo"]);

    // A run that itself moved the submodule: revert leaves the submodule as it is now.
    let inner = d.join("sub");
    git_in(&inner, &["commit", "-q", "--allow-empty", "-m", "again"]);
    repo.json(&["checkpoint", "bump"]);
    let now = inner_head();
    let out = repo.json(&["revert", "r1/bump"]);
    let sub_plan = out["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "sub")
        .unwrap_or_else(|| panic!("the plan names the submodule: {out}"));
    assert_eq!(sub_plan["action"], "keep", "{out}");
    assert!(left_paths(&out).iter().any(|(p, _)| p == "sub"), "{out}");
    assert_eq!(inner_head(), now);
    repo.assert_fsck();
}
