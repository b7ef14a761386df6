//! The words of "next:" for each situation a run stops in, in one place, so that the runner,
//! `resume`'s plan and `status` say the same thing for the same situation. Words only: it
//! decides nothing about what a run does.

/// A gate waits for a person's decision on `checkpoint`.
pub fn approve_gate(checkpoint: &str) -> String {
    format!("`git agent-rewind approve {checkpoint}` (or `reject`), then `git agent-rewind resume`")
}

/// Gate `gate`'s checkpoint was rejected by `by`: who said no is part of what to do next.
pub fn gate_rejected(gate: &str, by: &str, checkpoint: &str) -> String {
    format!(
        "gate {gate} was rejected by {by}: change the work (`steer`, `rewind`) so it is asked again, or `git agent-rewind approve {checkpoint}`"
    )
}

/// Step `step` failed: a step safe to re-run runs again on `resume`; any other one only
/// when asked to with `--retry`.
pub fn after_failure(step: &str, rerun_safe: bool) -> String {
    if rerun_safe {
        format!("fix the cause, then `git agent-rewind resume` (step {step} runs again)")
    } else {
        format!("fix the cause, then `git agent-rewind resume --retry {step}`")
    }
}

/// The workflow has no step left to run.
pub const COMPLETE: &str = "nothing: the workflow is complete";
