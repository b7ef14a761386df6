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
    let cache = repo.path().join(".git/agent-rewind/cache/runs.lines");
    assert!(cache.exists(), "list should keep its cache");
    std::fs::write(&cache, "{not json").unwrap();
    let rebuilt = repo.json(&["list", "--all"]);
    assert_eq!(run_entry(&rebuilt, "r1")["status"], "archived");
    assert_eq!(run_entry(&rebuilt, "r2")["label"], "first");

    // A cache entry that lies (same refs, edited summary) is what the key prevents: a cache
    // built for other refs is not used.
    // The cache is one line per run: `<run> TAB <head> TAB <notes> TAB <summary JSON>`.
    let text = std::fs::read_to_string(&cache).unwrap();
    let edited: String = text
        .lines()
        .map(|l| {
            if !l.starts_with("r2\t") {
                return format!("{l}\n");
            }
            let parts: Vec<&str> = l.splitn(4, '\t').collect();
            let mut summary: Value = serde_json::from_str(parts[3]).unwrap();
            summary["label"] = Value::String("stale".into());
            format!("r2\t{}\t{}\t{summary}\n", "0".repeat(40), parts[2])
        })
        .collect();
    assert!(edited.contains("stale"), "r2 not in the cache: {text}");
    std::fs::write(&cache, edited).unwrap();
    assert_eq!(run_entry(&repo.json(&["list"]), "r2")["label"], "first");
}

#[test]
fn list_keeps_working_while_git_packs_the_refs() {
    // `git gc` (which checkpoints start in the background) moves loose refs into
    // packed-refs and deletes their files; a listing that meets a vanished file retries.
    let repo = Repo::new();
    let mut made = 0;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let packer = {
        let dir = repo.path().to_path_buf();
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                common::git_cmd(&dir)
                    .args(["pack-refs", "--all", "--prune"])
                    .output()
                    .unwrap();
            }
        })
    };
    for round in 0..15 {
        for i in 0..20 {
            repo.ok(&["start", "--run", &format!("r{round}-{i}")]);
            made += 1;
        }
        let out = repo.run(&["list", "--json"]);
        assert!(
            out.status.success(),
            "list failed while refs were being packed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(listed.as_array().unwrap().len(), made);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    packer.join().unwrap();
}
