//! Pushes hosts accept: a remote whose pre-receive hook refuses a push
//! updating more than N refs (as GitHub's push policy does) still takes every run, through
//! `agentRewind.pushRefsPerPush` or by detecting the refusal, over a file remote,
//! `git daemon` and smart HTTP (`git http-backend` behind lighttpd); nothing is ever
//! forced (the remote also refuses non-fast-forwards).

use super::{Bare, clone, js, make_run, result_of, stderr};
use crate::common::{Daemon, ok_in, refs, run_in};
use std::path::Path;

/// A pre-receive hook on `bare` refusing pushes that update more than `n` refs; `message`
/// says so (with `{n}` and `{count}` filled in). It logs each push's ref count.
fn limit_refs(bare: &Path, n: usize, message: &str) {
    let hook = bare.join("hooks/pre-receive");
    let message = message
        .replace("{n}", &n.to_string())
        .replace("{count}", "$count");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ncount=0\nwhile read old new ref; do count=$((count+1)); done\n\
             echo $count >> \"$GIT_DIR/push-sizes\"\n\
             if [ $count -gt {n} ]; then echo \"{message}\" >&2; exit 1; fi\nexit 0\n"
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    crate::common::git_in(bare, &["config", "receive.denyNonFastForwards", "true"]);
}

/// The sizes of the pushes the remote took (and refused), in order.
fn push_sizes(bare: &Path) -> Vec<usize> {
    std::fs::read_to_string(bare.join("push-sizes"))
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

fn ours(dir: &Path) -> Vec<(String, String)> {
    let mut v = refs(dir, "refs/agent-runs/");
    v.extend(refs(dir, "refs/notes/agent-runs/"));
    v
}

fn takes_every_run(url: &str, bare: &Path) {
    limit_refs(
        bare,
        3,
        "error: GH013: this push updates {count} refs; a push may update at most {n} branches or tags",
    );
    let a = clone(url, "alice");
    for r in ["r1", "r2", "r3", "r4"] {
        make_run(&a, r); // HEAD, two step refs and notes: 4 refs each, more than 3
    }
    // Nothing configured: the refusal is detected and the runs go in chunks of 3.
    let out = run_in(a.path(), &["--json", "push", "--all"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let pushed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(pushed["limit_detected"], true, "{pushed:#}");
    assert_eq!(pushed["refs_per_push"], 3, "{pushed:#}");
    for r in ["r1", "r2", "r3", "r4"] {
        assert_eq!(result_of(&pushed, r)["result"], "pushed", "{pushed:#}");
    }
    assert_eq!(ours(a.path()), ours(bare));
    let sizes = push_sizes(bare);
    assert_eq!(sizes[0], 16, "the first push tried everything: {sizes:?}");
    assert!(sizes[1..].iter().all(|s| *s <= 3), "{sizes:?}");

    // Configured: chunks from the start; only changed refs are pushed.
    a.git(&["config", "agentRewind.pushRefsPerPush", "2"]);
    std::fs::remove_file(bare.join("push-sizes")).unwrap();
    for r in ["r1", "r3"] {
        ok_in(a.path(), &["checkpoint", "test", "--run", r]);
    }
    let pushed = js(a.path(), &["push", "--all"]);
    assert_eq!(pushed["refs_per_push"], 2, "{pushed:#}");
    assert!(pushed.get("limit_detected").is_none(), "{pushed:#}");
    assert_eq!(result_of(&pushed, "r1")["result"], "pushed", "{pushed:#}");
    assert_eq!(result_of(&pushed, "r3")["result"], "pushed", "{pushed:#}");
    assert_eq!(pushed["up_to_date"], 2, "{pushed:#}");
    assert_eq!(ours(a.path()), ours(bare));
    // r1 and r3 each changed HEAD, the new step ref and notes: 6 updates in pushes of 2.
    assert_eq!(push_sizes(bare), vec![2, 2, 2], "{pushed:#}");
    // Again: nothing to push, no push at all.
    let again = js(a.path(), &["push", "--all"]);
    assert_eq!(again["up_to_date"], 4, "{again:#}");
    assert_eq!(push_sizes(bare).len(), 3);

    // Another clone fetches every run, each one valid.
    let b = clone(url, "bob");
    let fetched = js(b.path(), &["fetch"]);
    for r in ["r1", "r2", "r3", "r4"] {
        assert_eq!(result_of(&fetched, r)["result"], "new", "{fetched:#}");
    }
    assert!(
        fetched["warnings"].as_array().unwrap().is_empty(),
        "{fetched:#}"
    );
    assert_eq!(ours(a.path()), ours(b.path()));
    crate::common::assert_fsck_in(bare, "the remote");
}

#[test]
fn a_remote_refusing_more_than_n_refs_per_push_takes_every_run_over_file() {
    let bare = Bare::new();
    takes_every_run(&bare.url(), &bare.path());
}

#[test]
fn a_remote_refusing_more_than_n_refs_per_push_takes_every_run_over_git_daemon() {
    let bare = Bare::new();
    let daemon = Daemon::start(bare.dir.path());
    takes_every_run(&daemon.url("remote.git"), &bare.path());
    drop(daemon);
}

#[test]
fn a_remote_refusing_more_than_n_refs_per_push_takes_every_run_over_smart_http() {
    let bare = Bare::new();
    bare.git(&["config", "http.receivepack", "true"]);
    let server = super::http_server::HttpServer::start(bare.dir.path());
    takes_every_run(&server.url("remote.git"), &bare.path());
    drop(server);
}

#[test]
fn a_refusal_that_names_no_number_halves_the_push_until_it_fits() {
    let bare = Bare::new();
    limit_refs(&bare.path(), 2, "too many refs in one push");
    let a = clone(&bare.url(), "alice");
    make_run(&a, "r1");
    make_run(&a, "r2");
    let pushed = js(a.path(), &["push", "r1", "r2"]);
    assert_eq!(pushed["limit_detected"], true, "{pushed:#}");
    assert_eq!(result_of(&pushed, "r1")["result"], "pushed", "{pushed:#}");
    assert_eq!(result_of(&pushed, "r2")["result"], "pushed", "{pushed:#}");
    assert_eq!(ours(a.path()), ours(&bare.path()));
    let sizes = push_sizes(&bare.path());
    assert!(
        sizes.iter().skip_while(|s| **s > 2).all(|s| *s <= 2),
        "{sizes:?}"
    );
    // A run the remote moved on is rejected in chunks too, never forced.
    let b = clone(&bare.url(), "bob");
    ok_in(b.path(), &["fetch"]);
    ok_in(b.path(), &["checkpoint", "bobs", "--run", "r1"]);
    ok_in(b.path(), &["push", "r1"]);
    ok_in(a.path(), &["checkpoint", "alices", "--run", "r1"]);
    ok_in(a.path(), &["checkpoint", "more", "--run", "r2"]);
    a.git(&["config", "agentRewind.pushRefsPerPush", "2"]);
    let remote_r1 = bare.git(&["rev-parse", "refs/agent-runs/r1/HEAD"]);
    let out = run_in(a.path(), &["--json", "push", "--all"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let pushed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result_of(&pushed, "r1")["result"], "rejected", "{pushed:#}");
    assert_eq!(result_of(&pushed, "r2")["result"], "pushed", "{pushed:#}");
    assert_eq!(
        bare.git(&["rev-parse", "refs/agent-runs/r1/HEAD"]),
        remote_r1
    );
}

#[test]
fn fetch_of_everything_in_chunks_with_fetch_refs_per_fetch() {
    let bare = Bare::new();
    let a = clone(&bare.url(), "alice");
    for r in ["r1", "r2", "r3", "r4", "r5"] {
        make_run(&a, r); // 4 refs each
    }
    ok_in(a.path(), &["push", "--all"]);
    let b = clone(&bare.url(), "bob");
    b.git(&["config", "agentRewind.fetchRefsPerFetch", "8"]);
    let trace = tempfile::NamedTempFile::new().unwrap();
    let out = crate::common::tool_cmd(b.path())
        .env("GIT_TRACE", trace.path())
        .args(["--json", "fetch"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let fetched: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for r in ["r1", "r2", "r3", "r4", "r5"] {
        assert_eq!(result_of(&fetched, r)["result"], "new", "{fetched:#}");
    }
    assert_eq!(ours(a.path()), ours(b.path()));
    // Three fetches of at most 8 refs (two runs each), after one ls-remote.
    let log = std::fs::read_to_string(trace.path()).unwrap();
    let fetches = log
        .lines()
        .filter(|l| l.contains("built-in: git fetch"))
        .count();
    assert!(log.contains("built-in: git ls-remote"), "{log}");
    assert!(fetches >= 3, "{fetches} fetches: {log}");
    // As a fetch of everything: a run deleted here stays deleted, up to date ones counted.
    ok_in(b.path(), &["delete", "r2"]);
    let again = js(b.path(), &["fetch"]);
    assert_eq!(again["deleted_here"], 1, "{again:#}");
    assert_eq!(again["up_to_date"], 4, "{again:#}");
    assert!(refs(b.path(), "refs/agent-runs/r2/").is_empty());
    b.assert_fsck();
}
