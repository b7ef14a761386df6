//! Malformed meta, unknown enum values and bad artifacts are refused before anything is
//! written; a credential in an artifact URI is not echoed back.

use super::{assert_error, refused, repo_with_run, state};

#[test]
fn malformed_meta_and_unknown_enum_values_are_usage_errors() {
    let repo = repo_with_run();
    let cases: &[&[&str]] = &[
        &["checkpoint", "plan", "--meta", "novalue"],
        &["checkpoint", "plan", "--meta", "=value"],
        &["checkpoint", "plan", "--meta", "two words=x"],
        &["checkpoint", "plan", "--meta", "ok=1", "--meta", "bad"],
        &["start", "--run", "r2", "--meta", "novalue"],
        &["step", "begin", "plan", "--meta", "novalue"],
        &["checkpoint", "plan", "--kind", "robot"],
        &["checkpoint", "plan", "--kind", "Agent"],
        &["checkpoint", "plan", "--status", "done"],
        &["checkpoint", "plan", "--status", ""],
        &["checkpoint", "plan", "--event", "bogus"],
        // `start` and `root` are recorded by start/rewind/fork only.
        &["checkpoint", "plan", "--event", "start"],
        &["checkpoint", "plan", "--event", "root"],
        &["step", "begin", "plan", "--kind", "robot"],
        &["step", "end", "plan", "--status", "done"],
        // `step end` needs an outcome.
        &["step", "end", "plan"],
        &["step", "end", "plan", "--status", "running"],
        // Validation happens before a new run would be started implicitly.
        &[
            "checkpoint",
            "plan",
            "--run",
            "brand-new",
            "--kind",
            "robot",
        ],
        &["checkpoint", "plan", "--run", "brand-new", "--meta", "x"],
        &[
            "checkpoint",
            "plan",
            "--run",
            "brand-new",
            "--status",
            "nope",
        ],
    ];
    for args in cases {
        let line = refused(&repo, args, 2);
        assert!(!line.contains('\n'));
    }
    let line = refused(&repo, &["checkpoint", "plan", "--meta", "novalue"], 2);
    assert!(line.contains("novalue"), "{line}");
    let line = refused(&repo, &["checkpoint", "plan", "--kind", "robot"], 2);
    assert!(line.contains("robot"), "{line}");
    let line = refused(&repo, &["checkpoint", "plan", "--status", "done"], 2);
    assert!(line.contains("done"), "{line}");
}

#[test]
fn bad_artifacts_are_refused_before_anything_is_written() {
    let repo = repo_with_run();
    let cases: &[(&str, &str)] = &[
        ("missing.txt", "missing.txt"),
        ("https://user:hunter2@example.com/log.txt", "credential"), // gitleaks:allow
    ];
    for (i, (artifact, needle)) in cases.iter().enumerate() {
        // New content, so a snapshot taken before validating would have to write objects.
        repo.write(&format!("fresh-{i}.txt"), &format!("fresh content {i}\n"));
        let before = state(&repo);
        let out = repo.run(&["checkpoint", "plan", "--run", "r1", "--artifact", artifact]);
        let line = assert_error(&out, 2, &format!("--artifact {artifact}"));
        assert!(line.contains(needle), "--artifact {artifact}: {line}");
        let after = state(&repo);
        assert_eq!(after.refs, before.refs, "--artifact {artifact}: refs moved");
        assert_eq!(after.active_run, before.active_run);
        let new_files: Vec<&String> = after
            .files
            .iter()
            .filter(|f| !before.files.contains(f))
            .collect();
        assert!(
            new_files.is_empty(),
            "--artifact {artifact}: a refused checkpoint wrote {new_files:?}"
        );
    }
}

/// docs/FORMAT.md "Notes": secret-looking values are never written; an error message that repeats a
/// password would put it in terminal scrollback and CI logs all the same.
#[test]
fn a_credential_in_an_artifact_uri_is_not_echoed_back() {
    let repo = repo_with_run();
    let before = state(&repo);
    let out = repo.run(&[
        "checkpoint",
        "plan",
        "--run",
        "r1",
        "--artifact",
        "https://user:hunter2@example.com/log.txt", // gitleaks:allow
    ]);
    let line = assert_error(&out, 2, "--artifact with a credential");
    assert!(line.contains("credential"), "{line}");
    assert_eq!(state(&repo).refs, before.refs);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("hunter2"),
        "the password is echoed back: {line}"
    );
}

/// An empty session id would be stored as if it named a conversation, and a rewind would
/// then offer to resume nothing: it is refused, by every command that records one, and
/// also with `--run` naming a run not started yet.
#[test]
fn an_empty_session_id_is_refused() {
    let repo = repo_with_run();
    let cases: &[&[&str]] = &[
        &["step", "begin", "plan", "--session-id", ""],
        &["step", "begin", "plan", "--session-id", "   "],
        &[
            "step",
            "end",
            "plan",
            "--status",
            "completed",
            "--session-id",
            "",
        ],
        &["checkpoint", "plan", "--session-id", ""],
        &[
            "checkpoint",
            "plan",
            "--run",
            "brand-new",
            "--session-id",
            "",
        ],
        &["--json", "step", "begin", "plan", "--session-id", ""],
    ];
    for args in cases {
        let line = refused(&repo, args, 2);
        assert!(line.contains("--session-id"), "{args:?}: {line}");
        assert!(line.contains("empty"), "{args:?}: {line}");
    }
    // A real one is still recorded.
    let out = repo.json(&["step", "begin", "plan", "--session-id", "s-1"]);
    assert_eq!(out["sdk_session_id"], "s-1", "{out:#}");
}
