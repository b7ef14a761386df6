//! Secrets stay on this machine (issue 18, item 8; issue 12, item 8): secret-looking files
//! and files whose content holds a private key or an access key are left out of checkpoints
//! and listed; labels, approvers, messages and metadata pass through one redaction that
//! targets credentials, not words.

use crate::common;

use common::{Repo, git_in};
use serde_json::Value;

/// The checkpoint line of the note on `commit` (in `run`'s notes), and its other lines.
fn note_lines(r: &Repo, run: &str, commit: &str) -> Vec<Value> {
    git_in(
        r.path(),
        &["notes", &format!("--ref=agent-runs/{run}"), "show", commit],
    )
    .lines()
    .map(|l| serde_json::from_str(l).unwrap())
    .collect()
}

fn tree_paths(r: &Repo, commit: &str) -> Vec<String> {
    r.git(&["ls-tree", "-r", "--name-only", commit])
        .lines()
        .map(str::to_string)
        .collect()
}

/// Everything pushed with a run: every blob reachable from its refs and notes, as text.
fn everything_shared(r: &Repo, run: &str) -> String {
    let objects = r.git(&[
        "rev-list",
        "--objects",
        &format!("refs/agent-runs/{run}/HEAD"),
        &format!("refs/notes/agent-runs/{run}"),
        "--not",
        "main",
    ]);
    let mut all = String::new();
    for id in objects.lines().filter_map(|l| l.split(' ').next()) {
        all.push_str(&r.git(&["cat-file", "-p", id]));
    }
    all
}

const KEY_BLOCK: &str = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n-----END RSA PRIVATE KEY-----\n";
const AWS_ID: &str = "AKIAIOSFODNN7EXAMPLE";
const GH_TOKEN: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
const JWT: &str =
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";

#[test]
fn secret_files_by_name_and_by_content_are_left_out_and_listed() {
    let r = Repo::new();
    r.git(&["config", "--add", "agentRewind.exclude", "*.[st]ecret"]);
    r.ok(&["start", "--run", "r1"]);
    let by_name = [
        "credentials.json",
        ".netrc",
        ".npmrc",
        ".pypirc",
        ".envrc",
        "config/app.env",
        ".env",
        "keys/id_dsa",
        "keys/id_dsa.pub",
        "certs/client.p12",
        "certs/client.pfx",
        "android/release.jks",
        "android/release.keystore",
        "mine.secret",
        "mine.tecret",
    ];
    for p in by_name {
        r.write(p, "x\n");
    }
    // By content: a private key in a file with an innocent name, an AWS key in config.ini.
    r.write("deploy/settings.yaml", &format!("key: |\n{KEY_BLOCK}"));
    r.write(
        "config.ini",
        &format!("[default]\naws_access_key_id = {AWS_ID}\nregion = eu-west-1\n"),
    );
    // Kept: ordinary files, including ones that merely mention the words.
    r.write(
        "docs/keys.md",
        "Never commit a PRIVATE KEY or an AKIA key.\n",
    );
    r.write("src/main.rs", "fn main() {}\n");
    let out = r.json(&["checkpoint", "work", "--run", "r1"]);
    let excluded: Vec<(String, String)> = out["excluded"]
        .as_array()
        .unwrap_or_else(|| panic!("{out:#}"))
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_string(),
                e["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let tip = r.rev("refs/agent-runs/r1/HEAD");
    let paths = tree_paths(&r, &tip);
    for p in by_name
        .iter()
        .chain(&["deploy/settings.yaml", "config.ini"])
    {
        assert!(
            excluded.iter().any(|(e, _)| e == p),
            "{p} not listed: {excluded:?}"
        );
        assert!(!paths.contains(&p.to_string()), "{p} in the tree");
    }
    let reason = |p: &str| excluded.iter().find(|(e, _)| e == p).unwrap().1.clone();
    assert!(reason("deploy/settings.yaml").contains("private key"));
    assert!(reason("config.ini").contains("access key"));
    assert!(reason("mine.tecret").contains("secret pattern"));
    for kept in ["docs/keys.md", "src/main.rs", "README.md"] {
        assert!(
            paths.contains(&kept.to_string()),
            "{kept} missing: {paths:?}"
        );
    }
    let shared = everything_shared(&r, "r1");
    assert!(!shared.contains("MIIEowIBAAKCAQEA"), "a key was stored");
    assert!(!shared.contains(AWS_ID), "an access key was stored");

    // A rewind leaves the content-excluded files where they are (the target lacks them).
    r.ok(&["checkpoint", "more", "--run", "r1"]);
    r.ok(&["rewind", "r1", "--to", "work"]);
    assert!(r.read("config.ini").contains(AWS_ID));
    assert!(r.read("deploy/settings.yaml").contains("PRIVATE KEY"));
}

#[test]
fn labels_approvers_messages_and_metadata_are_redacted_as_secrets_not_words() {
    let r = Repo::new();
    let label = format!("deploy with {GH_TOKEN}");
    r.ok(&["start", "--run", "r1", "--label", &label]);
    let bearer = format!("Authorization=Bearer {JWT}");
    // A gate awaiting approval (only a gate checkpoint can be approved).
    r.ok(&[
        "checkpoint",
        "gate",
        "--run",
        "r1",
        "--kind",
        "gate",
        "--status",
        "awaiting_approval",
        "--meta",
        &bearer,
        "--meta",
        "dbpass=hunter2",
        "--meta",
        "client_secret=abc",
        "--meta",
        "max_tokens=4096",
        "--meta",
        "input_tokens=1200",
        "--meta",
        "token_count=12",
        "--meta",
        "author=Ada Lovelace",
        "--meta",
        "github_token=a8Fk29dKq0Zx71LmPq4T",
        "-m",
        &format!("pushed with https://bob:s3cret@example.com/x.git and {JWT}"),
    ]);
    r.ok(&[
        "approve",
        "r1/gate",
        "--by",
        &format!("bot {GH_TOKEN}"),
        "-m",
        "looks good",
    ]);
    let root = r.rev("refs/agent-runs/r1/HEAD~1");
    let gate = r.rev("refs/agent-runs/r1/gate");
    let root_note = note_lines(&r, "r1", &root);
    assert_eq!(root_note[0]["label"], "[REDACTED]", "{root_note:#?}");
    let gate_note = note_lines(&r, "r1", &gate);
    let meta = &gate_note[0]["meta"];
    for k in ["Authorization", "dbpass", "client_secret", "github_token"] {
        assert_eq!(meta[k], "[REDACTED]", "{k}: {meta:#}");
    }
    for (k, v) in [
        ("max_tokens", "4096"),
        ("input_tokens", "1200"),
        ("token_count", "12"),
        ("author", "Ada Lovelace"),
    ] {
        assert_eq!(meta[k], v, "{k}: {meta:#}");
    }
    assert_eq!(gate_note[0]["message"], "[REDACTED]");
    let approval = gate_note.iter().find(|l| l["type"] == "approval").unwrap();
    assert_eq!(approval["by"], "[REDACTED]");
    assert_eq!(approval["message"], "looks good");
    // Every redaction is recorded.
    let recorded: Vec<String> = gate_note
        .iter()
        .filter(|l| l["type"] == "redaction")
        .flat_map(|l| l["fields"].as_array().unwrap().clone())
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    assert!(
        recorded.contains(&"approval.by".to_string()),
        "{recorded:?}"
    );
    assert!(
        recorded.contains(&"meta.dbpass".to_string()),
        "{recorded:?}"
    );
    // Nothing of it anywhere in what would be pushed.
    let shared = everything_shared(&r, "r1");
    for s in [GH_TOKEN, JWT, "hunter2", "s3cret"] {
        assert!(!shared.contains(s), "{s} was stored");
    }
}
