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
    let step = |what: &str, left_out: &[&str]| {
        let t = checkpoint_in(&w, dir, what, &[]);
        assert!(t.from_last, "{what}: {}", t.trace);
        assert_eq!(
            t.tree,
            add_all_tree_without(&w, dir, left_out),
            "{what}: the tree differs from `git add -A` without {left_out:?}\n{}",
            t.trace
        );
        let mut want: Vec<String> = left_out.iter().map(|p| p.to_string()).collect();
        want.sort();
        assert_eq!(excluded_paths(&t), want, "{what}");
        t
    };
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
    let first = tool_cmd(dir)
        .env(w.env().0, w.env().1)
        .args(["start", "--run", "first"])
        .output()
        .unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
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

    // HEAD moves: a commit.
    repo.write("d1/f1.txt", "committed\n");
    git(
        &w,
        dir,
        &["-c", "core.fsmonitor=false", "commit", "-qam", "moved"],
    );
    repo.write("d1/f2.txt", "after the commit\n");
    full("after a commit", "HEAD moved");
    repo.write("d1/f3.txt", "and then\n");
    from_last("the one after");

    // A .gitignore changes: what is ignored below it may have.
    repo.write("d2/.gitignore", "f1.txt\n");
    full("a .gitignore", "a .gitignore changed");

    // Another run: its last checkpoint is not where the last snapshot ended.
    let other = tool_cmd(dir)
        .env(w.env().0, w.env().1)
        .args(["start", "--run", "other"])
        .output()
        .unwrap();
    assert!(
        other.status.success(),
        "{}",
        String::from_utf8_lossy(&other.stderr)
    );
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

    // A tracked folder moved away and back: the index holds entries below a new folder.
    std::fs::rename(dir.join("d9/sub"), dir.join(".git/moved-away")).unwrap();
    from_last("a tracked folder moved away");
    std::fs::rename(dir.join(".git/moved-away"), dir.join("d9/sub")).unwrap();
    full("the folder moved back", "an index entry below a new folder");

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
