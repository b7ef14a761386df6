//! Retention that travels: `gc` leaves a tombstone for each run it deletes; `push` carries
//! it; a fetch of everything does not bring a covered run back, `push --all` of a clone that
//! knows the tombstone does not send it again, a copy that moved on is new work, naming a
//! run still fetches it, and tombstones expire. A tombstone counts only for the runs of the
//! remote that sent it, and only when that remote held the run; pushes never carry one taken
//! from a remote; with `agentRewind.requireSigned`, an unsigned one is refused.

use super::signing::{Keys, record};
use super::{Bare, clone, js, make_run, result_of, stderr};
use crate::common::{git_in, ok_in, refs, run_in};

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
    // The push deleted old1 on the remote too: it was there at the tombstoned tip.
    assert_eq!(pushed["remote_deleted"][0]["run"], "old1", "{pushed:#}");
    assert_eq!(
        pushed["remote_deleted"][0]["result"], "deleted",
        "{pushed:#}"
    );
    assert!(refs(&bare.path(), "refs/agent-runs/old1/").is_empty());

    // Bob has not fetched since: his push sends old1 back to the remote ...
    ok_in(b.path(), &["push", "--all"]);
    assert_eq!(refs(&bare.path(), "refs/agent-runs/old1/").len(), 3);
    // ... but nobody imports it: a fresh clone fetches the tombstone with the runs.
    let c = clone(&bare.url(), "carol");
    let fetched = js(c.path(), &["fetch"]);
    assert_eq!(fetched["deleted_elsewhere"], 1, "{fetched:#}");
    assert_eq!(result_of(&fetched, "keep1")["result"], "new", "{fetched:#}");
    assert!(refs(c.path(), "refs/agent-runs/old1/").is_empty());
    // Taken as origin's, never as carol's own (which her pushes would carry).
    let taken = format!("refs/agent-runs-tombstones-from/origin/old1/{tip}");
    assert_eq!(c.rev(&taken), a.rev(&tombstone));
    assert!(refs(c.path(), "refs/agent-runs-tombstones/").is_empty());
    // Alice's own fetch does not bring it back either.
    let again = js(a.path(), &["fetch"]);
    assert!(
        refs(a.path(), "refs/agent-runs/old1/").is_empty(),
        "{again:#}"
    );

    // Once Bob fetched the tombstone, his push --all leaves old1 alone (his copy stays).
    ok_in(b.path(), &["fetch"]);
    // Alice's next push deletes it there again (Bob's copy is at the tombstoned tip).
    ok_in(a.path(), &["push", "keep1"]);
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

#[test]
fn a_tombstone_from_another_remote_hides_nothing_and_never_travels() {
    let bare = Bare::new();
    let a = clone(&bare.url(), "alice");
    make_run(&a, "r1");
    ok_in(a.path(), &["push", "--all"]);
    let tip = a.rev("refs/agent-runs/r1/HEAD");
    // Mallory deletes her copy of r1 and puts only its tombstone on a remote of hers.
    let evil = Bare::new();
    let m = clone(&bare.url(), "mallory");
    ok_in(m.path(), &["fetch"]);
    let gc = js(m.path(), &["gc", "--older-than", "0s"]);
    assert_eq!(gc["tombstones_written"], 1, "{gc:#}");
    let tombstones = "refs/agent-runs-tombstones/*:refs/agent-runs-tombstones/*";
    git_in(m.path(), &["push", "-q", &evil.url(), tombstones]);
    assert!(refs(&evil.path(), "refs/agent-runs/").is_empty());

    let c = clone(&bare.url(), "carol");
    git_in(c.path(), &["remote", "add", "evil", &evil.url()]);
    let from_evil = js(c.path(), &["fetch", "evil"]);
    assert_eq!(from_evil["deleted_elsewhere"], 0, "{from_evil:#}");
    // evil never held r1: its tombstone is not taken, and hides r1 from no fetch.
    assert!(refs(c.path(), "refs/agent-runs-tombstones-from/").is_empty());
    assert!(refs(c.path(), "refs/agent-runs-tombstones/").is_empty());
    let fetched = js(c.path(), &["fetch", "origin"]);
    assert_eq!(result_of(&fetched, "r1")["result"], "new", "{fetched:#}");
    assert_eq!(fetched["deleted_elsewhere"], 0, "{fetched:#}");
    assert_eq!(c.rev("refs/agent-runs/r1/HEAD"), tip);
    // Nor from a push --all, to any remote; and no push carries it.
    let backup = Bare::new();
    let pushed = js(c.path(), &["push", "--remote", &backup.url(), "--all"]);
    assert_eq!(result_of(&pushed, "r1")["result"], "pushed", "{pushed:#}");
    assert_eq!(pushed["deleted_elsewhere"], 0, "{pushed:#}");
    assert_eq!(pushed["tombstones_pushed"], 0, "{pushed:#}");
    let to_evil = js(c.path(), &["push", "evil", "--all"]);
    assert_eq!(result_of(&to_evil, "r1")["result"], "pushed", "{to_evil:#}");
    let to_origin = js(c.path(), &["push", "origin", "--all"]);
    assert_eq!(to_origin["deleted_elsewhere"], 0, "{to_origin:#}");
    assert_eq!(to_origin["tombstones_pushed"], 0, "{to_origin:#}");
    for remote in [&bare, &backup] {
        assert!(refs(&remote.path(), "refs/agent-runs-tombstones/").is_empty());
        assert_eq!(
            git_in(&remote.path(), &["rev-parse", "refs/agent-runs/r1/HEAD"]).trim(),
            tip
        );
        crate::common::assert_fsck_in(&remote.path(), "a remote");
    }
    c.assert_fsck();
}

#[test]
fn with_require_signed_an_unsigned_tombstone_is_refused_and_a_signed_one_taken() {
    let k = Keys::new();
    let bare = Bare::new();
    let a = clone(&bare.url(), "alice");
    k.use_ssh(a.path(), "alice");
    for run in ["s1", "s2", "keep1"] {
        record(&k, a.path(), run);
    }
    k.ok(a.path(), &["push", "--all"]);
    // A clone that keeps copies of the runs and pushes them back after Alice's push deleted
    // them there: the remote then holds the runs its tombstones cover.
    let z = clone(&bare.url(), "zed");
    ok_in(z.path(), &["fetch"]);
    let tip = |run: &str| a.rev(&format!("refs/agent-runs/{run}/HEAD"));
    let (s1, s2) = (tip("s1"), tip("s2"));
    // s1's tombstone is left with signing off (a plain blob), s2's with it on.
    git_in(a.path(), &["config", "agentRewind.sign", "false"]);
    k.ok(a.path(), &["gc", "--keep", "2"]);
    git_in(a.path(), &["config", "agentRewind.sign", "true"]);
    k.ok(a.path(), &["gc", "--keep", "1"]);
    let signed = format!("refs/agent-runs-tombstones/s2/{s2}");
    assert_eq!(a.git(&["cat-file", "-t", &signed]).trim(), "commit");
    assert!(
        k.git_verifies(a.path(), &signed),
        "git verify-commit {signed}"
    );
    assert_eq!(
        a.git(&[
            "cat-file",
            "-t",
            &format!("refs/agent-runs-tombstones/s1/{s1}")
        ])
        .trim(),
        "blob"
    );
    let pushed = k.json(a.path(), &["push", "--all"]);
    assert_eq!(pushed["tombstones_pushed"], 2, "{pushed:#}");
    // Signed or not, a tombstone of this clone deletes its run on the remote.
    for (i, run) in ["s1", "s2"].iter().enumerate() {
        assert_eq!(pushed["remote_deleted"][i]["run"], *run, "{pushed:#}");
        assert_eq!(
            pushed["remote_deleted"][i]["result"], "deleted",
            "{pushed:#}"
        );
    }
    assert!(refs(&bare.path(), "refs/agent-runs/s1/").is_empty());
    ok_in(z.path(), &["push", "s1", "s2"]);

    let b = clone(&bare.url(), "bob");
    k.trust_signers(b.path());
    git_in(b.path(), &["config", "agentRewind.requireSigned", "true"]);
    let out = k.run(b.path(), &["--json", "fetch"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The unsigned tombstone is refused, so s1 comes; the signed one is taken, so s2 stays out.
    assert_eq!(result_of(&v, "s1")["result"], "new", "{v:#}");
    assert_eq!(v["deleted_elsewhere"], 1, "{v:#}");
    assert!(refs(b.path(), "refs/agent-runs/s2/").is_empty());
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "tombstone \"s1/{s1}\" from origin refused: unsigned"
        )),
        "{err}"
    );
    let taken = refs(b.path(), "refs/agent-runs-tombstones-from/origin/");
    assert_eq!(
        taken.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        [format!("refs/agent-runs-tombstones-from/origin/s2/{s2}")],
    );
    // Without requireSigned both are taken.
    let c = clone(&bare.url(), "carol");
    let v = js(c.path(), &["fetch"]);
    assert_eq!(v["deleted_elsewhere"], 2, "{v:#}");
    let out = run_in(c.path(), &["show", "s1"]);
    assert!(!out.status.success());
    for r in [&a, &b, &c] {
        r.assert_fsck();
    }
}
