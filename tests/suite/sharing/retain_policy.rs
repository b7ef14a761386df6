//! The retention policy: `agentRewind.retain` limits (an age, a number of
//! runs, a size) applied by `gc` and by automatic maintenance once a day; what is in use is
//! never deleted (the active run of every worktree, a run with a checkout of one of its
//! checkpoints, a pending gate); each deletion is told by the next command a person runs.

use super::{js, run_refs};
use crate::common::external_workflow::wait_for;
use crate::common::{Repo, envelope, git_in, ok_in, run_in};
use serde_json::Value;

fn runs(r: &Repo) -> Vec<String> {
    js(r.path(), &["list", "--all"])
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_str().unwrap().to_string())
        .collect()
}

fn deleted(doc: &Value) -> Vec<String> {
    doc["deleted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["run"].as_str().unwrap().to_string())
        .collect()
}

fn kept(doc: &Value) -> Vec<(String, String)> {
    doc["kept"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["run"].as_str().unwrap().to_string(),
                k["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Runs `old1`…`old3`, `gated` (a gate awaiting approval), `checked` (one of its
/// checkpoints checked out in the main worktree), `other` (active in a linked worktree),
/// and `active` (this worktree's), oldest first.
fn repo_in_use() -> (Repo, tempfile::TempDir) {
    let r = Repo::new();
    for run in ["old1", "old2", "old3"] {
        r.ok(&["start", "--run", run]);
    }
    r.ok(&["start", "--run", "gated"]);
    r.ok(&[
        "step",
        "begin",
        "review",
        "--kind",
        "gate",
        "--status",
        "awaiting_approval",
    ]);
    r.ok(&["start", "--run", "checked"]);
    r.write("c.txt", "c\n");
    r.ok(&["checkpoint", "work"]);
    let linked = tempfile::tempdir().unwrap();
    let wt = linked.path().join("wt");
    r.git(&["worktree", "add", "-q", wt.to_str().unwrap()]);
    ok_in(&wt, &["start", "--run", "other"]);
    r.ok(&["start", "--run", "active"]);
    std::fs::remove_file(r.path().join("c.txt")).unwrap();
    r.git(&["checkout", "-q", "--detach", "refs/agent-runs/checked/work"]);
    (r, linked)
}

#[test]
fn the_policy_deletes_past_its_limits_but_never_what_is_in_use() {
    let (r, _linked) = repo_in_use();
    // Every run is past an age of 0 seconds: only the unused ones go, the rest say why.
    r.git(&["config", "agentRewind.retain", "0.seconds"]);
    let before = crate::common::refs(r.path(), "refs/");
    let dry = js(r.path(), &["gc", "--dry-run"]);
    assert_eq!(crate::common::refs(r.path(), "refs/"), before);
    assert_eq!(dry["policy"]["text"], "0.seconds", "{dry:#}");
    let mut gone = deleted(&dry);
    gone.sort();
    assert_eq!(gone, ["old1", "old2", "old3"], "{dry:#}");
    let reasons: Vec<(String, String)> = kept(&dry);
    let reason = |run: &str| {
        reasons
            .iter()
            .find(|(r, _)| r == run)
            .map(|(_, why)| why.clone())
            .unwrap_or_else(|| panic!("{run} kept: {dry:#}"))
    };
    assert!(reason("active").contains("active run of this worktree"));
    assert!(reason("other").contains("active run of a worktree"));
    assert!(reason("checked").contains("checked out"));
    assert!(reason("gated").contains("gate is pending"));
    // A count: beyond the newest 5 (of 7), the oldest two go.
    r.git(&["config", "agentRewind.retain", "5.runs"]);
    let dry = js(r.path(), &["gc", "--dry-run"]);
    let mut gone = deleted(&dry);
    gone.sort();
    assert_eq!(gone, ["old1", "old2"], "{dry:#}");
    let done = js(r.path(), &["gc"]);
    assert_eq!(done["deleted"], dry["deleted"]);
    assert!(runs(&r).len() == 5 && run_refs(r.path(), "old1").is_empty());
    // The user's HEAD, index and files are untouched; git is happy.
    assert_eq!(r.git(&["status", "--porcelain"]), "");
    r.assert_fsck();
}

#[test]
fn a_size_limit_deletes_the_oldest_runs_until_the_rest_fits() {
    let r = Repo::new();
    // Five runs, each holding 20 KiB that compress to nothing less (no branch holds them).
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for run in ["s1", "s2", "s3", "s4", "s5"] {
        r.ok(&["start", "--run", run]);
        let noise: String = (0..20 * 1024)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                char::from(b'!' + (seed % 90) as u8)
            })
            .collect();
        r.write("noise.txt", &noise);
        r.ok(&["checkpoint", "work"]);
        std::fs::remove_file(r.path().join("noise.txt")).unwrap();
    }
    // Two runs fit in 50 KiB, three do not: the oldest three go (s5 is active anyway).
    r.git(&["config", "agentRewind.retain", "50KiB"]);
    let dry = js(r.path(), &["gc", "--dry-run"]);
    let mut gone = deleted(&dry);
    gone.sort();
    assert_eq!(gone, ["s1", "s2", "s3"], "{dry:#}");
    // Limits combine: a run past any of them goes.
    r.git(&["config", "--add", "agentRewind.retain", "1.runs"]);
    let dry = js(r.path(), &["gc", "--dry-run"]);
    assert_eq!(deleted(&dry).len(), 4, "{dry:#}");
}

#[test]
fn automatic_maintenance_applies_the_policy_once_a_day_and_the_next_command_tells() {
    let r = Repo::new();
    for run in ["a1", "a2", "a3"] {
        r.ok(&["start", "--run", run]);
    }
    r.git(&["config", "agentRewind.retain", "1.runs"]);
    let state = r.path().join(".git/agent-rewind/retention.state");
    // The first command that records starts the clock; nothing is deleted.
    r.write("x.txt", "x\n");
    r.ok(&["checkpoint", "work"]);
    assert!(state.exists());
    assert_eq!(runs(&r).len(), 3);
    // A day later (the state says so), the next checkpoint starts it in the background.
    let day_ago = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 86_401;
    std::fs::write(
        &state,
        envelope("retention-state", 1, format!("{day_ago}\n").as_bytes()),
    )
    .unwrap();
    r.write("x.txt", "y\n");
    r.ok(&["checkpoint", "work"]);
    let report = r.path().join(".git/agent-rewind/retention.report");
    wait_for("the background retention's report", || {
        report.exists().then_some(())
    });
    // Told once, by the next command a person runs, on stderr.
    let out = run_in(r.path(), &["status"]);
    let told = String::from_utf8_lossy(&out.stderr).to_string();
    for run in ["a1", "a2"] {
        assert!(
            told.contains(&format!("deleted run {run}"))
                && told.contains("agentRewind.retain=1.runs"),
            "{told}"
        );
    }
    let again = run_in(r.path(), &["status"]);
    assert!(!String::from_utf8_lossy(&again.stderr).contains("deleted run"));
    assert!(!report.exists());
    assert_eq!(runs(&r), ["a3"]);
    r.assert_fsck();
}

#[test]
fn never_turns_it_off_and_a_bad_policy_is_refused_by_gc_only() {
    let r = Repo::new();
    r.ok(&["start", "--run", "n1"]);
    r.ok(&["start", "--run", "n2"]);
    r.git(&["config", "agentRewind.retain", "never"]);
    let out = r.ok(&["gc"]);
    assert!(out.contains("retention is off"), "{out}");
    assert_eq!(runs(&r).len(), 2);
    r.git(&["config", "agentRewind.retain", "lots"]);
    let out = run_in(r.path(), &["gc", "--dry-run"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("agentRewind.retain") && err.contains("lots"),
        "{err}"
    );
    // Recording is never stopped by it.
    r.write("x.txt", "x\n");
    r.ok(&["checkpoint", "work"]);
    assert_eq!(git_in(r.path(), &["status", "--porcelain"]), "?? x.txt\n");
}

#[test]
fn a_last_application_dated_in_the_future_counts_as_due() {
    let r = Repo::new();
    for run in ["f1", "f2", "f3"] {
        r.ok(&["start", "--run", run]);
    }
    r.git(&["config", "agentRewind.retain", "1.runs"]);
    let state = r.path().join(".git/agent-rewind/retention.state");
    r.write("x.txt", "x\n");
    r.ok(&["checkpoint", "work"]);
    assert!(state.exists());
    // A clock that ran ten years ahead when the policy was last applied.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let ahead = now + 10 * 365 * 86_400;
    std::fs::write(
        &state,
        envelope("retention-state", 1, format!("{ahead}\n").as_bytes()),
    )
    .unwrap();
    r.write("x.txt", "y\n");
    r.ok(&["checkpoint", "work"]);
    // The clock starts again from now (written before the background gc starts) ...
    let body = std::fs::read(&state).unwrap();
    let stored: u64 =
        String::from_utf8_lossy(crate::common::envelope_body(&body, "retention-state", 1))
            .trim()
            .parse()
            .unwrap();
    assert!(stored >= now && stored < ahead, "{stored} (now {now})");
    // ... and the policy is applied.
    let report = r.path().join(".git/agent-rewind/retention.report");
    wait_for("the background retention's report", || {
        report.exists().then_some(())
    });
    let out = run_in(r.path(), &["status"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("deleted run f1"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(runs(&r), ["f3"]);
    r.assert_fsck();
}
