//! Every failure carries a hint.

use super::{assert_error, outside, repo_with_garbage_note, repo_with_run};
use crate::common::{self, run_in};
use std::process::Output;

/// docs/COMMANDS.md: "1 failure with a one-line cause on stderr plus a hint".
#[test]
fn failures_carry_a_hint() {
    let repo = repo_with_run();
    let o = outside();
    let holder = tempfile::tempdir().unwrap();
    let bare = holder.path().join("bare.git");
    common::git_in(
        holder.path(),
        &["init", "-q", "--bare", bare.to_str().unwrap()],
    );
    let (garbage, _) = repo_with_garbage_note();

    let mut outputs: Vec<(String, Output)> = vec![];
    for args in [
        vec!["show", "nope"],
        vec!["show", "r1/nostep"],
        vec!["show", "r1@99"],
        vec!["show", "deadbeef"],
        vec!["log", "nope"],
        vec!["diff", "nope"],
    ] {
        outputs.push((format!("{args:?}"), repo.run(&args)));
    }
    outputs.push((
        "bare checkpoint".into(),
        run_in(&bare, &["checkpoint", "plan"]),
    ));
    outputs.push((
        "outside start".into(),
        common::tool_cmd(&o.dir)
            .env("GIT_CEILING_DIRECTORIES", o.dir.parent().unwrap())
            .args(["start"])
            .output()
            .unwrap(),
    ));
    outputs.push(("show r-bad".into(), garbage.run(&["show", "r-bad"])));
    outputs.push((
        "checkpoint on r-bad".into(),
        garbage.run(&["checkpoint", "plan", "--run", "r-bad"]),
    ));
    let mut missing = vec![];
    for (what, out) in &outputs {
        assert_error(out, 1, what);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !stderr
            .lines()
            .any(|l| l.starts_with("hint: ") && l.len() > 6)
        {
            missing.push(format!("{what}: {}", stderr.trim()));
        }
    }
    assert!(
        missing.is_empty(),
        "failures without a hint:\n{}",
        missing.join("\n")
    );
}

/// A prefix of a run id with a typo in its middle gets a "did you mean" with the run.
#[test]
fn a_typo_inside_a_run_id_prefix_gets_a_did_you_mean() {
    let r = common::Repo::new();
    r.ok(&["checkpoint", "plan", "--run", "alpha-run"]);
    for typed in ["alpXa", "alpah-run"] {
        let out = r.run(&["show", typed]);
        assert_eq!(out.status.code(), Some(1), "{typed}");
        let err = common::stderr(&out);
        assert!(err.contains("did you mean alpha-run?"), "{typed}: {err}");
    }
}
