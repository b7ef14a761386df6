//! The runs as `list`, `status` and `log --graph` show them: each run's state apart from the
//! active run of this worktree (`*`, as `git branch`), steps in the order they happened,
//! and every tree of runs.

use super::hand_recorded_run;
use crate::common::{git_in, json_in, ok_in};
use serde_json::Value;

fn runs(doc: &Value) -> Vec<(String, String, bool)> {
    doc.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["run"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
                r["active"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// `list`'s line of `run` (the marker column included).
fn line_of<'a>(table: &'a str, run: &str) -> &'a str {
    table
        .lines()
        .find(|l| {
            l.get(2..)
                .is_some_and(|rest| rest.starts_with(&format!("{run} ")))
        })
        .unwrap_or_else(|| panic!("{run} not in {table}"))
}

#[test]
fn a_run_s_state_is_apart_from_the_active_run_of_the_worktree() {
    let repo = hand_recorded_run();
    repo.ok(&[
        "fork",
        "r1",
        "--to",
        "alpha",
        "--run",
        "r2",
        "--no-checkout",
    ]);
    repo.ok(&["start", "--run", "r3"]);
    // Three open runs, one of them this worktree's: one marker, no state named `active`.
    let table = repo.ok(&["list"]);
    assert!(table.starts_with("  RUN "), "{table}");
    assert!(line_of(&table, "r3").starts_with("* r3 "), "{table}");
    for run in ["r1", "r2"] {
        assert!(
            line_of(&table, run).starts_with(&format!("  {run} ")),
            "{table}"
        );
    }
    assert_eq!(table.matches("* ").count(), 1, "{table}");
    assert!(!table.contains("active"), "{table}");
    assert!(line_of(&table, "r1").contains(" waiting "), "{table}");
    let listed = runs(&repo.json(&["list"]));
    assert_eq!(
        listed,
        [
            ("r3".into(), "waiting".into(), true),
            ("r2".into(), "waiting".into(), false),
            ("r1".into(), "waiting".into(), false),
        ]
    );
    let status = repo.json(&["status"]);
    assert_eq!(status["summary"]["status"], "waiting");
    assert_eq!(status["summary"]["active"], true);
    let text = repo.ok(&["status"]);
    assert!(text.starts_with("active run r3 [waiting]"), "{text}");

    // A teammate's clone has the runs and no active run: none marked, none `active`.
    let clone = tempfile::tempdir().unwrap();
    let theirs = clone.path().join("theirs");
    git_in(
        clone.path(),
        &["clone", "-q", repo.path().to_str().unwrap(), "theirs"],
    );
    ok_in(&theirs, &["fetch", "origin"]);
    let table = ok_in(&theirs, &["list"]);
    assert!(
        !table.contains("* ") && !table.contains("active"),
        "{table}"
    );
    let listed = runs(&json_in(&theirs, &["list"]));
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert!(
        listed.iter().all(|(_, s, a)| s == "waiting" && !a),
        "{listed:?}"
    );
}

#[test]
fn steps_are_listed_in_the_order_they_first_happened() {
    let repo = hand_recorded_run();
    // A second attempt of the first step does not move it.
    repo.ok(&["step", "begin", "zeta"]);
    repo.ok(&["step", "end", "zeta", "--status", "completed"]);
    let want = ["zeta", "alpha", "mid"];
    let list = repo.json(&["list"]);
    assert_eq!(list[0]["steps"], serde_json::json!(want), "{list}");
    let table = repo.ok(&["list"]);
    assert!(
        line_of(&table, "r1").contains(" zeta,alpha,mid "),
        "{table}"
    );
    let status = repo.json(&["status"]);
    assert_eq!(status["summary"]["steps"], serde_json::json!(want));
    let out = repo.run(&["show", "r1/nope"]);
    let err = crate::common::stderr(&out);
    assert!(
        err.contains("the steps of run r1: zeta, alpha, mid"),
        "{err}"
    );
    // A run rewound from it lists what it inherited in the same order.
    repo.ok(&["rewind", "r1", "--to", "mid", "--run", "r2"]);
    let list = repo.json(&["list", "--all"]);
    let r2 = list
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run"] == "r2")
        .unwrap();
    assert_eq!(r2["steps"], serde_json::json!(["zeta", "alpha"]), "{r2}");
}

#[test]
fn log_graph_without_a_run_shows_every_tree_with_archived_ones_folded() {
    let repo = hand_recorded_run();
    repo.ok(&["rewind", "r1", "--to", "alpha", "--run", "r2"]);
    repo.ok(&[
        "fork",
        "r1",
        "--to",
        "zeta",
        "--after",
        "--run",
        "r3",
        "--no-checkout",
    ]);
    // A fresh start: the active run alone is one line; the other tree is shown too.
    repo.ok(&["start", "--run", "r4"]);
    let graph = repo.ok(&["log", "--graph"]);
    for want in [
        "r4 * [waiting]",
        "r1 [archived]",
        "├─ r2 [waiting] rewound at r1/alpha",
        "└─ r3 [waiting] forked at r1/zeta",
    ] {
        assert!(graph.contains(want), "{want:?} in {graph}");
    }
    // A tree of archived runs alone is folded, and shown with --all.
    repo.ok(&["rewind", "r4", "--to", "@0", "--run", "r5"]);
    repo.ok(&["rewind", "r5", "--to", "@0", "--run", "r6"]);
    repo.ok(&["start", "--run", "r7"]);
    repo.ok(&["delete", "r6"]);
    let graph = repo.ok(&["log", "--graph"]);
    assert!(!graph.contains("r4") && !graph.contains("r5"), "{graph}");
    assert!(
        graph.contains("2 archived runs in trees of their own folded"),
        "{graph}"
    );
    assert!(
        graph.contains("r7 * [waiting]") && graph.contains("r1 [archived]"),
        "{graph}"
    );
    let all = repo.ok(&["log", "--graph", "--all"]);
    assert!(
        all.contains("r4 [archived]\n└─ r5 [archived] rewound at r4"),
        "{all}"
    );
    // The machine formats hold every run.
    let doc = repo.json(&["log", "--graph"]);
    let names: Vec<&str> = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_str().unwrap())
        .collect();
    for run in ["r1", "r2", "r3", "r4", "r5", "r7"] {
        assert!(names.contains(&run), "{run} in {names:?}");
    }
    let mermaid = repo.ok(&["log", "--graph", "--format", "mermaid"]);
    assert!(
        mermaid.contains("r7") && mermaid.contains("r3"),
        "{mermaid}"
    );
    // A named run still shows its own tree.
    let one = repo.ok(&["log", "r2", "--graph"]);
    assert!(!one.contains("r7"), "{one}");
}
