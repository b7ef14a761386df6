//! Retention that reaches the remote: `push` deletes there the runs this clone's own
//! tombstones cover (only at the deleted tip or an ancestor of it, never forced), `delete
//! --remote` deletes a run here and there, and `gc --remote --dry-run` says what the remote
//! holds and what the policy would delete there. Each against a bare repository named by its
//! path and against the smart-HTTP remote, with several clones.

use super::http_server::HttpServer;
use super::{Bare, clone, js, make_run, run_refs, stderr};
use crate::common::{assert_fsck_in, ok_in, refs, run_in};
use serde_json::Value;

/// A remote as the clones see it: a bare repository's path, or the same served over smart
/// HTTP (the server lives as long as this).
struct Remote {
    bare: Bare,
    url: String,
    _server: Option<HttpServer>,
}

impl Remote {
    fn path() -> Remote {
        let bare = Bare::new();
        let url = bare.path().display().to_string();
        Remote {
            bare,
            url,
            _server: None,
        }
    }
    fn http() -> Remote {
        let bare = Bare::new();
        bare.git(&["config", "http.receivepack", "true"]);
        let server = HttpServer::start(bare.dir.path());
        Remote {
            url: server.url("remote.git"),
            bare,
            _server: Some(server),
        }
    }
    fn run_refs(&self, run: &str) -> Vec<(String, String)> {
        run_refs(&self.bare.path(), run)
    }
}

/// The entry of `run` in a `remote_deleted` list.
fn retired<'v>(list: &'v Value, run: &str) -> &'v Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|r| r["run"] == run)
        .unwrap_or_else(|| panic!("no {run} in {list:#}"))
}

fn push_deletes_covered_runs_and_keeps_newer_work(remote: &Remote) {
    let a = clone(&remote.url, "alice");
    make_run(&a, "old1");
    make_run(&a, "old2");
    make_run(&a, "keep1");
    ok_in(a.path(), &["push", "--all"]);
    let b = clone(&remote.url, "bob");
    ok_in(b.path(), &["fetch"]);
    let c = clone(&remote.url, "carol");
    ok_in(c.path(), &["fetch"]);
    // Bob goes on with old2 and pushes it: newer work Alice never saw.
    ok_in(b.path(), &["checkpoint", "bobs-turn", "--run", "old2"]);
    ok_in(b.path(), &["push", "old2"]);
    let bobs_old2 = remote.run_refs("old2");
    let keep1 = remote.run_refs("keep1");

    let gc = js(a.path(), &["gc", "--older-than", "0s", "--keep", "1"]);
    assert_eq!(gc["tombstones_written"], 2, "{gc:#}");
    let pushed = js(a.path(), &["push", "--all"]);
    let gone = &pushed["remote_deleted"];
    assert_eq!(retired(gone, "old1")["result"], "deleted", "{pushed:#}");
    assert_eq!(retired(gone, "old1")["refs"], 4, "{pushed:#}");
    assert_eq!(retired(gone, "old2")["result"], "kept", "{pushed:#}");
    assert!(
        retired(gone, "old2")["reason"]
            .as_str()
            .unwrap()
            .contains("moved on"),
        "{pushed:#}"
    );
    // Exactly old1's refs went: Bob's old2 and keep1 are as they were; tombstones landed.
    assert!(remote.run_refs("old1").is_empty());
    assert_eq!(remote.run_refs("old2"), bobs_old2);
    assert_eq!(remote.run_refs("keep1"), keep1);
    assert_eq!(
        refs(&remote.bare.path(), "refs/agent-runs-tombstones/").len(),
        2
    );
    assert_fsck_in(&remote.bare.path(), "the remote");

    // Carol never fetched the tombstone: her push --all sends old1 back ...
    ok_in(c.path(), &["push", "old1"]);
    assert_eq!(remote.run_refs("old1").len(), 4);
    // ... a clone that fetches does not import it (the tombstone covers it) ...
    let d = clone(&remote.url, "dave");
    let fetched = js(d.path(), &["fetch"]);
    assert_eq!(fetched["deleted_elsewhere"], 1, "{fetched:#}");
    assert!(refs(d.path(), "refs/agent-runs/old1/").is_empty());
    assert_eq!(refs(d.path(), "refs/agent-runs/old2/").len(), 4);
    // ... and Alice's next push deletes it there again, saying so on stdout.
    let out = ok_in(a.path(), &["push", "keep1"]);
    assert!(out.contains("old1 deleted on the remote"), "{out}");
    assert!(out.contains("old2 kept on the remote"), "{out}");
    assert!(remote.run_refs("old1").is_empty());
    // Nobody's own copy was touched.
    assert_eq!(refs(c.path(), "refs/agent-runs/old1/").len(), 3);
    assert_eq!(refs(b.path(), "refs/agent-runs/old2/").len(), 4);
    assert_fsck_in(&remote.bare.path(), "the remote");
    for r in [&a, &b, &c, &d] {
        r.assert_fsck();
    }
}

#[test]
fn push_deletes_on_a_bare_remote_the_runs_gc_deleted_here_but_not_a_teammates_newer_work() {
    push_deletes_covered_runs_and_keeps_newer_work(&Remote::path());
}

#[test]
fn push_deletes_over_smart_http_the_runs_gc_deleted_here_but_not_a_teammates_newer_work() {
    push_deletes_covered_runs_and_keeps_newer_work(&Remote::http());
}

fn delete_here_and_on_the_remote(remote: &Remote) {
    let a = clone(&remote.url, "alice");
    for run in ["r1", "r2", "r3", "keep"] {
        make_run(&a, run);
    }
    ok_in(a.path(), &["push", "r1", "r2", "keep"]);
    let b = clone(&remote.url, "bob");
    ok_in(b.path(), &["fetch"]);

    // A bad remote: a clear error, and nothing changed here.
    let before = refs(a.path(), "refs/");
    let out = run_in(a.path(), &["delete", "r1", "--remote", "nowhere"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("unknown remote \"nowhere\""),
        "{}",
        stderr(&out)
    );
    assert_eq!(refs(a.path(), "refs/"), before);

    let done = js(a.path(), &["delete", "r1", "--remote", "origin"]);
    assert_eq!(done["on_remote"]["result"], "deleted", "{done:#}");
    assert_eq!(done["refs_deleted"], 4, "{done:#}");
    assert!(run_refs(a.path(), "r1").is_empty());
    assert!(remote.run_refs("r1").is_empty());
    let tip = &done["head"].as_str().unwrap();
    let tombstone = format!("refs/agent-runs-tombstones/r1/{tip}");
    assert_eq!(
        remote.bare.git(&["rev-parse", &tombstone]).trim(),
        a.rev(&tombstone)
    );

    // Not on the remote: said, not an error.
    let out = ok_in(a.path(), &["delete", "r3", "--remote", "origin"]);
    assert!(out.contains("r3 not on the remote"), "{out}");
    assert!(run_refs(a.path(), "r3").is_empty());

    // Bob went on with r2: Alice's delete keeps his work there, says so, exits 1.
    ok_in(b.path(), &["checkpoint", "bobs-turn", "--run", "r2"]);
    ok_in(b.path(), &["push", "r2"]);
    let bobs = remote.run_refs("r2");
    let out = run_in(a.path(), &["delete", "r2", "--remote", "origin"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("r2 kept on the remote: the remote copy moved on"),
        "{text}"
    );
    assert_eq!(remote.run_refs("r2"), bobs);
    assert!(run_refs(a.path(), "r2").is_empty());

    // A clone that fetches does not bring r1 back; keep and Bob's r2 arrive.
    let c = clone(&remote.url, "carol");
    ok_in(c.path(), &["fetch"]);
    assert!(refs(c.path(), "refs/agent-runs/r1/").is_empty());
    assert_eq!(refs(c.path(), "refs/agent-runs/r2/").len(), 4);
    assert_eq!(refs(c.path(), "refs/agent-runs/keep/").len(), 3);
    assert_fsck_in(&remote.bare.path(), "the remote");
    a.assert_fsck();
}

#[test]
fn delete_remote_deletes_a_run_here_and_on_a_bare_remote() {
    delete_here_and_on_the_remote(&Remote::path());
}

#[test]
fn delete_remote_deletes_a_run_here_and_over_smart_http() {
    delete_here_and_on_the_remote(&Remote::http());
}

fn gc_remote_dry_run_reports_what_the_remote_holds(remote: &Remote) {
    let a = clone(&remote.url, "alice");
    for run in ["old1", "old2", "keep1"] {
        make_run(&a, run);
    }
    ok_in(a.path(), &["push", "--all"]);
    // Bob's run: Alice never fetched it, so nothing here tells its age or size.
    let b = clone(&remote.url, "bob");
    make_run(&b, "bobs");
    ok_in(b.path(), &["push", "bobs"]);
    let there = refs(&remote.bare.path(), "refs/");
    let here = refs(a.path(), "refs/");

    let dry = &[
        "gc",
        "--remote",
        "origin",
        "--dry-run",
        "--older-than",
        "0s",
        "--keep",
        "1",
    ];
    let v = js(a.path(), dry);
    let names: Vec<&str> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["bobs", "keep1", "old1", "old2"], "{v:#}");
    assert_eq!(v["not_judged"], 1, "{v:#}");
    let gone: Vec<&str> = v["would_delete"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_str().unwrap())
        .collect();
    assert_eq!(gone, ["old2", "old1"], "{v:#}");
    // The estimate is what git counts for the runs held here at the same tip.
    let usage = a.git(&[
        "rev-list",
        "--objects",
        "--disk-usage",
        "--glob=refs/agent-runs/*",
        "--glob=refs/notes/agent-runs/*",
        "--not",
        "--branches",
        "--tags",
        "--remotes",
    ]);
    assert_eq!(
        v["bytes_estimate"].as_u64(),
        usage.trim().parse().ok(),
        "{v:#}"
    );
    let text = ok_in(a.path(), dry);
    assert!(text.contains("origin holds 4 runs"), "{text}");
    assert!(text.contains("would delete 2 runs there"), "{text}");

    // The policy, when no filter is given.
    a.git(&["config", "agentRewind.retain", "2.runs"]);
    let v = js(a.path(), &["gc", "--remote", "origin", "--dry-run"]);
    assert_eq!(v["would_delete"][0]["run"], "old1", "{v:#}");
    assert_eq!(v["would_delete"].as_array().unwrap().len(), 1, "{v:#}");

    // Without --dry-run: refused, pointing at it.
    let out = run_in(a.path(), &["gc", "--remote", "origin", "--keep", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("add --dry-run"), "{}", stderr(&out));
    assert_eq!(refs(&remote.bare.path(), "refs/"), there);
    assert_eq!(refs(a.path(), "refs/"), here);

    // Runs deleted here: the next push would delete them there, and the report says so.
    ok_in(a.path(), &["gc", "--older-than", "0s", "--keep", "1"]);
    let v = js(a.path(), &["gc", "--remote", "origin", "--dry-run"]);
    let covered = &v["covered_by_tombstones"];
    assert_eq!(retired(covered, "old1")["result"], "would delete", "{v:#}");
    assert_eq!(retired(covered, "old2")["result"], "would delete", "{v:#}");
    assert_eq!(refs(&remote.bare.path(), "refs/"), there);
    assert_fsck_in(&remote.bare.path(), "the remote");
}

#[test]
fn gc_remote_dry_run_says_what_a_bare_remote_holds_and_what_the_policy_would_delete() {
    gc_remote_dry_run_reports_what_the_remote_holds(&Remote::path());
}

#[test]
fn gc_remote_dry_run_says_what_a_smart_http_remote_holds_and_what_the_policy_would_delete() {
    gc_remote_dry_run_reports_what_the_remote_holds(&Remote::http());
}

#[test]
fn a_run_that_moves_on_the_remote_during_the_push_is_not_deleted_and_the_others_are() {
    let remote = Remote::path();
    let a = clone(&remote.url, "alice");
    make_run(&a, "old1");
    make_run(&a, "old2");
    make_run(&a, "keep1");
    ok_in(a.path(), &["push", "--all"]);
    let b = clone(&remote.url, "bob");
    ok_in(b.path(), &["fetch"]);
    ok_in(b.path(), &["checkpoint", "bobs-turn", "--run", "old1"]);
    ok_in(a.path(), &["gc", "--older-than", "0s", "--keep", "1"]);
    // Alice's pre-push hook: the first time a push deletes refs, Bob's newer old1 lands on
    // the remote with plain git, after Alice read the remote and before her push applies.
    let mark = a.path().join("bob-pushed");
    let hook = a.path().join(".git/hooks/pre-push");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\nif grep -q '^(delete)' && [ ! -e '{mark}' ]; then\n  touch '{mark}'\n  for v in $(env | sed -n 's/^\\(GIT_[A-Za-z_]*\\)=.*/\\1/p'); do unset $v; done\n  git -C '{bob}' push -q origin 'refs/agent-runs/old1/*:refs/agent-runs/old1/*' 'refs/notes/agent-runs/old1:refs/notes/agent-runs/old1' || exit 1\nfi\nexit 0\n",
            mark = mark.display(),
            bob = b.path().display()
        ),
    )
    .unwrap();
    // git for Windows runs a hook through its sh whatever its mode.
    #[cfg(unix)]
    {
        let mut perms = std::fs::metadata(&hook).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&hook, perms).unwrap();
    }

    let pushed = js(a.path(), &["push", "keep1"]);
    assert!(mark.exists(), "the hook ran: {pushed:#}");
    let gone = &pushed["remote_deleted"];
    assert_eq!(retired(gone, "old2")["result"], "deleted", "{pushed:#}");
    assert_eq!(retired(gone, "old1")["result"], "kept", "{pushed:#}");
    assert!(
        retired(gone, "old1")["reason"]
            .as_str()
            .unwrap()
            .contains("moved on the remote while this push ran"),
        "{pushed:#}"
    );
    assert_eq!(
        remote.run_refs("old1"),
        run_refs(b.path(), "old1"),
        "Bob's newer old1 is there whole"
    );
    assert!(remote.run_refs("old2").is_empty());
    assert_fsck_in(&remote.bare.path(), "the remote");
}
