//! The snapshot's own stat pass (`scan::statcheck`) marks index entries unchanged before
//! gix's status pass; it must never mark one that changed. Each scenario changes the
//! worktree in a way a stat check can get wrong (a mode change, a directory turned into a
//! symlink or a file into a directory, an intent-to-add entry, a same-size edit with the old
//! mtime put back) and compares the snapshot with what `git add -A` writes.

use crate::common;

use agent_rewind::snapshot::Snapshot;
use agent_rewind::store::{OpenFor, Store};
use common::Repo;
use std::os::unix::fs::PermissionsExt;

fn snapshot_matches_git(repo: &Repo, what: &str) -> Snapshot {
    common::snapshot_matches_git(repo.path(), what)
}

/// New content of the same size with the old mtime put back: only ctime (when trusted),
/// the racy check or the content can tell.
fn write_keeping_mtime(path: &std::path::Path, content: &str) {
    let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
    std::fs::write(path, content).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
}

fn settled_repo() -> Repo {
    let repo = Repo::new();
    for d in ["lib", "lib2", "src/deep"] {
        for f in 0..4 {
            repo.write(&format!("{d}/f{f}.txt"), &format!("{d} {f}\n"));
        }
    }
    repo.write("run.sh", "#!/bin/sh\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "files"]);
    // Out of git's racy window, with the stat data refreshed: entries can be proven.
    common::age_files(repo.path());
    repo.git(&["update-index", "--refresh"]);
    repo
}

fn chmod(repo: &Repo, rel: &str, mode: u32) {
    let path = repo.path().join(rel);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn unchanged_entries_are_proven_and_changed_ones_never() {
    let repo = settled_repo();
    let first = snapshot_matches_git(&repo, "nothing changed");
    assert!(
        first.entries_proven >= 12,
        "a settled worktree should be proven unchanged: {}",
        first.entries_proven
    );

    chmod(&repo, "lib/f0.txt", 0o755);
    chmod(&repo, "run.sh", 0o755);
    snapshot_matches_git(&repo, "an executable bit set");

    // A same-size edit with the old mtime put back: only ctime and the racy check can tell.
    let path = repo.path().join("lib/f1.txt");
    write_keeping_mtime(&path, "LIB 1\n");
    snapshot_matches_git(&repo, "a same-size edit with the old mtime");

    // A tracked folder moved away and replaced by a symlink to it: through the symlink,
    // every file has exactly the stat data the index holds.
    std::fs::rename(repo.path().join("lib2"), repo.path().join("moved")).unwrap();
    std::os::unix::fs::symlink("moved", repo.path().join("lib2")).unwrap();
    snapshot_matches_git(&repo, "a folder replaced by a symlink");

    // A tracked file replaced by a folder, another deleted.
    std::fs::remove_file(repo.path().join("src/deep/f0.txt")).unwrap();
    repo.write("src/deep/f0.txt/inside.txt", "now a folder\n");
    std::fs::remove_file(repo.path().join("src/deep/f1.txt")).unwrap();
    snapshot_matches_git(&repo, "a file replaced by a folder, one deleted");

    // An intent-to-add entry.
    repo.write("planned.txt", "content\n");
    repo.git(&["add", "-N", "planned.txt"]);
    snapshot_matches_git(&repo, "git add -N");
}

#[test]
fn without_core_filemode_an_executable_bit_is_not_a_change() {
    let repo = settled_repo();
    repo.git(&["config", "core.fileMode", "false"]);
    chmod(&repo, "lib/f2.txt", 0o755);
    chmod(&repo, "run.sh", 0o700);
    let snap = snapshot_matches_git(&repo, "chmod with core.fileMode=false");
    assert_eq!(
        snap.tree.to_string(),
        repo.git(&["rev-parse", "HEAD^{tree}"]).trim(),
        "nothing changed as far as git is concerned"
    );
}

#[test]
fn a_mode_change_is_seen_even_when_ctime_is_not_trusted() {
    let repo = settled_repo();
    // Without ctime, chmod leaves every compared stat field as it was: only the mode tells.
    repo.git(&["config", "core.trustctime", "false"]);
    chmod(&repo, "lib/f3.txt", 0o755);
    let snap = snapshot_matches_git(&repo, "chmod +x with core.trustctime=false");
    assert_ne!(
        snap.tree.to_string(),
        repo.git(&["rev-parse", "HEAD^{tree}"]).trim(),
        "the executable bit is a change"
    );
}

#[test]
fn racily_clean_entries_are_left_to_the_full_check() {
    let repo = Repo::new();
    repo.git(&["config", "core.trustctime", "false"]);
    repo.write("a.txt", "aaaa\n");
    repo.git(&["add", "a.txt"]);
    // Same size, same mtime, within the index's own second: only content tells. The index
    // file is given the file's mtime, so that the entry is racy however slowly `git add` ran.
    let path = repo.path().join("a.txt");
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(repo.path().join(".git/index"))
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    write_keeping_mtime(&path, "bbbb\n");
    let snap = snapshot_matches_git(&repo, "a racily clean edit");
    let store = Store::discover(repo.path(), OpenFor::Work).unwrap();
    let blob = store
        .objects()
        .path_in_tree(snap.tree, "a.txt")
        .unwrap()
        .expect("a.txt in the snapshot");
    assert_eq!(
        repo.git(&["cat-file", "-p", &blob.to_string()]),
        "bbbb\n",
        "the edit must be in the snapshot"
    );
}

#[test]
fn a_large_index_is_checked_on_several_threads_with_the_same_result() {
    // Over 8,000 entries the stat pass splits the index between threads, at arbitrary
    // points inside directories.
    let repo = Repo::new();
    for i in 0..8200 {
        let path = repo
            .path()
            .join(format!("d{:02}/e{:02}/f{i}.txt", i % 37, i % 11));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("{i}\n")).unwrap();
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "many"]);
    common::age_files(repo.path());
    repo.git(&["update-index", "--refresh"]);
    let snap = snapshot_matches_git(&repo, "nothing changed");
    assert_eq!(
        snap.entries_proven, 8201,
        "every entry is provably unchanged"
    );

    for i in [0, 4100, 8199] {
        repo.write(
            &format!("d{:02}/e{:02}/f{i}.txt", i % 37, i % 11),
            "edited\n",
        );
    }
    std::fs::remove_file(repo.path().join("d05/e05/f5.txt")).unwrap();
    let snap = snapshot_matches_git(&repo, "edits in each part of the index");
    assert_eq!(snap.entries_proven, 8201 - 4);
}

#[test]
fn a_submodule_is_kept_as_its_gitlink() {
    let repo = settled_repo();
    let sub = repo.path().join("vendor/lib");
    std::fs::create_dir_all(&sub).unwrap();
    common::git_in(&sub, &["init", "-q", "-b", "main"]);
    std::fs::write(sub.join("x.txt"), "x\n").unwrap();
    common::git_in(&sub, &["add", "-A"]);
    common::git_in(
        &sub,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-q",
            "-m",
            "sub",
        ],
    );
    repo.git(&["add", "vendor/lib"]);
    repo.git(&["commit", "-q", "-m", "gitlink"]);
    // Work inside the submodule does not change the gitlink git add -A records.
    std::fs::write(sub.join("x.txt"), "changed inside\n").unwrap();
    std::fs::write(sub.join("new.txt"), "new inside\n").unwrap();
    let snap = snapshot_matches_git(&repo, "changes inside a submodule");
    let store = Store::discover(repo.path(), OpenFor::Work).unwrap();
    assert_eq!(
        store
            .objects()
            .path_in_tree(snap.tree, "vendor/lib")
            .unwrap()
            .map(|id| id.to_string()),
        Some(
            common::git_in(&sub, &["rev-parse", "HEAD"])
                .trim()
                .to_string()
        )
    );
}

#[test]
fn ignore_and_attribute_files_in_folders_apply_to_the_snapshot() {
    // The snapshot hands gix's attribute stack only the index's `.gitattributes` entries.
    let repo = settled_repo();
    repo.write("lib/.gitattributes", "*.txt text eol=lf\n");
    repo.write("src/deep/.gitattributes", "*.txt text eol=lf\n");
    repo.write("not.gitattributes", "*.txt -text\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "attributes"]);
    repo.write("lib/f1.txt", "crlf\r\nline\r\n");
    repo.write("src/deep/new.txt", "new\r\ncrlf\r\n");
    repo.write("lib2/f1.txt", "kept\r\nas is\r\n");
    snapshot_matches_git(&repo, "CRLF files under .gitattributes");
    // A folder's attributes changed (and one added) since the commit.
    repo.write("lib/.gitattributes", "*.txt -text\n");
    repo.write("lib2/.gitattributes", "*.txt text\n");
    repo.write("lib2/f2.txt", "again\r\ncrlf\r\n");
    repo.write("lib/f2.txt", "again\r\ncrlf\r\n");
    snapshot_matches_git(&repo, "changed .gitattributes");
    // The walk's ignore stack is likewise given only the `.gitignore` entries: a folder's
    // rules apply, and a skip-worktree `.gitignore` missing from the worktree is read from
    // the index, as git does.
    repo.write("lib/.gitignore", "*.tmp\n");
    repo.write("src/deep/.gitignore", "*.out\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "ignores"]);
    repo.git(&["update-index", "--skip-worktree", "src/deep/.gitignore"]);
    std::fs::remove_file(repo.path().join("src/deep/.gitignore")).unwrap();
    for f in ["lib/x.tmp", "lib2/x.tmp", "src/deep/y.out", "lib/y.out"] {
        repo.write(f, "generated\n");
    }
    snapshot_matches_git(&repo, "folders' .gitignore files");
}

#[test]
fn a_deleted_gitattributes_no_longer_applies_and_a_sparse_one_still_does() {
    let repo = settled_repo();
    repo.write("gone/.gitattributes", "*.txt text eol=lf\n");
    repo.write("gone/old.txt", "old\n");
    repo.write("sparse/.gitattributes", "*.txt text eol=lf\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "attributes"]);
    // Deleted from the worktree, not yet from the index: `git add -A` stages the deletion
    // first and keeps a new file's CRLF bytes as they are.
    std::fs::remove_file(repo.path().join("gone/.gitattributes")).unwrap();
    repo.write("gone/new.txt", "one\r\ntwo\r\n");
    // Left out of a sparse checkout: still read from the index, as git does.
    repo.git(&["update-index", "--skip-worktree", "sparse/.gitattributes"]);
    std::fs::remove_file(repo.path().join("sparse/.gitattributes")).unwrap();
    repo.write("sparse/new.txt", "three\r\nfour\r\n");
    let snap = snapshot_matches_git(&repo, "a deleted and a sparse .gitattributes");
    let blob = |path: &str| repo.git(&["cat-file", "-p", &format!("{}:{path}", snap.tree)]);
    assert_eq!(blob("gone/new.txt"), "one\r\ntwo\r\n", "kept byte for byte");
    assert_eq!(
        blob("sparse/new.txt"),
        "three\nfour\n",
        "converted by the sparse rules"
    );
}
