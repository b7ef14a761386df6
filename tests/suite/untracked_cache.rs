//! The directory-walk cache (`scan::dirwalk`) must never make a snapshot miss a file.
//!
//! Each scenario changes the worktree, the index or the ignore rules in a way that can hide
//! from a naive cache (no directory mtime changes when the index drops a file or a
//! `.gitignore` is edited in place), takes a snapshot through the library, and compares its
//! tree with what `git add -A` writes from the same worktree. Sleeps of a little over two
//! seconds age the cache's stat data past its racy window, so that directories really are
//! skipped (checked through the snapshot's counters) and not just re-read.

use crate::common;

use agent_rewind::snapshot::Snapshot;
use common::Repo;
use std::path::Path;
use std::time::Duration;

/// Snapshot through the library (a fresh open, as a new process would) and check the tree
/// against `git add -A`.
fn snapshot_matches_git(repo: &Repo, what: &str) -> Snapshot {
    common::snapshot_matches_git(repo.path(), what)
}

/// Past the cache's racy window (two seconds).
fn age() {
    std::thread::sleep(Duration::from_millis(2200));
}

fn tree_repo() -> Repo {
    let repo = Repo::new();
    for top in ["a", "b", "c", "d"] {
        for sub in ["x", "y", "z"] {
            for f in 0..3 {
                repo.write(
                    &format!("{top}/{sub}/deep/f{f}.txt"),
                    &format!("{top}{sub}{f}\n"),
                );
                repo.write(
                    &format!("{top}/{sub}/f{f}.txt"),
                    &format!("{top}{sub}{f}\n"),
                );
            }
        }
    }
    repo.write(".gitignore", "*.log\n/build/\n");
    repo.write("c/.gitignore", "*.tmp\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "tree"]);
    // Ignored now; each becomes visible later without any directory changing.
    repo.write("b/y/deep/trace.log", "ignored by the root .gitignore\n");
    repo.write("c/z/deep/scratch.tmp", "ignored by c/.gitignore\n");
    repo.write("d/x/notes.bak", "ignored by info/exclude\n");
    repo.write("build/out.bin", "an ignored directory\n");
    std::fs::write(repo.path().join(".git/info/exclude"), "*.bak\n").unwrap();
    repo
}

fn remove(repo: &Repo, rel: &str) {
    std::fs::remove_file(repo.path().join(rel)).unwrap();
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

#[test]
fn snapshots_with_the_cache_always_equal_git_add_all() {
    let repo = tree_repo();
    snapshot_matches_git(&repo, "the first walk (no cache)");
    age();
    // The first walk's stat data was too fresh to trust; this one records it for good.
    snapshot_matches_git(&repo, "a walk after aging");
    let warm = snapshot_matches_git(&repo, "a walk with an aged cache");
    assert!(
        warm.dirs_skipped > 20,
        "an unchanged tree should be known from the cache: read {}, skipped {}",
        warm.dirs_read,
        warm.dirs_skipped
    );

    // New untracked files, deep and shallow.
    repo.write("a/x/deep/new.txt", "new\n");
    repo.write("new-at-root.txt", "new\n");
    snapshot_matches_git(&repo, "adding untracked files");

    // The index drops a file: it is untracked now, and no directory changed.
    age();
    snapshot_matches_git(&repo, "aging");
    repo.git(&["rm", "-q", "--cached", "b/z/deep/f1.txt"]);
    snapshot_matches_git(&repo, "git rm --cached");

    // The root .gitignore stops ignoring *.log, edited in place.
    age();
    snapshot_matches_git(&repo, "aging");
    std::fs::write(repo.path().join(".gitignore"), "/build/\n").unwrap();
    snapshot_matches_git(&repo, "editing the root .gitignore");

    // A nested .gitignore stops ignoring *.tmp.
    age();
    snapshot_matches_git(&repo, "aging");
    std::fs::write(repo.path().join("c/.gitignore"), "").unwrap();
    snapshot_matches_git(&repo, "emptying c/.gitignore");

    // info/exclude stops ignoring *.bak.
    age();
    snapshot_matches_git(&repo, "aging");
    std::fs::write(repo.path().join(".git/info/exclude"), "").unwrap();
    snapshot_matches_git(&repo, "emptying info/exclude");

    // A global excludes file reached through a symlink (as dotfile managers make it) stops
    // ignoring *.old: the symlink's own stat data does not change, the file's does.
    #[cfg(unix)]
    {
        let dotfiles = tempfile::tempdir().unwrap();
        let target = dotfiles.path().join("ignore");
        std::fs::write(&target, "*.old\n").unwrap();
        let link = dotfiles.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        repo.git(&["config", "core.excludesFile", link.to_str().unwrap()]);
        repo.write(
            "d/z/deep/legacy.old",
            "ignored by the global excludes file\n",
        );
        age();
        snapshot_matches_git(&repo, "aging");
        std::fs::write(&target, "").unwrap();
        snapshot_matches_git(&repo, "emptying a symlinked global excludes file");
        repo.git(&["config", "--unset", "core.excludesFile"]);
    }

    // A new .gitignore deep down, then a file it does not ignore.
    age();
    snapshot_matches_git(&repo, "aging");
    repo.write("d/y/.gitignore", "*.txt\n");
    repo.write("d/y/deep/kept.md", "kept\n");
    repo.write("d/y/deep/hidden.txt", "ignored\n");
    snapshot_matches_git(&repo, "a new nested .gitignore");

    // A tracked file deleted, one edited in place, a folder replaced by a file.
    age();
    snapshot_matches_git(&repo, "aging");
    remove(&repo, "a/y/f0.txt");
    append(&repo.path().join("a/z/f1.txt"), "more\n");
    std::fs::remove_dir_all(repo.path().join("b/x/deep")).unwrap();
    repo.write("b/x/deep", "a file now\n");
    snapshot_matches_git(&repo, "deleting, editing, replacing a folder");

    // An empty folder, later filled after the cache has aged.
    std::fs::create_dir_all(repo.path().join("c/x/deep/empty")).unwrap();
    snapshot_matches_git(&repo, "an empty folder");
    age();
    snapshot_matches_git(&repo, "aging");
    repo.write("c/x/deep/empty/now.txt", "filled\n");
    snapshot_matches_git(&repo, "filling the empty folder");

    // Staging and committing change the index under cached directories.
    age();
    snapshot_matches_git(&repo, "aging");
    repo.git(&["add", "-A"]);
    snapshot_matches_git(&repo, "git add -A");
    repo.git(&["commit", "-q", "-m", "more"]);
    snapshot_matches_git(&repo, "git commit");
    repo.git(&["rm", "-q", "--cached", "-r", "a/x"]);
    let last = snapshot_matches_git(&repo, "git rm --cached -r of a folder");
    assert!(last.dirs_read > 0);
}

#[test]
fn a_damaged_or_foreign_cache_only_costs_time() {
    let repo = tree_repo();
    snapshot_matches_git(&repo, "the first walk");
    let cache = repo.path().join(".git/agent-rewind/cache/dirwalk");
    assert!(cache.exists(), "the walk writes its cache");
    assert!(
        std::fs::read(&cache)
            .unwrap()
            .starts_with(b"agent-rewind/dirwalk v4\n")
    );

    // Garbage, a truncated copy, an empty file, a flipped bit and another version (with a
    // valid checksum): each is read as no cache at all.
    age();
    // Written by a walk out of the racy window, its records can be trusted.
    snapshot_matches_git(&repo, "a walk after the racy window");
    let good = std::fs::read(&cache).unwrap();
    let sealed = |body: Vec<u8>| common::envelope("dirwalk", 4, &body);
    let body = common::envelope_body(&good, "dirwalk", 4);
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x01;
    for (what, bytes) in [
        ("garbage", b"\x00\xffnot a cache\x00\t\t".to_vec()),
        ("a truncated cache", good[..good.len() / 2].to_vec()),
        ("an empty cache", vec![]),
        ("a cache with a flipped bit", flipped),
        (
            "an older version's cache",
            common::envelope("dirwalk", 3, body),
        ),
        (
            "the cache before the envelope",
            [
                &b"agent-rewind dirwalk cache v3\t"[..],
                body,
                &crc32fast::hash(body).to_le_bytes(),
            ]
            .concat(),
        ),
    ] {
        std::fs::write(&cache, &bytes).unwrap();
        repo.write("a/x/deep/new.txt", what);
        let snap = snapshot_matches_git(&repo, what);
        assert_eq!(snap.dirs_skipped, 0, "{what}: no folder is trusted from it");
    }
    // The same records sealed again are used: the checks above are what rejected them.
    std::fs::write(&cache, sealed(body.to_vec())).unwrap();
    age();
    let snap = snapshot_matches_git(&repo, "the good cache put back");
    assert!(snap.dirs_skipped > 0, "a good cache is used");

    // A cache copied from another worktree of the same files is not used.
    let other = tree_repo();
    snapshot_matches_git(&other, "the other repository's first walk");
    age();
    std::fs::copy(&cache, other.path().join(".git/agent-rewind/cache/dirwalk")).unwrap();
    let snap = snapshot_matches_git(&other, "a cache from another worktree");
    assert_eq!(snap.dirs_skipped, 0, "a foreign cache must not be trusted");
}

#[test]
fn the_cache_can_be_turned_off() {
    let repo = tree_repo();
    repo.git(&["config", "agentRewind.untrackedCache", "false"]);
    snapshot_matches_git(&repo, "the first walk");
    age();
    let snap = snapshot_matches_git(&repo, "a second walk");
    assert_eq!(snap.dirs_skipped, 0);
    assert!(
        !repo.path().join(".git/agent-rewind/cache/dirwalk").exists(),
        "no cache is written when it is off"
    );
}
