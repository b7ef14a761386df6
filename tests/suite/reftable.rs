//! Repositories whose refs are in git's reftable format (`git init --ref-format=reftable`):
//! every command reads and writes their refs through git's own commands, with the same results
//! as in the files format. Checked with git itself: `for-each-ref`, `reflog`, `notes`, `fsck
//! --strict`, `status --porcelain`. (Concurrent writers and push/fetch run on reftable in
//! `concurrency` and `sharing::round_trip`.)

use crate::common::Repo;
use serde_json::Value;

fn js(repo: &Repo, args: &[&str]) -> Value {
    repo.json(args)
}

/// A reftable repository with a run `r1` of two steps, `plan` and `implement`.
fn reftable_repo_with_run() -> Repo {
    let repo = Repo::new_reftable();
    assert_eq!(
        repo.git(&["rev-parse", "--show-ref-format"]).trim(),
        "reftable"
    );
    repo.ok(&["start", "--run", "r1"]);
    repo.write("PLAN.md", "the plan\n");
    repo.ok(&["checkpoint", "plan", "--run", "r1", "-m", "planned"]);
    repo.write("README.md", "implemented\n");
    repo.write("new.txt", "new file\n");
    repo.ok(&["checkpoint", "implement", "--run", "r1", "-m", "done"]);
    repo
}

#[test]
fn checkpoints_of_a_reftable_repository_are_refs_notes_and_reflogs_git_reads() {
    let repo = reftable_repo_with_run();
    let refs = repo.git(&["for-each-ref", "--format=%(refname)", "refs/agent-runs/"]);
    assert_eq!(
        refs.lines().collect::<Vec<_>>(),
        [
            "refs/agent-runs/r1/HEAD",
            "refs/agent-runs/r1/implement",
            "refs/agent-runs/r1/plan"
        ]
    );
    // Nothing was written as a loose ref or packed-refs: git keeps them in its tables.
    assert!(!repo.path().join(".git/refs/agent-runs").exists());
    assert!(!repo.path().join(".git/packed-refs").exists());
    let head = repo.rev("refs/agent-runs/r1/HEAD");
    assert_eq!(head, repo.rev("refs/agent-runs/r1/implement"));
    // The note of every checkpoint, through git notes.
    let note = repo.git(&["notes", "--ref=agent-runs/r1", "show", &head]);
    assert!(note.contains("\"implement\""), "{note}");
    // The run's HEAD has a reflog entry per move, with our message.
    let reflog = repo.git(&["reflog", "show", "--format=%gs", "refs/agent-runs/r1/HEAD"]);
    assert_eq!(reflog.lines().count(), 3, "{reflog}");
    // The read commands see the same run.
    let list = js(&repo, &["list", "r1"]);
    assert_eq!(list.as_array().unwrap().len(), 3, "{list:#}");
    assert_eq!(js(&repo, &["show", "r1/implement"])["checkpoint"], head);
    let diff = repo.ok(&["diff", "r1/plan", "r1/implement"]);
    assert!(
        diff.contains("+implemented") && diff.contains("new.txt"),
        "{diff}"
    );
    let runs = js(&repo, &["list"]);
    assert_eq!(runs[0]["run"], "r1", "{runs:#}");
    let status = repo.ok(&["status"]);
    assert!(status.contains("r1"), "{status}");
    // The user's files and index are untouched by checkpoints.
    assert_eq!(
        repo.git(&["status", "--porcelain"]),
        " M README.md\n?? PLAN.md\n?? new.txt\n"
    );
    repo.assert_fsck();
}

#[test]
fn rewind_and_undo_in_place_in_a_reftable_repository() {
    let repo = reftable_repo_with_run();
    let before = repo.git(&["status", "--porcelain"]);
    // `--to implement`: the state `implement` started from, the end of `plan`.
    let rewound = js(&repo, &["rewind", "r1", "--to", "implement", "--run", "r2"]);
    assert_eq!(rewound["run"], "r2", "{rewound:#}");
    assert_eq!(repo.read("README.md"), "hello\n");
    assert_eq!(repo.read("PLAN.md"), "the plan\n");
    assert!(!repo.path().join("new.txt").exists());
    // HEAD moved to the rewound run's branch, read back through git.
    assert_eq!(
        repo.git(&["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/agent-runs/r2"
    );
    let r2 = repo.rev("refs/agent-runs/r2/HEAD");
    assert!(
        repo.git_output(&[
            "merge-base",
            "--is-ancestor",
            &repo.rev("refs/agent-runs/r1/plan"),
            &r2
        ])
        .status
        .success()
    );
    repo.ok(&["undo"]);
    assert_eq!(repo.read("README.md"), "implemented\n");
    assert_eq!(repo.read("new.txt"), "new file\n");
    assert_eq!(
        repo.git(&["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/main"
    );
    assert_eq!(repo.git(&["status", "--porcelain"]), before);
    // undo of the undo brings the rewind back.
    repo.ok(&["undo"]);
    assert_eq!(repo.read("README.md"), "hello\n");
    repo.assert_fsck();
}

#[test]
fn delete_and_gc_in_a_reftable_repository_leave_no_run_refs() {
    let repo = reftable_repo_with_run();
    for run in ["a1", "a2", "a3"] {
        repo.write("scratch.txt", run);
        repo.ok(&["checkpoint", "s", "--run", run]);
    }
    repo.ok(&["delete", "a1"]);
    assert!(
        repo.git(&[
            "for-each-ref",
            "refs/agent-runs/a1/",
            "refs/notes/agent-runs/a1"
        ])
        .is_empty()
    );
    let dry = repo.ok(&["gc", "--keep", "1", "--dry-run"]);
    assert!(dry.contains("a2"), "{dry}");
    assert_eq!(
        repo.git(&["for-each-ref", "--format=%(refname)", "refs/agent-runs/a2/"])
            .lines()
            .count(),
        2
    );
    repo.ok(&["gc", "--keep", "1"]);
    let left: Vec<String> = js(&repo, &["list"])
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
    repo.assert_fsck();
}

/// A ref that moved since the writer read it is never overwritten: the compare-and-swap of
/// git's transaction refuses it, and the tool retries on the new value.
#[test]
fn a_reftable_checkpoint_builds_on_a_run_head_moved_behind_its_back() {
    let repo = reftable_repo_with_run();
    let plan = repo.rev("refs/agent-runs/r1/plan");
    // Someone moves the run's HEAD back with git between two checkpoints.
    repo.git(&["update-ref", "refs/agent-runs/r1/HEAD", &plan]);
    repo.write("later.txt", "later\n");
    let out = js(&repo, &["checkpoint", "later", "--run", "r1"]);
    let id = out["checkpoint"].as_str().unwrap();
    assert_eq!(repo.rev(&format!("{id}^")), plan, "{out:#}");
    assert_eq!(repo.rev("refs/agent-runs/r1/HEAD"), id);
    repo.assert_fsck();
}
