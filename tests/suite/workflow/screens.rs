//! What `run` and `resume` print for a person: one line per step, saying what happened to
//! it and then, in parentheses, the detail (the exit code, what it was skipped for).

use super::{FEATURE, FEATURE_STEPS, Wf};

/// The report's step lines (`  <step>: …`), without their indentation.
fn step_lines(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| l.starts_with("  ") && l.contains(": "))
        .map(|l| l.trim_start().to_string())
        .collect()
}

#[test]
fn run_and_resume_say_what_happened_to_each_step() {
    let wf = Wf::feature();
    let ran = wf.ok(&["run", FEATURE, "--run", "r1"]);
    let expected: Vec<String> = FEATURE_STEPS
        .iter()
        .map(|s| format!("{s}: ran (exit 0)"))
        .collect();
    assert_eq!(step_lines(&ran), expected, "{ran}");
    // Each step's finish is its second checkpoint after the start (@0): @2, @4, @6, @8.
    let resumed = wf.ok(&["resume", "r1"]);
    let expected: Vec<String> = FEATURE_STEPS
        .iter()
        .zip([2, 4, 6, 8])
        .map(|(s, seq)| format!("{s}: skipped (inputs unchanged since @{seq})"))
        .collect();
    assert_eq!(step_lines(&resumed), expected, "{resumed}");

    // After a rewind, the steps the new run inherited were finished in the run it came
    // from, so that run is named.
    wf.ok(&["rewind", "r1", "--to", "implement", "--run", "r2"]);
    let after_rewind = wf.ok(&["resume", "r2"]);
    let lines = step_lines(&after_rewind);
    assert_eq!(
        lines[0], "plan: skipped (inputs unchanged since r1@2)",
        "{after_rewind}"
    );
    assert_eq!(lines[1], "implement: ran (exit 0)", "{after_rewind}");
}

#[test]
fn a_step_whose_command_is_not_found_says_so() {
    let wf = Wf::new(
        "wf.toml",
        "[workflow]\nname = \"w\"\n\n[[steps]]\nname = \"build\"\nkind = \"deterministic\"\nrun = \"no-such-command-anywhere\"\n",
    );
    let out = wf.out(&["run", "wf.toml", "--run", "r1"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        step_lines(&stdout),
        ["build: failed (exit 127: command not found)"],
        "{stdout}"
    );
    // Run again with the same inputs, a deterministic step is re-run, and the line says why.
    let again = wf.out(&["resume", "r1"]);
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert_eq!(
        step_lines(&stdout),
        [
            "build: failed (exit 127: command not found; attempt 1 failed, deterministic steps are re-run)"
        ],
        "{stdout}"
    );
}
