//! Secrets stay on this machine: secret-looking files
//! and files whose content holds a private key or an access key are left out of checkpoints
//! and listed; labels, approvers, messages and metadata pass through one redaction that
//! targets credentials, not words.

use crate::common;

mod corpus;
mod providers;
mod recall;
mod rule_files;
mod scanner;

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

const KEY_BLOCK: &str = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n-----END RSA PRIVATE KEY-----\n"; // gitleaks:allow
/// An access key id of AWS's shape (not its documented example, which the rules allow).
const AWS_ID: &str = concat!("AKIA", "2OGYBAH6TQM7X4LB");
const GH_TOKEN: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"; // gitleaks:allow
const JWT: &str =
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"; // gitleaks:allow

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
    assert!(
        reason("deploy/settings.yaml").contains("secret (private-key, line 2)"),
        "{excluded:?}"
    );
    assert!(
        reason("config.ini").contains("secret (aws-access-key-id, line 2)"),
        "{excluded:?}"
    );
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
        &format!("pushed with https://bob:s3cret@example.com/x.git and {JWT}"), // gitleaks:allow
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

// ---------------------------------------------------------------------------------------
// `push` scans what it would share with the secret rules and refuses a run
// in which one fires, naming the file and line (or the note's field), unless each finding's
// fingerprint is given with `--allow-secret`.

const BEARER: &str = "a1b2c3d4e5f6g7h8";
const AWS_SECRET: &str = "Zq3xR8vT1mB6nP0sK4wY7cH2jL5dF9gA3eU8iO1r";

/// A bare repository as `origin`.
fn bare_origin(r: &Repo) -> tempfile::TempDir {
    let bare = tempfile::tempdir().unwrap();
    git_in(bare.path(), &["init", "-q", "--bare"]);
    r.git(&["remote", "add", "origin", bare.path().to_str().unwrap()]);
    bare
}

fn remote_refs(bare: &tempfile::TempDir) -> String {
    git_in(bare.path(), &["for-each-ref", "--format=%(refname)"])
}

/// `push origin RUN [extra…]` with --json: its exit code and the run's entry.
fn push_json(r: &Repo, run: &str, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["--json", "push", "origin", run];
    args.extend_from_slice(extra);
    let out = r.run(&args);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let entry = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["run"] == run)
        .unwrap_or_else(|| panic!("{doc:#}"))
        .clone();
    (out.status.code().unwrap(), entry)
}

/// The (place, line, rule) of each finding of a refused run, sorted, and their fingerprints.
fn findings(entry: &Value) -> (Vec<(String, u64, String)>, Vec<String>) {
    let list = entry["secrets"]
        .as_array()
        .unwrap_or_else(|| panic!("{entry:#}"));
    let mut found: Vec<(String, u64, String)> = list
        .iter()
        .map(|f| {
            (
                f["place"].as_str().unwrap().to_string(),
                f["line"].as_u64().unwrap(),
                f["rule"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    found.sort();
    let fps = list
        .iter()
        .map(|f| f["fingerprint"].as_str().unwrap().to_string())
        .collect();
    (found, fps)
}

/// `push origin RUN` is refused (exit 1, the run `rejected`): the findings, as [`findings`].
fn refused(r: &Repo, run: &str) -> (Vec<(String, u64, String)>, Vec<String>) {
    let (code, entry) = push_json(r, run, &[]);
    assert_eq!(
        (code, entry["result"].as_str()),
        (1, Some("rejected")),
        "{entry:#}"
    );
    findings(&entry)
}

/// Push again with every fingerprint allowed: it goes through and the remote has the run.
fn push_allowing(r: &Repo, bare: &tempfile::TempDir, run: &str, fps: &[String]) {
    let mut extra = vec![];
    for fp in fps {
        extra.push("--allow-secret");
        extra.push(fp.as_str());
    }
    let (code, entry) = push_json(r, run, &extra);
    assert_eq!(
        (code, entry["result"].as_str()),
        (0, Some("pushed")),
        "{entry:#}"
    );
    assert!(remote_refs(bare).contains(&format!("refs/agent-runs/{run}/HEAD")));
    git_in(bare.path(), &["fsck", "--strict"]);
}

#[test]
fn push_refuses_files_a_run_changed_holding_a_jwt_an_aws_secret_key_or_a_yaml_password_by_file_and_line()
 {
    let r = Repo::new();
    let bare = bare_origin(&r);
    // Committed files the run changes: the snapshot keeps them (a new file holding a secret
    // would be left out of the checkpoint), so `push` is what stops them.
    for f in ["notes/session.txt", "deploy/env.sh", "config/app.yaml"] {
        r.write(f, "\n");
    }
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "files"]);
    r.ok(&["start", "--run", "r1"]);
    r.write("notes/session.txt", &format!("session:\n{JWT}\n"));
    r.write(
        "deploy/env.sh",
        &format!("#!/bin/sh\nset -e\nexport AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n"),
    );
    r.write(
        "config/app.yaml",
        "db:\n  host: db.internal\n  password: hunter2-prod\n",
    );
    // Look alike, but are not secrets.
    r.write(
        "docs/auth.md",
        "Use basic authentication, or a bearer token.\npassword: see the vault\n",
    );
    r.write(
        "config/ci.yaml",
        "password: ${DB_PASSWORD}\nsecret: /run/secrets/db\n",
    );
    r.ok(&["checkpoint", "work", "--run", "r1"]);
    let status_before = r.git(&["status", "--porcelain"]);

    let (found, fps) = refused(&r, "r1");
    assert_eq!(
        found,
        [
            (
                "config/app.yaml".to_string(),
                3,
                "yaml-password".to_string()
            ),
            (
                "deploy/env.sh".to_string(),
                3,
                "aws-secret-access-key".to_string()
            ),
            ("notes/session.txt".to_string(), 2, "jwt".to_string()),
        ],
    );
    assert_eq!(remote_refs(&bare), "", "nothing was pushed");
    // The text names file and line, and the fingerprint to allow.
    let out = r.run(&["push", "origin", "r1"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("config/app.yaml:3: yaml-password"), "{text}");
    assert!(text.contains(&fps[0]), "{text}");
    // Allowing two of the three is not enough: the third is still named.
    let (code, entry) = push_json(
        &r,
        "r1",
        &["--allow-secret", &fps[0], "--allow-secret", &fps[1]],
    );
    assert_eq!(code, 1, "{entry:#}");
    assert_eq!(findings(&entry).1, [fps[2].clone()]);
    assert_eq!(remote_refs(&bare), "");
    push_allowing(&r, &bare, "r1", &fps);
    assert_eq!(r.git(&["status", "--porcelain"]), status_before);
    // `agentRewind.allowSecret` allows a finding on every push.
    r.ok(&["checkpoint", "more", "--run", "r1"]);
    assert_eq!(push_json(&r, "r1", &[]).0, 1);
    for fp in &fps {
        r.git(&["config", "--add", "agentRewind.allowSecret", fp]);
    }
    let (code, entry) = push_json(&r, "r1", &[]);
    assert_eq!(
        (code, entry["result"].as_str()),
        (0, Some("pushed")),
        "{entry:#}"
    );
    r.assert_fsck();
}

#[test]
fn authorization_schemes_closed_by_quotes_commas_or_parens_are_redacted_and_notes_or_workflow_commands_holding_them_refuse_the_push()
 {
    let r = Repo::new();
    let bare = bare_origin(&r);
    // -m, --meta, --label: redacted before anything is written (never stored).
    let label = format!("call(Bearer {BEARER})");
    r.ok(&["start", "--run", "r1", "--label", &label]);
    let header = format!("header=curl -H 'Authorization: Bearer {BEARER}'");
    let message = format!("sent {{\"Authorization\": \"Basic {BEARER}\"}}");
    r.ok(&[
        "checkpoint",
        "work",
        "--run",
        "r1",
        "--meta",
        &header,
        "-m",
        &message,
    ]);
    let tip = r.rev("refs/agent-runs/r1/HEAD");
    let note = note_lines(&r, "r1", &tip);
    assert_eq!(note[0]["meta"]["header"], "[REDACTED]", "{note:#?}");
    assert_eq!(note[0]["message"], "[REDACTED]", "{note:#?}");
    let root = r.rev("refs/agent-runs/r1/HEAD~1");
    assert_eq!(note_lines(&r, "r1", &root)[0]["label"], "[REDACTED]");
    assert!(!everything_shared(&r, "r1").contains(BEARER));
    let (code, entry) = push_json(&r, "r1", &[]);
    assert_eq!(
        (code, entry["result"].as_str()),
        (0, Some("pushed")),
        "{entry:#}"
    );

    // A note line that holds one (written by another version, or by hand) refuses the push,
    // naming the field.
    let line = format!(
        r#"{{"type":"label","label":"x(Authorization: Bearer {BEARER}, y)","ts":"2026-01-01T00:00:00Z"}}"#
    );
    r.git(&["notes", "--ref=agent-runs/r1", "append", "-m", &line, &root]);
    let (code, entry) = push_json(&r, "r1", &[]);
    assert_eq!(code, 1, "{entry:#}");
    let (found, fps) = findings(&entry);
    assert_eq!(
        found,
        [(
            "note: label".to_string(),
            1,
            "authorization-header".to_string()
        )]
    );
    assert!(
        fps[0].starts_with(&format!("{root}:note: label:")),
        "{fps:?}"
    );
    push_allowing(&r, &bare, "r1", &fps);
    let label_fp = fps[0].clone();

    // A workflow's command: `run` refuses the file before anything is stored, by line…
    let wf = format!(
        "[workflow]\nname = \"deploy\"\n\n[[steps]]\nname = \"call\"\nkind = \"deterministic\"\nrun = \"echo 'Authorization: Bearer {BEARER}' >/dev/null\"\n"
    );
    r.write("deploy.toml", &wf);
    r.git(&["add", "deploy.toml"]);
    r.git(&["commit", "-q", "-m", "workflow"]);
    let out = r.run(&["run", "deploy.toml", "--run", "w1"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("deploy.toml:7"), "{err}");
    assert!(r.git(&["for-each-ref", "refs/agent-runs/w1/"]).is_empty());
    // …and a workflow stored with a run by another version refuses the push, by field and
    // line of the workflow's text.
    let text = serde_json::to_string(&wf).unwrap();
    let line = format!(
        r#"{{"type":"workflow","name":"deploy","path":"deploy.toml","digest":"sha256:00","text":{text},"ts":"2026-01-01T00:00:00Z"}}"#
    );
    r.git(&["notes", "--ref=agent-runs/r1", "append", "-m", &line, &root]);
    // An allowed finding stays allowed only on the push that names it.
    let (code, entry) = push_json(&r, "r1", &["--allow-secret", &label_fp]);
    assert_eq!(code, 1, "{entry:#}");
    let (found, mut fps) = findings(&entry);
    assert_eq!(
        found,
        [(
            "note: workflow.text".to_string(),
            7,
            "authorization-header".to_string()
        )]
    );
    fps.push(label_fp);
    push_allowing(&r, &bare, "r1", &fps);
    r.assert_fsck();
}

#[test]
fn a_run_without_secrets_pushes() {
    let r = Repo::new();
    let bare = bare_origin(&r);
    r.ok(&["start", "--run", "r1", "--label", "implement the parser"]);
    r.write("src/lib.rs", "pub fn token_count() -> usize { 12 }\n");
    r.write(
        "config/app.yaml",
        "password: ${DB_PASSWORD}\nmax_tokens: 4096\n",
    );
    r.write(
        "docs/auth.md",
        "Send basic authentication or a bearer token.\n",
    );
    r.ok(&[
        "checkpoint",
        "work",
        "--run",
        "r1",
        "--meta",
        "max_tokens=4096",
        "-m",
        "parser",
    ]);
    let (code, entry) = push_json(&r, "r1", &[]);
    assert_eq!(
        (code, entry["result"].as_str()),
        (0, Some("pushed")),
        "{entry:#}"
    );
    assert!(entry.get("secrets").is_none(), "{entry:#}");
    assert!(remote_refs(&bare).contains("refs/agent-runs/r1/HEAD"));
    // With --all, a run holding a secret stays behind and the others go.
    // (A committed file it changed: a new file holding one would be left out of the
    // checkpoint.)
    r.ok(&["start", "--run", "r2"]);
    r.write("README.md", &format!("hello\n{JWT}\n"));
    r.ok(&["checkpoint", "work", "--run", "r2"]);
    r.write("README.md", "hello\n");
    r.ok(&["start", "--run", "r3"]);
    r.write("src/more.rs", "pub fn more() {}\n");
    r.ok(&["checkpoint", "work", "--run", "r3"]);
    let out = r.run(&["--json", "push", "origin", "--all"]);
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let result = |run: &str| {
        doc["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["run"] == run)
            .map(|e| e["result"].as_str().unwrap().to_string())
    };
    assert_eq!(result("r2").as_deref(), Some("rejected"), "{doc:#}");
    assert_eq!(result("r3").as_deref(), Some("pushed"), "{doc:#}");
    let refs = remote_refs(&bare);
    assert!(refs.contains("refs/agent-runs/r3/HEAD"), "{refs}");
    assert!(!refs.contains("agent-runs/r2"), "{refs}");
    git_in(bare.path(), &["fsck", "--strict"]);
}
