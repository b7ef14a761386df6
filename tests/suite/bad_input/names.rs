//! Invalid run and step names, unknown runs and checkpoints, malformed addresses.

use super::{refused, repo_with_run};

const BAD_NAMES: &[&str] = &[
    "..",
    "a..b",
    "a/b",
    "x.lock",
    "x.",
    ".hidden",
    "_x",
    "a b",
    "a\u{7}b",
    "a\nb",
    "tab\there",
    "naïve",
    "",
];

fn long_name() -> String {
    "a".repeat(200)
}

#[test]
fn invalid_run_names_are_refused_by_start() {
    let repo = repo_with_run();
    let long = long_name();
    let mut names: Vec<&str> = BAD_NAMES.to_vec();
    names.push(&long);
    for name in names {
        let line = refused(&repo, &["start", "--run", name], 2);
        assert!(
            line.contains("run id"),
            "start --run {name:?}: the error should say what is wrong: {line}"
        );
        // The same names are refused wherever a run is named.
        refused(&repo, &["checkpoint", "plan", "--run", name], 2);
        refused(&repo, &["step", "begin", "plan", "--run", name], 2);
        refused(
            &repo,
            &[
                "step",
                "end",
                "plan",
                "--run",
                name,
                "--status",
                "completed",
            ],
            2,
        );
        if !name.is_empty() && !name.contains('/') && !name.contains('@') {
            refused(&repo, &["list", name], 2);
            refused(&repo, &["log", name], 2);
        }
    }
    // A 200-character name is cut in the message, which stays one line.
    let line = refused(&repo, &["start", "--run", &long], 2);
    assert!(line.len() < 300, "{line}");
    // A control character is shown escaped, never raw.
    let line = refused(&repo, &["start", "--run", "a\u{7}b"], 2);
    assert!(!line.contains('\u{7}'), "{line:?}");
}

#[test]
fn invalid_step_names_are_refused() {
    let repo = repo_with_run();
    let long = long_name();
    let mut names: Vec<&str> = BAD_NAMES.to_vec();
    names.push(&long);
    names.push("HEAD");
    for name in names {
        let line = refused(&repo, &["checkpoint", name, "--run", "r1"], 2);
        assert!(line.contains("step"), "checkpoint {name:?}: {line}");
        refused(&repo, &["checkpoint", name], 2);
        refused(&repo, &["step", "begin", name], 2);
        refused(&repo, &["step", "end", name, "--status", "completed"], 2);
        // Also when the run does not exist yet: it is not started half-way.
        refused(&repo, &["checkpoint", name, "--run", "brand-new"], 2);
    }
    let line = refused(&repo, &["checkpoint", "HEAD", "--run", "r1"], 2);
    assert!(line.contains("HEAD"), "{line}");
}

#[test]
fn unknown_runs_and_checkpoints_are_not_found() {
    let repo = repo_with_run();
    let user_head = repo.rev("HEAD");
    let cases: Vec<Vec<String>> = vec![
        vec!["show".into(), "nope".into()],
        vec!["show".into(), "nope/plan".into()],
        vec!["show".into(), "nope@0".into()],
        vec!["show".into(), "r1/nostep".into()],
        vec!["show".into(), "r1@99".into()],
        vec!["show".into(), "deadbeef".into()],
        vec!["show".into(), "0".repeat(40)],
        // A commit that exists but is not a checkpoint.
        vec!["show".into(), user_head.clone()],
        vec!["show".into(), user_head[..10].to_string()],
        vec!["list".into(), "nope".into()],
        vec!["log".into(), "nope".into()],
        vec!["log".into(), "nope".into(), "--graph".into()],
        vec!["diff".into(), "nope".into()],
        vec!["diff".into(), "r1".into(), "nope".into()],
        vec!["diff".into(), "nope".into(), "r1".into()],
        vec!["diff".into(), "r1@1".into(), "r1@42".into()],
        vec!["diff".into(), "r1/nostep".into()],
    ];
    for args in cases {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let line = refused(&repo, &a, 1);
        let mut json = vec!["--json"];
        json.extend_from_slice(&a);
        refused(&repo, &json, 1);
        assert!(!line.to_lowercase().contains("panick"), "{args:?}: {line}");
    }
    // The message names what was not found.
    let line = refused(&repo, &["show", "nope"], 1);
    assert!(line.contains("nope"), "{line}");
    let line = refused(&repo, &["show", "r1@99"], 1);
    assert!(line.contains("99"), "{line}");
    let line = refused(&repo, &["show", "r1/nostep"], 1);
    assert!(line.contains("nostep"), "{line}");
}

#[test]
fn malformed_addresses_are_usage_errors() {
    let repo = repo_with_run();
    // (`r1@-1` and `@3` are addresses: from the end, and in the active run.)
    for addr in [
        "r1@x", "r1@-0", "r1@--1", "r1/head", "a/b/c", "r1@", "@-x", "../r1",
    ] {
        refused(&repo, &["show", addr], 2);
        refused(&repo, &["diff", addr], 2);
    }
}

/// Names git gives a meaning to (`HEAD`, `FETCH_HEAD`…) are no run ids,
/// so `show HEAD` can never mean a run; and a `step end` refused for a run that does not
/// exist leaves nothing behind, not even a lock file.
#[test]
fn ref_like_run_names_are_refused_and_a_refused_step_end_leaves_no_lock() {
    let repo = repo_with_run();
    for name in [
        "HEAD",
        "head",
        "FETCH_HEAD",
        "ORIG_HEAD",
        "MERGE_HEAD",
        "CHERRY_PICK_HEAD",
        "REBASE_HEAD",
        "AUTO_MERGE",
    ] {
        let line = refused(&repo, &["start", "--run", name], 2);
        assert!(line.contains("run id") && line.contains(name), "{line}");
        refused(&repo, &["checkpoint", "plan", "--run", name], 2);
    }
    for extra in [&["--attempt", "1"][..], &["--require-commit"][..]] {
        let mut args = vec![
            "step",
            "end",
            "plan",
            "--run",
            "nope",
            "--status",
            "completed",
        ];
        args.extend_from_slice(extra);
        refused(&repo, &args, 1);
    }
}
