//! What a checkpoint leaves out and lists: secrets, large untracked files, untracked names
//! git refuses; secret-looking meta is redacted and the redaction recorded.

use crate::common::Repo;
use serde_json::Value;
use std::collections::BTreeSet;

/// Every object in the repository, as text (binary parts lossily decoded).
fn all_objects(repo: &Repo) -> String {
    let out = repo.git_output(&["cat-file", "--batch-all-objects", "--batch"]);
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn secrets_and_large_untracked_files_are_left_out_and_listed() {
    let repo = Repo::new();
    repo.write("tracked_big.bin", &"t".repeat(100));
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "big tracked"]);
    repo.git(&["config", "agentRewind.maxUntrackedSize", "1k"]);
    repo.write(".env", "SECRET=1\n");
    repo.write("config/.env.local", "SECRET=2\n");
    repo.write("id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\n");
    repo.write("keys/server.pem", "pem\n");
    repo.write("big.dat", &"x".repeat(2048));
    repo.write("small.txt", &"y".repeat(1000));
    // Tracked files are not subject to the untracked size limit.
    repo.write("tracked_big.bin", &"z".repeat(4096));

    let cp = repo.json(&["checkpoint", "plan"]);
    let id = cp["checkpoint"].as_str().unwrap().to_string();
    let in_tree: BTreeSet<String> = repo
        .git(&["ls-tree", "-r", "--name-only", &id])
        .lines()
        .map(str::to_string)
        .collect();
    let want: BTreeSet<String> = ["README.md", "small.txt", "tracked_big.bin"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(in_tree, want);
    assert_eq!(
        repo.git(&["cat-file", "-s", &format!("{id}:tracked_big.bin")])
            .trim(),
        "4096"
    );

    let excluded: BTreeSet<String> = cp["excluded"]
        .as_array()
        .unwrap_or_else(|| panic!("no excluded array: {cp}"))
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_string())
        .collect();
    let want_ex: BTreeSet<String> = [
        ".env",
        "config/.env.local",
        "id_rsa",
        "keys/server.pem",
        "big.dat",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(excluded, want_ex);
    for e in cp["excluded"].as_array().unwrap() {
        let reason = e["reason"].as_str().unwrap_or("");
        assert!(!reason.is_empty(), "no reason for {e}");
    }
    let big_reason = cp["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "big.dat")
        .unwrap()["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(big_reason.contains("maxUntrackedSize"), "{big_reason}");

    // The note carries the same list, for plain git readers.
    let run = cp["run"].as_str().unwrap();
    let note = repo.git(&["notes", &format!("--ref=agent-runs/{run}"), "show", &id]);
    let line: Value = serde_json::from_str(
        note.lines()
            .find(|l| l.contains("\"type\":\"checkpoint\""))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(line["excluded"], cp["excluded"]);
    // None of the secret contents made it into the object database.
    let all = all_objects(&repo);
    assert!(!all.contains("SECRET=1") && !all.contains("SECRET=2"));
    assert!(!all.contains("PRIVATE KEY"));
}

#[test]
fn secret_looking_meta_is_redacted_and_the_redaction_recorded() {
    let repo = Repo::new();
    let token = format!("ghp_{}", "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A");
    assert_eq!(token.len(), 40);
    let pw_url = "https://bob:hunter2secret@example.com/repo.git"; // gitleaks:allow
    let cp = repo.json(&[
        "checkpoint",
        "plan",
        "--run",
        "sec",
        "--meta",
        &format!("token={token}"),
        "--meta",
        &format!("note=uses {token} inline"),
        "--meta",
        &format!("remote={pw_url}"),
        "--meta",
        "ticket=ABC-123",
        "-m",
        &format!("pushed with {token}"),
    ]);
    assert_eq!(cp["meta"]["token"], "[REDACTED]", "{cp}");
    assert_eq!(cp["meta"]["note"], "[REDACTED]", "{cp}");
    assert_eq!(cp["meta"]["remote"], "[REDACTED]", "{cp}");
    assert_eq!(cp["meta"]["ticket"], "ABC-123");
    let id = cp["checkpoint"].as_str().unwrap();
    let note = repo.git(&["notes", "--ref=agent-runs/sec", "show", id]);
    let parsed: Vec<Value> = note
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let red = parsed
        .iter()
        .find(|v| v["type"] == "redaction")
        .unwrap_or_else(|| panic!("no redaction line in note:\n{note}"));
    let fields: BTreeSet<&str> = red["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    for f in ["meta.token", "meta.note", "meta.remote", "message"] {
        assert!(fields.contains(f), "{f} not in {fields:?}");
    }
    assert!(!fields.contains("meta.ticket"));
    // The secret is nowhere: not in any object, reflog, or the output.
    let all = all_objects(&repo);
    assert!(!all.contains(&token), "token stored in an object");
    assert!(
        !all.contains("hunter2secret"),
        "password stored in an object"
    );
    let logs = repo.git(&["reflog", "show", "--all", "--format=%gs"]);
    assert!(!logs.contains(&token));
    assert!(!cp.to_string().contains(&token));
    let body = repo.git(&["log", "-1", "--format=%B", id]);
    assert!(!body.contains(&token), "{body}");
}

#[test]
fn untracked_names_git_refuses_are_left_out_and_listed() {
    // `git~1` is how NTFS may spell `.git`: git refuses it in trees (core.protectNTFS is on
    // by default everywhere), and `git fsck --strict` would flag a tree holding it.
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1"]);
    repo.write("vendor/git~1/config", "looks like a .git folder on NTFS\n");
    repo.write("vendor/ok.txt", "fine\n");

    let cp = repo.json(&["checkpoint", "plan", "--run", "r1"]);
    let id = cp["checkpoint"].as_str().unwrap();
    let in_tree = repo.git(&["ls-tree", "-r", "--name-only", id]);
    assert!(in_tree.contains("vendor/ok.txt"), "{in_tree}");
    assert!(!in_tree.contains("git~1"), "{in_tree}");
    let excluded = cp["excluded"].as_array().expect("excluded list");
    let entry = excluded
        .iter()
        .find(|e| e["path"] == "vendor/git~1/config")
        .unwrap_or_else(|| panic!("not listed as excluded: {cp}"));
    assert!(
        entry["reason"]
            .as_str()
            .unwrap()
            .contains("not a valid name"),
        "{entry}"
    );
    repo.assert_fsck();
}
