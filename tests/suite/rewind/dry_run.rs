//! `rewind --dry-run` and `fork --dry-run` say what would happen (the files that would
//! change, what stays in place, the new run and branch) and write nothing: no ref, no note,
//! no file, no worktree.

use crate::common::{Repo, refs};
use std::collections::BTreeMap;

/// Every ref with its value, and git's view of the index and worktree.
fn state(repo: &Repo) -> (BTreeMap<String, String>, String) {
    let all = repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]);
    let refs = all
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    (refs, repo.git(&["status", "--porcelain", "--ignored"]))
}

#[test]
fn a_dry_run_lists_what_would_change_and_writes_nothing() {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1"]);
    repo.write("a.txt", "one\n");
    repo.ok(&["checkpoint", "s1"]);
    repo.write("a.txt", "two\n");
    repo.write("b.txt", "new\n");
    repo.write(".env", "TOKEN=kept\n");
    repo.ok(&["checkpoint", "s2"]);
    let before = state(&repo);
    let active_before = std::fs::read(repo.path().join(".git/agent-rewind/active-run")).ok();

    let out = repo.json(&["rewind", "r1", "--to", "r1@1", "--run", "r2", "--dry-run"]);
    assert_eq!(out["dry_run"], true, "{out:#}");
    assert_eq!(out["run"], "r2");
    assert_eq!(out["branch"], "agent-runs/r2");
    let files: Vec<(String, String)> = out["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().into(),
                f["change"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        files,
        [
            ("a.txt".to_string(), "M".to_string()),
            ("b.txt".into(), "D".into())
        ],
        "{out:#}"
    );
    let left: Vec<&str> = out["left_in_place"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(left, [".env"], "{out:#}");
    let human = repo.ok(&["rewind", "r1", "--to", "r1@1", "--run", "r2", "-n"]);
    assert!(human.starts_with("dry run, nothing written"), "{human}");
    assert!(
        human.contains("b.txt") && human.contains("left in place .env"),
        "{human}"
    );

    let wt = repo.path().join("../dry-run-fork");
    let out = repo.json(&[
        "fork",
        "r1",
        "--to",
        "r1@1",
        "--run",
        "r3",
        "--worktree",
        wt.to_str().unwrap(),
        "--dry-run",
    ]);
    assert_eq!(out["dry_run"], true);
    assert!(!wt.exists(), "no worktree is made");

    // `--agent-resume` where no agent recorded a conversation: refused, nothing changed.
    let refused = repo.run(&[
        "rewind",
        "r1",
        "--to",
        "r1@1",
        "--run",
        "r5",
        "--agent-resume",
    ]);
    assert_ne!(refused.status.code(), Some(0));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("no agent conversation") && err.contains("nothing was changed"),
        "{err}"
    );

    assert_eq!(state(&repo), before, "no ref and no file changed");
    assert_eq!(
        std::fs::read(repo.path().join(".git/agent-rewind/active-run")).ok(),
        active_before
    );
    assert!(refs(repo.path(), "refs/agent-runs/r2").is_empty());
    assert_eq!(repo.read("a.txt"), "two\n");
    repo.assert_fsck();
}

/// Without `--run`, the new run's id is generated when the run is made, so a preview cannot
/// know it: it names no id (and no branch derived from one), and says how to choose one.
/// With `--run`, the id it names is the one the rewind then uses.
#[test]
fn a_dry_run_names_no_run_id_it_cannot_keep() {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1"]);
    repo.write("a.txt", "one\n");
    repo.ok(&["checkpoint", "s1"]);
    repo.write("a.txt", "two\n");
    repo.ok(&["checkpoint", "s2"]);
    let before = state(&repo);

    let preview = repo.json(&["rewind", "r1", "--to", "s2", "--dry-run"]);
    assert_eq!(preview["dry_run"], true, "{preview:#}");
    assert!(preview["run"].is_null(), "{preview:#}");
    assert!(preview["branch"].is_null(), "{preview:#}");
    let human = repo.ok(&["rewind", "r1", "--to", "s2", "--dry-run"]);
    assert!(
        human.starts_with("dry run, nothing written: would be rewound into a new run from r1/s2"),
        "{human}"
    );
    assert!(human.contains("--run"), "{human}");
    assert_eq!(state(&repo), before, "the previews wrote nothing");

    // Every run id the previews could have named is absent from what they printed: the
    // real rewind's id is not in them.
    let real = repo.json(&["rewind", "r1", "--to", "s2"]);
    let new_run = real["run"].as_str().unwrap();
    assert!(!human.contains(new_run), "{human}");
    assert!(!preview.to_string().contains(new_run), "{preview:#}");
    assert_eq!(real["branch"], format!("agent-runs/{new_run}"));

    // Named with --run: the preview's id and branch are the rewind's.
    let named = repo.json(&["rewind", new_run, "--to", "s1", "--run", "r9", "-n"]);
    assert_eq!(named["run"], "r9");
    assert_eq!(named["branch"], "agent-runs/r9");
    let done = repo.json(&["rewind", new_run, "--to", "s1", "--run", "r9"]);
    assert_eq!(done["run"], named["run"]);
    assert_eq!(done["branch"], named["branch"]);
    repo.assert_fsck();
}
