//! A garbage note or a notes ref that is not a notes commit is reported without hiding other
//! runs.

use super::{assert_error, refused, repo_with_garbage_note, state};
use crate::common::Repo;

#[test]
fn a_garbage_note_is_reported_without_hiding_other_runs() {
    let (repo, bad_tip) = repo_with_garbage_note();
    let before = state(&repo);

    // `list` still lists r-good (exit 0) and warns about r-bad on stderr.
    for json in [false, true] {
        let mut args = vec![];
        if json {
            args.push("--json");
        }
        args.push("list");
        let out = repo.run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(stdout.contains("r-good"), "{args:?}: {stdout}");
        assert!(
            stderr.lines().any(|l| l.contains("r-bad")),
            "{args:?}: no warning about r-bad: {stderr}"
        );
        if json {
            let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
            let runs: Vec<&str> = v
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["run"].as_str().unwrap())
                .collect();
            assert_eq!(runs, vec!["r-good"]);
        }
    }

    // `show r-bad` fails naming the malformed note.
    for addr in ["r-bad", "r-bad/plan", &bad_tip[..]] {
        let out = repo.run(&["show", addr]);
        let line = assert_error(&out, 1, &format!("show {addr}"));
        assert!(line.contains("malformed"), "show {addr}: {line}");
        assert!(
            line.contains("refs/notes/agent-runs/r-bad") || line.contains(&bad_tip[..12]),
            "show {addr}: the error should name the note: {line}"
        );
    }
    let out = repo.run(&["list", "r-bad"]);
    assert_error(&out, 1, "list r-bad");
    let out = repo.run(&["diff", "r-bad"]);
    assert_error(&out, 1, "diff r-bad");
    // r-good is unaffected.
    assert_eq!(repo.json(&["show", "r-good"])["run"], "r-good");
    assert_eq!(repo.json(&["list", "r-good"]).as_array().unwrap().len(), 2);
    assert_eq!(state(&repo), before, "reading wrote something");

    // Appending to the corrupt run is refused; nothing is written over the garbage.
    let line = refused(&repo, &["checkpoint", "plan", "--run", "r-bad"], 1);
    assert!(line.contains("r-bad"), "{line}");
    assert_eq!(
        repo.git(&["notes", "--ref=agent-runs/r-bad", "show", &bad_tip]),
        "garbage{\n"
    );
}

#[test]
fn a_notes_ref_that_is_not_a_notes_commit_is_reported() {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r-good"]);
    repo.ok(&["start", "--run", "r-blob"]);
    let junk = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(junk.path(), "not a notes tree").unwrap();
    let blob = repo
        .git(&["hash-object", "-w", junk.path().to_str().unwrap()])
        .trim()
        .to_string();
    repo.git(&["update-ref", "refs/notes/agent-runs/r-blob", &blob]);
    let before = state(&repo);
    let out = repo.run(&["--json", "list"]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_str().unwrap())
        .collect();
    assert_eq!(runs, vec!["r-good"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("r-blob"));
    let out = repo.run(&["show", "r-blob"]);
    let line = assert_error(&out, 1, "show r-blob");
    assert!(line.contains("refs/notes/agent-runs/r-blob"), "{line}");
    refused(&repo, &["checkpoint", "plan", "--run", "r-blob"], 1);
    assert_eq!(state(&repo), before);
}
