//! Maintenance after a write (`ops::maintenance`): every command that records a checkpoint
//! starts, after it recorded, the maintenance that write calls for (a fold of the small
//! packs, the retention policy once a day), and a command that records nothing starts none.
//! The write path itself starts no process (`layers::the_write_path_does_no_maintenance`).

use crate::common::{Repo, envelope, envelope_body, tool_cmd};
use std::path::PathBuf;

/// A repository where every record calls for both: a fold is due past one pack
/// (`gc.autoPackLimit = 1`), and a policy that deletes nothing is set.
fn repo() -> Repo {
    let r = Repo::new();
    r.git(&["config", "gc.autoPackLimit", "1"]);
    r.git(&["config", "agentRewind.retain", "1000.runs"]);
    r
}

fn state(r: &Repo) -> PathBuf {
    r.path().join(".git/agent-rewind/retention.state")
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The policy was last applied a day and a second ago.
fn a_day_passed(r: &Repo) -> u64 {
    let then = now() - 86_401;
    std::fs::write(
        state(r),
        envelope("retention-state", 1, format!("{then}\n").as_bytes()),
    )
    .unwrap();
    then
}

/// When the policy was last applied, as the state file says.
fn last_applied(r: &Repo) -> u64 {
    let body = std::fs::read(state(r)).unwrap();
    String::from_utf8_lossy(envelope_body(&body, "retention-state", 1))
        .trim()
        .parse()
        .unwrap()
}

/// The trace of `args`, after asserting success.
fn traced(r: &Repo, args: &[&str]) -> String {
    let out = tool_cmd(r.path())
        .env("AGENT_REWIND_TRACE", "1")
        .args(args)
        .output()
        .unwrap();
    let trace = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}: {trace}");
    trace
}

/// Whether the trace shows a fold considered (started, or one already running) and the
/// policy started in the background.
fn maintained(trace: &str) -> (bool, bool) {
    let fold = trace.contains("maintenance: started git repack")
        || trace.contains("maintenance: one is running");
    let retention = trace.lines().any(|l| l.ends_with("  retention"));
    (fold, retention)
}

#[test]
fn every_command_that_records_starts_the_maintenance_it_calls_for() {
    let r = repo();
    r.ok(&["start", "--run", "r0"]);
    r.write("a.txt", "1\n");
    let recording: Vec<(Vec<&str>, Option<&str>)> = vec![
        (vec!["start", "--run", "r1"], None),
        (vec!["checkpoint", "work"], Some("2\n")),
        (vec!["step", "begin", "review"], Some("3\n")),
        (
            vec!["step", "end", "review", "--status", "completed"],
            Some("4\n"),
        ),
        (
            vec!["fork", "r1", "--to", "work", "--run", "r2", "--no-checkout"],
            None,
        ),
        (vec!["hook", "post-commit"], Some("5\n")),
    ];
    for (args, edit) in recording {
        if let Some(text) = edit {
            r.write("a.txt", text);
        }
        if args[0] == "hook" {
            r.git(&["add", "a.txt"]);
            r.git(&["commit", "-q", "-m", "five"]);
        }
        let then = a_day_passed(&r);
        let trace = traced(&r, &args);
        assert_eq!(maintained(&trace), (true, true), "{args:?}:\n{trace}");
        assert!(last_applied(&r) > then, "{args:?}: the clock restarted");
    }

    // Nothing recorded (the same checkpoint again; commands that only read): nothing
    // started, and the clock is left alone.
    r.ok(&["checkpoint", "work"]);
    for args in [
        vec!["checkpoint", "work"],
        vec!["status"],
        vec!["list"],
        vec!["log", "r1"],
    ] {
        let then = a_day_passed(&r);
        let trace = traced(&r, &args);
        assert_eq!(maintained(&trace), (false, false), "{args:?}:\n{trace}");
        assert_eq!(last_applied(&r), then, "{args:?}");
    }
    r.assert_fsck();
}

#[test]
fn the_background_post_commit_checkpoint_applies_a_due_policy_after_it_recorded() {
    let r = repo();
    r.ok(&["start", "--run", "r1"]);
    r.git(&["config", "agentRewind.postCommitInBackground", "true"]);
    r.write("a.txt", "1\n");
    r.git(&["add", "a.txt"]);
    r.git(&["commit", "-q", "-m", "one"]);
    let then = a_day_passed(&r);
    // The hook hands the checkpoint to a child and records nothing itself.
    let trace = traced(&r, &["hook", "post-commit"]);
    assert_eq!(maintained(&trace), (false, false), "{trace}");
    // Once the child is done (every command waits for it), it has recorded the commit and
    // started the policy, which restarted the clock.
    let log = r.json(&["log", "r1"]);
    assert_eq!(log.as_array().unwrap().len(), 2, "{log:#}");
    assert!(last_applied(&r) > then);
    r.assert_fsck();
}
