//! Names a case-insensitive file system cannot tell apart (`core.ignorecase`, which git sets
//! on macOS and Windows): a restore, rewind or pick that would put two paths on one file is
//! refused before anything changes, and a rename by case alone still goes through. The
//! file system here tells case apart, so the tests show that the decision follows git's
//! setting and that nothing was written.

use super::{field, git_view, json_in, put, ref_exists, rm, start, worktree_files};
use crate::common::{Repo, stderr, tool_cmd};

/// A run `r` whose checkpoint `r@1` adds `NOTES.md` to a commit holding `base.txt`.
fn run_that_adds_notes(repo: &Repo) -> String {
    let d = repo.path();
    put(d, "base.txt", "base\n", 0o644);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "base"]);
    start(d, "r");
    put(d, "NOTES.md", "the agent's notes\n", 0o644);
    field(&json_in(d, &["checkpoint", "notes"]), "checkpoint")
}

/// Run the tool and expect a refusal naming both paths; nothing changed.
fn assert_refused_naming(repo: &Repo, args: &[&str], names: [&str; 2]) {
    let d = repo.path();
    let files = worktree_files(d);
    let view = git_view(d);
    let backups = ref_exists(d, "refs/agent-rewind/backups");
    let out = tool_cmd(d).args(args).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    for n in names {
        assert!(err.contains(n), "{args:?} names {n}: {err}");
    }
    assert!(err.contains("core.ignorecase"), "{err}");
    assert_eq!(worktree_files(d), files, "{args:?} changed no file");
    assert_eq!(git_view(d), view, "{args:?} left HEAD and the index alone");
    assert_eq!(
        ref_exists(d, "refs/agent-rewind/backups"),
        backups,
        "{args:?} left no backup behind"
    );
    repo.assert_fsck();
}

#[test]
fn a_restore_of_a_path_whose_name_is_already_there_in_another_case_is_refused() {
    let repo = Repo::new();
    let d = repo.path();
    let cp = run_that_adds_notes(&repo);
    rm(d, "NOTES.md");
    put(d, "notes.md", "the user's own notes\n", 0o644);
    repo.git(&["config", "core.ignorecase", "true"]);
    // A restore of that path alone keeps `notes.md`, so both names would be on one file.
    let args = ["restore", cp.as_str(), "--", "NOTES.md"];
    assert_refused_naming(&repo, &args, ["NOTES.md", "notes.md"]);
    assert_eq!(
        std::fs::read(d.join("notes.md")).unwrap(),
        b"the user's own notes\n"
    );

    // Where the file system tells case apart (git's default), both names are written.
    repo.git(&["config", "core.ignorecase", "false"]);
    json_in(d, &args);
    assert_eq!(
        std::fs::read(d.join("NOTES.md")).unwrap(),
        b"the agent's notes\n"
    );
    assert_eq!(
        std::fs::read(d.join("notes.md")).unwrap(),
        b"the user's own notes\n"
    );
}

#[test]
fn a_checkpoint_holding_two_names_for_one_file_is_refused_there() {
    let repo = Repo::new();
    let d = repo.path();
    put(d, "base.txt", "base\n", 0o644);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "base"]);
    start(d, "r");
    put(d, "src/Main.rs", "fn main() {}\n", 0o644);
    put(d, "src/main.rs", "// the other one\n", 0o644);
    let cp = field(&json_in(d, &["checkpoint", "both"]), "checkpoint");
    rm(d, "src/Main.rs");
    rm(d, "src/main.rs");
    // `git -c` reaches the decision as the repository's configuration does.
    let out = tool_cmd(d)
        .args(["restore", &cp])
        .env("GIT_CONFIG_PARAMETERS", "'core.ignorecase'='true'")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("src/Main.rs") && stderr(&out).contains("src/main.rs"));
    assert!(!d.join("src/Main.rs").exists() && !d.join("src/main.rs").exists());
    assert!(
        !ref_exists(d, "refs/agent-rewind/backups"),
        "no backup was left"
    );
}

#[test]
fn a_rename_by_case_alone_goes_through_and_undo_brings_the_old_name_back() {
    let repo = Repo::new();
    let d = repo.path();
    let cp = run_that_adds_notes(&repo);
    rm(d, "NOTES.md");
    put(d, "Notes.md", "renamed by case\n", 0o644);
    json_in(d, &["checkpoint", "renamed"]);
    repo.git(&["config", "core.ignorecase", "true"]);
    // `Notes.md` is deleted by the same change that adds `NOTES.md`: deletions go first.
    let out = json_in(d, &["restore", &cp]);
    assert!(out["backup"]["commit"].is_string(), "{out}");
    assert_eq!(
        std::fs::read(d.join("NOTES.md")).unwrap(),
        b"the agent's notes\n"
    );
    assert!(!d.join("Notes.md").exists());
    json_in(d, &["undo"]);
    assert_eq!(
        std::fs::read(d.join("Notes.md")).unwrap(),
        b"renamed by case\n"
    );
    assert!(!d.join("NOTES.md").exists());
    repo.assert_fsck();
}

#[test]
fn a_pick_that_adds_a_name_already_there_in_another_case_is_refused() {
    let repo = Repo::new();
    let d = repo.path();
    run_that_adds_notes(&repo);
    // Back at the base in a run of its own, with the user's own `notes.md`.
    json_in(d, &["rewind", "r", "--to", "r@0"]);
    put(d, "notes.md", "the user's own notes\n", 0o644);
    repo.git(&["config", "core.ignorecase", "true"]);
    assert_refused_naming(&repo, &["pick", "r"], ["NOTES.md", "notes.md"]);
    let plan = tool_cmd(d)
        .args(["pick", "r", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(plan.status.code(), Some(1), "a dry run says so too");
}
