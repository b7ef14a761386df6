//! `list` keeps a summary cache; it must never show stale or wrong data.

mod common;

use common::Repo;
use serde_json::Value;

fn run_entry(list: &Value, run: &str) -> Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|r| r["run"] == run)
        .cloned()
        .unwrap_or(Value::Null)
}

#[test]
fn list_reflects_every_change_and_survives_a_corrupt_cache() {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1", "--label", "first"]);
    repo.ok(&["step", "begin", "plan", "--run", "r1"]);
    let before = repo.json(&["list", "--all"]);
    assert_eq!(run_entry(&before, "r1")["status"], "running");
    assert_eq!(run_entry(&before, "r1")["checkpoints"], 2);

    // A new checkpoint (HEAD moves) and a new step ref.
    repo.write("a.txt", "a\n");
    repo.ok(&[
        "step",
        "end",
        "plan",
        "--run",
        "r1",
        "--status",
        "completed",
    ]);
    repo.ok(&["checkpoint", "test", "--run", "r1", "--status", "failed"]);
    let after = repo.json(&["list", "--all"]);
    assert_eq!(run_entry(&after, "r1")["status"], "failed");
    assert_eq!(run_entry(&after, "r1")["checkpoints"], 4);
    assert_eq!(
        run_entry(&after, "r1")["steps"],
        serde_json::json!(["plan", "test"])
    );

    // Only the notes move (an archive line on the root note): the cache must notice.
    repo.ok(&[
        "rewind",
        "r1",
        "--to",
        "test",
        "--run",
        "r2",
        "--no-checkout",
    ]);
    let listed = repo.json(&["list"]);
    assert!(
        run_entry(&listed, "r1").is_null(),
        "archived r1 still listed: {listed:#}"
    );
    assert_eq!(
        run_entry(&repo.json(&["list", "--all"]), "r1")["status"],
        "archived"
    );

    // A corrupt cache is ignored and rebuilt.
    let cache = repo.path().join(".git/agent-rewind/cache/runs.json");
    assert!(cache.exists(), "list should keep its cache");
    std::fs::write(&cache, "{not json").unwrap();
    let rebuilt = repo.json(&["list", "--all"]);
    assert_eq!(run_entry(&rebuilt, "r1")["status"], "archived");
    assert_eq!(run_entry(&rebuilt, "r2")["label"], "first");

    // A cache entry that lies (same refs, edited summary) is what the key prevents: a cache
    // built for other refs is not used.
    let text = std::fs::read_to_string(&cache).unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    doc["runs"]["r2"]["head"] = Value::String("0".repeat(40));
    doc["runs"]["r2"]["summary"]["label"] = Value::String("stale".into());
    std::fs::write(&cache, serde_json::to_string(&doc).unwrap()).unwrap();
    assert_eq!(run_entry(&repo.json(&["list"]), "r2")["label"], "first");
}
