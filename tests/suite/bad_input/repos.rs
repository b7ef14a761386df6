//! Unusable places: a bare repository, a directory outside any repository, a private folder
//! that is a file (an I/O error names its path).

use super::{assert_error, files_under, outside, state_of};
use crate::common::{self, Repo, run_in};

#[test]
fn a_bare_repository_is_refused_for_writes() {
    let holder = tempfile::tempdir().unwrap();
    let bare = holder.path().join("bare.git");
    common::git_in(
        holder.path(),
        &["init", "-q", "--bare", bare.to_str().unwrap()],
    );
    let cases: &[&[&str]] = &[
        &["start"],
        &["start", "--run", "r1"],
        &["checkpoint", "plan"],
        &["checkpoint", "plan", "--run", "r1"],
        &["step", "begin", "plan", "--run", "r1"],
        &[
            "step",
            "end",
            "plan",
            "--run",
            "r1",
            "--status",
            "completed",
        ],
    ];
    for args in cases {
        let before = state_of(&bare);
        let out = run_in(&bare, args);
        let line = assert_error(&out, 1, &format!("bare: {args:?}"));
        assert!(line.contains("bare"), "bare: {args:?}: {line}");
        assert_eq!(state_of(&bare), before, "bare: {args:?} wrote something");
    }
}

#[test]
fn a_directory_outside_any_repository_is_refused() {
    let o = outside();
    let cases: &[&[&str]] = &[
        &["init"],
        &["start"],
        &["start", "--run", "r1"],
        &["checkpoint", "plan"],
        &["step", "begin", "plan"],
        &["list"],
        &["list", "r1"],
        &["show", "r1"],
        &["log", "r1"],
        &["diff", "r1"],
        &["status"],
        &["--json", "status"],
    ];
    for args in cases {
        let out = common::tool_cmd(&o.dir)
            .env("GIT_CEILING_DIRECTORIES", o.dir.parent().unwrap())
            .args(*args)
            .output()
            .unwrap();
        let line = assert_error(&out, 1, &format!("outside: {args:?}"));
        assert!(
            line.contains("not a git repository"),
            "outside: {args:?}: {line}"
        );
        assert!(
            files_under(o.dir.parent().unwrap()).is_empty(),
            "outside: {args:?} created files: {:?}",
            files_under(o.dir.parent().unwrap())
        );
    }
}

/// An I/O failure names the file it concerns (errors keep their path): our private
/// folder is a file, so the writer lock under it cannot be made.
#[test]
fn io_errors_name_their_path() {
    let r = Repo::new();
    std::fs::write(r.path().join(".git/agent-rewind"), "not a folder").unwrap();
    let out = r.run(&["start", "--run", "r1"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let first = stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("error: ") && first.contains(".git/agent-rewind"),
        "the error names the path: {stderr}"
    );
    assert!(r.git(&["for-each-ref", "refs/agent-runs/"]).is_empty());
}
