//! `agentRewind.secretRules`: a team's gitleaks-format rule file adds to the built-in rules
//! on `push` (the snapshot and redaction use the built-in ones only).

use super::{bare_origin, refused, remote_refs};
use crate::common::Repo;
use serde_json::Value;

/// `agentRewind.secretRules` adds a team's rules (gitleaks' format) to the built-in ones; a
/// rule with a Unicode class does not compile and is named, with its reason, in the push's
/// warning and under `skipped_rules` with `--json`; the other rules of the file still fire.
#[test]
fn a_teams_rule_file_adds_rules_and_a_unicode_class_skips_only_its_rule() {
    let r = Repo::new();
    let bare = bare_origin(&r);
    r.write(
        ".gitleaks.toml",
        "[[rules]]\nid = \"greek\"\nregex = '''\\p{Greek}{3}'''\n\
         [[rules]]\nid = \"acme-token\"\nregex = '''acme_[a-z0-9]{16}'''\nkeywords = [\"acme_\"]\n",
    );
    r.git(&["config", "agentRewind.secretRules", ".gitleaks.toml"]);
    r.ok(&["start", "--run", "r1"]);
    // Alone on its line: no built-in rule knows it, so the snapshot keeps the file.
    r.write("deploy/settings.txt", "acme_0123456789abcdef\n");
    r.ok(&["checkpoint", "work", "--run", "r1"]);

    let (found, _) = refused(&r, "r1");
    assert_eq!(
        found,
        [(
            "deploy/settings.txt".to_string(),
            1,
            "acme-token".to_string()
        )]
    );
    let out = r.run(&["--json", "push", "origin", "r1"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        doc["skipped_rules"],
        serde_json::json!(["greek"]),
        "{doc:#}"
    );

    let out = r.run(&["push", "origin", "r1"]);
    assert_eq!(out.status.code(), Some(1));
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("did not compile and were not used: greek (Unicode classes"),
        "{text}"
    );
    assert!(!remote_refs(&bare).contains("agent-runs/r1"));
}
