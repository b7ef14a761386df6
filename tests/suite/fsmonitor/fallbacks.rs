//! Where a monitored snapshot must not trust the monitor, or asks it another way: every
//! doubt (no hook, a failing hook, a reset watch, git's built-in daemon) falls back to the
//! full pass, never to a wrong tree; git's own Watchman sample hook is answered over
//! Watchman's socket, any other hook is run. Against a real Watchman, as the rest of this
//! file.

use super::*;

#[test]
fn every_doubt_falls_back_to_the_full_pass() {
    let w = Watchman::start();
    let repo = monitored_repo(&w);
    let dir = repo.path();
    start(&w, dir);
    checkpoint(&w, dir, "a token");

    // The watch is reset: the hook watches again and answers "everything" ("/").
    let out = w.watch_del(&dir.canonicalize().unwrap());
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"watch-del\": true"));
    let f = dir.join("d2/f2.txt");
    let before = std::fs::metadata(&f).unwrap().modified().unwrap();
    std::fs::write(&f, "Z Z\n").unwrap();
    filetime::set_file_mtime(&f, filetime::FileTime::from_system_time(before)).unwrap();
    let t = checkpoint(&w, dir, "a reset watch");
    assert!(
        t.full_pass.is_some(),
        "a reset watch must mean the full pass: {}",
        t.trace
    );
    assert_eq!(t.known, 0);

    // Watchman restarts (a fresh instance lists the files that exist, not those deleted
    // while it was down): a tracked file deleted meanwhile must not stay in the tree.
    checkpoint(&w, dir, "a token again");
    w.shutdown();
    std::fs::remove_file(dir.join("d8/sub/deep/f1.txt")).unwrap();
    let t = checkpoint(&w, dir, "a restarted watchman");
    assert!(
        t.full_pass.is_some(),
        "a restarted watchman must mean the full pass: {}",
        t.trace
    );

    // The hook is missing.
    repo.git(&["config", "core.fsmonitor", ".git/hooks/no-such-hook"]);
    repo.write("d3/f1.txt", "while the hook is missing\n");
    let t = checkpoint(&w, dir, "a missing hook");
    assert!(t.full_pass.is_some());

    // The hook fails.
    let failing = dir.join(".git/hooks/failing");
    std::fs::write(&failing, "#!/bin/sh\necho broken >&2\nexit 1\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&failing, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    repo.git(&["config", "core.fsmonitor", ".git/hooks/failing"]);
    repo.write("d4/f1.txt", "while the hook fails\n");
    let t = checkpoint(&w, dir, "a failing hook");
    assert!(t.full_pass.as_deref().is_some_and(|l| l.contains("failed")));

    // A hook that answers without a token, or "everything".
    for (name, reply) in [("notoken", "printf 'garbage'"), ("all", "printf 'tok\\0/'")] {
        let hook = dir.join(format!(".git/hooks/{name}"));
        std::fs::write(&hook, format!("#!/bin/sh\n{reply}\n")).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        repo.git(&["config", "core.fsmonitor", &format!(".git/hooks/{name}")]);
        repo.write("d5/f2.txt", &format!("with hook {name}\n"));
        let t = checkpoint(&w, dir, name);
        assert!(t.full_pass.is_some(), "{name}");
        assert_eq!(t.known, 0);
    }

    // git's built-in daemon: not on this platform, so no monitor at all.
    repo.git(&["config", "core.fsmonitor", "true"]);
    repo.write("d6/f2.txt", "with core.fsmonitor=true\n");
    let t = checkpoint(&w, dir, "core.fsmonitor=true");
    assert_eq!(t.known, 0);

    // Back to Watchman: the token stored under another hook is not used.
    repo.git(&["config", "core.fsmonitor", ".git/hooks/fsmonitor-watchman"]);
    repo.write("d7/f2.txt", "back to watchman\n");
    let t = checkpoint(&w, dir, "back to watchman");
    assert_eq!(t.known, 0);
    let t = checkpoint(&w, dir, "watchman again");
    assert!(t.full_pass.is_none() && t.known > 0);
    git(&w, dir, &["fsck", "--strict", "--no-progress"]);
}

/// Whether the checkpoint asked Watchman's socket itself (git's sample hook recognised), and
/// whether it ran the hook after all.
fn asked_socket(t: &Taken) -> (bool, bool) {
    (
        t.trace.contains("asking Watchman's socket"),
        t.trace.contains("running the hook"),
    )
}

#[test]
fn git_sample_hook_is_answered_over_watchmans_socket_and_other_hooks_are_run() {
    let w = Watchman::start();
    let repo = monitored_repo(&w);
    let dir = repo.path();
    start(&w, dir);
    checkpoint(&w, dir, "a token");
    repo.write("d1/f1.txt", "changed\n");
    repo.write("d2/new/file.txt", "new\n");
    let t = checkpoint(&w, dir, "the sample hook");
    assert_eq!(asked_socket(&t), (true, false), "{}", t.trace);
    assert!(t.full_pass.is_none() && t.known > 0, "{}", t.trace);

    // A stale cached socket path: resolved again through `watchman get-sockname`.
    let cache = dir.join(".git/agent-rewind/cache/watchman-sock");
    let cached = std::fs::read_to_string(&cache).unwrap();
    let body = common::envelope_body(cached.as_bytes(), "watchman-sock", 2);
    let key = String::from_utf8_lossy(body)
        .lines()
        .next()
        .unwrap()
        .to_string();
    let stale = format!("{key}\n{}/no-such-sock", dir.display());
    std::fs::write(
        &cache,
        common::envelope("watchman-sock", 2, stale.as_bytes()),
    )
    .unwrap();
    repo.write("d3/f1.txt", "after a stale socket path\n");
    let t = checkpoint(&w, dir, "a stale socket path");
    assert_eq!(asked_socket(&t), (true, false), "{}", t.trace);
    assert!(t.full_pass.is_none() && t.known > 0, "{}", t.trace);
    assert_eq!(std::fs::read_to_string(&cache).unwrap(), cached);

    // The same hook with one byte more is not git's sample: it is run, and works.
    let hook = dir.join(".git/hooks/fsmonitor-watchman");
    let mut text = std::fs::read_to_string(&hook).unwrap();
    text.push_str("# changed\n");
    std::fs::write(&hook, text).unwrap();
    repo.write("d4/f1.txt", "with a changed hook\n");
    let t = checkpoint(&w, dir, "a changed hook");
    assert_eq!(asked_socket(&t), (false, false), "{}", t.trace);
    assert!(t.full_pass.is_none() && t.known > 0, "{}", t.trace);

    // The sample again, with Watchman out of reach (a `watchman` first on PATH that fails):
    // the hook is run, fails too, and the full pass gives the right tree.
    std::fs::copy(HOOK_SAMPLE, &hook).unwrap();
    checkpoint(&w, dir, "the sample again");
    repo.write("d5/f1.txt", "socket gone\n");
    std::fs::remove_file(dir.join("d6/f1.txt")).unwrap();
    let bin = tempfile::tempdir().unwrap();
    let fake = bin.path().join("watchman");
    // Its `get-sockname` never answers (as Watchman 4.9's CLI retries for two minutes when
    // the server it starts cannot take the pid file): our wait for it is bounded.
    std::fs::write(
        &fake,
        "#!/bin/sh\ncase \"$*\" in *get-sockname*) exec sleep 600;; esac\n\
         echo 'no watchman here' >&2\nexit 1\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = std::env::join_paths(
        std::iter::once(bin.path().to_path_buf())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let out = tool_cmd(dir)
        .env(w.env().0, w.env().1)
        .env("PATH", path)
        .env("AGENT_REWIND_TRACE", "1")
        .args(["--json", "checkpoint", "-m", "socket gone", "work"])
        .output()
        .unwrap();
    let trace = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{trace}");
    assert!(
        trace.contains("(watchman get-sockname gave no answer in 5 s): running the hook")
            && trace.contains("full pass"),
        "{trace}"
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let commit = json["checkpoint"].as_str().unwrap();
    let tree = git(&w, dir, &["rev-parse", &format!("{commit}^{{tree}}")]);
    assert_eq!(tree.trim(), add_all_tree(&w, dir));

    // Watchman not running at all: the next checkpoint starts it (as the hook's `watchman`
    // would), watches the worktree and takes the full pass; the one after uses it again.
    w.shutdown();
    repo.write("d7/f1.txt", "watchman down\n");
    std::fs::remove_file(dir.join("d8/f1.txt")).unwrap();
    let t = checkpoint(&w, dir, "watchman down");
    assert!(t.full_pass.is_some(), "{}", t.trace);
    repo.write("d9/f1.txt", "watchman up again\n");
    let t = checkpoint(&w, dir, "watchman up again");
    assert_eq!(asked_socket(&t), (true, false), "{}", t.trace);
    assert!(t.full_pass.is_none() && t.known > 0, "{}", t.trace);
    git(&w, dir, &["fsck", "--strict", "--no-progress"]);
}
