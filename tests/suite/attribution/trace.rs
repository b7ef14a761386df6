//! `export --format agent-trace`: Agent Trace 0.1.0 records
//! (cursor/agent-trace) of the agent lines each commit of a range added, checked against the
//! specification's schema rules (required members, their types and formats) and against
//! `blame`.

use super::{Agent, commit, repo_with};
use serde_json::Value;

/// The rules of the specification's JSON schema (`trace-record.json`, version 0.1.0), as
/// its README states them.
fn assert_valid_record(r: &Value) {
    let o = r.as_object().expect("a record is an object");
    for k in ["version", "id", "timestamp", "files"] {
        assert!(o.contains_key(k), "required {k}: {r}");
    }
    let v = r["version"].as_str().unwrap();
    let parts: Vec<&str> = v.split('.').collect();
    assert!(
        parts.len() == 3
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())),
        "{v}"
    );
    let id = r["id"].as_str().unwrap();
    let groups: Vec<usize> = id.split('-').map(str::len).collect();
    assert_eq!(groups, vec![8, 4, 4, 4, 12], "uuid {id}");
    assert!(
        id.bytes().all(|b| b == b'-' || b.is_ascii_hexdigit()),
        "{id}"
    );
    let ts = r["timestamp"].as_str().unwrap();
    assert!(
        ts.len() >= 20 && ts.as_bytes()[10] == b'T' && (ts.ends_with('Z') || ts.contains('+')),
        "{ts}"
    );
    assert_eq!(r["vcs"]["type"], "git");
    assert_eq!(r["vcs"]["revision"].as_str().unwrap().len(), 40);
    assert!(r["tool"]["name"].is_string() && r["tool"]["version"].is_string());
    assert!(r["metadata"].is_object() || r.get("metadata").is_none());
    for f in r["files"].as_array().unwrap() {
        assert!(f["path"].is_string(), "{f}");
        for c in f["conversations"].as_array().unwrap() {
            if let Some(url) = c.get("url") {
                assert!(url.as_str().unwrap().contains(':'), "uri {url}");
            }
            let contributor = &c["contributor"];
            let t = contributor["type"].as_str().unwrap();
            assert!(["human", "ai", "mixed", "unknown"].contains(&t), "{t}");
            if let Some(m) = contributor.get("model_id") {
                assert!(m.as_str().unwrap().chars().count() <= 250);
            }
            for range in c["ranges"].as_array().unwrap() {
                let s = range["start_line"].as_u64().unwrap();
                let e = range["end_line"].as_u64().unwrap();
                assert!(s >= 1 && e >= s, "{range}");
                assert!(range["content_hash"].is_string() || range.get("content_hash").is_none());
            }
        }
    }
}

#[test]
fn agent_trace_records_name_the_agent_ranges_of_each_commit() {
    let r = repo_with("one\ntwo\n");
    r.git(&["checkout", "-q", "-b", "feature"]);
    let a = Agent::start(r.path(), "s-trace", "claude-sonnet-4-5");
    a.write("app.txt", "one\nagent a\nagent b\ntwo\nagent c\n");
    a.turn();
    commit(&r, "agent lines");
    r.write("app.txt", "one\nagent a\nagent b\ntwo\nagent c\nperson d\n");
    commit(&r, "person line");
    let out = r.ok(&["export", "--format", "agent-trace", "main..feature"]);
    let records: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Only the commit that added agent lines has a record.
    assert_eq!(records.len(), 1, "{out}");
    let rec = &records[0];
    assert_valid_record(rec);
    assert_eq!(rec["version"], "0.1.0");
    assert_eq!(rec["vcs"]["revision"], r.rev("feature~1").as_str());
    let files = rec["files"].as_array().unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0]["path"], "app.txt");
    let conv = &files[0]["conversations"][0];
    assert_eq!(conv["contributor"]["type"], "ai");
    assert_eq!(
        conv["contributor"]["model_id"],
        "anthropic/claude-sonnet-4-5"
    );
    let ranges: Vec<(u64, u64)> = conv["ranges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["start_line"].as_u64().unwrap(),
                x["end_line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(ranges, vec![(2, 3), (5, 5)]);
    // The content hash is the range's lines as a blob (git hash-object).
    let hash = conv["ranges"][0]["content_hash"].as_str().unwrap();
    let want = crate::common::git_stdin(r.path(), &["hash-object", "--stdin"], b"agent a\nagent b");
    assert_eq!(hash, format!("git-blob:{}", want.trim()));
    assert_eq!(
        rec["metadata"]["dev.agent-rewind"]["turns"][0]["session"],
        "s-trace"
    );
    // The same records again (stable ids); --json gives them as one array.
    assert_eq!(
        r.ok(&["export", "--format", "agent-trace", "main..feature"]),
        out
    );
    let doc = r.json(&["export", "--format", "agent-trace", "main..feature"]);
    assert_eq!(doc.as_array().unwrap().len(), 1);
    // A range without agent lines: no record; bad use: a clear error.
    assert_eq!(r.ok(&["export", "--format", "agent-trace", "feature"]), "");
    let bad = r.run(&["export", "--format", "agent-trace", "-o", "x.json"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(!r.path().join("x.json").exists());
    let bad = r.run(&["export", "--format", "nope"]);
    assert_eq!(bad.status.code(), Some(2));
    let bad = r.run(&["export", "r1"]);
    assert_eq!(
        bad.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    assert_eq!(r.git(&["status", "--porcelain"]), "");
}
