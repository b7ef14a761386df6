//! Retention that travels (issue 33 item 5): `gc` leaves a tombstone for each run it
//! deletes; `push` carries it; a fetch of everything does not bring a covered run back,
//! `push --all` of a clone that knows the tombstone does not send it again, a copy that
//! moved on is new work, naming a run still fetches it, and tombstones expire.

use super::{Bare, clone, js, make_run, result_of};
use crate::common::{git_in, ok_in, refs};

#[test]
fn a_run_gc_deleted_in_one_clone_does_not_come_back_through_others() {
    let bare = Bare::new();
    let a = clone(&bare.url(), "alice");
    make_run(&a, "old1");
    make_run(&a, "keep1");
    ok_in(a.path(), &["push", "--all"]);
    let b = clone(&bare.url(), "bob");
    ok_in(b.path(), &["fetch"]);
    let tip = a.rev("refs/agent-runs/old1/HEAD");

    let gc = js(a.path(), &["gc", "--older-than", "0s", "--keep", "1"]);
    assert_eq!(gc["deleted"][0]["run"], "old1", "{gc:#}");
    assert_eq!(gc["tombstones_written"], 1, "{gc:#}");
    let tombstone = format!("refs/agent-runs-tombstones/old1/{tip}");
    let body = a.git(&["cat-file", "-p", &tombstone]);
    assert!(
        body.contains("\"type\":\"tombstone\"") && body.contains(&tip),
        "{body}"
    );
    let pushed = js(a.path(), &["push", "--all"]);
    assert_eq!(pushed["tombstones_pushed"], 1, "{pushed:#}");
    assert_eq!(
        bare.git(&["rev-parse", &tombstone]).trim(),
        a.rev(&tombstone)
    );
    // Deleted on the remote too (SHARING.md, "Keeping runs private").
    let mut del = vec![
        "push".to_string(),
        "-q".into(),
        "origin".into(),
        "--delete".into(),
    ];
    del.extend(
        refs(&bare.path(), "refs/agent-runs/old1/")
            .into_iter()
            .map(|(n, _)| n),
    );
    del.push("refs/notes/agent-runs/old1".into());
    git_in(
        a.path(),
        &del.iter().map(String::as_str).collect::<Vec<_>>(),
    );

    // Bob has not fetched since: his push sends old1 back to the remote ...
    ok_in(b.path(), &["push", "--all"]);
    assert_eq!(refs(&bare.path(), "refs/agent-runs/old1/").len(), 3);
    // ... but nobody imports it: a fresh clone fetches the tombstone with the runs.
    let c = clone(&bare.url(), "carol");
    let fetched = js(c.path(), &["fetch"]);
    assert_eq!(fetched["deleted_elsewhere"], 1, "{fetched:#}");
    assert_eq!(result_of(&fetched, "keep1")["result"], "new", "{fetched:#}");
    assert!(refs(c.path(), "refs/agent-runs/old1/").is_empty());
    assert_eq!(c.rev(&tombstone), a.rev(&tombstone));
    // Alice's own fetch does not bring it back either.
    let again = js(a.path(), &["fetch"]);
    assert!(
        refs(a.path(), "refs/agent-runs/old1/").is_empty(),
        "{again:#}"
    );

    // Once Bob fetched the tombstone, his push --all leaves old1 alone (his copy stays).
    ok_in(b.path(), &["fetch"]);
    git_in(
        a.path(),
        &del.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let pushed = js(b.path(), &["push", "--all"]);
    assert_eq!(pushed["deleted_elsewhere"], 1, "{pushed:#}");
    assert!(refs(&bare.path(), "refs/agent-runs/old1/").is_empty());
    assert_eq!(refs(b.path(), "refs/agent-runs/old1/").len(), 3);
    // A copy that moved on is new work: it travels again.
    ok_in(b.path(), &["checkpoint", "more", "--run", "old1"]);
    let pushed = js(b.path(), &["push", "--all"]);
    assert_eq!(result_of(&pushed, "old1")["result"], "pushed", "{pushed:#}");
    // Naming a covered run fetches it.
    let named = js(c.path(), &["fetch", "origin", "old1"]);
    assert_eq!(result_of(&named, "old1")["result"], "new", "{named:#}");
    for r in [&a, &b, &c] {
        r.assert_fsck();
    }
    crate::common::assert_fsck_in(&bare.path(), "the remote");
}

#[test]
fn tombstones_expire_after_their_lifetime() {
    let bare = Bare::new();
    let a = clone(&bare.url(), "alice");
    a.git(&["config", "agentRewind.tombstoneLifetime", "0s"]);
    make_run(&a, "old1");
    make_run(&a, "keep1");
    let gc = js(a.path(), &["gc", "--older-than", "0s", "--keep", "1"]);
    assert_eq!(gc["tombstones_written"], 1, "{gc:#}");
    // Expired at once: gc drops it, and nothing is carried or honoured.
    assert_eq!(gc["tombstones_expired"], 1, "{gc:#}");
    assert!(refs(a.path(), "refs/agent-runs-tombstones/").is_empty());
    a.git(&["config", "agentRewind.tombstoneLifetime", "nonsense"]);
    make_run(&a, "old2");
    make_run(&a, "keep2");
    let before = refs(a.path(), "refs/");
    let out = crate::common::run_in(a.path(), &["gc", "--older-than", "0s", "--keep", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", super::stderr(&out));
    assert_eq!(refs(a.path(), "refs/"), before, "nothing deleted");
}
