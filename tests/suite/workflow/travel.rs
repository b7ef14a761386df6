//! Workflows that travel with their run and what a rewind inherits.

use super::{FEATURE, FEATURE_STEPS, Wf, action, feature_text, with_action};
use crate::common::{self, Repo, tool_cmd};
use serde_json::Value;

// ---------------------------------------------------------------------------------------
// 9. Workflows that travel and what a rewind inherits.

impl Wf {
    /// `--json` report of run/resume, whatever the exit status (a stopped run may exit
    /// non-zero); panics on anything but 0, 1 or 3 or on output that is not a report.
    fn report(&self, args: &[&str], env: &[(&str, &str)]) -> Value {
        let mut c = self.cmd();
        c.arg("--json").args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        assert!(
            matches!(out.status.code(), Some(0 | 1 | 3)),
            "{args:?}: {:?} {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{args:?}: not JSON ({e}): {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
    }

    /// The JSON lines of the note of `run`'s root checkpoint.
    fn root_note(&self, run: &str) -> Vec<Value> {
        let root = self.json(&["show", &format!("{run}@0")])["checkpoint"]
            .as_str()
            .unwrap()
            .to_string();
        self.repo
            .git(&["notes", &format!("--ref=agent-runs/{run}"), "show", &root])
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

#[test]
fn a_workflow_file_anywhere_is_stored_with_the_run() {
    // The repository has the fake agent but the workflow lives in another folder.
    let wf = Wf::new("fixtures/unused.toml", "[workflow]\nname = \"unused\"\n");
    let elsewhere = tempfile::tempdir().unwrap();
    let file = elsewhere.path().join("flow.toml");
    std::fs::write(&file, feature_text()).unwrap();
    let r = wf.report(
        &["run", file.to_str().unwrap(), "--run", "r1"],
        &[("FAIL_STEP", "test")],
    );
    assert_eq!(r["finished"], false, "{r:#}");
    assert_eq!(wf.counts(&FEATURE_STEPS), [1, 1, 1, 0]);

    // The root note holds the workflow's text, path and digest.
    let note = wf.root_note("r1");
    let stored: Vec<&Value> = note.iter().filter(|l| l["type"] == "workflow").collect();
    assert_eq!(stored.len(), 1, "{note:?}");
    assert_eq!(stored[0]["text"], feature_text().as_str());
    assert_eq!(stored[0]["name"], "feature");
    let canonical = std::fs::canonicalize(&file).unwrap();
    assert_eq!(stored[0]["path"], canonical.to_str().unwrap());

    // The file is gone: resume runs from the stored copy.
    drop(elsewhere);
    assert!(!file.exists());
    let r = wf.report(&["resume", "r1"], &[]);
    assert_eq!(r["finished"], true, "{r:#}");
    assert_eq!(with_action(&r, "ran"), ["test", "open-pr"], "{r:#}");
    assert!(
        r["workflow_from"]
            .as_str()
            .unwrap()
            .contains("stored with run r1"),
        "{r:#}"
    );
    assert_eq!(wf.counts(&FEATURE_STEPS), [1, 1, 2, 1]);
    wf.repo.assert_fsck();
}

#[test]
fn a_pushed_run_resumes_on_another_machine_without_the_file() {
    let wf = Wf::feature();
    let r = wf.report(&["run", FEATURE, "--run", "r1"], &[("FAIL_STEP", "test")]);
    assert_eq!(r["finished"], false, "{r:#}");
    let remote = tempfile::tempdir().unwrap();
    common::git_in(remote.path(), &["init", "-q", "--bare"]);
    wf.repo
        .git(&["remote", "add", "origin", remote.path().to_str().unwrap()]);
    wf.repo.git(&["push", "-q", "origin", "main"]);
    wf.ok(&["push", "origin", "r1"]);

    // Another machine: a clone without the workflow file, the run fetched.
    let other = tempfile::tempdir().unwrap();
    let clone = other.path().join("clone");
    common::git_in(
        other.path(),
        &[
            "clone",
            "-q",
            "-b",
            "main",
            remote.path().to_str().unwrap(),
            "clone",
        ],
    );
    common::git_in(&clone, &["config", "user.name", "Other"]);
    common::git_in(&clone, &["config", "user.email", "other@example.com"]);
    common::git_in(&clone, &["rm", "-q", FEATURE]);
    common::git_in(&clone, &["commit", "-q", "-m", "no workflow file here"]);
    common::ok_in(&clone, &["fetch", "origin", "r1"]);
    // The stored workflow came with the fetch: it runs once the user trusts it
    // (tests/suite/workflow/trust/ covers the refusal).
    common::ok_in(&clone, &["trust", "r1", "--yes"]);
    let out = tool_cmd(&clone)
        .env("COUNT_DIR", wf.counts.path())
        .env_remove("FAIL_STEP")
        .args(["--json", "resume", "r1"])
        .output()
        .unwrap();
    let r: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(r["finished"], true, "{r:#}");
    assert_eq!(with_action(&r, "ran"), ["test", "open-pr"], "{r:#}");
    assert_eq!(wf.counts(&FEATURE_STEPS), [1, 1, 2, 1]);
    let fsck = common::git_cmd(&clone)
        .args(["fsck", "--strict", "--no-progress"])
        .output()
        .unwrap();
    assert!(
        fsck.status.success(),
        "{}",
        String::from_utf8_lossy(&fsck.stderr)
    );
}

#[test]
fn resume_says_when_the_file_changed_and_uses_the_stored_copy() {
    let wf = Wf::feature();
    let r = wf.report(&["run", FEATURE, "--run", "r1"], &[("FAIL_STEP", "test")]);
    assert_eq!(r["finished"], false, "{r:#}");
    // The file now breaks `test` differently: a step that fails whatever the agent does.
    let changed = feature_text().replace(
        "run = \"sh fixtures/agents/fake-agent.sh out/test.log out/code.txt\"",
        "run = \"exit 7\"",
    );
    assert_ne!(changed, feature_text());
    wf.repo.write(FEATURE, &changed);

    let r = wf.report(&["resume", "r1"], &[]);
    assert_eq!(r["workflow_file_changed"], FEATURE, "{r:#}");
    assert_eq!(r["finished"], true, "the stored copy ran: {r:#}");

    // Told to use the file: it runs (and fails with its own command), and becomes the
    // stored copy.
    wf.repo.write("TASK.md", "task v2\n");
    let r = wf.report(&["resume", "r1", "--workflow", FEATURE], &[]);
    assert!(r["workflow_file_changed"].is_null(), "{r:#}");
    assert_eq!(r["finished"], false, "{r:#}");
    assert!(
        r["stopped"].as_str().unwrap().contains("exit code 7"),
        "{r:#}"
    );
    let stored: Vec<Value> = wf
        .root_note("r1")
        .into_iter()
        .filter(|l| l["type"] == "workflow")
        .collect();
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[1]["text"], changed.as_str());
    // Without --workflow now: the newest stored copy, which matches the file.
    let r = wf.report(&["resume", "r1"], &[]);
    assert!(r["workflow_file_changed"].is_null(), "{r:#}");
    assert!(
        r["stopped"].as_str().unwrap().contains("exit code 7"),
        "{r:#}"
    );
}

#[test]
fn resume_of_a_run_with_a_changed_file_says_so_in_words() {
    let wf = Wf::feature();
    wf.report(&["run", FEATURE, "--run", "r1"], &[("FAIL_STEP", "test")]);
    wf.repo
        .write(FEATURE, &format!("{}\n# edited\n", feature_text()));
    let out = wf.out(&["resume", "r1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "{FEATURE} changed since the run stored it; using the stored copy"
        )),
        "{text}"
    );
}

#[test]
fn workflow_files_with_credentials_are_not_stored() {
    let wf = Wf::feature();
    let leaky = feature_text().replace(
        "inputs = [\"TASK.md\"]",
        "inputs = [\"TASK.md\"]\nenv = { GH = \"ghp_0123456789abcdefghijABCDEFGHIJ\" }", // gitleaks:allow
    );
    wf.repo.write("leaky.toml", &leaky);
    let before = wf.all_refs();
    let out = wf.out(&["run", "leaky.toml"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("leaky.toml:10: this looks like a credential"),
        "{err}"
    );
    assert_eq!(wf.all_refs(), before, "nothing recorded");
}

#[test]
fn a_rewind_inherits_every_step_recorded_before_the_point() {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1"]);
    // Steps recorded with plain checkpoints (no status), one completed, one plain after.
    repo.write("a.txt", "plan\n");
    repo.ok(&["checkpoint", "plan", "-m", "planned"]);
    repo.write("a.txt", "implement\n");
    repo.ok(&["checkpoint", "implement"]);
    repo.ok(&["step", "begin", "test", "--kind", "deterministic"]);
    repo.ok(&["step", "end", "test", "--status", "completed"]);
    repo.write("a.txt", "review\n");
    repo.ok(&["checkpoint", "review"]);

    let out = repo.json(&[
        "rewind",
        "r1",
        "--to",
        "review",
        "--no-checkout",
        "--run",
        "r2",
    ]);
    assert_eq!(
        out["inherited_steps"],
        serde_json::json!(["implement", "plan", "test"]),
        "{out:#}"
    );
    for step in ["plan", "implement", "test"] {
        assert_eq!(
            repo.rev(&format!("refs/agent-runs/r2/{step}")),
            repo.rev(&format!("refs/agent-runs/r1/{step}")),
            "{step}"
        );
        assert_eq!(repo.json(&["show", &format!("r2/{step}")])["step"], step);
    }
    // The step being re-entered is not inherited.
    assert!(
        repo.git_output(&["rev-parse", "--verify", "-q", "refs/agent-runs/r2/review"])
            .stdout
            .is_empty()
    );
    // Rewinding to before test began: test is not inherited either (it lies after).
    let out = repo.json(&[
        "rewind",
        "r1",
        "--to",
        "test",
        "--no-checkout",
        "--run",
        "r3",
    ]);
    assert_eq!(
        out["inherited_steps"],
        serde_json::json!(["implement", "plan"]),
        "{out:#}"
    );
    repo.assert_fsck();
}

#[test]
fn inherited_steps_that_did_not_complete_are_not_done_for_resume() {
    let wf = Wf::feature();
    // implement (an agent step) fails; a plain checkpoint of test follows.
    let r = wf.report(
        &["run", FEATURE, "--run", "r1"],
        &[("FAIL_STEP", "implement")],
    );
    assert_eq!(r["finished"], false, "{r:#}");
    wf.repo.write("notes.txt", "looked at it\n");
    wf.ok(&["checkpoint", "test", "-m", "manual look"]);
    let out = wf.json(&["rewind", "r1", "--to", "r1@-1", "--run", "r2"]);
    assert_eq!(
        out["inherited_steps"],
        serde_json::json!(["implement", "plan"]),
        "{out:#}"
    );
    // plan completed: skipped; implement failed: not done, the agent step waits for --retry.
    let r = wf.report(&["resume", "r2"], &[]);
    assert_eq!(action(&r, "plan"), "skipped", "{r:#}");
    assert_eq!(action(&r, "implement"), "stopped", "{r:#}");
    assert!(r["stopped"].as_str().unwrap().contains("failed"), "{r:#}");
    assert_eq!(wf.counts(&FEATURE_STEPS), [1, 1, 0, 0]);
}
