//! State is honest: `undo` of a rewind puts back the active run and the
//! source's status and says what it did with the new run and its branch; gate decisions show
//! in `list` and `status`; approvals of the wrong checkpoint are refused; `status`'s next
//! action follows the state; a step begun again before its end never leaves an attempt
//! running for ever.

use crate::common;
use crate::common::stderr;

use common::Repo;
use serde_json::Value;

fn run_status(repo: &Repo, run: &str) -> String {
    let all = repo.json(&["list", "--all"]);
    all.as_array()
        .unwrap()
        .iter()
        .find(|r| r["run"] == run)
        .unwrap_or_else(|| panic!("{run} not listed: {all}"))["status"]
        .as_str()
        .unwrap()
        .to_string()
}

fn listed(repo: &Repo) -> Vec<String> {
    repo.json(&["list"])
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn undo_of_a_rewind_restores_the_active_run_and_the_source() {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1"]);
    repo.ok(&["step", "begin", "plan", "--kind", "agent"]);
    repo.write("plan.md", "plan\n");
    repo.ok(&["step", "end", "plan", "--status", "completed"]);
    repo.ok(&["step", "begin", "implement", "--kind", "agent"]);
    repo.write("code.rs", "fn main() {}\n");
    repo.ok(&["step", "end", "implement", "--status", "completed"]);
    let branch_before = repo.git(&["symbolic-ref", "HEAD"]);

    repo.ok(&["rewind", "r1", "--to", "implement", "--run", "r2"]);
    assert_eq!(repo.json(&["status"])["run"], "r2");
    assert_eq!(run_status(&repo, "r1"), "archived");
    assert!(
        repo.json(&["status"])["next_action"]
            .as_str()
            .unwrap()
            .contains("re-enter step implement")
    );

    let undo = repo.ok(&["undo"]);
    assert!(undo.contains("active run: r1 (was r2)"), "{undo}");
    assert!(undo.contains("run r1 is no longer archived"), "{undo}");
    assert!(undo.contains("run r2 archived, not deleted"), "{undo}");
    assert!(
        undo.contains("branch agent-runs/r2 kept (`git branch -D agent-runs/r2`"),
        "{undo}"
    );
    // Files, HEAD, active run, statuses: as before the rewind.
    assert_eq!(repo.read("code.rs"), "fn main() {}\n");
    assert_eq!(repo.git(&["symbolic-ref", "HEAD"]), branch_before);
    let status = repo.json(&["status"]);
    assert_eq!(status["run"], "r1");
    assert_eq!(status["summary"]["status"], "waiting");
    let next = status["next_action"].as_str().unwrap();
    assert!(!next.contains("re-enter"), "stale next action: {next}");
    assert_eq!(listed(&repo), ["r1"]);
    assert_eq!(run_status(&repo, "r2"), "archived");
    // The branch and the run are kept.
    assert!(
        repo.git_output(&["rev-parse", "--verify", "refs/heads/agent-runs/r2"])
            .status
            .success()
    );

    // Undo the undo: the rewind's state again.
    let redo = repo.ok(&["undo"]);
    assert!(redo.contains("active run: r2 (was r1)"), "{redo}");
    assert_eq!(repo.json(&["status"])["run"], "r2");
    assert_eq!(run_status(&repo, "r1"), "archived");
    assert_eq!(run_status(&repo, "r2"), "waiting");
    assert!(!repo.path().join("code.rs").exists());
    repo.assert_fsck();

    // The run-status lines are appended, never rewritten (FORMAT.md).
    let root = repo.json(&["show", "r1@0"])["checkpoint"]
        .as_str()
        .unwrap()
        .to_string();
    let notes = repo.git(&["notes", "--ref=agent-runs/r1", "show", &root]);
    let statuses: Vec<Value> = notes
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "run-status")
        .map(|v| v["status"].clone())
        .collect();
    assert_eq!(statuses, ["archived", "active", "archived"], "{notes}");
}

#[test]
fn undo_of_a_fork_in_place_restores_the_active_run() {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1"]);
    repo.ok(&["step", "begin", "plan", "--kind", "agent"]);
    repo.write("plan.md", "plan\n");
    repo.ok(&["step", "end", "plan", "--status", "completed"]);
    repo.ok(&["fork", "r1", "--to", "plan", "--run", "f1"]);
    assert_eq!(repo.json(&["status"])["run"], "f1");
    let undo = repo.json(&["undo"]);
    assert_eq!(undo["active_run"], "r1");
    assert_eq!(undo["active_run_before"], "f1");
    assert_eq!(undo["archived"], serde_json::json!(["f1"]));
    assert_eq!(undo["unarchived"], serde_json::json!([]));
    assert_eq!(repo.json(&["status"])["run"], "r1");
    assert_eq!(run_status(&repo, "r1"), "waiting");
}

/// A run whose newest checkpoint is a gate awaiting approval.
fn gated() -> (Repo, String) {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "g1"]);
    repo.ok(&["step", "begin", "plan", "--kind", "agent"]);
    repo.write("plan.md", "plan\n");
    repo.ok(&["step", "end", "plan", "--status", "completed"]);
    let gate = repo.json(&[
        "step",
        "begin",
        "review",
        "--kind",
        "gate",
        "--status",
        "awaiting_approval",
    ]);
    let id = gate["checkpoint"].as_str().unwrap().to_string();
    (repo, id)
}

#[test]
fn gate_decisions_show_in_list_and_status() {
    let (repo, gate) = gated();
    assert_eq!(run_status(&repo, "g1"), "awaiting_approval");
    let next = repo.json(&["status"])["next_action"].clone();
    assert!(
        next.as_str().unwrap().contains(&format!("approve {gate}")),
        "{next}"
    );

    repo.ok(&["reject", &gate, "--by", "carol", "-m", "no"]);
    assert_eq!(run_status(&repo, "g1"), "rejected");
    let status = repo.json(&["status"]);
    assert_eq!(status["summary"]["status"], "rejected");
    let next = status["next_action"].as_str().unwrap();
    assert!(next.contains("rejected by carol"), "{next}");
    let human = repo.ok(&["list"]);
    assert!(human.contains("rejected"), "{human}");
    assert!(repo.ok(&["status"]).contains("[rejected]"));

    // A later approval of the same checkpoint wins.
    repo.ok(&["approve", &gate, "--by", "dave"]);
    assert_eq!(run_status(&repo, "g1"), "approved");
    let next = repo.json(&["status"])["next_action"].clone();
    assert!(
        next.as_str()
            .unwrap()
            .contains("resume` passes gate review"),
        "{next}"
    );
}

#[test]
fn approvals_of_the_wrong_checkpoint_are_refused() {
    let (repo, gate) = gated();
    let notes = repo.rev("refs/notes/agent-runs/g1");

    // Not a gate.
    let out = repo.run(&["approve", "g1/plan", "--by", "alice"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("is not a gate"), "{}", stderr(&out));
    // Empty --by.
    for by in ["", "  "] {
        let out = repo.run(&["approve", &gate, "--by", by]);
        assert_eq!(out.status.code(), Some(2), "{by:?}");
        assert!(stderr(&out).contains("--by"), "{}", stderr(&out));
    }
    assert_eq!(
        repo.rev("refs/notes/agent-runs/g1"),
        notes,
        "nothing written"
    );

    // A commit lands during the gate (what the post-commit hook records): the gate
    // checkpoint printed before is superseded.
    repo.write("late.txt", "late change\n");
    repo.git(&["add", "late.txt"]);
    repo.git(&["commit", "-q", "-m", "late fix"]);
    let commit_cp = repo.json(&["checkpoint", "review", "--event", "commit"]);
    let newest = commit_cp["checkpoint"].as_str().unwrap();
    assert_eq!(commit_cp["status"], "awaiting_approval");
    let notes = repo.rev("refs/notes/agent-runs/g1");
    let out = repo.run(&["approve", &gate, "--by", "bob"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("superseded by {}", &newest[..12])),
        "{err}"
    );
    assert!(
        err.contains("a commit landed during the gate: \"late fix\""),
        "{err}"
    );
    assert!(err.contains("A late.txt"), "{err}");
    assert!(err.contains(&format!("approve {newest}")), "{err}");
    assert_eq!(
        repo.rev("refs/notes/agent-runs/g1"),
        notes,
        "nothing written"
    );

    // The newest one is what gets approved (by step address too).
    let ok = repo.json(&["approve", "g1/review", "--by", "bob"]);
    assert_eq!(ok["checkpoint"], newest);
    assert_eq!(run_status(&repo, "g1"), "approved");

    // A gate that passed is not awaiting approval any more.
    repo.ok(&[
        "step",
        "end",
        "review",
        "--kind",
        "gate",
        "--status",
        "completed",
    ]);
    let out = repo.run(&["approve", "g1/review", "--by", "bob"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("not awaiting approval"),
        "{}",
        stderr(&out)
    );
    repo.assert_fsck();
}

#[test]
fn a_checkpoint_into_a_run_that_does_not_exist_starts_it_as_the_active_run() {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1"]);
    repo.write("a.txt", "one\n");
    repo.ok(&["checkpoint", "work", "--run", "r2"]);
    assert_eq!(repo.json(&["status"])["run"], "r2", "the new run is active");
    // A checkpoint into a run that exists leaves the active run where it is.
    repo.write("a.txt", "two\n");
    repo.ok(&["checkpoint", "work", "--run", "r1"]);
    assert_eq!(repo.json(&["status"])["run"], "r2");
    assert_eq!(listed(&repo).len(), 2);
}

#[test]
fn no_activate_starts_a_run_and_leaves_the_active_run_where_it_is() {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1"]);
    repo.write("a.txt", "one\n");
    let out = repo.json(&["checkpoint", "work", "--run", "r2", "--no-activate"]);
    assert_eq!(out["run"], "r2");
    assert_eq!(repo.json(&["status"])["run"], "r1", "r1 stays active");
    assert_eq!(
        repo.json(&["list", "r2"]).as_array().unwrap().len(),
        2,
        "r2 started"
    );
    repo.ok(&["start", "--run", "r3", "--no-activate"]);
    assert_eq!(repo.json(&["status"])["run"], "r1");
    repo.ok(&["step", "begin", "plan", "--run", "r4", "--no-activate"]);
    assert_eq!(repo.json(&["status"])["run"], "r1");
    // Without a flag a checkpoint still lands in the active run.
    repo.write("a.txt", "two\n");
    repo.ok(&["checkpoint", "work"]);
    assert_eq!(repo.json(&["list", "r1"]).as_array().unwrap().len(), 2);
    // With no active run at all, the run a checkpoint starts stays inactive too.
    let bare = Repo::new();
    let out = bare.json(&["checkpoint", "work", "--no-activate"]);
    let started = out["run"].as_str().unwrap().to_string();
    assert_eq!(bare.json(&["list", &started]).as_array().unwrap().len(), 2);
    let status = bare.run(&["status"]);
    assert!(
        !String::from_utf8_lossy(&status.stdout).contains(&started),
        "no run became active"
    );
    repo.assert_fsck();
}

/// The attempts of `step` in `run`'s own checkpoints: (attempt, event, status).
fn attempts(repo: &Repo, run: &str, step: &str) -> Vec<(u64, String, String)> {
    repo.json(&["list", run])
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["step"] == step)
        .map(|c| {
            (
                c["attempt"].as_u64().unwrap(),
                c["event"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// A second `step begin` while the first attempt has no end would leave that attempt
/// `running` for ever: it is refused, changing nothing, as git refuses to start an operation
/// while one is in progress. `--force` records the first attempt as interrupted (abandoned),
/// says so on stderr, and begins the next one.
#[test]
fn a_second_begin_without_an_end_is_refused_unless_forced() {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1"]);
    repo.ok(&["step", "begin", "plan", "--kind", "agent"]);
    let refs_before = common::refs(repo.path(), "refs/");

    let again = repo.run(&["step", "begin", "plan"]);
    assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
    let err = stderr(&again);
    assert!(
        err.starts_with("error: step plan of run r1 is still running (attempt 1)"),
        "{err}"
    );
    assert!(
        err.contains("step end plan") && err.contains("--force"),
        "{err}"
    );
    assert!(again.stdout.is_empty());
    assert_eq!(
        common::refs(repo.path(), "refs/"),
        refs_before,
        "nothing changed"
    );
    assert_eq!(
        attempts(&repo, "r1", "plan"),
        [(1, "begin".to_string(), "running".to_string())]
    );

    let forced = repo.run(&["step", "begin", "plan", "--force"]);
    assert_eq!(forced.status.code(), Some(0), "{}", stderr(&forced));
    let warned = stderr(&forced);
    assert!(
        warned.contains("attempt 1 of plan was still running")
            && warned.contains("interrupted (abandoned)"),
        "{warned}"
    );
    assert_eq!(
        attempts(&repo, "r1", "plan"),
        [
            (1, "begin".to_string(), "interrupted".to_string()),
            (2, "begin".to_string(), "running".to_string())
        ]
    );
    // The reason is in the attempt's note, for `show` and any reader of the notes.
    let first = repo.json(&["show", "r1@1"]);
    assert!(
        first.to_string().contains("abandoned: attempt 2 was begun"),
        "{first:#}"
    );

    // Ended, the step begins again without --force.
    repo.ok(&["step", "end", "plan", "--status", "completed"]);
    repo.ok(&["step", "begin", "plan"]);
    assert_eq!(attempts(&repo, "r1", "plan").last().unwrap().0, 3);
    repo.assert_fsck();
}
