//! A writer killed between the renames of one ref transaction (notes → `HEAD` → step ref,
//! docs/FORMAT.md "Order inside the transaction") leaves the step's ref one checkpoint behind
//! `HEAD`. Every reader takes `HEAD` as that step's newest checkpoint, so a finished step never
//! looks unfinished (a resume does not run it again), and the next write of the run moves the
//! ref where it belongs, whatever step that write records.

use crate::common;

use common::{Repo, tool_cmd, tool_stdin};
use std::path::Path;
use std::process::Output;

/// The tool with extra environment (no input), its whole output.
fn tool_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    tool_stdin(dir, args, b"", env)
}

fn ref_of(r: &Repo, name: &str) -> Option<String> {
    let o = r.git_output(&["rev-parse", "--verify", "-q", name]);
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// Run `args` and abort it at `point`; the process must have died there.
fn crash_at(r: &Repo, args: &[&str], point: &str) {
    let o = tool_env(r.path(), args, &[("AGENT_REWIND_CRASH_AT", point)]);
    assert!(!o.status.success(), "{args:?} should have died at {point}");
}

#[test]
fn a_step_ref_left_behind_head_is_read_as_head_and_repaired_by_the_next_write() {
    let r = Repo::new();
    r.ok(&["start", "--run", "r1"]);
    r.write("a.txt", "one\n");
    r.ok(&["checkpoint", "s2", "--run", "r1"]);
    let before = ref_of(&r, "refs/agent-runs/r1/s2").unwrap();
    r.write("a.txt", "two\n");
    // notes, HEAD, then the step ref: the third reflog written is the step ref's, and the
    // process dies right before renaming it into place.
    crash_at(
        &r,
        &["checkpoint", "s2", "--run", "r1"],
        "publish:reflog-written#3",
    );
    let head = ref_of(&r, "refs/agent-runs/r1/HEAD").unwrap();
    assert_ne!(head, before, "HEAD moved");
    assert_eq!(
        ref_of(&r, "refs/agent-runs/r1/s2").as_deref(),
        Some(before.as_str()),
        "the step ref stayed behind"
    );
    // Readers see HEAD as the step's newest checkpoint.
    let shown = r.json(&["show", "r1/s2", "--json"]);
    assert_eq!(shown["checkpoint"], head.as_str(), "{shown}");
    // A checkpoint of another step moves the lagging ref to HEAD in its own transaction.
    r.write("a.txt", "three\n");
    r.ok(&["checkpoint", "s3", "--run", "r1"]);
    assert_eq!(
        ref_of(&r, "refs/agent-runs/r1/s2").as_deref(),
        Some(head.as_str())
    );
    let s3 = ref_of(&r, "refs/agent-runs/r1/s3").unwrap();
    assert_eq!(ref_of(&r, "refs/agent-runs/r1/HEAD"), Some(s3));
    r.assert_fsck();
}

#[test]
fn a_first_checkpoint_of_a_step_whose_ref_was_never_written_is_found() {
    let r = Repo::new();
    r.ok(&["start", "--run", "r1"]);
    r.write("a.txt", "one\n");
    crash_at(
        &r,
        &["checkpoint", "s1", "--run", "r1"],
        "publish:reflog-written#3",
    );
    assert_eq!(ref_of(&r, "refs/agent-runs/r1/s1"), None);
    let head = ref_of(&r, "refs/agent-runs/r1/HEAD").unwrap();
    let shown = r.json(&["show", "r1/s1", "--json"]);
    assert_eq!(shown["checkpoint"], head.as_str(), "{shown}");
    let status = r.json(&["status", "--json"]);
    assert_eq!(status["summary"]["steps"][0], "s1", "{status}");
    // The same step checkpointed again continues from HEAD: its attempt and the ref.
    r.write("a.txt", "two\n");
    r.ok(&["checkpoint", "s1", "--run", "r1"]);
    let s1 = ref_of(&r, "refs/agent-runs/r1/s1").unwrap();
    assert_eq!(
        r.git(&["rev-parse", &format!("{s1}^1")]).trim(),
        head,
        "the new checkpoint follows the crashed one"
    );
    r.assert_fsck();
}

const FLOW: &str = r#"[workflow]
name = "lag"

[[steps]]
name = "a"
kind = "deterministic"
run = "echo ran >> \"$LAG_LOG\""

[[steps]]
name = "b"
kind = "deterministic"
run = "true"
needs = ["a"]
"#;

/// A workflow whose first step finished, but the runner died before its step ref moved:
/// `resume` must not run it again.
#[test]
fn resume_does_not_redo_a_step_whose_finish_left_its_ref_behind() {
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("a.log");
    let log_s = log.to_str().unwrap();
    let setup = || {
        let r = Repo::new();
        r.write("flow.toml", FLOW);
        r.git(&["add", "-A"]);
        r.git(&["commit", "-q", "-m", "flow"]);
        r
    };
    // Where step a's finish publishes its step ref: the last reflog written before the
    // runner says the step finished.
    let trace_repo = setup();
    let trace_log = log_dir.path().join("trace.log");
    let mut c = tool_cmd(trace_repo.path());
    c.args(["run", "flow.toml", "--run", "wf"])
        .env("AGENT_REWIND_CRASH_TRACE", "1")
        .env("LAG_LOG", &trace_log);
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let seen: Vec<String> = String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("crash-point: "))
        .map(str::to_string)
        .collect();
    let finished = seen
        .iter()
        .position(|p| p.starts_with("runner:finished"))
        .expect("the runner finishes step a");
    let point = seen[..finished]
        .iter()
        .rev()
        .find(|p| p.starts_with("publish:reflog-written"))
        .expect("a's finish publishes refs")
        .clone();

    let r = setup();
    let o = tool_env(
        r.path(),
        &["run", "flow.toml", "--run", "wf"],
        &[("AGENT_REWIND_CRASH_AT", &point), ("LAG_LOG", log_s)],
    );
    assert!(!o.status.success(), "the runner died at {point}");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "ran\n");
    let head = ref_of(&r, "refs/agent-runs/wf/HEAD").unwrap();
    assert_ne!(
        ref_of(&r, "refs/agent-runs/wf/a").as_deref(),
        Some(head.as_str()),
        "the crash left a's ref behind HEAD"
    );

    let o = tool_env(r.path(), &["resume", "wf"], &[("LAG_LOG", log_s)]);
    assert!(
        o.status.success(),
        "resume completes the run: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "ran\n",
        "step a ran once"
    );
    assert!(ref_of(&r, "refs/agent-runs/wf/b").is_some(), "b ran");
    // b's checkpoints repaired a's ref on their way.
    let a = ref_of(&r, "refs/agent-runs/wf/a").unwrap();
    assert_eq!(a, head, "a's ref caught up with its finish");
    r.assert_fsck();
}
