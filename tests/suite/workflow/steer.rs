//! Steer: the blast radius is shown, then applied, and resume reruns exactly it.

use super::{FEATURE, Wf, action, assert_all_skipped, stderr, with_action};
use serde_json::Value;

// ---------------------------------------------------------------------------------------
// 6. Steer.

const STEERED: &str = r#"[workflow]
name = "steered"

[[steps]]
name = "plan"
kind = "agent"
run = "sh fixtures/agents/fake-agent.sh out/plan.md TASK.md"
inputs = ["TASK.md"]

[[steps]]
name = "implement"
kind = "agent"
run = "sh fixtures/agents/fake-agent.sh out/code.txt out/plan.md"

[[steps]]
name = "test"
kind = "deterministic"
run = "sh fixtures/agents/fake-agent.sh out/test.log out/code.txt"

[[steps]]
name = "docs"
kind = "deterministic"
run = "sh fixtures/agents/fake-agent.sh out/docs.txt DOCS.md"
inputs = ["DOCS.md"]
needs = []
"#;

fn radius(outcome: &Value) -> Vec<String> {
    outcome["blast_radius"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["step"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn steer_shows_the_blast_radius_then_applies_and_resume_reruns_exactly_it() {
    let wf = Wf::new("fixtures/steered.toml", STEERED);
    wf.repo.write("DOCS.md", "docs v1\n");
    let steps = ["plan", "implement", "test", "docs"];
    wf.json(&["run", "fixtures/steered.toml", "--run", "r1"]);
    assert_eq!(wf.counts(&steps), [1, 1, 1, 1]);

    let new_task = wf.counts.path().join("new-task.md");
    std::fs::write(&new_task, "task v2, steered\n").unwrap();
    let edit = format!("TASK.md={}", new_task.display());

    // Dry runs (explicit, and the default without --yes) change nothing.
    let refs_before = wf.all_refs();
    let tree_before = wf.repo.add_all_tree();
    let dry = wf.json(&["steer", "r1", "--edit", &edit, "--dry-run"]);
    assert_eq!(dry["applied"], false, "{dry:#}");
    assert!(dry["checkpoint"].is_null(), "{dry:#}");
    assert_eq!(dry["edits"], serde_json::json!(["TASK.md"]));
    assert_eq!(radius(&dry), ["plan", "implement", "test"], "{dry:#}");
    assert!(
        dry["blast_radius"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("TASK.md"),
        "{dry:#}"
    );
    let default = wf.json(&["steer", "r1", "--invalidate", "docs"]);
    assert_eq!(default["applied"], false, "{default:#}");
    assert_eq!(radius(&default), ["docs"], "{default:#}");
    assert_eq!(wf.all_refs(), refs_before, "a dry-run steer wrote refs");
    assert_eq!(wf.repo.read("TASK.md"), "task v1\n");
    assert_eq!(
        wf.repo.add_all_tree(),
        tree_before,
        "a dry-run steer wrote files"
    );
    // Nothing changed, so nothing re-runs.
    assert_all_skipped(&wf.json(&["resume", "r1"]), &steps);
    assert_eq!(wf.counts(&steps), [1, 1, 1, 1]);

    // Applied: the file is written and a steer checkpoint is the receipt.
    let applied = wf.json(&["steer", "r1", "--edit", &edit, "--yes"]);
    assert_eq!(applied["applied"], true, "{applied:#}");
    assert_eq!(radius(&applied), ["plan", "implement", "test"]);
    assert_eq!(wf.repo.read("TASK.md"), "task v2, steered\n");
    let receipt = applied["checkpoint"].as_str().unwrap().to_string();
    assert_eq!(wf.repo.rev("refs/agent-runs/r1/HEAD"), receipt);
    let last = wf.list("r1").last().cloned().unwrap();
    assert_eq!(last["checkpoint"], receipt.as_str());
    assert_eq!(last["event"], "steer", "{last:#}");
    assert_eq!(last["meta"]["edits"], "TASK.md", "{last:#}");
    assert_eq!(last["meta"]["invalidate"], "", "{last:#}");

    let r = wf.json(&["resume", "r1"]);
    assert_eq!(r["finished"], true, "{r:#}");
    assert_eq!(
        with_action(&r, "ran"),
        ["plan", "implement", "test"],
        "{r:#}"
    );
    assert_eq!(action(&r, "docs"), "skipped");
    assert_eq!(wf.counts(&steps), [2, 2, 2, 1]);
    assert!(wf.repo.read("out/code.txt").contains("task v2, steered"));

    // Invalidate one step: it and what depends on it re-run, nothing else.
    let applied = wf.json(&["steer", "r1", "--invalidate", "implement", "--yes"]);
    assert_eq!(applied["applied"], true, "{applied:#}");
    assert_eq!(applied["invalidated"], serde_json::json!(["implement"]));
    assert_eq!(radius(&applied), ["implement", "test"], "{applied:#}");
    let last = wf.list("r1").last().cloned().unwrap();
    assert_eq!(last["event"], "steer", "{last:#}");
    assert_eq!(last["meta"]["invalidate"], "implement", "{last:#}");
    let r = wf.json(&["resume", "r1"]);
    assert_eq!(with_action(&r, "ran"), ["implement", "test"], "{r:#}");
    assert_eq!(wf.counts(&steps), [2, 3, 3, 1]);

    // Steered once: the next resume has nothing left to do.
    assert_all_skipped(&wf.json(&["resume", "r1"]), &steps);
    assert_eq!(wf.counts(&steps), [2, 3, 3, 1]);
    wf.repo.assert_fsck();
}

#[test]
fn a_running_run_is_not_steered() {
    let wf = Wf::feature();
    let mut runner = wf.spawn_sleeping(&["run", FEATURE, "--run", "r1"], "implement");
    let refs_before = wf.all_refs();
    let out = wf.out(&["steer", "r1", "--invalidate", "plan", "--yes"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("running"), "{}", stderr(&out));
    assert_eq!(wf.all_refs(), refs_before, "a refused steer wrote refs");
    runner.kill();
    // Once the runner is gone, the run can be steered.
    let applied = wf.json(&["steer", "r1", "--invalidate", "plan", "--yes"]);
    assert_eq!(applied["applied"], true, "{applied:#}");
}
