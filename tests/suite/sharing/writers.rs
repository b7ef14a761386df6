//! Twenty writers, one remote: clones recording and pushing runs at the
//! same time, with fetches in between, against one bare remote over `file://` and over
//! smart HTTP (lighttpd + `git http-backend`). Every checkpoint and note arrives, nothing is
//! forced (the remote's `update` hook refuses and logs any non-fast-forward), retries stay
//! within their bounds. A fetch that reads the remote between the two halves of someone's
//! push (a run's `HEAD` already moved, its notes ref not yet) fetches that run again.
//! The same scenario at 10,000 checkpoints is `scripts/bench --only writers`.

use super::{Bare, clone, js, result_of, run_refs};
use crate::common::{Repo, assert_fsck_in, git_in, ok_in, refs, run_in};
use serde_json::Value;
use std::path::Path;

/// The most `git push` processes one run takes in one `push` (docs/SHARING.md).
const PUSH_ATTEMPTS: u64 = 9;
/// The most times one fetch fetches again runs caught mid-push (docs/SHARING.md).
const REFETCHES: u64 = 3;

/// The remote refuses every non-fast-forward update (config and an `update` hook, which
/// also logs each update it is asked for).
fn guard(bare: &Path) {
    git_in(bare, &["config", "receive.denyNonFastForwards", "true"]);
    git_in(bare, &["config", "http.receivepack", "true"]);
    let hook = bare.join("hooks/update");
    std::fs::write(
        &hook,
        "#!/bin/sh\nzero=0000000000000000000000000000000000000000\n\
         if [ \"$2\" != $zero ] && [ \"$3\" != $zero ] && ! git merge-base --is-ancestor \"$2\" \"$3\"; then\n\
         echo \"nonff $1\" >> \"$GIT_DIR/updates.log\"; exit 1\nfi\n\
         echo \"ok $1\" >> \"$GIT_DIR/updates.log\"\n",
    )
    .unwrap();
    executable(&hook);
}

fn executable(file: &Path) {
    agent_rewind_core::platform::mode::set_path_permission_bits(file, 0o755).unwrap();
}

/// The checkpoint commits of `run` (its first-parent chain), newest first.
fn chain(dir: &Path, run: &str) -> Vec<String> {
    git_in(
        dir,
        &[
            "rev-list",
            "--first-parent",
            &format!("refs/agent-runs/{run}/HEAD"),
            &format!("--grep=^Agent-Run: {run}$"),
        ],
    )
    .split_whitespace()
    .map(String::from)
    .collect()
}

/// The commits the notes ref of `run` annotates.
fn noted(dir: &Path, run: &str) -> std::collections::HashSet<String> {
    git_in(dir, &["notes", &format!("--ref=agent-runs/{run}"), "list"])
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1).map(String::from))
        .collect()
}

const WRITERS: usize = 20;
const CHECKPOINTS: usize = 3;

/// One writer: a run of its own, `CHECKPOINTS` checkpoints each pushed at once, a fetch of
/// every run after the second. Returns the most attempts any of its pushes took.
fn write_and_share(dir: &Path, run: &str) -> u64 {
    ok_in(dir, &["start", "--run", run]);
    let mut most = 0;
    for i in 1..=CHECKPOINTS {
        std::fs::write(dir.join(format!("{run}.txt")), format!("{run} {i}\n")).unwrap();
        ok_in(dir, &["checkpoint", &format!("s{i}"), "--run", run]);
        let pushed = js(dir, &["push", run]);
        assert_eq!(result_of(&pushed, run)["result"], "pushed", "{pushed:#}");
        let attempts = pushed["attempts"].as_u64().unwrap();
        assert!((1..=PUSH_ATTEMPTS).contains(&attempts), "{pushed:#}");
        most = most.max(attempts);
        if i == 2 {
            let fetched = js(dir, &["fetch"]);
            assert!(
                fetched["refetches"].as_u64().unwrap() <= REFETCHES,
                "{fetched:#}"
            );
            for r in fetched["runs"].as_array().unwrap() {
                // A run still caught mid-push after the refetches is left for the next
                // fetch (never half imported); anything else must be imported.
                let ok = ["new", "fast-forwarded", "up to date", "local is ahead"]
                    .contains(&r["result"].as_str().unwrap())
                    || r["detail"]
                        .as_str()
                        .is_some_and(|d| d.contains("in the middle of a push"));
                assert!(ok, "{run}: {fetched:#}");
            }
        }
    }
    most
}

fn twenty_writers(url: &str, bare: &Path) {
    guard(bare);
    let clones: Vec<Repo> = (0..WRITERS)
        .map(|w| clone(url, &format!("writer{w:02}")))
        .collect();
    let most = std::thread::scope(|s| {
        let handles: Vec<_> = clones
            .iter()
            .enumerate()
            .map(|(w, c)| s.spawn(move || write_and_share(c.path(), &format!("w{w:02}"))))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).max()
    });
    assert!(most.unwrap() <= PUSH_ATTEMPTS);
    // A fresh clone gets every run whole with one fetch.
    let fresh = clone(url, "reader");
    let fetched = js(fresh.path(), &["fetch"]);
    let new = fetched["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["result"] == "new")
        .count();
    assert_eq!(new, WRITERS, "{fetched:#}");
    for (w, c) in clones.iter().enumerate() {
        let run = format!("w{w:02}");
        let mine = chain(c.path(), &run);
        assert_eq!(mine.len(), CHECKPOINTS + 1, "{run}");
        for place in [bare, fresh.path()] {
            assert_eq!(chain(place, &run), mine, "{run} in {}", place.display());
            let notes = noted(place, &run);
            assert!(
                mine.iter().all(|c| notes.contains(c)),
                "{run}: a checkpoint without its note in {}",
                place.display()
            );
            assert_eq!(run_refs(place, &run), run_refs(c.path(), &run), "{run}");
        }
    }
    assert_fsck_in(bare, "the remote");
    assert_fsck_in(fresh.path(), "the fresh clone");
    let log = std::fs::read_to_string(bare.join("updates.log")).unwrap();
    assert!(
        !log.contains("nonff"),
        "a non-fast-forward update was asked for:\n{log}"
    );
    // Each push: the run's HEAD, its new step ref and its notes ref, each checked once.
    assert!(log.lines().count() >= WRITERS * CHECKPOINTS * 3, "{log}");
}

#[test]
fn twenty_writers_record_push_and_fetch_at_once_through_one_file_remote() {
    let bare = Bare::new();
    twenty_writers(&bare.url(), &bare.path());
}

#[test]
fn twenty_writers_record_push_and_fetch_at_once_through_one_smart_http_remote() {
    let bare = Bare::new();
    let server = super::http_server::HttpServer::start(bare.dir.path());
    twenty_writers(&server.url("remote.git"), &bare.path());
    drop(server);
}

/// Make `b`'s fetches run `git upload-pack`, then `git <finish>` in the bare remote: the rest
/// of a push that was half done when the fetch read the refs. The script lives in the
/// returned folder.
fn finish_push_after_read(b: &Repo, bare: &Bare, finish: &str) -> tempfile::TempDir {
    let bin = tempfile::tempdir().unwrap();
    let script = bin.path().join("upload-pack-then-finish-push");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ngit upload-pack \"$@\"; status=$?\n\
             git --git-dir='{}' {finish} 2>/dev/null\n\
             exit $status\n",
            bare.path().display()
        ),
    )
    .unwrap();
    executable(&script);
    b.git(&[
        "config",
        "remote.origin.uploadpack",
        script.to_str().unwrap(),
    ]);
    bin
}

/// The remote as a fetch sees it between the two halves of a push of `run`: its `HEAD`
/// already moved, its notes ref still one notes commit behind. Returns (notes before, notes
/// after).
fn half_pushed(bare: &Bare, run: &str) -> (String, String) {
    let notes = format!("refs/notes/agent-runs/{run}");
    let after = bare.git(&["rev-parse", &notes]).trim().to_string();
    let before = bare
        .git(&["rev-parse", &format!("{after}^")])
        .trim()
        .to_string();
    bare.git(&["update-ref", &notes, &before, &after]);
    (before, after)
}

#[test]
fn a_fetch_that_reads_the_remote_half_way_through_a_push_fetches_that_run_again() {
    let bare = Bare::new();
    let a = clone(&bare.url(), "alice");
    super::make_run(&a, "r1");
    ok_in(a.path(), &["push", "r1"]);
    let b = clone(&bare.url(), "bob");
    ok_in(b.path(), &["fetch"]);
    ok_in(a.path(), &["checkpoint", "test", "--run", "r1"]);
    ok_in(a.path(), &["push", "r1"]);

    // bob's fetch reads the refs while alice's push is half done; the push completes as
    // soon as that read is over (git's upload-pack, then the rest of the push).
    let (before, after) = half_pushed(&bare, "r1");
    let _script = finish_push_after_read(
        &b,
        &bare,
        &format!("update-ref refs/notes/agent-runs/r1 {after} {before}"),
    );
    let fetched = js(b.path(), &["fetch"]);
    assert_eq!(
        result_of(&fetched, "r1")["result"],
        "fast-forwarded",
        "{fetched:#}"
    );
    assert_eq!(fetched["refetches"], 1, "{fetched:#}");
    assert_eq!(fetched["warnings"], Value::Array(vec![]), "{fetched:#}");
    assert_eq!(run_refs(b.path(), "r1"), run_refs(&bare.path(), "r1"));
    b.assert_fsck();

    // A push that never completes: fetched again at most three times, then skipped (the
    // command succeeds, nothing of the run changes here) until a later fetch finds it whole.
    b.git(&["config", "--unset", "remote.origin.uploadpack"]);
    ok_in(a.path(), &["checkpoint", "more", "--run", "r1"]);
    ok_in(a.path(), &["push", "r1"]);
    let (_, after) = half_pushed(&bare, "r1");
    let mine = refs(b.path(), "refs/agent-runs/r1/");
    let out = run_in(b.path(), &["--json", "fetch"]);
    assert!(out.status.success(), "{}", super::stderr(&out));
    let fetched: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(fetched["refetches"], REFETCHES, "{fetched:#}");
    let r1 = result_of(&fetched, "r1");
    assert_eq!(r1["result"], "skipped", "{fetched:#}");
    assert!(
        r1["detail"]
            .as_str()
            .unwrap()
            .contains("in the middle of a push"),
        "{fetched:#}"
    );
    assert_eq!(refs(b.path(), "refs/agent-runs/r1/"), mine);
    let notes = bare.git(&["rev-parse", "refs/notes/agent-runs/r1"]);
    bare.git(&[
        "update-ref",
        "refs/notes/agent-runs/r1",
        &after,
        notes.trim(),
    ]);
    let fetched = js(b.path(), &["fetch"]);
    assert_eq!(
        result_of(&fetched, "r1")["result"],
        "fast-forwarded",
        "{fetched:#}"
    );
    assert_eq!(fetched["refetches"], 0, "{fetched:#}");
    assert_eq!(run_refs(b.path(), "r1"), run_refs(&bare.path(), "r1"));
}

#[test]
fn a_fetch_that_reads_a_run_s_first_push_half_way_fetches_it_again() {
    let bare = Bare::new();
    let a = clone(&bare.url(), "alice");
    let b = clone(&bare.url(), "bob");
    super::make_run(&a, "r2");
    ok_in(a.path(), &["push", "r2"]);
    // The run's refs are there, its notes ref not yet; it lands once bob's read is over.
    let notes = bare.git(&["rev-parse", "refs/notes/agent-runs/r2"]);
    let notes = notes.trim();
    bare.git(&["update-ref", "-d", "refs/notes/agent-runs/r2", notes]);
    let _script = finish_push_after_read(
        &b,
        &bare,
        &format!("update-ref refs/notes/agent-runs/r2 {notes} ''"),
    );
    let fetched = js(b.path(), &["fetch"]);
    assert_eq!(result_of(&fetched, "r2")["result"], "new", "{fetched:#}");
    assert_eq!(fetched["refetches"], 1, "{fetched:#}");
    assert_eq!(fetched["warnings"], Value::Array(vec![]), "{fetched:#}");
    assert_eq!(run_refs(b.path(), "r2"), run_refs(&bare.path(), "r2"));
    b.assert_fsck();
}

#[test]
fn a_fetch_that_reads_a_step_ref_already_moved_but_not_yet_head_fetches_the_run_again() {
    let bare = Bare::new();
    let a = clone(&bare.url(), "alice");
    super::make_run(&a, "r3");
    ok_in(a.path(), &["push", "r3"]);
    let b = clone(&bare.url(), "bob");
    ok_in(b.path(), &["fetch"]);
    ok_in(a.path(), &["checkpoint", "implement", "--run", "r3"]);
    ok_in(a.path(), &["push", "r3"]);
    // HEAD read before the push moved it, the step ref after: the step is ahead of HEAD.
    let head = "refs/agent-runs/r3/HEAD";
    let new = bare.git(&["rev-parse", head]);
    let new = new.trim();
    let old = bare.git(&["rev-parse", &format!("{new}^")]);
    let old = old.trim();
    bare.git(&["update-ref", head, old, new]);
    let _script = finish_push_after_read(&b, &bare, &format!("update-ref {head} {new} {old}"));
    let fetched = js(b.path(), &["fetch"]);
    assert_eq!(
        result_of(&fetched, "r3")["result"],
        "fast-forwarded",
        "{fetched:#}"
    );
    assert_eq!(fetched["refetches"], 1, "{fetched:#}");
    assert_eq!(run_refs(b.path(), "r3"), run_refs(&bare.path(), "r3"));
    b.assert_fsck();
}
