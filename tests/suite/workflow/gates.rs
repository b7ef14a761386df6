//! Gates: a gate passes only with an approval of its exact checkpoint.

use super::{Wf, action, feature_text, step_of, with_action};
use serde_json::Value;

// ---------------------------------------------------------------------------------------
// 5. Gates.

fn gated_text() -> String {
    let text = feature_text();
    let at = text
        .find("[[steps]]\nname = \"open-pr\"")
        .expect("fixture changed");
    format!(
        "{}[[steps]]\nname = \"review\"\nkind = \"gate\"\n\n{}",
        &text[..at],
        &text[at..]
    )
}

#[test]
fn gate_passes_only_with_an_approval_of_its_exact_checkpoint() {
    let wf = Wf::new("fixtures/gated.toml", &gated_text());
    let steps = ["plan", "implement", "test", "open-pr"];
    let report = wf.json(&["run", "fixtures/gated.toml", "--run", "r1"]);
    assert_eq!(report["finished"], false, "{report:#}");
    let gate = step_of(&report, "review");
    assert_eq!(gate["action"], "gate-opened", "{gate}");
    assert_eq!(gate["status"], "awaiting_approval", "{gate}");
    let gate_cp = gate["checkpoint"].as_str().unwrap().to_string();
    assert_eq!(gate_cp, wf.repo.rev("refs/agent-runs/r1/review"));
    assert!(
        report["next_action"]
            .as_str()
            .unwrap()
            .contains(&format!("approve {gate_cp}")),
        "{report:#}"
    );
    assert_eq!(wf.counts(&steps), [1, 1, 1, 0]);

    // Resume stops at the gate and names the same checkpoint.
    let stops_at_gate = |what: &str| -> Value {
        let r = wf.json(&["resume", "r1"]);
        assert_eq!(r["finished"], false, "{what}: {r:#}");
        assert_eq!(action(&r, "review"), "stopped", "{what}: {r:#}");
        assert!(
            r["stopped"]
                .as_str()
                .is_some_and(|s| s.contains("awaiting approval")),
            "{what}: {r:#}"
        );
        r
    };
    let r = stops_at_gate("no approval yet");
    assert!(
        r["next_action"]
            .as_str()
            .unwrap()
            .contains(&format!("approve {gate_cp}")),
        "{r:#}"
    );
    assert_eq!(wf.counts(&steps), [1, 1, 1, 0]);

    // Files that look like approvals never count.
    wf.repo.write("APPROVED", "approved by everyone\n");
    wf.repo.write(".agent-rewind/approved", "yes\n");
    stops_at_gate("an APPROVED file on disk");
    assert_eq!(wf.counts(&steps), [1, 1, 1, 0]);

    // Approving a checkpoint that is not a gate is refused, and writes nothing.
    let notes = wf.repo.rev("refs/notes/agent-runs/r1");
    let out = wf.out(&["approve", "r1/test", "--by", "alice"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not a gate"), "{err}");
    // An empty --by is refused.
    let out = wf.out(&["approve", &gate_cp, "--by", " "]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(wf.repo.rev("refs/notes/agent-runs/r1"), notes);
    stops_at_gate("approval of the test checkpoint refused");
    assert_eq!(wf.counts(&steps), [1, 1, 1, 0]);

    // The gate's own checkpoint approved: resume passes and runs the rest.
    let approval = wf.json(&["approve", &gate_cp, "--by", "bob", "-m", "looks good"]);
    assert_eq!(approval["checkpoint"], gate_cp.as_str(), "{approval:#}");
    let r = wf.json(&["resume", "r1"]);
    assert_eq!(r["finished"], true, "{r:#}");
    let passed = step_of(&r, "review");
    assert_eq!(passed["action"], "gate-passed", "{passed}");
    assert!(
        passed["reason"].as_str().unwrap().contains("bob"),
        "{passed}"
    );
    assert_eq!(action(&r, "open-pr"), "ran");
    assert_eq!(wf.counts(&steps), [1, 1, 1, 1]);

    // New upstream work: the chain re-runs and the gate asks again, on a new checkpoint.
    wf.repo.write("TASK.md", "task v2\n");
    let r = wf.json(&["resume", "r1"]);
    assert_eq!(r["finished"], false, "{r:#}");
    assert_eq!(
        with_action(&r, "ran"),
        ["plan", "implement", "test"],
        "{r:#}"
    );
    let reopened = step_of(&r, "review");
    assert_eq!(reopened["action"], "gate-opened", "{reopened}");
    let gate2 = reopened["checkpoint"].as_str().unwrap().to_string();
    assert_ne!(gate2, gate_cp);
    assert_eq!(wf.counts(&steps), [2, 2, 2, 1]);
    // The old approval is void; approving the old checkpoint again is an error naming the
    // new one and what changed.
    stops_at_gate("old approval");
    let out = wf.out(&["approve", &gate_cp, "--by", "bob"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("superseded by") && err.contains(&gate2[..12]) && err.contains("opened again"),
        "{err}"
    );
    let r = stops_at_gate("old checkpoint approved again");
    assert!(
        r["next_action"]
            .as_str()
            .unwrap()
            .contains(&format!("approve {gate2}")),
        "{r:#}"
    );
    assert_eq!(wf.counts(&steps), [2, 2, 2, 1]);

    // Rejected: resume stops and says so.
    wf.ok(&["reject", &gate2, "--by", "carol", "-m", "not like this"]);
    let r = wf.json(&["resume", "r1"]);
    assert_eq!(r["finished"], false, "{r:#}");
    assert_eq!(action(&r, "review"), "stopped", "{r:#}");
    let why = r["stopped"].as_str().unwrap();
    assert!(why.contains("rejected") && why.contains("carol"), "{r:#}");
    assert_eq!(wf.counts(&steps), [2, 2, 2, 1]);
    wf.repo.assert_fsck();
}

/// The line after "next:" of `status` and of `status` the runner printed for the same stop.
fn next_line(text: &str) -> String {
    text.lines()
        .find_map(|l| l.trim_start().strip_prefix("next: "))
        .unwrap_or_else(|| panic!("no next: in {text}"))
        .to_string()
}

/// A gate waiting for a decision and a rejected gate: the runner and `status` say the same
/// next step in the same words.
#[test]
fn the_runner_and_status_say_the_same_next_step() {
    let wf = Wf::new("fixtures/gated.toml", &gated_text());
    let out = wf.out(&["run", "fixtures/gated.toml", "--run", "r1"]);
    assert_eq!(out.status.code(), Some(3));
    let ran = next_line(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(ran, next_line(&wf.ok(&["status"])));
    assert!(ran.contains("(or `reject`)"), "{ran}");
    let gate_cp = wf.repo.rev("refs/agent-runs/r1/review");
    wf.ok(&["reject", &gate_cp]);
    let out = wf.out(&["resume", "r1"]);
    let resumed = next_line(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(resumed, next_line(&wf.ok(&["status"])));
    assert!(resumed.contains(&format!("approve {gate_cp}")), "{resumed}");
}
