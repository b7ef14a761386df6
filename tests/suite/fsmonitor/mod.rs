//! Snapshots with a filesystem monitor (`core.fsmonitor` = git's own `fsmonitor-watchman`
//! hook, against a real Watchman server each test starts and shuts down): the checkpoint's
//! tree must equal what `git add -A` writes after every kind of change, while the monitor
//! spares the stats; and every doubt (no hook, a failing hook, a reset watch, git's built-in
//! daemon) must fall back to the full pass, never to a wrong tree.
//!
//! Stat data is aged by setting mtimes back; one wait of a little over two seconds is needed
//! where the untracked walk's cache must trust directories (their ctime cannot be set back).

use crate::common;
mod fallbacks;
mod from_last;
mod watchman;

use common::{Repo, git_cmd, tool_cmd};
use std::path::Path;
use std::time::Duration;
use watchman::Watchman;

const HOOK_SAMPLE: &str = "/usr/share/git-core/templates/hooks/fsmonitor-watchman.sample";

/// Ten folders of three levels with files, committed, the hook installed as
/// `core.fsmonitor`, file times set an hour back and the index refreshed (so that stat data
/// proves entries unchanged), then aged past the walk cache's racy window.
fn monitored_repo(w: &Watchman) -> Repo {
    let repo = Repo::new();
    for top in 0..10 {
        for f in 0..5 {
            repo.write(
                &format!("d{top}/sub/deep/f{f}.txt"),
                &format!("{top} {f}\n"),
            );
            repo.write(&format!("d{top}/f{f}.txt"), &format!("{top} {f}\n"));
        }
    }
    repo.write(".gitignore", "*.log\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "tree"]);
    let hook = repo.path().join(".git/hooks/fsmonitor-watchman");
    std::fs::copy(HOOK_SAMPLE, &hook).unwrap();
    repo.git(&["config", "core.fsmonitor", ".git/hooks/fsmonitor-watchman"]);
    // The full monitored pass, unless a test wants checkpoints to start from the last one.
    repo.git(&["config", "agentRewind.fromLastCheckpoint", "false"]);
    w.watched
        .borrow_mut()
        .push(repo.path().canonicalize().unwrap());
    common::age_files(repo.path());
    git(w, repo.path(), &["update-index", "-q", "--refresh"]);
    // Directories' ctime cannot be set back: wait out the walk cache's racy window.
    std::thread::sleep(Duration::from_millis(2200));
    repo
}

/// git in `dir`, talking to our Watchman when it asks the monitor.
fn git(w: &Watchman, dir: &Path, args: &[&str]) -> String {
    let out = git_cmd(dir)
        .env(w.env().0, w.env().1)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The tree `git add -A` writes from the worktree (a temp copy of the index, with its mtime).
fn add_all_tree(w: &Watchman, dir: &Path) -> String {
    add_all_tree_without(w, dir, &[])
}

/// What one checkpoint did: its tree, and what the trace says of the monitor.
struct Taken {
    tree: String,
    /// Entries the monitor's answer proved unchanged without a stat.
    known: usize,
    /// The trace's line saying why the full pass was taken, if it was.
    full_pass: Option<String>,
    /// Whether the snapshot started from the last checkpoint's tree (`monitored`).
    from_last: bool,
    trace: String,
    json: serde_json::Value,
}

impl Taken {
    /// Whether the monitor's answer spared work: entries known unchanged, or a snapshot
    /// started from the last checkpoint.
    fn monitored(&self) -> bool {
        self.full_pass.is_none() && (self.known > 0 || self.from_last)
    }
}

fn checkpoint(w: &Watchman, dir: &Path, what: &str) -> Taken {
    let t = checkpoint_in(w, dir, what, &[]);
    let expected = add_all_tree(w, dir);
    assert_eq!(
        t.tree, expected,
        "after {what}: the checkpoint differs from `git add -A`\n{}",
        t.trace
    );
    t
}

/// A checkpoint (with `extra` arguments), not compared with anything.
fn checkpoint_in(w: &Watchman, dir: &Path, what: &str, extra: &[&str]) -> Taken {
    let out = tool_cmd(dir)
        .env(w.env().0, w.env().1)
        .env("AGENT_REWIND_TRACE", "1")
        .args(["--json", "checkpoint", "-m", what, "work"])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "checkpoint after {what}: {stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let commit = json["checkpoint"].as_str().unwrap();
    let tree = git(w, dir, &["rev-parse", &format!("{commit}^{{tree}}")])
        .trim()
        .to_string();
    let known = stderr
        .lines()
        .find_map(|l| {
            let rest = l.split("snapshot: fsmonitor asked (").nth(1)?;
            rest.split(' ').next()?.parse().ok()
        })
        .unwrap_or(0);
    let full_pass = stderr
        .lines()
        .find(|l| l.contains("fsmonitor:") && l.ends_with("full pass"))
        .map(str::to_string);
    Taken {
        tree,
        known,
        full_pass,
        from_last: stderr.contains("snapshot: from the last checkpoint ("),
        trace: stderr,
        json,
    }
}

fn start(w: &Watchman, dir: &Path) {
    start_with(w, dir, &[]);
}

/// `start` with `args` (`--run <id>`), which must succeed.
fn start_with(w: &Watchman, dir: &Path, args: &[&str]) {
    let out = tool_cmd(dir)
        .env(w.env().0, w.env().1)
        .arg("start")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "start: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn entries(w: &Watchman, dir: &Path) -> usize {
    git(w, dir, &["-c", "core.fsmonitor=false", "ls-files"])
        .lines()
        .count()
}

#[test]
fn the_tree_equals_git_add_all_after_every_kind_of_change() {
    every_kind_of_change(false);
}

#[test]
fn the_tree_equals_git_add_all_after_every_kind_of_change_from_the_last_checkpoint() {
    every_kind_of_change(true);
}

/// Every kind of change, each followed by a checkpoint whose tree must be `git add -A`'s:
/// with `from_last`, each starts from the last checkpoint's tree where it may (asserted),
/// otherwise each takes the full monitored pass.
fn every_kind_of_change(from_last: bool) {
    let w = Watchman::start();
    let repo = monitored_repo(&w);
    let dir = repo.path();
    let on = if from_last { "true" } else { "false" };
    repo.git(&["config", "agentRewind.fromLastCheckpoint", on]);
    start(&w, dir);
    // The first snapshot got our first token; this one asks the monitor.
    let t = checkpoint(&w, dir, "nothing");
    assert!(t.full_pass.is_none(), "{:?}", t.full_pass);
    if from_last {
        assert!(t.from_last, "{}", t.trace);
    } else {
        assert_eq!(
            t.known,
            entries(&w, dir),
            "every entry known from the monitor"
        );
    }
    // Whether a checkpoint took the way this run expects.
    let took_expected_way = |t: &Taken| t.monitored() && t.from_last == from_last;

    repo.write("d1/sub/deep/new.txt", "a new file\n");
    repo.write("d2/brand/new/dir.txt", "a new folder\n");
    repo.write("d2/ignored.log", "ignored\n");
    let t = checkpoint(&w, dir, "creates");
    assert!(took_expected_way(&t), "{}", t.trace);

    std::fs::remove_file(dir.join("d3/f0.txt")).unwrap();
    std::fs::remove_dir_all(dir.join("d4/sub")).unwrap();
    let t = checkpoint(&w, dir, "deletes");
    assert!(took_expected_way(&t), "{}", t.trace);

    std::fs::rename(dir.join("d5/f1.txt"), dir.join("d6/sub/moved.txt")).unwrap();
    std::fs::rename(dir.join("d7/sub"), dir.join("d7/renamed")).unwrap();
    let t = checkpoint(&w, dir, "renames");
    assert!(took_expected_way(&t), "{}", t.trace);

    // A file becomes a folder, a folder becomes a file, a symlink appears.
    std::fs::remove_file(dir.join("d1/f0.txt")).unwrap();
    repo.write("d1/f0.txt/inside.txt", "was a file\n");
    std::fs::remove_dir_all(dir.join("d2/sub")).unwrap();
    repo.write("d2/sub", "was a folder\n");
    #[cfg(unix)]
    std::os::unix::fs::symlink("f1.txt", dir.join("d3/link")).unwrap();
    let t = checkpoint(&w, dir, "kinds changed");
    assert!(took_expected_way(&t), "{}", t.trace);

    // A folder replaced by a symlink to another one: nothing below the symlink is the
    // worktree's, though a path through it finds files.
    #[cfg(unix)]
    {
        std::fs::remove_dir_all(dir.join("d5/sub")).unwrap();
        std::os::unix::fs::symlink("../d6/sub", dir.join("d5/sub")).unwrap();
        let t = checkpoint(&w, dir, "a folder became a symlink");
        assert!(took_expected_way(&t), "{}", t.trace);
    }

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let f = dir.join("d8/f2.txt");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
        let t = checkpoint(&w, dir, "a mode change");
        assert!(took_expected_way(&t), "{}", t.trace);
    }

    // Same size, same mtime: only the monitor (and ctime) can tell.
    let f = dir.join("d9/sub/deep/f3.txt");
    let before = std::fs::metadata(&f).unwrap().modified().unwrap();
    std::fs::write(&f, "X Y\n").unwrap();
    filetime::set_file_mtime(&f, filetime::FileTime::from_system_time(before)).unwrap();
    let t = checkpoint(&w, dir, "an edit keeping size and mtime");
    assert!(took_expected_way(&t), "{}", t.trace);

    // The index changes under us (a file staged, another one's entry refreshed).
    repo.write("d0/f0.txt", "staged change\n");
    git(&w, dir, &["-c", "core.fsmonitor=false", "add", "d0/f0.txt"]);
    repo.write("d0/f0.txt", "and changed again\n");
    let t = checkpoint(&w, dir, "a staged change");
    // Another index: the full monitored pass.
    assert!(
        t.full_pass.is_none() && t.known > 0 && !t.from_last,
        "{}",
        t.trace
    );

    // `git status` with the same monitor updates git's own token in the index: ours is
    // unaffected, and the next checkpoint still uses the monitor.
    git(&w, dir, &["status", "--porcelain"]);
    repo.write("d1/f4.txt", "after git status\n");
    let t = checkpoint(&w, dir, "an edit after git status");
    assert!(took_expected_way(&t), "{}", t.trace);
    // Nothing changed: the same tree, every proof kept.
    let again = checkpoint(&w, dir, "nothing again");
    assert_eq!(again.tree, t.tree);
    git(&w, dir, &["fsck", "--strict", "--no-progress"]);
}

/// How many directories the untracked walk read, from the trace.
fn dirs_read(t: &Taken) -> usize {
    let rest = t.trace.split("untracked walk read ").nth(1).unwrap();
    rest.split(' ').next().unwrap().parse().unwrap()
}

#[test]
fn edited_tracked_files_leave_their_folders_unread_and_membership_changes_are_seen() {
    let w = Watchman::start();
    let repo = monitored_repo(&w);
    let dir = repo.path();
    // A tracked .gitignore below the root, ignoring a file there (aged like the rest).
    repo.write("d8/.gitignore", "*.tmp\n");
    repo.write("d8/sub/a.tmp", "ignored until the rule goes\n");
    // Through our Watchman: the hook is configured by now.
    git(&w, dir, &["add", "d8/.gitignore"]);
    git(&w, dir, &["commit", "-q", "-m", "a nested ignore"]);
    common::age_files(dir);
    git(&w, dir, &["update-index", "-q", "--refresh"]);
    std::thread::sleep(Duration::from_millis(2200));
    start(&w, dir);
    checkpoint(&w, dir, "a token");

    // Content edits only: no folder below the root is read for untracked files.
    repo.write("d1/f0.txt", "edited\n");
    repo.write("d2/sub/deep/f1.txt", "edited deep\n");
    let t = checkpoint(&w, dir, "content edits");
    assert!(t.full_pass.is_none(), "{}", t.trace);
    assert_eq!(dirs_read(&t), 1, "only the root: {}", t.trace);

    // Each change of membership is seen, next to edits of tracked files (`checkpoint`
    // compares every tree with `git add -A`'s).
    repo.write("d3/f0.txt", "edited next to a new file\n");
    repo.write("d3/new.txt", "untracked\n");
    let t = checkpoint(&w, dir, "a new file beside an edit");
    assert!(dirs_read(&t) > 1, "{}", t.trace);
    let ls = |t: &Taken| git(&w, dir, &["ls-tree", "-r", "--name-only", &t.tree]);
    assert!(ls(&t).lines().any(|l| l == "d3/new.txt"));

    std::fs::remove_file(dir.join("d4/f0.txt")).unwrap();
    repo.write(
        "d4/f0.txt/inside.txt",
        "a folder where a tracked file was\n",
    );
    repo.write("d4/f1.txt", "edited too\n");
    let t = checkpoint(&w, dir, "a tracked file replaced by a folder");
    assert!(ls(&t).lines().any(|l| l == "d4/f0.txt/inside.txt"));

    std::fs::rename(dir.join("d5/f1.txt"), dir.join("d5/f1-renamed.txt")).unwrap();
    let t = checkpoint(&w, dir, "a rename within a folder");
    assert!(ls(&t).lines().any(|l| l == "d5/f1-renamed.txt"));

    std::fs::remove_file(dir.join("d6/f2.txt")).unwrap();
    repo.write("d6/f2.txt", "deleted and made again\n");
    checkpoint(&w, dir, "a delete and recreate");
    std::fs::remove_file(dir.join("d6/f3.txt")).unwrap();
    checkpoint(&w, dir, "a tracked file deleted");

    // Editing a tracked .gitignore: what it ignored below is looked at again.
    repo.write("d8/.gitignore", "# nothing ignored\n");
    let t = checkpoint(&w, dir, "an edited .gitignore");
    assert!(ls(&t).lines().any(|l| l == "d8/sub/a.tmp"), "{}", t.trace);

    // A tracked file that became a symlink changed kind.
    #[cfg(unix)]
    {
        std::fs::remove_file(dir.join("d7/f4.txt")).unwrap();
        std::os::unix::fs::symlink("f3.txt", dir.join("d7/f4.txt")).unwrap();
        repo.write("d7/sub/new.txt", "untracked below\n");
        checkpoint(&w, dir, "a file become a symlink");
    }
    checkpoint(&w, dir, "nothing");
    git(&w, dir, &["fsck", "--strict", "--no-progress"]);
}

#[test]
fn proofs_hold_across_index_layout_changes_and_an_old_token_file_means_the_full_pass() {
    let w = Watchman::start();
    let repo = monitored_repo(&w);
    let dir = repo.path();
    start(&w, dir);
    let t = checkpoint(&w, dir, "a token");
    assert!(t.full_pass.is_none(), "{:?}", t.full_pass);

    // The index gains an entry and loses another (`git add`, `git rm --cached`) while
    // the monitor reports only those paths: the stored proofs no longer line up with the
    // entries by position, and are looked up instead.
    repo.write("d0/added.txt", "staged new file\n");
    git(
        &w,
        dir,
        &["-c", "core.fsmonitor=false", "add", "d0/added.txt"],
    );
    git(
        &w,
        dir,
        &[
            "-c",
            "core.fsmonitor=false",
            "rm",
            "-q",
            "--cached",
            "d1/f0.txt",
        ],
    );
    let t = checkpoint(&w, dir, "entries added and removed");
    assert!(t.full_pass.is_none() && t.known > 0, "{}", t.trace);

    // The index rewritten by `git add` of a tracked file whose content the monitor saw
    // change before our last token, in the same layout: that entry's proof is not its own.
    repo.write("d2/f1.txt", "changed\n");
    checkpoint(&w, dir, "an edit");
    git(&w, dir, &["-c", "core.fsmonitor=false", "add", "d2/f1.txt"]);
    let t = checkpoint(&w, dir, "the edit staged, nothing else changed");
    assert!(t.full_pass.is_none() && t.known > 0, "{}", t.trace);
    let again = checkpoint(&w, dir, "nothing");
    assert_eq!(again.tree, t.tree);

    // A token file of the previous version (digests sorted, no layout line), a damaged
    // one and a truncated one: each means "no token of ours", never a proof.
    let file = dir.join(".git/agent-rewind/cache/fsmonitor");
    let good = std::fs::read(&file).unwrap();
    let text = String::from_utf8_lossy(&good);
    let lines: Vec<&str> = text.splitn(4, '\n').take(3).collect();
    assert_eq!(lines[0], "agent-rewind/fsmonitor v5");
    let old = format!("agent-rewind fsmonitor v2\n{}\n{}\n0\n", lines[1], lines[2]);
    let mut flipped = good.clone();
    let last_digest = good.len() - 15 - 8;
    flipped[last_digest] ^= 0x01;
    for (what, bytes, edit) in [
        ("an old token file", old.into_bytes(), "d3/f1.txt"),
        (
            "a truncated token file",
            good[..good.len() - 3].to_vec(),
            "d4/f1.txt",
        ),
        (
            "garbage",
            b"agent-rewind/fsmonitor v5\n\0\0".to_vec(),
            "d5/f1.txt",
        ),
        ("a token file with a flipped bit", flipped, "d6/f1.txt"),
    ] {
        std::fs::write(&file, bytes).unwrap();
        // Same size and mtime: only the monitor (or a full pass) sees it.
        let f = dir.join(edit);
        let before = std::fs::metadata(&f).unwrap().modified().unwrap();
        std::fs::write(&f, "Q Q\n").unwrap();
        filetime::set_file_mtime(&f, filetime::FileTime::from_system_time(before)).unwrap();
        let t = checkpoint(&w, dir, what);
        assert!(t.full_pass.is_some(), "{what}: {}", t.trace);
        assert_eq!(t.known, 0, "{what}");
        let t = checkpoint(&w, dir, &format!("after {what}"));
        assert!(t.full_pass.is_none() && t.known > 0, "{what}: {}", t.trace);
    }
    git(&w, dir, &["fsck", "--strict", "--no-progress"]);
}

/// `git add -A`'s tree without `left_out` (what the policy leaves out), git talking to our
/// Watchman.
fn add_all_tree_without(w: &Watchman, dir: &Path, left_out: &[&str]) -> String {
    let (key, value) = w.env();
    common::add_all_tree_except(dir, &[(key, value.as_os_str())], left_out)
}
