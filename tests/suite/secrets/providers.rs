//! The credentials an adversarial review saw reach a remote (Slack webhook URLs, SendGrid
//! `SG.…`, Twilio `SK…`, Mailgun `key-…`, Databricks `dapi…`, Azure storage `AccountKey=…`,
//! Azure AD client secrets, a YAML `password:` line in free text): placed in a new
//! untracked file, in `-m` text and in `--meta`, none reaches the remote (the file is left
//! out, the text redacted); in a file the run changed, or in a note another version wrote,
//! each refuses the push, named by place, line and rule.

use super::corpus::token;
use super::{bare_origin, findings, note_lines, push_json, remote_refs};
use crate::common::{Repo, git_cmd, git_in};
use std::collections::BTreeSet;

struct Case {
    /// The text placed: the credential with what usually surrounds it.
    text: String,
    /// What must not reach the remote.
    secret: String,
    /// The file extension (a YAML password is one only in a YAML file).
    ext: &'static str,
    /// The rule that finds it in a file, and in free text.
    file_rule: &'static str,
    text_rule: &'static str,
}

fn case(shape: &str, seed: u64, around: &str, rule: &'static str) -> Case {
    let secret = token(shape, seed);
    Case {
        text: around.replace("{}", &secret),
        secret,
        ext: "txt",
        file_rule: rule,
        text_rule: rule,
    }
}

fn cases() -> Vec<Case> {
    let storage_key = token("{b64:86}==", 6);
    vec![
        case(
            "https://hooks.slack.com/services/T{uppernum:8}/B{uppernum:10}/{alnum:24}",
            1,
            "notify {} on deploy",
            "slack-webhook-url",
        ),
        case(
            "SG.{b64u:22}.{b64u:43}",
            2,
            "SENDGRID_KEY {}",
            "sendgrid-api-key",
        ),
        case("SK{hex:32}", 3, "twilio api key {}", "twilio-api-key"),
        case("key-{hex:32}", 4, "mailgun: {}", "mailgun-api-key"),
        case("dapi{hex:32}", 5, "databricks {}", "databricks-token"),
        Case {
            text: format!(
                "DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey={storage_key};EndpointSuffix=core.windows.net"
            ),
            secret: storage_key,
            ext: "txt",
            file_rule: "azure-storage-account-key",
            text_rule: "azure-storage-account-key",
        },
        case(
            "{azure:3}{digit:1}Q~{azure:34}",
            7,
            "client secret {} for the deploy app",
            "azure-ad-client-secret",
        ),
        Case {
            text: "db:\n  host: db.internal\n  password: hunter2-prod".to_string(),
            secret: "hunter2-prod".to_string(),
            ext: "yaml",
            file_rule: "yaml-password",
            text_rule: "yaml-password-in-text",
        },
    ]
}

/// Every object of the repository at `dir`, as text (trees' binary ids read lossily).
fn all_objects(dir: &std::path::Path) -> String {
    let out = git_cmd(dir)
        .args(["cat-file", "--batch-all-objects", "--batch"])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_formats_a_review_saw_pushed_are_left_out_redacted_and_refuse_the_push() {
    let cases = cases();
    let r = Repo::new();
    let bare = bare_origin(&r);
    for (i, c) in cases.iter().enumerate() {
        r.write(&format!("tracked/{i}.{}", c.ext), "\n");
    }
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "placeholders"]);

    // A new untracked file, -m and --meta: left out and redacted when recorded.
    r.ok(&["start", "--run", "r1"]);
    for (i, c) in cases.iter().enumerate() {
        let file = format!("leak/{i}.{}", c.ext);
        r.write(&file, &format!("{}\n", c.text));
        let meta = format!("note={}", c.text);
        let step = format!("s{i}");
        let out = r.json(&[
            "checkpoint",
            &step,
            "--run",
            "r1",
            "-m",
            &c.text,
            "--meta",
            &meta,
        ]);
        let excluded = out["excluded"]
            .as_array()
            .unwrap_or_else(|| panic!("{out:#}"));
        let reason = excluded
            .iter()
            .find(|e| e["path"] == file.as_str())
            .and_then(|e| e["reason"].as_str())
            .unwrap_or_else(|| panic!("{file} not left out: {out:#}"));
        assert!(reason.contains(c.file_rule), "{file}: {reason}");
        let tip = r.rev("refs/agent-runs/r1/HEAD");
        let note = note_lines(&r, "r1", &tip);
        assert_eq!(
            note[0]["message"], "[REDACTED]",
            "{}: {note:#?}",
            c.file_rule
        );
        assert_eq!(note[0]["meta"]["note"], "[REDACTED]", "{}", c.file_rule);
    }
    let (code, entry) = push_json(&r, "r1", &[]);
    assert_eq!(
        (code, entry["result"].as_str()),
        (0, Some("pushed")),
        "{entry:#}"
    );
    let remote = all_objects(bare.path());
    for c in &cases {
        assert!(
            !remote.contains(&c.secret),
            "{} reached the remote",
            c.file_rule
        );
    }
    git_in(bare.path(), &["fsck", "--strict"]);

    // In files the run changed (the snapshot keeps those) and in notes written by hand:
    // `push` refuses, naming each.
    r.ok(&["start", "--run", "r2"]);
    for (i, c) in cases.iter().enumerate() {
        r.write(&format!("tracked/{i}.{}", c.ext), &format!("{}\n", c.text));
    }
    r.ok(&["checkpoint", "changed", "--run", "r2"]);
    let root = r.rev("refs/agent-runs/r2/HEAD~1");
    for (i, c) in cases.iter().enumerate() {
        let line = serde_json::json!({"type": format!("c{i}"), "message": c.text, "meta": {"note": c.text}});
        r.git(&[
            "notes",
            "--ref=agent-runs/r2",
            "append",
            "-m",
            &line.to_string(),
            &root,
        ]);
    }
    let status = r.git(&["status", "--porcelain"]);
    let (code, entry) = push_json(&r, "r2", &[]);
    assert_eq!(code, 1, "{entry:#}");
    let found: BTreeSet<(String, String)> = findings(&entry)
        .0
        .into_iter()
        .map(|(place, _, rule)| (place, rule))
        .collect();
    let mut expected = BTreeSet::new();
    for (i, c) in cases.iter().enumerate() {
        expected.insert((format!("tracked/{i}.{}", c.ext), c.file_rule.to_string()));
        for field in ["message", "meta.note"] {
            expected.insert((format!("note: c{i}.{field}"), c.text_rule.to_string()));
        }
    }
    assert_eq!(found, expected);
    assert!(!remote_refs(&bare).contains("agent-runs/r2"));
    let remote = all_objects(bare.path());
    for c in &cases {
        assert!(
            !remote.contains(&c.secret),
            "{} reached the remote",
            c.file_rule
        );
    }
    assert_eq!(r.git(&["status", "--porcelain"]), status);
}
