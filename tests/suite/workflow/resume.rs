//! What resume reruns: input changes cascade downstream and only downstream; after a rewind,
//! earlier steps are inherited and the done effect is not repeated.

use super::{
    FEATURE, FEATURE_STEPS, Wf, action, assert_all_skipped, feature_text, step_of, with_action,
};
use crate::common;

// ---------------------------------------------------------------------------------------
// 3. Input changes cascade downstream, and only downstream.

#[test]
fn changed_input_reruns_what_depends_on_it() {
    let wf = Wf::feature();
    wf.json(&["run", FEATURE, "--run", "r1"]);
    assert_eq!(wf.counts(&FEATURE_STEPS), [1, 1, 1, 1]);
    let pr = wf.repo.rev("refs/agent-runs/r1/open-pr");

    // A file no step reads changes nothing.
    wf.repo.write("README.md", "hello, changed\n");
    wf.repo.write("NOTES.txt", "scratch\n");
    let idle = wf.json(&["resume", "r1"]);
    assert_all_skipped(&idle, &FEATURE_STEPS);
    assert_eq!(wf.counts(&FEATURE_STEPS), [1, 1, 1, 1]);

    wf.repo.write("TASK.md", "task v2\n");
    let report = wf.json(&["resume", "r1"]);
    assert_eq!(report["finished"], true, "{report:#}");
    assert_eq!(
        with_action(&report, "ran"),
        ["plan", "implement", "test"],
        "{report:#}"
    );
    assert!(
        step_of(&report, "plan")["reason"]
            .as_str()
            .unwrap()
            .contains("inputs changed"),
        "{report:#}"
    );
    // The effect downstream is reconsidered, but its idempotency key already completed in
    // this run, so it is not repeated (docs/COMMANDS.md "Workflows").
    let effect = step_of(&report, "open-pr");
    assert_eq!(effect["action"], "skipped-effect", "{effect}");
    assert_eq!(
        wf.json(&["show", "r1/open-pr"])["meta"]["duplicate_of"],
        pr.as_str()
    );
    assert_eq!(wf.counts(&FEATURE_STEPS), [2, 2, 2, 1]);
    assert!(wf.repo.read("out/plan.md").contains("task v2"));
    assert!(wf.repo.read("out/code.txt").contains("task v2"));

    // Settled: nothing more to do.
    let idle = wf.json(&["resume", "r1"]);
    assert_all_skipped(&idle, &FEATURE_STEPS);
    assert_eq!(wf.counts(&FEATURE_STEPS), [2, 2, 2, 1]);
    wf.repo.assert_fsck();
}

const CHAINS: &str = r#"# Two independent chains: a -> b and c -> d.
[workflow]
name = "chains"

[[steps]]
name = "a"
kind = "agent"
run = "sh fixtures/agents/fake-agent.sh out/a.txt A.txt"
inputs = ["A.txt"]

[[steps]]
name = "b"
kind = "deterministic"
run = "sh fixtures/agents/fake-agent.sh out/b.txt out/a.txt"

[[steps]]
name = "c"
kind = "agent"
run = "sh fixtures/agents/fake-agent.sh out/c.txt C.txt"
inputs = ["C.txt"]
needs = []

[[steps]]
name = "d"
kind = "deterministic"
run = "sh fixtures/agents/fake-agent.sh out/d.txt out/c.txt"
"#;

#[test]
fn independent_chains_rerun_only_the_changed_one() {
    let wf = Wf::new("fixtures/chains.toml", CHAINS);
    wf.repo.write("A.txt", "a v1\n");
    wf.repo.write("C.txt", "c v1\n");
    let steps = ["a", "b", "c", "d"];
    let report = wf.json(&["run", "fixtures/chains.toml", "--run", "r1"]);
    assert_eq!(report["finished"], true, "{report:#}");
    assert_eq!(wf.counts(&steps), [1, 1, 1, 1]);

    wf.repo.write("C.txt", "c v2\n");
    let report = wf.json(&["resume", "r1"]);
    assert_eq!(report["finished"], true, "{report:#}");
    assert_eq!(with_action(&report, "ran"), ["c", "d"], "{report:#}");
    assert_eq!(with_action(&report, "skipped"), ["a", "b"], "{report:#}");
    assert_eq!(wf.counts(&steps), [1, 1, 2, 2]);
    assert!(wf.repo.read("out/d.txt").contains("c v2"));

    wf.repo.write("A.txt", "a v2\n");
    let report = wf.json(&["resume", "r1"]);
    assert_eq!(with_action(&report, "ran"), ["a", "b"], "{report:#}");
    assert_eq!(with_action(&report, "skipped"), ["c", "d"], "{report:#}");
    assert_eq!(wf.counts(&steps), [2, 2, 2, 2]);

    let idle = wf.json(&["resume", "r1"]);
    assert_all_skipped(&idle, &steps);
    assert_eq!(wf.counts(&steps), [2, 2, 2, 2]);
}

// ---------------------------------------------------------------------------------------
// 4. Rewind, then resume: earlier steps are inherited, the effect is not repeated, and the
//    re-entered step gets the agent session recorded at that point.

/// feature.toml, where plan records agent session S-1 and open-pr session S-2 (as an agent
/// hook would, with a `turn` checkpoint of the running step).
fn feature_with_sessions() -> String {
    let bin = common::bin().display().to_string();
    assert!(
        !bin.contains(['"', '\\', '\'']),
        "unusual binary path {bin}"
    );
    let turn = |session: &str, step: &str| {
        format!(
            " && '{bin}' checkpoint {step} --run \\\"$AGENT_RUN\\\" --event turn --session-id {session}"
        )
    };
    let text = feature_text();
    let plan = "run = \"sh fixtures/agents/fake-agent.sh out/plan.md TASK.md";
    let pr = "run = \"sh fixtures/agents/fake-agent.sh out/pr.txt out/test.log";
    assert!(text.contains(plan) && text.contains(pr), "fixture changed");
    text.replace(plan, &format!("{plan}{}", turn("S-1", "plan")))
        .replace(pr, &format!("{pr}{}", turn("S-2", "open-pr")))
}

#[test]
fn rewind_then_resume_skips_inherited_steps_and_the_done_effect() {
    let wf = Wf::new(FEATURE, &feature_with_sessions());
    let report = wf.json(&["run", FEATURE, "--run", "r1"]);
    assert_eq!(report["finished"], true, "{report:#}");
    assert_eq!(wf.counts(&FEATURE_STEPS), [1, 1, 1, 1]);
    // The sessions were recorded, and later steps of r1 were handed the newest one.
    let list = wf.list("r1");
    let turns: Vec<(&str, &str)> = list
        .iter()
        .filter(|c| c["event"] == "turn")
        .map(|c| {
            (
                c["step"].as_str().unwrap(),
                c["sdk_session_id"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(turns, [("plan", "S-1"), ("open-pr", "S-2")], "{list:#?}");
    assert!(wf.invocations("plan")[0].contains("session= "));
    assert!(wf.invocations("test")[0].contains("session=S-1 "));
    let pr = wf.repo.rev("refs/agent-runs/r1/open-pr");
    let pr_key = wf.json(&["show", "r1/open-pr"])["idempotency_key"].clone();
    assert!(pr_key.is_string());

    let rw = wf.json(&["rewind", "r1", "--to", "test", "--run", "r2"]);
    assert_eq!(rw["run"], "r2");
    assert_eq!(rw["from_step"], "test");
    let inherited: Vec<&str> = rw["inherited_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(inherited, ["implement", "plan"], "{rw:#}");
    assert_eq!(rw["sdk_session_id"], "S-1", "{rw:#}");
    // The state before test: its output and the PR are not there.
    assert!(wf.path().join("out/code.txt").exists());
    assert!(!wf.path().join("out/test.log").exists());
    assert!(!wf.path().join("out/pr.txt").exists());
    assert_eq!(wf.json(&["status"])["run"], "r2");

    // `resume` without a run continues the active one: r2.
    let report = wf.json(&["resume"]);
    assert_eq!(report["run"], "r2");
    assert_eq!(report["finished"], true, "{report:#}");
    assert_eq!(action(&report, "plan"), "skipped");
    assert_eq!(action(&report, "implement"), "skipped");
    let t = step_of(&report, "test");
    assert_eq!(t["action"], "ran", "{t}");
    assert_eq!(t["status"], "completed", "{t}");
    let effect = step_of(&report, "open-pr");
    assert_eq!(effect["action"], "skipped-effect", "{report:#}");
    assert_eq!(effect["status"], "skipped", "{effect}");
    assert_eq!(wf.counts(&FEATURE_STEPS), [1, 1, 2, 1]);

    // The re-entered step got the session recorded at the rewind point, not the later one.
    let test_calls = wf.invocations("test");
    assert!(
        test_calls[1].contains("session=S-1 "),
        "AGENT_RESUME_SESSION of the re-entered step: {test_calls:?}"
    );

    // The skipped effect points at the original.
    let dup = wf.json(&["show", "r2/open-pr"]);
    assert_eq!(dup["status"], "skipped", "{dup:#}");
    assert_eq!(dup["meta"]["duplicate_of"], pr.as_str(), "{dup:#}");
    assert_eq!(dup["idempotency_key"], pr_key, "{dup:#}");
    assert_eq!(
        effect["checkpoint"].as_str().unwrap(),
        wf.repo.rev("refs/agent-runs/r2/open-pr")
    );
    // The source run is untouched.
    assert_eq!(wf.repo.rev("refs/agent-runs/r1/open-pr"), pr);

    let idle = wf.json(&["resume", "r2"]);
    assert_all_skipped(&idle, &FEATURE_STEPS);
    assert_eq!(wf.counts(&FEATURE_STEPS), [1, 1, 2, 1]);
    wf.repo.assert_fsck();
}
