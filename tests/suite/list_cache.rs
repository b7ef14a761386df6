//! `list` keeps a summary cache; it must never show stale or wrong data.

use crate::common;

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
    // The cache is one line per run: `<run> TAB <head> TAB <notes> TAB <sort key> TAB
    // <archived> TAB`, three pieces of the run's JSON (docs/design/many-runs.md) and
    // the workflow's step order.
    let text = std::fs::read_to_string(&cache).unwrap();
    let edited: String = text
        .lines()
        .map(|l| {
            if !l.starts_with("r2\t") {
                return format!("{l}\n");
            }
            let mut parts: Vec<String> = l.split('\t').map(str::to_string).collect();
            assert_eq!(parts.len(), 9, "{l}");
            parts[1] = "0".repeat(40);
            parts[5] = parts[5].replace("\"first\"", "\"stale\"");
            format!("{}\n", parts.join("\t"))
        })
        .collect();
    assert!(edited.contains("stale"), "r2 not in the cache: {text}");
    // Edited without its checksum: the whole cache is rebuilt.
    std::fs::write(&cache, &edited).unwrap();
    assert_eq!(run_entry(&repo.json(&["list"]), "r2")["label"], "first");
    // With a checksum that matches: the key (HEAD, notes tip) still rejects the line.
    let (header, body) = edited.split_once('\n').unwrap();
    assert_eq!(header, "agent-rewind/runs-cache v7");
    let body = body.rsplit_once("crc32 ").unwrap().0;
    std::fs::write(&cache, common::envelope("runs-cache", 7, body.as_bytes())).unwrap();
    assert_eq!(run_entry(&repo.json(&["list"]), "r2")["label"], "first");
    assert_eq!(run_entry(&repo.json(&["list"]), "r2")["label"], "first");
    let lying = body.replace(&"0".repeat(40), &repo.rev("refs/agent-runs/r2/HEAD"));
    assert!(lying.contains("stale"));
    // The same line with the right key and a right checksum would be believed: that is the
    // contract (only the tool writes the file), shown here so a change of it is noticed.
    std::fs::write(&cache, common::envelope("runs-cache", 7, lying.as_bytes())).unwrap();
    assert_eq!(run_entry(&repo.json(&["list"]), "r2")["label"], "stale");
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

/// The runs of `list --json` by id, as (status, checkpoints, steps, unique prefix).
fn listed(repo: &Repo) -> Vec<(String, Value, Value, Value, Value)> {
    let mut out: Vec<_> = repo
        .json(&["list", "--all"])
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["run"].as_str().unwrap().to_string(),
                r["status"].clone(),
                r["checkpoints"].clone(),
                r["steps"].clone(),
                r["unique_prefix"].clone(),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn cache_runs(repo: &Repo) -> Vec<String> {
    let text =
        std::fs::read_to_string(repo.path().join(".git/agent-rewind/cache/runs.lines")).unwrap();
    let body = common::envelope_body(text.as_bytes(), "runs-cache", 7);
    String::from_utf8_lossy(body)
        .lines()
        .map(|l| l.split('\t').next().unwrap().to_string())
        .collect()
}

#[test]
fn list_cache_follows_packing_deletes_fetches_and_notes_only_changes() {
    let repo = Repo::new();
    // Ref order (`a-b/…` < `a/…` < `a.c/…`) differs from run order (`a` < `a-b`): a run's
    // refs must still be grouped, and its step refs kept with it.
    for run in ["a", "a-b", "ab", "a.c"] {
        repo.ok(&["start", "--run", run]);
    }
    repo.ok(&["step", "begin", "plan", "--run", "a"]);
    let loose = listed(&repo);
    let names: Vec<&str> = loose.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(names, ["a", "a-b", "a.c", "ab"]);
    assert_eq!(loose[0].3, serde_json::json!(["plan"]));
    assert_eq!(loose[0].1, "running");
    assert_eq!(loose[0].4, 1, "a whole id is unique");
    assert_eq!(
        loose[3].4, 2,
        "`ab` needs two characters (`a` and `a.c` exist)"
    );
    assert_eq!(cache_runs(&repo), ["a", "a-b", "a.c", "ab"]);

    // Packed refs give the same list, from the cache and from scratch.
    repo.git(&["pack-refs", "--all"]);
    assert_eq!(listed(&repo), loose);
    std::fs::remove_file(repo.path().join(".git/agent-rewind/cache/runs.lines")).unwrap();
    assert_eq!(listed(&repo), loose);

    // A loose ref over a packed one (a checkpoint of a packed run) is what counts.
    repo.write("x.txt", "x\n");
    repo.ok(&["checkpoint", "edit", "--run", "ab", "--status", "failed"]);
    let after = listed(&repo);
    let ab = after.iter().find(|r| r.0 == "ab").unwrap();
    assert_eq!((ab.1.clone(), ab.2.clone()), ("failed".into(), 2.into()));

    // Only the notes move (rewinding archives the source with a line on its root note,
    // its HEAD stays): the cache must notice.
    let head = repo.rev("refs/agent-runs/a/HEAD");
    repo.ok(&[
        "rewind",
        "a",
        "--to",
        "plan",
        "--run",
        "a2",
        "--no-checkout",
    ]);
    assert_eq!(repo.rev("refs/agent-runs/a/HEAD"), head);
    let after = listed(&repo);
    assert_eq!(after.iter().find(|r| r.0 == "a").unwrap().1, "archived");

    // A deleted run leaves the list and the cache.
    repo.ok(&["delete", "a-b", "--force"]);
    let after = listed(&repo);
    assert!(after.iter().all(|r| r.0 != "a-b"), "{after:?}");
    assert!(!cache_runs(&repo).contains(&"a-b".to_string()));

    // Fetched runs appear.
    let other = Repo::new();
    other.ok(&["start", "--run", "zz", "--label", "theirs"]);
    repo.git(&["remote", "add", "other", other.path().to_str().unwrap()]);
    repo.ok(&["fetch", "other"]);
    let list = repo.json(&["list"]);
    assert_eq!(run_entry(&list, "zz")["label"], "theirs");
    assert!(cache_runs(&repo).contains(&"zz".to_string()));
}

#[test]
fn list_json_is_an_array_with_one_run_per_line() {
    let repo = Repo::new();
    assert_eq!(repo.ok(&["--json", "list"]).trim(), "[]");
    repo.ok(&["start", "--run", "r1", "--label", "tab\there"]);
    repo.ok(&["start", "--run", "r2"]);
    let text = repo.ok(&["--json", "list"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert_eq!((lines[0], lines[3]), ("[", "]"));
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc.as_array().unwrap().len(), 2);
    assert_eq!(run_entry(&doc, "r1")["label"], "tab\there");
    // The same summaries as the human table's source: every field of the schema.
    let r1 = run_entry(&doc, "r1");
    for key in [
        "run",
        "label",
        "status",
        "archived",
        "steps",
        "checkpoints",
        "last_activity",
        "head",
        "rewound_from",
        "forked_from",
        "unique_prefix",
    ] {
        assert!(r1.get(key).is_some(), "{key} missing: {r1}");
    }
}
