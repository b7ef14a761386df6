//! Addressing: run ids by unique prefix, `<run>@-N` and `@-N`, the active
//! run as the default of `show`/`log`/`diff`/`rewind`, and "did you mean" for unknown runs
//! and steps.

use crate::common;
use crate::common::stderr;

use common::Repo;

/// Two runs whose ids share a prefix, each with plan → implement → test.
fn setup() -> Repo {
    let repo = Repo::new();
    for run in ["alpha-1", "alpha-2"] {
        repo.ok(&["start", "--run", run]);
        for (i, step) in ["plan", "implement", "test"].iter().enumerate() {
            repo.ok(&["step", "begin", step, "--kind", "deterministic"]);
            repo.write("work.txt", &format!("{run} {i}\n"));
            repo.ok(&["step", "end", step, "--status", "completed"]);
        }
    }
    repo.ok(&["start", "--run", "beta"]);
    repo.ok(&["checkpoint", "plan", "-m", "beta plan"]);
    repo
}

#[test]
fn run_ids_abbreviate_to_a_unique_prefix() {
    let repo = setup();
    let full = repo.json(&["show", "alpha-2"]);
    let abbrev = repo.json(&["show", "alpha-2"]);
    assert_eq!(full["run"], "alpha-2");
    assert_eq!(abbrev["run"], "alpha-2");
    assert_eq!(full["checkpoint"], abbrev["checkpoint"]);
    // A prefix of one run only.
    assert_eq!(
        repo.json(&["show", "b/plan"])["checkpoint"],
        repo.json(&["show", "beta/plan"])["checkpoint"]
    );
    assert_eq!(repo.json(&["list", "b"]).as_array().unwrap().len(), 2);
    assert_eq!(repo.json(&["log", "be"]), repo.json(&["log", "beta"]));
    // Ambiguous: an error listing the candidates, nothing else.
    let out = repo.run(&["show", "alpha"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("ambiguous") && err.contains("alpha-1") && err.contains("alpha-2"),
        "{err}"
    );
    let before = repo.git(&["for-each-ref"]);
    let out = repo.run(&["rewind", "alpha", "--to", "plan"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(repo.git(&["for-each-ref"]), before, "nothing written");
}

#[test]
fn list_and_status_give_the_shortest_unique_prefix() {
    let repo = setup();
    let runs = repo.json(&["list"]);
    let prefix = |run: &str| {
        runs.as_array()
            .unwrap()
            .iter()
            .find(|r| r["run"] == run)
            .unwrap()["unique_prefix"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(prefix("alpha-1"), 7);
    assert_eq!(prefix("alpha-2"), 7);
    assert_eq!(prefix("beta"), 1);
    let status = repo.json(&["status"]);
    assert_eq!(status["summary"]["unique_prefix"], 1);
    // And every shown prefix resolves to its run.
    assert_eq!(
        repo.json(&["show", "b"])["run"],
        "beta",
        "the prefix shown names the run"
    );
}

#[test]
fn positions_from_the_end_of_the_chain() {
    let repo = setup();
    let chain = repo.json(&["list", "alpha-1"]);
    let chain = chain.as_array().unwrap();
    assert_eq!(chain.len(), 7);
    let tip = chain[6]["checkpoint"].clone();
    assert_eq!(repo.json(&["show", "alpha-1@-1"])["checkpoint"], tip);
    assert_eq!(
        repo.json(&["show", "alpha-1@-2"])["checkpoint"],
        chain[5]["checkpoint"]
    );
    assert_eq!(
        repo.json(&["show", "alpha-1@-7"])["checkpoint"],
        chain[0]["checkpoint"]
    );
    let out = repo.run(&["show", "alpha-1@-8"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("has no checkpoint @-8"),
        "{}",
        stderr(&out)
    );
    let out = repo.run(&["show", "alpha-1@-0"]);
    assert_eq!(out.status.code(), Some(2));

    // `@-N` without a run is the active run's (beta: start + plan).
    assert_eq!(
        repo.json(&["show", "@-1"])["checkpoint"],
        repo.json(&["show", "beta"])["checkpoint"]
    );
    assert_eq!(repo.json(&["show", "@-2"])["seq"], 0);
    assert_eq!(repo.json(&["show", "@1"])["step"], "plan");
}

#[test]
fn commands_default_to_the_active_run() {
    let repo = setup();
    repo.ok(&["step", "begin", "implement", "--kind", "agent"]);
    repo.write("beta.txt", "beta\n");
    repo.ok(&["step", "end", "implement", "--status", "completed"]);
    // show: the active run's newest checkpoint.
    let shown = repo.json(&["show"]);
    assert_eq!(shown["run"], "beta");
    assert_eq!(shown["step"], "implement");
    // log: the active run's lineage.
    let log = repo.json(&["log"]);
    assert_eq!(log[0]["run"], "beta");
    // diff: the active run's newest against its predecessor.
    let d = repo.json(&["diff"]);
    assert_eq!(d["to"], shown["checkpoint"]);
    assert!(
        d["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["path"] == "beta.txt"),
        "{d}"
    );
    // rewind --to <step>: in the active run.
    let out = repo.json(&["rewind", "--to", "implement", "--run", "beta-2"]);
    assert_eq!(out["source_run"], "beta");
    assert_eq!(out["from_step"], "implement");
    assert!(!repo.path().join("beta.txt").exists());
    // rewind --to @-2 (a position in the source run).
    let out = repo.json(&[
        "rewind",
        "beta",
        "--to",
        "@-2",
        "--no-checkout",
        "--run",
        "beta-3",
    ]);
    assert_eq!(
        out["from_checkpoint"],
        repo.json(&["show", "beta@-2"])["checkpoint"]
    );
    repo.assert_fsck();

    // Without an active run: a clear usage error.
    let bare = Repo::new();
    for args in [
        &["show"][..],
        &["log"],
        &["diff"],
        &["rewind", "--to", "plan"],
    ] {
        let out = bare.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("no active run"), "{}", stderr(&out));
    }
}

#[test]
fn unknown_runs_and_steps_say_did_you_mean() {
    let repo = setup();
    let out = repo.run(&["show", "betta"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("did you mean beta?"), "{err}");

    let out = repo.run(&["show", "alpha-1/implemnt"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("did you mean implement?"), "{err}");
    assert!(
        err.contains("the steps of run alpha-1: plan, implement, test"),
        "{err}"
    );

    let out = repo.run(&["rewind", "alpha-1", "--to", "tset"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("did you mean test?"), "{err}");
    assert!(err.contains("plan, implement, test"), "{err}");

    let out = repo.run(&["list", "gamma"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("unknown run gamma"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn run_slash_head_names_the_runs_tip_like_its_ref() {
    let repo = setup();
    let tip = repo.rev("refs/agent-runs/alpha-1/HEAD");
    assert_eq!(
        repo.json(&["show", "alpha-1/HEAD"])["checkpoint"],
        tip.as_str()
    );
    assert_eq!(repo.json(&["show", "alpha-1"])["checkpoint"], tip.as_str());
    // A step is still never called HEAD.
    let out = repo.run(&["checkpoint", "HEAD", "--run", "beta"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// Every command resolves a run id the same way. `checkpoint --run` and
/// `step begin --run` with a unique prefix append to that run (no new run named after the
/// prefix); `export`, `view`, `push` and `delete` take a unique prefix; an ambiguous prefix
/// is refused with nothing written; a name that is no prefix of a run starts a new one.
#[test]
fn every_command_takes_a_unique_run_prefix_and_only_a_new_name_starts_a_run() {
    let repo = setup();
    let runs = |r: &Repo| r.json(&["list"]).as_array().unwrap().len();
    assert_eq!(runs(&repo), 3);
    repo.write("b.txt", "more\n");
    let out = repo.json(&["checkpoint", "review", "--run", "be", "-m", "by prefix"]);
    assert_eq!(out["run"], "beta", "{out:#}");
    assert_eq!(runs(&repo), 3, "no run named after the prefix");
    assert!(
        repo.git(&["for-each-ref", "refs/agent-runs/be/"])
            .is_empty()
    );
    let out = repo.json(&["step", "begin", "fix", "--run", "be"]);
    assert_eq!(out["run"], "beta");
    // Ambiguous: refused, nothing written.
    let before = repo.git(&["for-each-ref"]);
    let out = repo.run(&["checkpoint", "plan", "--run", "alpha"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("ambiguous"), "{}", stderr(&out));
    assert_eq!(repo.git(&["for-each-ref"]), before, "nothing written");
    // A name that is no prefix of a run starts one.
    let out = repo.ok(&["checkpoint", "plan", "--run", "gamma"]);
    assert!(out.contains("started run gamma"), "{out}");
    assert_eq!(runs(&repo), 4);

    // export, view, push and delete take the prefix too.
    let bundle = repo.path().join("b.bundle");
    let out = repo.json(&["export", "be", "-o", bundle.to_str().unwrap()]);
    assert_eq!(out["runs"], serde_json::json!(["beta"]), "{out:#}");
    let page = repo.path().join("page.html");
    repo.ok(&["view", "be", "-o", page.to_str().unwrap()]);
    assert!(std::fs::read_to_string(&page).unwrap().contains("beta"));
    let bare = tempfile::tempdir().unwrap();
    common::git_in(bare.path(), &["init", "-q", "--bare", "remote.git"]);
    let url = format!("file://{}", bare.path().join("remote.git").display());
    repo.git(&["remote", "add", "origin", &url]);
    let out = repo.json(&["push", "origin", "be"]);
    assert_eq!(out["runs"][0]["run"], "beta", "{out:#}");
    assert_eq!(out["runs"][0]["result"], "pushed", "{out:#}");
    let out = repo.run(&["delete", "alpha"]);
    assert_eq!(out.status.code(), Some(2), "ambiguous: {}", stderr(&out));
    let out = repo.json(&["delete", "be"]);
    assert_eq!(out["run"], "beta", "{out:#}");
    assert!(
        repo.git(&["for-each-ref", "refs/agent-runs/beta/"])
            .is_empty()
    );
    assert_eq!(runs(&repo), 3);
    repo.assert_fsck();
}
