//! Steps done elsewhere (`external = true`): what the runner hands a worker when it begins
//! such a step — the run, the step, the attempt it must report for, and the exact command
//! that reports back — and what it reports when it launches a step. Plain data: the runner
//! records, `ops::external` validates the reports.

use serde::Serialize;

/// An external step begun and not reported yet: what its worker needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExternalTask {
    pub run: String,
    pub step: String,
    /// The attempt (the step's generation) the worker reports for; a report for any other
    /// attempt is refused.
    pub attempt: u32,
    /// The step's `begin` checkpoint of that attempt.
    pub checkpoint: String,
    /// The idempotency key of an effect step (the worker must not repeat an effect done
    /// under the same key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// The command that reports the step completed (`--status failed` for a failure).
    pub command: String,
}

impl ExternalTask {
    pub fn new(
        run: &str,
        step: &str,
        attempt: u32,
        checkpoint: String,
        key: Option<String>,
    ) -> Self {
        ExternalTask {
            run: run.to_string(),
            step: step.to_string(),
            attempt,
            checkpoint,
            idempotency_key: key,
            command: report_command(run, step, attempt),
        }
    }
}

/// The exact command a worker runs to report attempt `attempt` of `step` completed.
pub fn report_command(run: &str, step: &str, attempt: u32) -> String {
    format!("git agent-rewind step end {step} --run {run} --attempt {attempt} --status completed")
}

/// A step the runner started (its `begin` is recorded before the command starts): one line
/// of `watch`'s output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Launch {
    pub run: String,
    pub step: String,
    pub attempt: u32,
    /// The `begin` checkpoint recorded before the launch.
    pub checkpoint: String,
    /// Handed to a worker (an external step) rather than run here.
    pub external: bool,
    /// Why the step runs (first time, inputs changed, upstream ran again …).
    pub reason: String,
}
