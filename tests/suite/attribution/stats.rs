//! `stats`: lines added and kept per agent, model and person, for one
//! commit or a range, as a table and as `--json`.

use super::{Agent, commit, repo_with};
use serde_json::Value;

/// `(origin, name, model, added, kept)` of every row.
fn rows(doc: &Value) -> Vec<(String, String, String, u64, u64)> {
    doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["origin"].as_str().unwrap().to_string(),
                r["name"].as_str().unwrap().to_string(),
                r["model"].as_str().unwrap_or("-").to_string(),
                r["added"].as_u64().unwrap(),
                r["kept"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn stats_counts_lines_added_and_kept_per_agent_model_and_person() {
    let r = repo_with("one\ntwo\n");
    r.git(&["checkout", "-q", "-b", "feature"]);
    let a = Agent::start(r.path(), "s-stats-1", "model-x");
    a.write("app.txt", "one\nx1\nx2\ntwo\nx3\n");
    a.turn();
    commit(&r, "agent x");
    r.write("app.txt", "one\nx1\nx2\nperson p\ntwo\nx3\n");
    commit(&r, "person p");
    // A second session, another model, in a new file.
    let b = Agent::start(r.path(), "s-stats-2", "model-y");
    b.write("lib.txt", "y1\ny2\n");
    b.turn();
    commit(&r, "agent y");
    // The person deletes one of model-x's lines: added stays, kept drops.
    r.write("app.txt", "one\nx1\nperson p\ntwo\nx3\n");
    commit(&r, "person removes x2");
    let doc = r.json(&["stats", "main..feature"]);
    let person = "Test User <test@example.com>".to_string();
    assert_eq!(
        rows(&doc),
        vec![
            ("agent".into(), "claude".into(), "model-x".into(), 3, 2),
            ("agent".into(), "claude".into(), "model-y".into(), 2, 2),
            ("person".into(), person.clone(), "-".into(), 1, 1),
        ],
        "{doc}"
    );
    assert_eq!(doc["commits"], 4);
    assert_eq!(doc["added"], 6);
    assert_eq!(doc["kept"], 5);
    assert_eq!(doc["tip"], r.rev("feature").as_str());
    // One commit alone (a single revision is that commit).
    let one = r.json(&["stats", "feature~2"]);
    assert_eq!(one["commits"], 1);
    assert_eq!(
        rows(&one),
        vec![("person".into(), person, "-".into(), 1, 1)],
        "{one}"
    );
    // Default: HEAD; the table names every row and the totals.
    let table = r.ok(&["stats"]);
    assert!(table.starts_with("1 commit in HEAD, kept at "), "{table}");
    let table = r.ok(&["stats", "main..feature"]);
    assert!(table.contains("model-x"), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("total") && l.contains(" 6") && l.ends_with('5')),
        "{table}"
    );
    r.assert_fsck();
    assert_eq!(r.git(&["status", "--porcelain"]), "");
}
