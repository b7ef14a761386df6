//! Many runs, generated fast with `git fast-import` in the real format: `list`, `gc`,
//! `fetch` of everything and `push --all` give exactly the right runs, checked with real git;
//! push and fetch of one run through `git daemon`; fetch progress never on a pipe.

use crate::common;

use common::{Daemon, Repo, git_in, git_stdin, json_in, ok_in, refs, run_in};
use std::collections::BTreeMap;
use std::path::Path;

/// Write `names` as one-checkpoint runs (commit with trailers, parent `base`, and a valid
/// checkpoint note) straight into `dir` with `git fast-import` (loose refs), as
/// scripts/benchlib/share.py `seed_remote_runs` does; `ts` is their checkpoint time.
fn synth(dir: &Path, names: &[String], ts: &str) {
    let base = git_in(dir, &["rev-parse", "HEAD"]).trim().to_string();
    let mut out = String::new();
    for (i, run) in names.iter().enumerate() {
        let msg = format!(
            "agent-rewind: {run} start\n\nAgent-Run: {run}\nAgent-Attempt: 1\nAgent-Event: start\nAgent-Schema: 1\n"
        );
        let note = serde_json::json!({
            "type": "checkpoint", "schema": "agent-rewind/checkpoint/v1", "run": run,
            "step": null, "attempt": 1, "seq": 0, "event": "start", "git_commit_sha": base,
            "ts": ts, "writer": "test@seed"
        })
        .to_string()
            + "\n";
        out.push_str(&format!(
            "commit refs/agent-runs/{run}/HEAD\nmark :{m}\ncommitter T <t@example.invalid> 1600000000 +0000\n\
             data {}\n{msg}from {base}\n\n\
             commit refs/notes/agent-runs/{run}\ncommitter T <t@example.invalid> 1600000000 +0000\n\
             data 5\nnotes\nN inline :{m}\ndata {}\n{note}\n",
            msg.len(),
            note.len(),
            m = i + 1,
        ));
    }
    git_stdin(dir, &["fast-import", "--quiet"], out.as_bytes());
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i:04}")).collect()
}

/// Run → HEAD, from `list --all --json`.
fn listed(dir: &Path) -> BTreeMap<String, String> {
    json_in(dir, &["list", "--all"])
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["run"].as_str().unwrap().to_string(),
                r["head"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Run → HEAD, from `git for-each-ref`.
fn heads_by_git(dir: &Path) -> BTreeMap<String, String> {
    refs(dir, "refs/agent-runs/")
        .into_iter()
        .filter_map(|(name, id)| {
            let run = name
                .strip_prefix("refs/agent-runs/")?
                .strip_suffix("/HEAD")?;
            Some((run.to_string(), id))
        })
        .collect()
}

#[test]
fn list_gc_fetch_and_push_all_give_exactly_the_right_runs() {
    let a = Repo::new();
    let old = names("old", 150);
    let new = names("new", 120);
    // Half the old runs packed, the rest (and the new ones) loose.
    synth(a.path(), &old[..75], "2020-01-01T00:00:00.000Z");
    a.git(&["pack-refs", "--all"]);
    synth(a.path(), &old[75..], "2020-01-02T00:00:00.000Z");
    synth(a.path(), &new, "2099-01-01T00:00:00.000Z");

    let by_git = heads_by_git(a.path());
    assert_eq!(by_git.len(), 270);
    assert_eq!(listed(a.path()), by_git, "first list (no cache)");
    assert_eq!(listed(a.path()), by_git, "second list (from the cache)");
    let json = json_in(a.path(), &["list"]);
    assert_eq!(json.as_array().unwrap().len(), 270);
    assert_eq!(json[0]["run"], "new0000", "newest first, then by name");

    // push --all to a bare remote: the remote holds exactly our refs (real git says so).
    let remote = tempfile::tempdir().unwrap();
    git_in(remote.path(), &["init", "-q", "--bare", "r.git"]);
    let url = remote.path().join("r.git");
    a.git(&["remote", "add", "origin", url.to_str().unwrap()]);
    ok_in(a.path(), &["push", "origin", "--all"]);
    for prefix in ["refs/agent-runs/", "refs/notes/agent-runs/"] {
        assert_eq!(refs(&url, prefix), refs(a.path(), prefix), "{prefix}");
    }

    // fetch of everything into another repository, which already has one of the runs
    // (fetched by name: loose refs, imported on its own).
    let b = Repo::new();
    b.git(&["remote", "add", "origin", url.to_str().unwrap()]);
    let first = by_git.keys().next().unwrap().clone();
    json_in(b.path(), &["fetch", "origin", &first]);
    let fetched = json_in(b.path(), &["fetch"]);
    let results = fetched["runs"].as_array().unwrap();
    // The run fetched before is up to date (counted, not listed); every other one is new.
    assert_eq!(results.len(), 269, "{fetched}");
    assert_eq!(fetched["up_to_date"], 1, "{fetched}");
    assert!(
        results
            .iter()
            .all(|r| r["result"] == "new" && r["run"] != first.as_str())
    );
    assert_eq!(listed(b.path()), by_git);
    for prefix in ["refs/agent-runs/", "refs/notes/agent-runs/"] {
        assert_eq!(refs(b.path(), prefix), refs(a.path(), prefix), "{prefix}");
    }
    // The runs new there were created together in packed-refs: no loose file but the one
    // fetched by name, and no lock left.
    let loose: Vec<String> = git_in(
        b.path(),
        &["for-each-ref", "--format=%(refname)", "refs/agent-runs/"],
    )
    .lines()
    .filter(|n| b.path().join(".git").join(n).exists())
    .map(str::to_string)
    .collect();
    assert!(
        loose
            .iter()
            .all(|n| n.starts_with(&format!("refs/agent-runs/{first}/"))),
        "{loose:?}"
    );
    assert!(!b.path().join(".git/packed-refs.lock").exists());
    b.assert_fsck();

    // gc of the old runs: exactly those are gone, with their notes refs and reflogs.
    let out = json_in(a.path(), &["gc", "--older-than", "30d"]);
    assert_eq!(out["deleted"].as_array().unwrap().len(), 150, "{out}");
    let left = heads_by_git(a.path());
    let expected: BTreeMap<String, String> = by_git
        .iter()
        .filter(|(r, _)| r.starts_with("new"))
        .map(|(r, h)| (r.clone(), h.clone()))
        .collect();
    assert_eq!(left, expected);
    assert_eq!(listed(a.path()), expected);
    let notes: Vec<String> = refs(a.path(), "refs/notes/agent-runs/")
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(notes.len(), 120);
    assert!(notes.iter().all(|n| n.contains("/new")), "{notes:?}");
    let logs = a.path().join(".git/logs/refs/agent-runs");
    assert!(
        !logs.join("old0000").exists() && !logs.join("old0100").exists(),
        "reflogs of deleted runs left behind"
    );
    assert!(!a.path().join(".git/packed-refs.lock").exists());
    // A tombstone per deleted run, created together in packed-refs: no loose file and no
    // reflog each (a lock, a file and a reflog per ref took 7 s for 9,000).
    let tombstones = refs(a.path(), "refs/agent-runs-tombstones/");
    assert_eq!(tombstones.len(), 150);
    assert!(
        tombstones
            .iter()
            .all(|(n, _)| !a.path().join(".git").join(n).exists()),
        "loose tombstones"
    );
    assert!(
        !a.path()
            .join(".git/logs/refs/agent-runs-tombstones")
            .exists(),
        "a reflog per tombstone"
    );
    a.assert_fsck();
    // gc again: nothing left to delete.
    let again = json_in(a.path(), &["gc", "--older-than", "30d"]);
    assert_eq!(again["deleted"].as_array().unwrap().len(), 0);

    // The remote still holds all 270; a fetch brings nothing deleted back.
    json_in(a.path(), &["fetch"]);
    assert_eq!(heads_by_git(a.path()), expected);
}

/// `n` runs named `<prefix>…` pushed from one repository to a new bare remote, and another
/// repository with that remote as `origin` (nothing fetched yet). The remote's folder lives
/// as long as the returned guard.
fn pushed_elsewhere(prefix: &str, n: usize) -> (tempfile::TempDir, Repo) {
    let a = Repo::new();
    synth(a.path(), &names(prefix, n), "2099-01-01T00:00:00.000Z");
    let remote = tempfile::tempdir().unwrap();
    git_in(remote.path(), &["init", "-q", "--bare", "r.git"]);
    let url = remote.path().join("r.git");
    a.git(&["remote", "add", "origin", url.to_str().unwrap()]);
    ok_in(a.path(), &["push", "origin", "--all"]);
    let b = Repo::new();
    b.git(&["remote", "add", "origin", url.to_str().unwrap()]);
    (remote, b)
}

#[test]
fn fetch_progress_never_goes_to_a_pipe() {
    let (_remote, b) = pushed_elsewhere("p", 200);
    let out = run_in(b.path(), &["fetch"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains('\r') && !err.contains("Importing runs") && !err.contains("objects"),
        "progress on a pipe: {err:?}"
    );
    assert_eq!(heads_by_git(b.path()).len(), 200);
}

#[test]
fn fetch_progress_shows_on_a_terminal() {
    // `script` runs the fetch under a pseudo-terminal (util-linux; where it is missing there
    // is no terminal to test with).
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("no `script` here: the terminal case is not exercised");
        return;
    }
    let (_remote, b) = pushed_elsewhere("t", 20);
    let bin = common::bin();
    // The tool's deterministic environment, around `script`.
    let env = common::tool_cmd(b.path());
    let mut script = std::process::Command::new("script");
    script.current_dir(b.path());
    for (k, v) in env.get_envs() {
        match v {
            Some(v) => script.env(k, v),
            None => script.env_remove(k),
        };
    }
    let out = script
        .args(["-qec", &format!("'{}' fetch", bin.display()), "/dev/null"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    // git's own progress, passed through (on a terminal git reports it as it goes).
    assert!(
        text.contains("objects"),
        "no progress on a terminal: {text:?}"
    );
    assert!(text.contains("20 new"), "{text:?}");
    assert_eq!(heads_by_git(b.path()).len(), 20);
}

#[test]
fn push_and_fetch_one_run_through_git_daemon() {
    let base = tempfile::tempdir().unwrap();
    git_in(base.path(), &["init", "-q", "--bare", "r.git"]);
    let daemon = Daemon::start(base.path());
    let url = daemon.url("r.git");

    let a = Repo::new();
    synth(a.path(), &names("many", 100), "2099-01-01T00:00:00.000Z");
    a.git(&["remote", "add", "origin", &url]);
    ok_in(a.path(), &["push", "origin", "--all"]);
    a.ok(&["start", "--run", "d1"]);
    a.write("f.txt", "one\n");
    a.ok(&["checkpoint", "edit"]);
    let pushed = json_in(a.path(), &["push", "origin", "d1"]);
    assert_eq!(pushed["runs"][0]["result"], "pushed", "{pushed}");
    let head = a.rev("refs/agent-runs/d1/HEAD");
    let remote_dir = base.path().join("r.git");
    assert_eq!(
        git_in(&remote_dir, &["rev-parse", "refs/agent-runs/d1/HEAD"]).trim(),
        head
    );
    assert_eq!(heads_by_git(&remote_dir).len(), 101);

    let b = Repo::new();
    b.git(&["remote", "add", "origin", &url]);
    let fetched = json_in(b.path(), &["fetch", "origin", "d1"]);
    assert_eq!(fetched["runs"][0]["result"], "new", "{fetched}");
    assert_eq!(
        heads_by_git(b.path()),
        BTreeMap::from([("d1".to_string(), head)])
    );
    b.assert_fsck();
    drop(daemon);
}

/// The first `list` after many runs appear (no summary cache: every summary is read from
/// the notes, spread over threads) prints exactly what a `list` from the cache prints: the
/// JSON, the table and the warnings, for real runs (label, steps, an archived one) among
/// hundreds of synthesized ones, lineage, and a run whose note is not JSON (a warning, left
/// out); and so does a `list` whose cache cannot be written.
#[test]
fn a_cold_list_prints_the_same_bytes_as_a_warm_one() {
    let repo = Repo::new();
    let dir = repo.path();
    repo.ok(&["start", "--run", "real", "--label", "tab\there \"q\""]);
    repo.ok(&["step", "begin", "plan", "--run", "real"]);
    repo.ok(&["start", "--run", "gone", "--label", "archived"]);
    repo.ok(&["step", "begin", "plan", "--run", "gone"]);
    // Archives `gone`; `again` has lineage (rewound_from).
    repo.ok(&[
        "rewind",
        "gone",
        "--to",
        "plan",
        "--run",
        "again",
        "--no-checkout",
    ]);
    synth(dir, &names("s", 600), "2026-01-01T00:00:00.000Z");
    synth(dir, &names("bad", 1), "2026-01-01T00:00:00.000Z");
    let head = git_in(dir, &["rev-parse", "refs/agent-runs/bad0000/HEAD"]);
    git_in(
        dir,
        &[
            "notes",
            "--ref=refs/notes/agent-runs/bad0000",
            "add",
            "-f",
            "-m",
            "not json",
            head.trim(),
        ],
    );
    let cache = dir.join(".git/agent-rewind/cache/runs.lines");
    let outputs = |cold: bool| -> Vec<(Vec<u8>, Vec<u8>)> {
        [
            &["list", "--json"][..],
            &["list", "--all", "--json"],
            &["list"],
            &["list", "--all"],
        ]
        .iter()
        .map(|args| {
            if cold {
                let _ = std::fs::remove_file(&cache);
            }
            let out = run_in(dir, args);
            assert!(out.status.success(), "{args:?}: {out:?}");
            (out.stdout, out.stderr)
        })
        .collect()
    };
    let cold = outputs(true);
    let cold_cache = std::fs::read(&cache).unwrap();
    let warm = outputs(false);
    assert_eq!(std::fs::read(&cache).unwrap(), cold_cache);
    for (c, w) in cold.iter().zip(&warm) {
        assert_eq!(String::from_utf8_lossy(&c.0), String::from_utf8_lossy(&w.0));
        assert_eq!(String::from_utf8_lossy(&c.1), String::from_utf8_lossy(&w.1));
    }
    // A cache that cannot be written (its folder is a file): the summaries are kept in
    // memory instead, and the output is the same.
    let cache_dir = cache.parent().unwrap();
    std::fs::remove_dir_all(cache_dir).unwrap();
    std::fs::write(cache_dir, "not a folder").unwrap();
    let unwritable = outputs(false);
    for (c, u) in cold.iter().zip(&unwritable) {
        assert_eq!(String::from_utf8_lossy(&c.0), String::from_utf8_lossy(&u.0));
        assert_eq!(String::from_utf8_lossy(&c.1), String::from_utf8_lossy(&u.1));
    }
    std::fs::remove_file(cache_dir).unwrap();
    let all: serde_json::Value = serde_json::from_slice(&cold[1].0).unwrap();
    assert_eq!(all.as_array().unwrap().len(), 603, "600, real, gone, again");
    assert!(String::from_utf8_lossy(&cold[0].1).contains("bad0000"));
    let shown: serde_json::Value = serde_json::from_slice(&cold[0].0).unwrap();
    assert_eq!(shown.as_array().unwrap().len(), 602, "gone is archived");
}
