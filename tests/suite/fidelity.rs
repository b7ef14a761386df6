//! "Nothing is lost" at the edges: backups and undo exact under clean/smudge
//! filters and line-ending attributes, index flags brought back, ignored files the rewind
//! wrote, files left in place, submodules, byte file names, a moved repository, unreadable
//! directories. Every test drives the binary against real git.

use crate::common;
use common::*;
use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Every file under `root` (outside `.git`): path bytes → (mode bits, content or link target).
fn files(root: &Path) -> BTreeMap<Vec<u8>, (u32, Vec<u8>)> {
    use std::os::unix::fs::PermissionsExt;
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<Vec<u8>, (u32, Vec<u8>)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p
                .strip_prefix(root)
                .unwrap()
                .as_os_str()
                .as_bytes()
                .to_vec();
            if rel == b".git" {
                continue;
            }
            let md = std::fs::symlink_metadata(&p).unwrap();
            if md.file_type().is_symlink() {
                let t = std::fs::read_link(&p).unwrap();
                out.insert(rel, (0o120000, t.as_os_str().as_bytes().to_vec()));
            } else if md.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(
                    rel,
                    (md.permissions().mode() & 0o111, std::fs::read(&p).unwrap()),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn assert_same_files(
    before: &BTreeMap<Vec<u8>, (u32, Vec<u8>)>,
    after: &BTreeMap<Vec<u8>, (u32, Vec<u8>)>,
    what: &str,
) {
    let show = |m: &BTreeMap<Vec<u8>, (u32, Vec<u8>)>| {
        m.iter()
            .map(|(k, (mode, v))| {
                format!(
                    "{:?} {mode:o} {:?}",
                    String::from_utf8_lossy(k),
                    String::from_utf8_lossy(v)
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        before == after,
        "{what}: files differ\nbefore:\n{}\nafter:\n{}",
        show(before),
        show(after)
    );
}

/// What git says about the index and the worktree: status, and every index entry with its
/// mode, id, stage and flags (not its stat data, which a rewrite changes).
fn git_state(repo: &Repo) -> String {
    let debug = repo.git(&["ls-files", "-s", "--debug"]);
    let entries: Vec<String> = debug
        .lines()
        .filter_map(|l| {
            if !l.starts_with(' ') {
                Some(l.to_string())
            } else {
                l.split_once("flags: ").map(|(_, f)| format!("  flags {f}"))
            }
        })
        .collect();
    format!(
        "{}\n--\n{}\n--\n{}--\n{}",
        entries.join("\n"),
        repo.git(&["ls-files", "-v", "-t"]),
        repo.git(&["status", "--porcelain=v2", "-uall"]),
        repo.git(&["symbolic-ref", "-q", "HEAD"]),
    )
}

fn checkpoint(repo: &Repo, step: &str) -> String {
    repo.json(&["checkpoint", step])["checkpoint"]
        .as_str()
        .unwrap()
        .to_string()
}

fn tree_of(repo: &Repo, commit: &str) -> String {
    repo.rev(&format!("{commit}^{{tree}}"))
}

/// Rewind to `to`, then undo: the files, index and status are exactly as before.
fn rewind_then_undo_is_exact(repo: &Repo, to: &str, new_run: &str) -> serde_json::Value {
    let files_before = files(repo.path());
    let state_before = git_state(repo);
    let out = repo.json(&["rewind", "r1", "--to", to, "--run", new_run]);
    repo.json(&["undo"]);
    assert_same_files(&files_before, &files(repo.path()), "after rewind + undo");
    assert_eq!(git_state(repo), state_before, "index and status after undo");
    repo.assert_fsck();
    out
}

#[test]
fn undo_is_exact_under_a_clean_filter_and_line_ending_attributes() {
    let repo = Repo::new();
    repo.git(&[
        "config",
        "filter.strip.clean",
        "sed 's/^password=.*/password=REDACTED/'",
    ]);
    repo.git(&["config", "filter.strip.smudge", "cat"]);
    repo.write(
        ".gitattributes",
        "app.conf filter=strip\n*.txt text=auto\ncrlf/*.txt eol=crlf\n",
    );
    repo.write("app.conf", "user=a\npassword=REDACTED\n");
    repo.write("auto.txt", "one\ntwo\n");
    repo.write("crlf/c.txt", "a\nb\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "attributes"]);
    repo.json(&["start", "--run", "r1"]);

    // Uncommitted work the filters would change: a real password, CRLF files under
    // text=auto (tracked and untracked), LF files where eol=crlf checks out CRLF.
    std::fs::write(
        repo.path().join("app.conf"),
        "user=b\npassword=MyRealNewPassword\n",
    )
    .unwrap();
    std::fs::write(repo.path().join("auto.txt"), "one\r\ntwo\r\nthree\r\n").unwrap();
    std::fs::write(repo.path().join("new.txt"), "fresh\r\nlines\r\n").unwrap();
    std::fs::write(repo.path().join("crlf/c.txt"), "a\nb\nc\n").unwrap();
    std::fs::write(repo.path().join("crlf/d.txt"), "lf\nonly\n").unwrap();

    // Checkpoints keep git's semantics: the tree `git add -A` writes (clean filter applied).
    let cp = checkpoint(&repo, "work");
    assert_eq!(tree_of(&repo, &cp), repo.add_all_tree());
    let stored = repo.git(&["show", &format!("{cp}:app.conf")]);
    assert_eq!(stored, "user=b\npassword=REDACTED\n");

    rewind_then_undo_is_exact(&repo, "r1@0", "r2");
    assert_eq!(
        std::fs::read(repo.path().join("app.conf")).unwrap(),
        b"user=b\npassword=MyRealNewPassword\n"
    );
    assert_eq!(
        std::fs::read(repo.path().join("auto.txt")).unwrap(),
        b"one\r\ntwo\r\nthree\r\n"
    );
    // And a whole restore, undone, too.
    let before = files(repo.path());
    repo.json(&["restore", "r1@0"]);
    repo.json(&["undo"]);
    assert_same_files(&before, &files(repo.path()), "after restore + undo");
}

#[test]
fn undo_brings_back_intent_to_add_assume_unchanged_skip_worktree_and_staged_modes() {
    let repo = Repo::new();
    for f in ["a.txt", "b.txt", "c.txt", "d.sh"] {
        repo.write(f, &format!("{f}\n"));
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "files"]);
    repo.json(&["start", "--run", "r1"]);
    repo.write("a.txt", "a changed\n");
    repo.write("n.txt", "intent to add\n");
    repo.git(&["add", "-N", "n.txt"]);
    repo.git(&["update-index", "--assume-unchanged", "b.txt"]);
    repo.git(&["update-index", "--skip-worktree", "c.txt"]);
    repo.git(&["update-index", "--chmod=+x", "d.sh"]);
    checkpoint(&repo, "work");
    assert!(git_state(&repo).contains(".A N... 000000 000000 100644"));
    rewind_then_undo_is_exact(&repo, "r1@0", "r2");
    let v = repo.git(&["ls-files", "-v"]);
    assert!(v.contains("h b.txt"), "{v}");
    assert!(v.contains("S c.txt"), "{v}");
    assert!(
        repo.git(&["status", "--porcelain"]).contains(" A n.txt"),
        "intent-to-add survives"
    );
}

#[test]
fn rewind_and_undo_handle_a_force_added_ignored_file() {
    let repo = Repo::new();
    repo.write(".gitignore", "*.log\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "ignore logs"]);
    repo.json(&["start", "--run", "r1"]);
    repo.write("keep.log", "v1\n");
    repo.git(&["add", "-f", "keep.log"]);
    let cp = checkpoint(&repo, "log");
    assert!(repo.git(&["ls-tree", "-r", &cp]).contains("keep.log"));
    // Staged again with other content: the rewind writes v1 back, untracked and ignored by
    // HEAD's rules; undo must put v2 back (it used to refuse).
    repo.write("keep.log", "v2\n");
    repo.git(&["add", "-f", "keep.log"]);
    rewind_then_undo_is_exact(&repo, &cp, "r2");
    assert_eq!(repo.read("keep.log"), "v2\n");
    // Gone before the rewind: undo removes what the rewind wrote.
    repo.git(&["rm", "-q", "--cached", "keep.log"]);
    std::fs::remove_file(repo.path().join("keep.log")).unwrap();
    let before = files(repo.path());
    repo.json(&["rewind", "r1", "--to", &cp, "--run", "r3"]);
    assert_eq!(repo.read("keep.log"), "v1\n");
    repo.json(&["undo"]);
    assert_same_files(
        &before,
        &files(repo.path()),
        "undo removes the ignored file",
    );
}

#[test]
fn files_snapshots_leave_out_are_left_in_place_and_listed_by_every_overwrite() {
    let repo = Repo::new();
    repo.git(&["config", "agentRewind.maxUntrackedSize", "64"]);
    repo.json(&["start", "--run", "r1"]);
    repo.write("dir/a.txt", "a\n");
    let cp = checkpoint(&repo, "work");
    repo.write(".env", "TOKEN=1\n");
    repo.write("dir/.env", "TOKEN=2\n");
    repo.write("big.bin", &"x".repeat(100));
    let listed = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e["path"].as_str().unwrap().to_string())
            .collect()
    };
    let all = vec![".env", "big.bin", "dir/.env"];

    let out = repo.json(&["rewind", "r1", "--to", "r1@0", "--run", "r2"]);
    assert_eq!(listed(&out["backup"]["left_in_place"]), all);
    assert!(!repo.path().join("dir/a.txt").exists());
    for f in &all {
        assert!(repo.path().join(f).exists(), "{f} left in place by rewind");
    }
    repo.json(&["undo"]);

    let out = repo.json(&["restore", "r1@0"]);
    assert_eq!(listed(&out["left_in_place"]), all);
    repo.json(&["undo"]);

    // A path restore: the same rule (it used to delete dir/.env), and only what lies under
    // the named folder is listed.
    repo.write("dir/b.txt", "b\n");
    let out = repo.json(&["restore", &cp, "--", "dir/"]);
    assert!(!repo.path().join("dir/b.txt").exists());
    assert_eq!(repo.read("dir/.env"), "TOKEN=2\n");
    assert_eq!(listed(&out["left_in_place"]), vec!["dir/.env"]);
    repo.json(&["undo"]);
    assert_eq!(repo.read("dir/b.txt"), "b\n");
    std::fs::remove_file(repo.path().join("dir/b.txt")).unwrap();

    // The human output names each one.
    let human = repo.ok(&["rewind", "r1", "--to", "r1@0", "--run", "r3"]);
    for f in &all {
        assert!(
            human.contains(&format!("left in place {f} (")),
            "{f} in:\n{human}"
        );
    }
}

#[test]
fn a_new_commit_inside_a_submodule_is_in_the_checkpoint() {
    let sub = Repo::new();
    let repo = Repo::new();
    repo.add_submodule(sub.path(), "sub");
    repo.json(&["start", "--run", "r1"]);
    let inner = repo.path().join("sub");
    git_in(&inner, &["config", "user.name", "T"]);
    git_in(&inner, &["config", "user.email", "t@t"]);
    git_in(&inner, &["commit", "-q", "--allow-empty", "-m", "inside"]);
    let new_head = git_in(&inner, &["rev-parse", "HEAD"]).trim().to_string();
    let cp = checkpoint(&repo, "bump");
    let tree = tree_of(&repo, &cp);
    assert_eq!(tree, repo.add_all_tree(), "the tree `git add -A` writes");
    assert_eq!(
        repo.rev(&format!("{cp}:sub")),
        new_head,
        "the submodule's current commit"
    );
}

#[test]
fn byte_file_names_survive_rewind_restore_undo_and_show_in_diff() {
    let repo = Repo::new();
    repo.json(&["start", "--run", "r1"]);
    let names: Vec<&[u8]> = vec![
        b"latin1-\xe9.txt",
        b"new\nline.txt",
        b"tab\there.txt",
        b"quote\"d.txt",
        b"back\\slash.txt",
    ];
    let content = |i: usize| format!("content {i}\n").into_bytes();
    for (i, n) in names.iter().enumerate() {
        let p = repo.path().join(std::ffi::OsStr::from_bytes(n));
        std::fs::write(&p, content(i)).unwrap();
    }
    let cp = checkpoint(&repo, "names");
    let listed = git_cmd(repo.path())
        .args(["ls-tree", "-r", "-z", "--name-only", &cp])
        .output()
        .unwrap()
        .stdout;
    for n in &names {
        assert!(
            listed.split(|b| *b == 0).any(|e| e == *n),
            "{:?} in the checkpoint",
            String::from_utf8_lossy(n)
        );
    }
    // Edit them all, then rewind to the checkpoint and undo: exact both ways.
    for n in &names {
        let p = repo.path().join(std::ffi::OsStr::from_bytes(n));
        std::fs::write(&p, b"edited\n").unwrap();
    }
    let edited = files(repo.path());
    repo.json(&["rewind", "r1", "--to", &cp, "--run", "r2"]);
    for (i, n) in names.iter().enumerate() {
        let p = repo.path().join(std::ffi::OsStr::from_bytes(n));
        assert_eq!(std::fs::read(&p).unwrap(), content(i));
    }
    assert_eq!(
        files(repo.path()).len(),
        edited.len(),
        "no new file beside the old one"
    );
    repo.json(&["undo"]);
    assert_same_files(&edited, &files(repo.path()), "after undo");
    repo.json(&["restore", &cp]);
    repo.json(&["undo"]);
    assert_same_files(&edited, &files(repo.path()), "after restore + undo");

    // diff: git's quoting for display, a lossless JSON value.
    let human = repo.ok(&["diff", "r1@0", &cp]);
    assert!(
        human.contains("diff --git \"a/latin1-\\351.txt\" \"b/latin1-\\351.txt\""),
        "{human}"
    );
    assert!(human.contains("\"b/new\\nline.txt\""), "{human}");
    assert!(human.contains("\"b/tab\\there.txt\""), "{human}");
    assert!(human.contains("\"b/quote\\\"d.txt\""), "{human}");
    assert!(human.contains("\"b/back\\\\slash.txt\""), "{human}");
    let json = repo.json(&["diff", "r1@0", &cp]);
    let paths: Vec<&serde_json::Value> = json["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| &f["path"])
        .collect();
    assert!(paths.contains(&&serde_json::json!({
        "base64": "bGF0aW4xLekudHh0",
        "quoted": "\"latin1-\\351.txt\""
    })));
    assert!(paths.contains(&&serde_json::json!("new\nline.txt")));
    assert!(paths.contains(&&serde_json::json!("tab\there.txt")));
}

#[test]
fn undo_works_after_the_repository_moved() {
    let top = tempfile::tempdir().unwrap();
    let a = top.path().join("a");
    std::fs::create_dir(&a).unwrap();
    git_in(&a, &["init", "-q", "-b", "main"]);
    git_in(&a, &["config", "user.name", "T"]);
    git_in(&a, &["config", "user.email", "t@t"]);
    std::fs::write(a.join("f.txt"), "base\n").unwrap();
    git_in(&a, &["add", "-A"]);
    git_in(&a, &["commit", "-q", "-m", "base"]);
    json_in(&a, &["start", "--run", "r1"]);
    std::fs::write(a.join("f.txt"), "work\n").unwrap();
    std::fs::write(a.join("u.txt"), "untracked\n").unwrap();
    let before = files(&a);
    json_in(&a, &["rewind", "r1", "--to", "r1@0", "--run", "r2"]);
    assert_eq!(std::fs::read_to_string(a.join("f.txt")).unwrap(), "base\n");
    let b = top.path().join("b");
    std::fs::rename(&a, &b).unwrap();
    let out = json_in(&b, &["undo"]);
    assert_eq!(out["restored"]["worktree"], "main");
    assert_same_files(&before, &files(&b), "undo after the move");
}

/// As root, a directory of mode 000 is still readable; the unreadable case is exercised by
/// running the binary as `nobody` (through `setpriv`) on a repository that user owns. When
/// that is not possible (no setpriv, not root), the test says so and checks the readable
/// case only.
#[test]
fn an_unreadable_directory_is_left_out_and_listed() {
    let top = tempfile::tempdir().unwrap();
    let d = top.path().join("repo");
    std::fs::create_dir(&d).unwrap();
    git_in(&d, &["init", "-q", "-b", "main"]);
    git_in(&d, &["config", "user.name", "T"]);
    git_in(&d, &["config", "user.email", "t@t"]);
    std::fs::create_dir_all(d.join("locked")).unwrap();
    std::fs::write(d.join("locked/tracked.txt"), "tracked\n").unwrap();
    std::fs::write(d.join("ok.txt"), "ok\n").unwrap();
    git_in(&d, &["add", "-A"]);
    git_in(&d, &["commit", "-q", "-m", "base"]);
    std::fs::write(d.join("locked/tracked.txt"), "changed\n").unwrap();
    std::fs::write(d.join("locked/untracked.txt"), "new\n").unwrap();
    std::fs::create_dir(d.join("closed")).unwrap();
    std::fs::write(d.join("closed/secret.txt"), "x\n").unwrap();
    std::fs::write(d.join("new.txt"), "new\n").unwrap();
    std::fs::set_permissions(
        d.join("locked"),
        std::os::unix::fs::PermissionsExt::from_mode(0o000),
    )
    .unwrap();
    std::fs::set_permissions(
        d.join("closed"),
        std::os::unix::fs::PermissionsExt::from_mode(0o000),
    )
    .unwrap();

    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout == b"0\n")
        .unwrap_or(false);
    let has_setpriv = Command::new("setpriv").arg("--version").output().is_ok();
    if !(is_root && has_setpriv) {
        eprintln!(
            "note: not root with setpriv: the unreadable-directory case cannot be set up here"
        );
        return;
    }
    let chown = Command::new("chown")
        .args(["-R", "nobody"])
        .arg(top.path())
        .status()
        .unwrap();
    assert!(chown.success());
    let as_nobody = |args: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
            .arg(bin())
            .args(args)
            .current_dir(&d)
            .env("HOME", top.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("AGENT_RUN")
            .output()
            .unwrap()
    };
    let out = as_nobody(&["--json", "start", "--run", "r1"]);
    assert!(
        out.status.success(),
        "start as nobody: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let excluded: Vec<&str> = v["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(excluded, ["closed/", "locked/"], "{v}");
    assert!(
        v["excluded"][1]["reason"]
            .as_str()
            .unwrap()
            .contains("cannot be read"),
        "{v}"
    );
    let cp = v["checkpoint"].as_str().unwrap();
    // The readable rest is recorded; the tracked file below keeps its committed content.
    let listed = git_in(&d, &["-c", "safe.directory=*", "ls-tree", "-r", cp]);
    assert!(listed.contains("new.txt"), "{listed}");
    assert!(listed.contains("locked/tracked.txt"), "{listed}");
    assert!(!listed.contains("untracked.txt"), "{listed}");
    assert_eq!(
        git_in(
            &d,
            &[
                "-c",
                "safe.directory=*",
                "show",
                &format!("{cp}:locked/tracked.txt")
            ]
        ),
        "tracked\n"
    );
    // Leave the folders removable.
    for dir in ["locked", "closed"] {
        std::fs::set_permissions(
            d.join(dir),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
    }
}

use std::process::Command;
