//! Checkpoints that start from the run's last checkpoint (`store/snapshot/monitored.rs`):
//! the ignore rules, the policy and git's settings decide as in the full pass, every doubt
//! means the full pass, and a crash after the snapshot saved its state leaves the next
//! checkpoint to the full pass. Against a real Watchman, as the rest of this file.

use super::*;

/// A monitored repository whose checkpoints start from the last one where they may.
fn from_last_repo(w: &Watchman) -> Repo {
    let repo = monitored_repo(w);
    repo.git(&["config", "agentRewind.fromLastCheckpoint", "true"]);
    repo
}

/// A checkpoint whose tree must be `git add -A`'s and which must have started from the
/// last one.
fn checkpoint_from_last(w: &Watchman, dir: &Path, what: &str) -> Taken {
    let t = checkpoint(w, dir, what);
    assert!(t.from_last, "{what}: {}", t.trace);
    t
}

/// A checkpoint that must have started from the last one, whose tree must be `git add -A`'s
/// without `left_out`, and which must list exactly `left_out` as left out.
fn from_last_without(w: &Watchman, dir: &Path, what: &str, left_out: &[&str]) -> Taken {
    let t = checkpoint_in(w, dir, what, &[]);
    assert!(t.from_last, "{what}: {}", t.trace);
    assert_eq!(
        t.tree,
        add_all_tree_without(w, dir, left_out),
        "{what}: the tree differs from `git add -A` without {left_out:?}\n{}",
        t.trace
    );
    let mut want: Vec<String> = left_out.iter().map(|p| p.to_string()).collect();
    want.sort();
    assert_eq!(excluded_paths(&t), want, "{what}");
    t
}

fn excluded_paths(t: &Taken) -> Vec<String> {
    t.json["excluded"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|x| x["path"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn from_the_last_checkpoint_ignore_rules_and_the_policy_decide_as_in_the_full_pass() {
    let w = Watchman::start();
    let repo = from_last_repo(&w);
    let dir = repo.path();
    repo.git(&["config", "agentRewind.maxUntrackedSize", "1000"]);
    // Index version 4 (paths compressed against the one before) without a checksum
    // (`index.skipHash`, as `feature.manyFiles` sets both) is read too.
    repo.git(&["config", "index.skipHash", "true"]);
    git(&w, dir, &["update-index", "--index-version", "4"]);
    let index = std::fs::read(dir.join(".git/index")).unwrap();
    assert!(
        index[index.len() - 20..].iter().all(|b| *b == 0),
        "no checksum"
    );
    start(&w, dir);
    let step = |what: &str, left_out: &[&str]| from_last_without(&w, dir, what, left_out);
    checkpoint_in(&w, dir, "a first one", &[]);

    // A new folder with an ignored file and a secret one, a file too big, an ignored folder.
    repo.write("d0/new/deep/kept.txt", "kept\n");
    repo.write("d0/new/deep/skip.log", "ignored by *.log\n");
    repo.write("d0/new/.env", "SECRET=1\n");
    repo.write("d1/big.bin", &"x".repeat(2000));
    repo.write("d1/notes.txt", "kept too\n");
    repo.write("d5/out.log/inside.txt", "in an ignored folder\n");
    step("creates", &["d0/new/.env", "d1/big.bin"]);

    // What was left out stays so while it is not touched, and is looked at again when it is.
    repo.write("d0/new/deep/kept.txt", "kept, edited\n");
    step("an edit beside", &["d0/new/.env", "d1/big.bin"]);
    repo.write("d1/big.bin", "small now\n");
    step("shrunk", &["d0/new/.env"]);
    std::fs::remove_dir_all(dir.join("d0/new")).unwrap();
    step("the new folder deleted", &[]);
    git(&w, dir, &["fsck", "--strict", "--no-progress"]);
}

#[test]
fn from_the_last_checkpoint_every_doubt_means_the_full_pass() {
    let w = Watchman::start();
    let repo = from_last_repo(&w);
    let dir = repo.path();
    start_with(&w, dir, &["--run", "first"]);
    let from_last = |what: &str| {
        checkpoint_from_last(&w, dir, what);
    };
    let full = |what: &str, why: &str| {
        let t = checkpoint(&w, dir, what);
        assert!(!t.from_last, "{what}: {}", t.trace);
        assert!(
            t.trace
                .contains(&format!("snapshot: not from the last checkpoint ({why}")),
            "{what}: {}",
            t.trace
        );
    };
    from_last("a first edit-free one");

    // A change staged without a commit: the index's tree is not known (`git add` leaves
    // the cache-tree invalid), so what changed in it cannot be told.
    repo.write("d1/f1.txt", "staged\n");
    plain_git(&w, dir, &["add", "d1/f1.txt"]);
    full("a staged change", "the index changed");
    // The commit of it leaves the index's entries as they were (only its cache-tree is
    // written): HEAD moved, and what changed in it is looked at.
    plain_git(&w, dir, &["commit", "-qm", "moved"]);
    repo.write("d1/f2.txt", "after the commit\n");
    from_last("after a commit of it");
    repo.write("d1/f3.txt", "and then\n");
    from_last("the one after");

    // A commit of more paths than a checkpoint looks at by itself (entries only: the files
    // are not in the worktree, so the monitor reports nothing and the tree lacks them).
    let empty_blob = git(&w, dir, &["hash-object", "-w", "--stdin"]);
    let mut infos = String::new();
    for i in 0..2001 {
        infos.push_str(&format!("100644 {}\tmany/f{i}.txt\n", empty_blob.trim()));
    }
    common::git_stdin(
        dir,
        &["-c", "core.fsmonitor=false", "update-index", "--index-info"],
        infos.as_bytes(),
    );
    plain_git(&w, dir, &["commit", "-qm", "many"]);
    full("a commit of 2001 paths", "too many paths changed by git");
    plain_git(&w, dir, &["rm", "-q", "-r", "--cached", "many"]);
    plain_git(&w, dir, &["commit", "-qm", "fewer"]);
    repo.write("d1/f4.txt", "after that\n");
    full(
        "and a commit taking them out",
        "too many paths changed by git",
    );
    repo.write("d1/f5.txt", "then\n");
    from_last("then again");

    // A .gitignore changes: what is ignored below it may have.
    repo.write("d2/.gitignore", "f1.txt\n");
    full("a .gitignore", "a .gitignore changed");

    // Another run: its last checkpoint is not where the last snapshot ended.
    start_with(&w, dir, &["--run", "other"]);
    repo.write("d4/f1.txt", "in the other run\n");
    from_last("in the other run");
    repo.write("d4/f2.txt", "back in the first run\n");
    let t = checkpoint_in(&w, dir, "the first run", &["--run", "first"]);
    assert_eq!(t.tree, add_all_tree(&w, dir));
    assert!(
        t.trace
            .contains("not from the last checkpoint (the run's last checkpoint is not"),
        "{}",
        t.trace
    );

    repo.write("d4/f3.txt", "back in the active run\n");
    full("back in the active run", "the run's last checkpoint is not");

    // A tracked folder moved away and back: every index entry below the new folder must be
    // among the paths looked at (its walk skips ignored folders; one not reached would be
    // the full pass's).
    std::fs::rename(dir.join("d9/sub"), dir.join(".git/moved-away")).unwrap();
    from_last("a tracked folder moved away");
    std::fs::rename(dir.join(".git/moved-away"), dir.join("d9/sub")).unwrap();
    from_last("the folder moved back");
    repo.write("d8/sub/out.log/kept.txt", "tracked in an ignored folder\n");
    plain_git(&w, dir, &["add", "-f", "d8/sub/out.log"]);
    plain_git(&w, dir, &["commit", "-qm", "forced"]);
    from_last("a file forced into an ignored folder and committed");
    std::fs::rename(dir.join("d8/sub"), dir.join(".git/moved-away-2")).unwrap();
    from_last("a folder with an ignored one inside moved away");
    std::fs::rename(dir.join(".git/moved-away-2"), dir.join("d8/sub")).unwrap();
    // Watchman reports every file of a folder moved in, the tracked one in the ignored
    // folder too: it is looked at and kept.
    from_last("and moved back");

    // A nested repository appears: git takes it as a submodule's commit.
    let nested = dir.join("d7/nested");
    std::fs::create_dir_all(&nested).unwrap();
    git(&w, &nested, &["init", "-q"]);
    std::fs::write(nested.join("inside.txt"), "in a nested repository\n").unwrap();
    git(&w, &nested, &["add", "inside.txt"]);
    git(
        &w,
        &nested,
        &[
            "-c",
            "user.name=n",
            "-c",
            "user.email=n@x",
            "commit",
            "-qm",
            "n",
        ],
    );
    full("a nested repository", "a .git inside the worktree");
    std::fs::write(
        nested.join("inside.txt"),
        "edited in the nested repository\n",
    )
    .unwrap();
    full("an edit inside it", "a nested repository");

    // An ignore file outside the worktree changes (last: changed moments ago, its stat data
    // is not trusted for two seconds, and no key made meanwhile matches).
    std::fs::write(dir.join(".git/info/exclude"), "*.tmp\n").unwrap();
    repo.write("d3/x.tmp", "ignored now\n");
    full("info/exclude", "settings changed");
    git(&w, dir, &["fsck", "--strict", "--no-progress"]);
}

#[test]
fn a_checkpoint_that_crashed_after_its_snapshot_leaves_the_next_one_to_the_full_pass() {
    let w = Watchman::start();
    let repo = from_last_repo(&w);
    let dir = repo.path();
    start(&w, dir);
    checkpoint(&w, dir, "a first one");
    for point in ["journal:objects-written", "publish:before"] {
        // The snapshot starts from the last checkpoint and saves where it ended; the
        // checkpoint then dies before its refs move, so that tree is no checkpoint's.
        repo.write("d3/f3.txt", &format!("before the crash at {point}\n"));
        let out = tool_cmd(dir)
            .env(w.env().0, w.env().1)
            .env("AGENT_REWIND_CRASH_AT", point)
            .env("AGENT_REWIND_TRACE", "1")
            .args(["checkpoint", "-m", "crashes", "work"])
            .output()
            .unwrap();
        assert!(
            !out.status.success(),
            "{point}: the crash point was not reached"
        );
        let trace = String::from_utf8_lossy(&out.stderr);
        assert!(
            trace.contains("snapshot: from the last checkpoint ("),
            "{point}: {trace}"
        );
        repo.write("d3/f4.txt", &format!("after the crash at {point}\n"));
        let t = checkpoint(&w, dir, "after the crash");
        assert!(
            t.trace
                .contains("not from the last checkpoint (the run's last checkpoint is not"),
            "{point}: {}",
            t.trace
        );
        checkpoint_from_last(&w, dir, &format!("the next after the crash at {point}"));
    }
    git(&w, dir, &["fsck", "--strict", "--no-progress"]);
}

#[test]
fn from_the_last_checkpoint_file_mode_and_line_ending_settings_decide_as_in_git() {
    let w = Watchman::start();
    let repo = from_last_repo(&w);
    let dir = repo.path();
    repo.git(&["config", "core.fileMode", "false"]);
    repo.git(&["config", "core.autocrlf", "true"]);
    start(&w, dir);
    let from_last = |what: &str| {
        checkpoint_from_last(&w, dir, what);
    };
    checkpoint(&w, dir, "a first one");
    // The executable bit alone: with core.fileMode=false the index entry's mode stays.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let f = dir.join("d1/f1.txt");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
        from_last("an executable bit git does not look at");
    }
    // CRLF line endings: converted on the way in, as git add does.
    repo.write("d2/f2.txt", "one\r\ntwo\r\n");
    repo.write("d2/new-crlf.txt", "three\r\nfour\r\n");
    from_last("CRLF files");
    // A file whose content ends up the same as its index entry's after conversion.
    repo.write("d3/f3.txt", "3 3\r\n");
    from_last("CRLF back to the committed content");
    git(&w, dir, &["fsck", "--strict", "--no-progress"]);
}

/// `git` with the monitor left out of git's own status passes (as a commit in these tests).
fn plain_git(w: &Watchman, dir: &Path, args: &[&str]) {
    let mut all = vec!["-c", "core.fsmonitor=false"];
    all.extend_from_slice(args);
    git(w, dir, &all);
}

#[test]
fn after_a_commit_the_checkpoint_starts_from_the_last_one_and_looks_at_what_git_changed() {
    let w = Watchman::start();
    let repo = from_last_repo(&w);
    let dir = repo.path();
    start(&w, dir);
    let step = |what: &str, left_out: &[&str]| {
        from_last_without(&w, dir, what, left_out);
    };
    // After a commit the index's cache-tree is valid: the state saved knows its tree.
    checkpoint(&w, dir, "a first one");
    step("nothing yet", &[]);

    // Edits and a new folder, all committed (`git add -A` and `git commit` between two
    // checkpoints, as the post-commit hook sees them), with an untracked file beside.
    repo.write("d1/f1.txt", "edited and committed\n");
    repo.write("d2/brand/new/file.txt", "in a new folder\n");
    plain_git(&w, dir, &["add", "-A"]);
    plain_git(&w, dir, &["commit", "-qm", "one"]);
    repo.write("d3/untracked.txt", "not staged\n");
    step("a commit of edits and a new folder", &[]);

    // A secret-looking file: left out while untracked, kept once committed (it is in HEAD
    // now), left out again when a soft reset makes it a staged new file.
    repo.write("d4/.env", "SECRET=1\n");
    step("a secret-looking new file", &["d4/.env"]);
    plain_git(&w, dir, &["add", "d4/.env"]);
    plain_git(&w, dir, &["commit", "-qm", "two"]);
    step("committed", &[]);
    plain_git(&w, dir, &["reset", "-q", "--soft", "HEAD~1"]);
    // A soft reset leaves the index's cache-tree valid: only HEAD moved.
    step("a soft reset", &["d4/.env"]);
    plain_git(&w, dir, &["commit", "-qm", "two again"]);
    step("committed again", &[]);
    // The index alone moves (`git read-tree` leaves its cache-tree valid): the secret file
    // is untracked again, with HEAD where it was.
    plain_git(&w, dir, &["read-tree", "HEAD~1"]);
    step("the index read from an older tree", &["d4/.env"]);
    plain_git(&w, dir, &["read-tree", "HEAD"]);
    step("and back", &[]);

    // An ignored file forced into a commit, then taken out of the index: ignored again.
    repo.write("d5/build.log", "forced in\n");
    plain_git(&w, dir, &["add", "-f", "d5/build.log"]);
    plain_git(&w, dir, &["commit", "-qm", "three"]);
    step("an ignored file committed", &[]);
    plain_git(&w, dir, &["rm", "-q", "--cached", "d5/build.log"]);
    plain_git(&w, dir, &["commit", "-qm", "four"]);
    step("taken out of the index", &[]);

    // A mode git is told of while it does not look at the executable bit.
    repo.git(&["config", "core.fileMode", "false"]);
    // (a changed setting: the full pass once)
    let t = checkpoint(&w, dir, "core.fileMode changed");
    assert!(!t.from_last, "{}", t.trace);
    plain_git(&w, dir, &["update-index", "--chmod=+x", "d6/f1.txt"]);
    plain_git(&w, dir, &["commit", "-qm", "five"]);
    step("a mode changed in the index alone", &[]);

    // A commit that deletes a tracked folder, and a hard reset that brings it back.
    plain_git(&w, dir, &["rm", "-q", "-r", "d7/sub"]);
    plain_git(&w, dir, &["commit", "-qm", "six"]);
    step("a folder deleted by a commit", &[]);
    plain_git(&w, dir, &["reset", "-q", "--hard", "HEAD~1"]);
    step("a hard reset", &[]);
    git(&w, dir, &["fsck", "--strict", "--no-progress"]);
}

#[test]
fn the_post_commit_hooks_checkpoint_starts_from_the_last_one() {
    // git runs its hooks with `GIT_INDEX_FILE`, `GIT_AUTHOR_DATE` (new for every commit) and
    // more set: none of it may count as changed settings.
    let w = Watchman::start();
    let repo = from_last_repo(&w);
    let dir = repo.path();
    start(&w, dir);
    repo.ok(&["hooks", "install"]);
    let first = checkpoint(&w, dir, "a first one");
    let run = first.json["run"]
        .as_str()
        .expect("the run's id")
        .to_string();
    let run_head = format!("refs/agent-runs/{run}/HEAD");
    for i in 0..3 {
        repo.write(&format!("d{i}/f1.txt"), &format!("commit {i}\n"));
        repo.write(&format!("d{i}/new-{i}/file.txt"), "a new folder\n");
        plain_git(&w, dir, &["add", "-A"]);
        repo.write(&format!("d{i}/f2.txt"), "not staged\n");
        let out = git_cmd(dir)
            .env(w.env().0, w.env().1)
            .env("AGENT_REWIND_TRACE", "1")
            // No `-c` here: git hands `-c` values to its hooks (GIT_CONFIG_PARAMETERS), and
            // the hook's checkpoint counts them as settings, as git's own commands do.
            .args(["commit", "-qm"])
            .arg(format!("commit {i}"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "commit {i}: {stderr}");
        assert!(
            stderr.contains("snapshot: from the last checkpoint"),
            "commit {i}: the hook took the full pass\n{stderr}"
        );
        let recorded = git(&w, dir, &["rev-parse", &format!("{run_head}^{{tree}}")]);
        let head = git(&w, dir, &["rev-parse", "HEAD"]);
        let parents = git(&w, dir, &["log", "-1", "--format=%P", &run_head]);
        assert!(
            parents.contains(head.trim()),
            "the hook recorded commit {i}"
        );
        assert_eq!(
            recorded.trim(),
            add_all_tree(&w, dir),
            "commit {i}: the hook's checkpoint differs from `git add -A`"
        );
        // And a checkpoint outside the hook, right after, starts from the hook's.
        repo.write(&format!("d{i}/f3.txt"), "after the commit\n");
        checkpoint_from_last(&w, dir, &format!("after commit {i}"));
    }
    git(&w, dir, &["fsck", "--strict", "--no-progress"]);
}
