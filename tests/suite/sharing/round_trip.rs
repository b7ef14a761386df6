//! Push from one clone, fetch into another, work there, fork, push back and fetch again,
//! through a bare repository and through `git daemon`.

use super::{Bare, clone_with, js, make_run, result_of, run_refs};
use crate::common::{Daemon, ok_in};

// ---------------------------------------------------------------------------------------
// Round trip: push from A, fetch into B, use it there, fork, push back, fetch in A
// ---------------------------------------------------------------------------------------

fn round_trip(url: &str, clone_options: &[&str]) {
    let a = clone_with(url, "alice", clone_options);
    let b = clone_with(url, "bob", clone_options);
    if let Some(format) = clone_options
        .iter()
        .find_map(|o| o.strip_prefix("--ref-format="))
    {
        assert_eq!(a.git(&["rev-parse", "--show-ref-format"]).trim(), format);
    }
    make_run(&a, "r1");
    let pushed = js(a.path(), &["push", "r1"]);
    assert_eq!(result_of(&pushed, "r1")["result"], "pushed", "{pushed:#}");
    // Pushing again is a no-op.
    let again = js(a.path(), &["push", "origin", "r1"]);
    assert_eq!(result_of(&again, "r1")["result"], "up to date");

    let fetched = js(b.path(), &["fetch"]);
    assert_eq!(result_of(&fetched, "r1")["result"], "new", "{fetched:#}");
    assert_eq!(run_refs(a.path(), "r1"), run_refs(b.path(), "r1"));
    // Fetching again changes nothing.
    let again = js(b.path(), &["fetch", "origin"]);
    assert_eq!(again["up_to_date"], 1, "{again:#}");
    assert!(again["runs"].as_array().unwrap().is_empty(), "{again:#}");
    let again = js(b.path(), &["fetch", "origin", "r1"]);
    assert_eq!(result_of(&again, "r1")["result"], "up to date");

    // show, log, diff and rewind work on the fetched run.
    let shown = js(b.path(), &["show", "r1/implement"]);
    assert_eq!(shown["step"], "implement");
    let files: Vec<&str> = shown["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert!(files.contains(&"notes/scratch.txt"), "{files:?}");
    assert_eq!(js(b.path(), &["log", "r1"]).as_array().unwrap().len(), 3);
    let diff = ok_in(b.path(), &["diff", "r1/plan", "r1/implement"]);
    assert!(diff.contains("implementation of r1"), "{diff}");
    // A rewind of the fetched run checks its files out (here into a linked worktree).
    let wt = tempfile::tempdir().unwrap();
    let wt_path = wt.path().join("wt");
    let rewound = js(
        b.path(),
        &[
            "rewind",
            "r1",
            "--to",
            "implement",
            "--run",
            "r1-again",
            "--worktree",
            wt_path.to_str().unwrap(),
        ],
    );
    assert_eq!(rewound["run"], "r1-again");
    assert_eq!(
        std::fs::read_to_string(wt_path.join("PLAN.md")).unwrap(),
        "plan of r1\n"
    );
    assert!(!wt_path.join("src.txt").exists());
    let rewound = js(
        b.path(),
        &[
            "fork",
            "r1",
            "--to",
            "implement",
            "--run",
            "r1-bob",
            "--no-checkout",
        ],
    );
    assert_eq!(rewound["run"], "r1-bob");

    // B continues its fork and pushes it; A fetches it.
    ok_in(
        b.path(),
        &[
            "checkpoint",
            "implement",
            "--run",
            "r1-bob",
            "--status",
            "completed",
        ],
    );
    let pushed = js(b.path(), &["push", "r1-bob"]);
    assert_eq!(result_of(&pushed, "r1-bob")["result"], "pushed");
    let fetched = js(a.path(), &["fetch"]);
    assert_eq!(result_of(&fetched, "r1-bob")["result"], "new");
    assert_eq!(fetched["up_to_date"], 1, "{fetched:#}");
    assert_eq!(run_refs(a.path(), "r1-bob"), run_refs(b.path(), "r1-bob"));
    let graph = ok_in(a.path(), &["log", "--graph", "r1"]);
    assert!(
        graph.contains("r1-bob") && graph.contains("forked"),
        "{graph}"
    );
    // The fork inherits `plan` from r1: its checkpoint resolves in A too.
    js(a.path(), &["show", "r1-bob/plan"]);
    for r in [&a, &b] {
        r.assert_fsck();
    }
}

#[test]
fn round_trip_through_a_bare_repository() {
    let bare = Bare::new();
    round_trip(&bare.url(), &[]);
}

/// The same round trip with every repository in reftable: the remote, and both clones
/// whose refs go through git's own ref transactions.
#[test]
fn round_trip_through_a_bare_repository_all_reftable() {
    let bare = Bare::new_with(&["--ref-format=reftable"]);
    round_trip(&bare.url(), &["--ref-format=reftable"]);
    assert_eq!(
        bare.git(&["rev-parse", "--show-ref-format"]).trim(),
        "reftable"
    );
}

/// Reftable clones of a remote in the files format (and so the other way round on push).
#[test]
fn round_trip_between_reftable_clones_through_a_files_remote() {
    let bare = Bare::new();
    round_trip(&bare.url(), &["--ref-format=reftable"]);
}

#[test]
fn round_trip_through_git_daemon() {
    let bare = Bare::new();
    let daemon = Daemon::start(bare.dir.path());
    round_trip(&daemon.url("remote.git"), &[]);
    drop(daemon);
}
