//! The user's index after a rewind or undo in place (crates/agent-rewind-store/src/index.rs and indexfile.rs): written
//! in-process, it must be what `git read-tree --reset` makes (entries and cache-tree), an
//! index git would write differently is left to git, a held `index.lock` refuses the rewind
//! before anything changes, and one left by a killed rewind of ours is cleared. Also: a
//! checkpoint holding a path git refuses to check out (`.git/…`) is never written.

use crate::common;

use common::{Repo, git_cmd, git_stdin};
use std::collections::BTreeMap;
use std::path::Path;

/// A repository with names that sort differently as paths and as tree entries (`a-b`, `a.c`,
/// `a/`, `ab/`), an executable, a symlink and nested folders; run `r1` with a step `edit`
/// that changes a few of them and commits. Returns the repository.
fn repo_with_edit_step() -> Repo {
    let repo = Repo::new();
    for (p, c) in [
        ("a-b", "dash\n"),
        ("a.c", "dot\n"),
        ("a/x", "ax\n"),
        ("a/deep/er/y", "deep\n"),
        ("ab/y", "aby\n"),
        ("b/z", "bz\n"),
        ("zz/long-name-first/q", "q\n"),
        ("zz/s/q", "q2\n"),
    ] {
        repo.write(p, c);
    }
    repo.write("run.sh", "#!/bin/sh\n");
    set_mode(repo.path(), "run.sh", 0o755);
    std::os::unix::fs::symlink("a/x", repo.path().join("link")).unwrap();
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "v1"]);
    repo.json(&["start", "--run", "r1"]);
    repo.json(&["step", "begin", "edit", "--kind", "agent"]);
    repo.write("a/deep/er/y", "deep v2\n");
    repo.write("ab/new", "new\n");
    std::fs::remove_file(repo.path().join("b/z")).unwrap();
    repo.git(&["commit", "-q", "-am", "v2"]);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "v2b"]);
    repo.json(&["step", "end", "edit", "--status", "completed"]);
    repo
}

fn set_mode(root: &Path, rel: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(root.join(rel), std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The optional extensions of an index file (version 2 or 3), by signature.
fn index_extensions(bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
    assert_eq!(&bytes[..4], b"DIRC");
    let version = u32::from_be_bytes(bytes[4..8].try_into().unwrap());
    assert!(version == 2 || version == 3, "index version {version}");
    let count = u32::from_be_bytes(bytes[8..12].try_into().unwrap());
    let mut pos = 12;
    for _ in 0..count {
        let flags = u16::from_be_bytes(bytes[pos + 60..pos + 62].try_into().unwrap());
        let extended = flags & 0x4000 != 0;
        let fixed = 62 + if extended { 2 } else { 0 };
        let name_len = bytes[pos + fixed..].iter().position(|b| *b == 0).unwrap();
        pos += (fixed + name_len + 8) & !7;
    }
    let end = bytes.len() - 20;
    let mut out = BTreeMap::new();
    while pos < end {
        let sig = String::from_utf8_lossy(&bytes[pos..pos + 4]).into_owned();
        let size = u32::from_be_bytes(bytes[pos + 4..pos + 8].try_into().unwrap()) as usize;
        out.insert(sig, bytes[pos + 8..pos + 8 + size].to_vec());
        pos += 8 + size;
    }
    assert_eq!(pos, end, "extensions end where the checksum begins");
    out
}

/// The index `git read-tree <tree>` makes, in a throw-away file.
fn read_tree_index(repo: &Repo, tree: &str) -> Vec<u8> {
    let tmp = repo.path().join(".git/throwaway-index");
    let _ = std::fs::remove_file(&tmp);
    let out = git_cmd(repo.path())
        .env("GIT_INDEX_FILE", &tmp)
        .args(["read-tree", tree])
        .output()
        .unwrap();
    assert!(out.status.success());
    let bytes = std::fs::read(&tmp).unwrap();
    std::fs::remove_file(&tmp).unwrap();
    bytes
}

fn ls_files_stage(repo: &Repo) -> String {
    repo.git(&["ls-files", "-s"])
}

/// The index holds HEAD's tree exactly, its cache-tree is the one `git read-tree` primes,
/// `git write-tree` gives HEAD's tree, and `git status` is clean.
fn assert_index_is_head(repo: &Repo, ctx: &str) {
    let head_tree = repo.rev("HEAD^{tree}");
    let ours = repo.index_bytes().unwrap();
    let gits = read_tree_index(repo, &head_tree);
    let ours_ext = index_extensions(&ours);
    assert_eq!(
        ours_ext.get("TREE"),
        index_extensions(&gits).get("TREE"),
        "{ctx}: the cache-tree is the one git read-tree writes"
    );
    assert!(
        ours_ext.contains_key("TREE"),
        "{ctx}: a cache-tree is there"
    );
    assert_eq!(
        repo.git(&["write-tree"]).trim(),
        head_tree,
        "{ctx}: write-tree"
    );
    let throwaway_ls = {
        let tmp = repo.path().join(".git/throwaway-index");
        std::fs::write(&tmp, &gits).unwrap();
        let out = git_cmd(repo.path())
            .env("GIT_INDEX_FILE", &tmp)
            .args(["ls-files", "-s"])
            .output()
            .unwrap();
        std::fs::remove_file(&tmp).unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(ls_files_stage(repo), throwaway_ls, "{ctx}: entries");
    assert_eq!(repo.git(&["status", "--porcelain"]), "", "{ctx}: status");
    // `git diff-files` trusts the stat data: every entry's stat data is right.
    assert_eq!(
        repo.git(&["diff-files", "--name-only"]),
        "",
        "{ctx}: stat data"
    );
}

#[test]
fn the_index_after_rewind_and_undo_is_what_git_read_tree_makes() {
    let repo = repo_with_edit_step();
    let before = repo.index_bytes().unwrap();
    repo.json(&["rewind", "r1", "--to", "edit", "--run", "r2"]);
    assert_eq!(repo.read("a/deep/er/y"), "deep\n");
    assert_index_is_head(&repo, "after rewind");
    repo.assert_fsck();

    // Undo puts back the index of before (the whole commit v2b, nothing staged).
    repo.json(&["undo"]);
    assert_index_is_head(&repo, "after undo");
    assert_eq!(
        index_extensions(&repo.index_bytes().unwrap()).get("TREE"),
        index_extensions(&before).get("TREE")
    );
}

#[test]
fn the_index_written_in_process_equals_the_one_git_writes() {
    let with_git = repo_with_edit_step();
    with_git.git(&["config", "agentRewind.inProcessIndex", "false"]);
    let ours = repo_with_edit_step();
    for repo in [&with_git, &ours] {
        repo.json(&["rewind", "r1", "--to", "edit", "--run", "r2"]);
    }
    assert_eq!(ls_files_stage(&with_git), ls_files_stage(&ours));
    let g = index_extensions(&with_git.index_bytes().unwrap());
    let o = index_extensions(&ours.index_bytes().unwrap());
    assert_eq!(g.get("TREE"), o.get("TREE"));
    assert_eq!(
        g.keys().collect::<Vec<_>>(),
        o.keys().collect::<Vec<_>>(),
        "the same extensions"
    );
}

#[test]
fn a_staged_change_is_restored_by_undo_with_a_valid_cache_tree() {
    let repo = repo_with_edit_step();
    repo.write("a.c", "staged\n");
    repo.git(&["add", "a.c"]);
    repo.write("a.c", "staged, then edited\n");
    let cached = repo.git(&["diff", "--cached"]);
    let unstaged = repo.git(&["diff"]);
    repo.json(&["rewind", "r1", "--to", "edit", "--run", "r2"]);
    assert_index_is_head(&repo, "after rewind");
    repo.json(&["undo"]);
    assert_eq!(repo.git(&["diff", "--cached"]), cached);
    assert_eq!(repo.git(&["diff"]), unstaged);
    // A cache-tree claiming HEAD's tree would make write-tree ignore the staged a.c.
    let staged_tree = repo.git(&["write-tree"]).trim().to_string();
    assert_eq!(
        repo.rev(&format!("{staged_tree}:a.c")),
        repo.rev(":a.c"),
        "write-tree gives the staged a.c"
    );
    assert_ne!(staged_tree, repo.rev("HEAD^{tree}"));
    repo.assert_fsck();
}

/// Each index git writes with features we do not write is left to git, which keeps them.
#[test]
fn an_index_with_features_git_must_keep_is_left_to_git() {
    // Index version 4.
    let repo = repo_with_edit_step();
    repo.git(&["update-index", "--index-version", "4"]);
    repo.json(&["rewind", "r1", "--to", "edit", "--run", "r2"]);
    let bytes = repo.index_bytes().unwrap();
    assert_eq!(u32::from_be_bytes(bytes[4..8].try_into().unwrap()), 4);
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    assert_eq!(repo.git(&["write-tree"]).trim(), repo.rev("HEAD^{tree}"));

    // Split index.
    let repo = repo_with_edit_step();
    repo.git(&["update-index", "--split-index"]);
    repo.json(&["rewind", "r1", "--to", "edit", "--run", "r2"]);
    assert!(
        index_has_extension(&repo, "link"),
        "the split index is still split"
    );
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    assert_eq!(repo.git(&["write-tree"]).trim(), repo.rev("HEAD^{tree}"));

    // Untracked cache.
    let repo = repo_with_edit_step();
    repo.git(&["config", "core.untrackedCache", "true"]);
    repo.git(&["update-index", "--untracked-cache"]);
    repo.git(&["status", "--porcelain"]);
    assert!(index_has_extension(&repo, "UNTR"));
    repo.json(&["rewind", "r1", "--to", "edit", "--run", "r2"]);
    assert!(
        index_has_extension(&repo, "UNTR"),
        "git keeps the untracked cache"
    );
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

/// When git writes the index (here: version 4), the files the rewind wrote get fresh stat
/// data from `git add --refresh`, whose paths are literal: a file named like pathspec magic
/// (`:(foo)x`) neither fails that refresh nor stops it for the others.
#[test]
fn files_named_like_pathspec_magic_do_not_stop_the_refresh() {
    let repo = Repo::new();
    repo.git(&["update-index", "--index-version", "4"]);
    repo.write("plain.txt", "v1\n");
    repo.write(":(foo)x", "v1\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "v1"]);
    repo.json(&["start", "--run", "r1"]);
    repo.json(&["step", "begin", "edit", "--kind", "agent"]);
    repo.write("plain.txt", "v2\n");
    repo.write(":(foo)x", "v2\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "v2"]);
    repo.json(&["step", "end", "edit", "--status", "completed"]);
    repo.json(&["rewind", "r1", "--to", "edit", "--run", "r2"]);
    assert_eq!(repo.read("plain.txt"), "v1\n");
    assert_eq!(repo.read(":(foo)x"), "v1\n");
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    // Fresh stat data: git's `mtime` of each written entry is the file's, not zero.
    for path in ["plain.txt", ":(foo)x"] {
        let debug = repo.git(&["--literal-pathspecs", "ls-files", "--debug", "--", path]);
        assert!(
            debug.contains("mtime: ") && !debug.contains("mtime: 0:0"),
            "{path} has no stat data after the rewind:\n{debug}"
        );
    }
}

/// Whether `.git/index` (version 2 or 3) has the extension `sig`.
fn index_has_extension(repo: &Repo, sig: &str) -> bool {
    index_extensions(&repo.index_bytes().unwrap()).contains_key(sig)
}

#[test]
fn a_held_index_lock_refuses_the_rewind_before_anything_changes() {
    let repo = repo_with_edit_step();
    let lock = repo.path().join(".git/index.lock");
    std::fs::write(&lock, b"someone else's").unwrap();
    let head = repo.rev("HEAD");
    let runs = repo.git(&["for-each-ref", "refs/agent-runs", "refs/agent-rewind"]);
    let status = repo.git(&["status", "--porcelain", "-uall"]);
    let out = repo.run(&["rewind", "r1", "--to", "edit", "--run", "r2"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("index.lock"), "names the lock: {err}");
    assert_eq!(repo.rev("HEAD"), head);
    assert_eq!(
        repo.git(&["for-each-ref", "refs/agent-runs", "refs/agent-rewind"]),
        runs,
        "no run, no backup"
    );
    assert_eq!(std::fs::read(&lock).unwrap(), b"someone else's");
    std::fs::remove_file(&lock).unwrap();
    assert_eq!(repo.git(&["status", "--porcelain", "-uall"]), status);

    repo.json(&["rewind", "r1", "--to", "edit", "--run", "r2"]);
    assert_index_is_head(&repo, "once the lock is gone");
}

#[test]
fn an_index_lock_left_by_a_killed_rewind_of_ours_is_cleared() {
    let repo = repo_with_edit_step();
    // A process that is gone: its pid names the temp index, hard-linked as the lock, as a
    // rewind killed between taking the lock and renaming it leaves them.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    let tmp_dir = repo.path().join(".git/agent-rewind/tmp");
    std::fs::create_dir_all(&tmp_dir).unwrap();
    let tmp = tmp_dir.join(format!("index-{pid}"));
    std::fs::copy(repo.path().join(".git/index"), &tmp).unwrap();
    let lock = repo.path().join(".git/index.lock");
    std::fs::hard_link(&tmp, &lock).unwrap();

    repo.json(&["rewind", "r1", "--to", "edit", "--run", "r2"]);
    assert!(!lock.exists(), "the stale lock is gone");
    assert!(!tmp.exists(), "its temp file too");
    assert_index_is_head(&repo, "after clearing the stale lock");

    // A lock that is not one of ours is never taken away.
    std::fs::write(&lock, b"x").unwrap();
    let out = repo.run(&["undo"]);
    assert!(!out.status.success());
    assert!(lock.exists());
}

/// Replace the tree of checkpoint `id` (a commit) with `tree`, keeping its message, parents
/// and note; point the run's HEAD at the forged commit. Returns its id.
fn forge_checkpoint(repo: &Repo, run: &str, id: &str, tree: &str) -> String {
    let raw = repo.git(&["cat-file", "commit", id]);
    let forged: String = raw
        .lines()
        .map(|l| {
            if l.starts_with("tree ") {
                format!("tree {tree}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let new = git_stdin(
        repo.path(),
        &["hash-object", "-t", "commit", "-w", "--stdin"],
        forged.as_bytes(),
    );
    let notes = format!("refs/notes/agent-runs/{run}");
    repo.git(&["notes", "--ref", &notes, "copy", id, &new]);
    repo.git(&[
        "update-ref",
        &format!("refs/agent-runs/{run}/HEAD"),
        &new,
        id,
    ]);
    new
}

/// A tree: HEAD's plus `.git/hooks/post-checkout` (or another spelling of `.git`).
fn tree_with_hook(repo: &Repo, dot_git: &str) -> String {
    let mktree = |input: String| git_stdin(repo.path(), &["mktree"], input.as_bytes());
    let hook = git_stdin(
        repo.path(),
        &["hash-object", "-w", "--stdin"],
        b"#!/bin/sh\ntouch pwned\n",
    );
    let hooks = mktree(format!("100755 blob {hook}\tpost-checkout\n"));
    let dir = mktree(format!("040000 tree {hooks}\thooks\n"));
    let mut top = repo.git(&["ls-tree", "HEAD"]);
    top.push_str(&format!("040000 tree {dir}\t{dot_git}\n"));
    mktree(top)
}

#[test]
fn a_checkpoint_holding_a_dot_git_path_is_never_checked_out() {
    for dot_git in [".git", ".GIT", "git~1"] {
        let repo = repo_with_edit_step();
        let cp = repo.json(&["checkpoint", "later"]);
        let id = cp["checkpoint"].as_str().unwrap().to_string();
        let evil = tree_with_hook(&repo, dot_git);
        let forged = forge_checkpoint(&repo, "r1", &id, &evil);
        let files_before = repo.git(&["status", "--porcelain", "-uall"]);
        let head = repo.rev("HEAD");
        let backups = repo.git(&["for-each-ref", "refs/agent-rewind"]);

        for args in [
            vec!["restore", forged.as_str()],
            vec!["rewind", "r1", "--to", forged.as_str(), "--run", "r9"],
        ] {
            let out = repo.run(&args);
            assert!(
                !out.status.success(),
                "{dot_git}: {args:?} must refuse the tree"
            );
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("refuses to check out"), "{dot_git}: {err}");
        }
        assert!(
            !repo
                .path()
                .join(dot_git)
                .join("hooks/post-checkout")
                .exists(),
            "{dot_git}: the hook was not written"
        );
        assert_eq!(repo.rev("HEAD"), head);
        assert_eq!(repo.git(&["status", "--porcelain", "-uall"]), files_before);
        assert_eq!(
            repo.git(&["for-each-ref", "refs/agent-rewind"]),
            backups,
            "{dot_git}: no backup was even needed"
        );
        assert!(
            repo.git(&["for-each-ref", "refs/agent-runs/r9"]).is_empty(),
            "{dot_git}: no run was created"
        );

        // Into a new worktree: refused before the worktree is made.
        let wt = tempfile::tempdir().unwrap();
        let path = wt.path().join("fork");
        let out = repo.run(&[
            "fork",
            "r1",
            "--to",
            &forged,
            "--worktree",
            path.to_str().unwrap(),
        ]);
        assert!(!out.status.success(), "{dot_git}: fork must refuse");
        assert!(!path.exists(), "{dot_git}: no worktree was made");
    }
}

/// A small deterministic pseudo-random sequence (Knuth's MMIX LCG).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// Random edits of every kind a checkout must undo: content, deletion, new files and
/// folders, the executable bit, symlinks, a file becoming a folder and back.
fn random_edits(root: &Path, rng: &mut Lcg, round: u64) {
    let names = ["a", "a-b", "a.c", "ab", "b", "z"];
    for k in 0..12 {
        let dir = names[rng.below(names.len() as u64) as usize];
        let file = names[rng.below(names.len() as u64) as usize];
        let rel = format!("{dir}/{file}");
        let p = root.join(&rel);
        match rng.below(7) {
            0 | 1 => {
                if p.is_dir() {
                    std::fs::remove_dir_all(&p).unwrap();
                } else if std::fs::symlink_metadata(&p).is_ok() {
                    std::fs::remove_file(&p).unwrap();
                }
                if root.join(dir).is_file() || root.join(dir).is_symlink() {
                    std::fs::remove_file(root.join(dir)).unwrap();
                }
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, format!("{rel} {round} {k}\n")).unwrap();
            }
            2 if p.is_file() => std::fs::remove_file(&p).unwrap(),
            3 if p.is_file() => {
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(&p).unwrap().permissions().mode();
                set_mode(root, &rel, mode ^ 0o111);
            }
            4 if !p.exists() && p.parent().unwrap().is_dir() => {
                std::os::unix::fs::symlink(format!("../{file}-target"), &p).unwrap();
            }
            5 if p.is_file() => {
                // The file becomes a folder.
                std::fs::remove_file(&p).unwrap();
                std::fs::create_dir_all(&p).unwrap();
                std::fs::write(p.join("inner"), format!("{round}\n")).unwrap();
            }
            6 if root.join(dir).is_dir() && rng.below(3) == 0 => {
                // The folder becomes a file.
                std::fs::remove_dir_all(root.join(dir)).unwrap();
                std::fs::write(root.join(dir), format!("was a folder {round}\n")).unwrap();
            }
            _ => {}
        }
    }
}

#[test]
fn over_random_changes_rewind_and_undo_write_the_index_git_would() {
    let mut rng = Lcg(0x1dec_2026);
    for seed in 0..10u64 {
        let repo = Repo::new();
        let d = repo.path();
        random_edits(d, &mut rng, 0);
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", "v1"]);
        repo.json(&["start", "--run", "r1"]);
        let first = repo.json(&["checkpoint", "first"])["checkpoint"]
            .as_str()
            .unwrap()
            .to_string();
        random_edits(d, &mut rng, 1);
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", "v2"]);
        // Some of it staged, some not, on top of v2.
        random_edits(d, &mut rng, 2);
        repo.git(&["add", "-A"]);
        random_edits(d, &mut rng, 3);
        let cached = repo.git(&["diff", "--cached"]);
        let unstaged = repo.git(&["diff"]);
        let index_tree = repo.git(&["write-tree"]).trim().to_string();

        repo.json(&["rewind", "r1", "--to", &first, "--run", "r2"]);
        assert_index_is_head(&repo, &format!("seed {seed}, after rewind"));

        repo.json(&["undo"]);
        let ctx = format!("seed {seed}, after undo");
        assert_eq!(repo.git(&["diff", "--cached"]), cached, "{ctx}: staged");
        assert_eq!(repo.git(&["diff"]), unstaged, "{ctx}: unstaged");
        assert_eq!(
            repo.git(&["write-tree"]).trim(),
            index_tree,
            "{ctx}: index tree"
        );
        let ours = index_extensions(&repo.index_bytes().unwrap());
        let gits = index_extensions(&read_tree_index(&repo, &index_tree));
        assert_eq!(ours.get("TREE"), gits.get("TREE"), "{ctx}: cache-tree");
        repo.assert_fsck();
    }
}
