//! `show`, `diff`, `log`, `status`: what they print for a small run with a rewind and a fork.

use crate::common;

use common::Repo;
use serde_json::Value;

fn setup() -> Repo {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1", "--label", "demo"]);
    repo.ok(&[
        "step",
        "begin",
        "plan",
        "--kind",
        "agent",
        "--session-id",
        "s-plan",
    ]);
    repo.write("plan.md", "one\ntwo\nthree\n");
    repo.ok(&["step", "end", "plan", "--status", "completed"]);
    repo.ok(&["step", "begin", "implement", "--kind", "agent"]);
    repo.write("plan.md", "one\n2\nthree\n");
    repo.write("code.rs", "fn main() {}\n");
    std::fs::write(repo.path().join("blob.bin"), [0u8, 1, 2, 255]).unwrap();
    repo.ok(&[
        "step",
        "end",
        "implement",
        "--status",
        "failed",
        "-m",
        "did not compile",
    ]);
    repo
}

#[test]
fn diff_shows_files_and_metadata_between_checkpoints() {
    let repo = setup();
    let d = repo.json(&["diff", "r1/plan", "r1/implement"]);
    let files = d["files"].as_array().unwrap();
    let by_path = |p: &str| {
        files
            .iter()
            .find(|f| f["path"] == p)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(by_path("plan.md")["change"], "M");
    let patch = by_path("plan.md")["patch"].as_str().unwrap().to_string();
    assert!(patch.contains("-two") && patch.contains("+2"), "{patch}");
    assert_eq!(by_path("code.rs")["change"], "A");
    assert_eq!(by_path("blob.bin")["binary"], true);
    assert!(by_path("blob.bin")["patch"].is_null());
    let meta = d["metadata"].as_array().unwrap();
    let field = |f: &str| {
        meta.iter()
            .find(|m| m["field"] == f)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(field("status")["from"], "completed");
    assert_eq!(field("status")["to"], "failed");
    assert_eq!(field("step")["to"], "implement");

    // One argument: against its predecessor (the implement begin), so only the files.
    let single = repo.json(&["diff", "r1/implement"]);
    assert_eq!(
        single["from"],
        repo.rev("refs/agent-runs/r1/implement~1").as_str()
    );
    assert_eq!(
        single["to"],
        repo.rev("refs/agent-runs/r1/implement").as_str()
    );
}

#[test]
fn show_names_files_changed_and_records() {
    let repo = setup();
    let shown = repo.json(&["show", "r1/implement"]);
    assert_eq!(shown["step"], "implement");
    assert_eq!(shown["status"], "failed");
    assert_eq!(shown["message"], "did not compile");
    let files: Vec<String> = shown["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(files, ["blob.bin", "code.rs", "plan.md"]);
    let human = repo.ok(&["show", "r1/implement"]);
    assert!(
        human.contains("M plan.md") && human.contains("A code.rs"),
        "{human}"
    );
}

#[test]
fn log_and_status_follow_rewinds_and_forks() {
    let repo = setup();
    repo.ok(&["rewind", "r1", "--to", "implement", "--run", "r2"]);
    repo.ok(&[
        "fork",
        "r1",
        "--to",
        "plan",
        "--after",
        "--run",
        "r3",
        "--no-checkout",
    ]);
    let log: Vec<Value> = repo.json(&["log", "r2"]).as_array().unwrap().clone();
    let runs: Vec<&str> = log.iter().map(|c| c["run"].as_str().unwrap()).collect();
    assert_eq!(runs.first(), Some(&"r2"));
    assert!(runs.contains(&"r1"), "{runs:?}");
    assert_eq!(log[0]["event"], "root");
    assert_eq!(log[0]["rewound_from"]["run"], "r1");

    let graph = repo.json(&["log", "r3", "--graph"]);
    let runs = graph["runs"].as_array().unwrap();
    assert_eq!(runs[0]["run"], "r1");
    let children: Vec<(&str, &str)> = runs[1..]
        .iter()
        .map(|c| {
            (
                c["run"].as_str().unwrap(),
                c["origin"]["kind"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(children, [("r2", "rewound"), ("r3", "forked")]);
    assert!(repo.ok(&["log", "r1", "--graph"]).contains("└─ r3"));

    let status = repo.json(&["status"]);
    assert_eq!(status["run"], "r2");
    assert!(
        status["next_action"]
            .as_str()
            .unwrap()
            .contains("implement"),
        "{status:#}"
    );
    assert_eq!(status["summary"]["label"], "demo");
}

#[test]
fn diff_stat_is_git_s_stat_alone_and_meta_adds_the_metadata() {
    let repo = setup();
    let git_stat = repo.git(&[
        "diff",
        "--stat",
        "refs/agent-runs/r1/plan",
        "refs/agent-runs/r1/implement",
    ]);
    let stat = repo.ok(&["diff", "--stat", "r1/plan", "r1/implement"]);
    assert!(!stat.contains("metadata"), "{stat}");
    assert_eq!(stat.trim_end(), git_stat.trim_end());
    let with_meta = repo.ok(&["diff", "--stat", "--meta", "r1/plan", "r1/implement"]);
    assert!(with_meta.starts_with("metadata "), "{with_meta}");
    assert!(
        with_meta.trim_end().ends_with(git_stat.trim_end()),
        "{with_meta}"
    );
    // Without --stat the metadata comes first, as before.
    let full = repo.ok(&["diff", "r1/plan", "r1/implement"]);
    assert!(
        full.contains("metadata status: \"completed\" -> \"failed\""),
        "{full}"
    );

    // --json honours --stat: counts instead of patches, no metadata unless --meta.
    let d = repo.json(&["diff", "--stat", "r1/plan", "r1/implement"]);
    let files = d["files"].as_array().unwrap();
    let plan = files.iter().find(|f| f["path"] == "plan.md").unwrap();
    assert!(plan["patch"].is_null(), "{plan}");
    assert_eq!(
        (plan["insertions"].as_u64(), plan["deletions"].as_u64()),
        (Some(1), Some(1))
    );
    let code = files.iter().find(|f| f["path"] == "code.rs").unwrap();
    assert_eq!(code["insertions"], 1);
    assert_eq!(d["metadata"].as_array().map(Vec::len), Some(0), "{d:#}");
    let d = repo.json(&["diff", "--stat", "--meta", "r1/plan", "r1/implement"]);
    assert!(!d["metadata"].as_array().unwrap().is_empty(), "{d:#}");
}

/// A bare repository has no worktree to start a run in: `status` does not suggest `start`.
#[test]
fn status_in_a_bare_repository_does_not_suggest_start() {
    let dir = tempfile::tempdir().unwrap();
    common::git_in(dir.path(), &["init", "-q", "--bare"]);
    let out = common::ok_in(dir.path(), &["status"]);
    assert!(!out.contains("start"), "{out}");
    assert!(out.contains("bare repository"), "{out}");
    let refused = common::run_in(dir.path(), &["start"]);
    assert_eq!(refused.status.code(), Some(1), "start in a bare repository");
}
