//! Human output of `run` and `resume`: one line per step saying what happened to it
//! (`plan: ran (exit 0)`, `plan: skipped (inputs unchanged since @3)`, `build: failed (exit
//! 127: command not found)`), then how the run ended and what to do next. It only words the
//! runner's report; it never decides what a step should do.

use super::Style;
use agent_rewind::model::Status;
use agent_rewind::workflow::runner::{RunReport, StepAction, StepReport};

/// Why a step ran when nothing but its absence asked for it: the line then gives no reason.
const FIRST_RUN: &str = "not run yet";

pub fn run_report(r: &RunReport, st: &Style) -> String {
    let mut s = format!("run {} ({})\n", st.bold(&r.run), r.workflow);
    if let Some(h) = &r.took_over_from {
        s.push_str(&format!("  took over a stale runner lock ({h})\n"));
    }
    if let Some(f) = &r.workflow_file_changed {
        s.push_str(&format!(
            "  note: {f} changed since the run stored it; using the stored copy (`resume --workflow {f}` uses the file)\n"
        ));
    } else if r.workflow_changed {
        s.push_str("  note: the workflow changed since this run last recorded it\n");
    }
    for step in &r.reconciled {
        s.push_str(&format!(
            "  reconciled {step}: its runner died mid-step (interrupted)\n"
        ));
    }
    for x in &r.steps {
        s.push_str(&format!("  {}\n", step_line(x)));
    }
    for t in &r.external {
        s.push_str(&format!(
            "  worker of {} (attempt {}) reports with: {}\n",
            t.step, t.attempt, t.command
        ));
    }
    match &r.stopped {
        Some(why) => s.push_str(&format!("stopped: {why}\nnext: {}", r.next_action)),
        None => s.push_str(&st.status("completed")),
    }
    s
}

/// `<step>: <what happened> (<detail>)`.
fn step_line(x: &StepReport) -> String {
    let reason = x.reason.as_str();
    // A reason worth saying beside an outcome: why the step ran this time.
    let why_ran = (reason != FIRST_RUN).then_some(reason);
    let (what, detail): (&str, Vec<String>) = match x.action {
        StepAction::Ran => {
            let (what, outcome) = match x.status {
                Some(Status::Completed) => ("ran", exit_detail(x.exit_code)),
                Some(Status::Interrupted) => ("interrupted", "Ctrl-C".to_string()),
                _ => ("failed", exit_detail(x.exit_code)),
            };
            let mut detail = vec![outcome];
            detail.extend(why_ran.map(str::to_string));
            (what, detail)
        }
        StepAction::Skipped | StepAction::SkippedEffect => ("skipped", vec![reason.to_string()]),
        StepAction::GateOpened => (
            "awaiting approval",
            why_ran.map(str::to_string).into_iter().collect(),
        ),
        StepAction::GatePassed => ("passed", vec![reason.to_string()]),
        StepAction::Stopped => ("stopped", vec![reason.to_string()]),
        StepAction::Dispatched => {
            let mut detail: Vec<String> = x
                .attempt
                .map(|a| format!("attempt {a}"))
                .into_iter()
                .collect();
            detail.extend(why_ran.map(str::to_string));
            ("handed to its worker", detail)
        }
        StepAction::Waiting => ("waiting", vec![reason.to_string()]),
    };
    let detail: Vec<String> = detail.into_iter().filter(|d| !d.is_empty()).collect();
    if detail.is_empty() {
        format!("{}: {what}", x.step)
    } else {
        format!("{}: {what} ({})", x.step, detail.join("; "))
    }
}

/// `exit 0`, `exit 127: command not found`, or that no exit code came (a signal).
fn exit_detail(code: Option<i32>) -> String {
    match code {
        // What `sh -c` answers for a command it cannot find or cannot execute.
        Some(127) => "exit 127: command not found".into(),
        Some(126) => "exit 126: not executable".into(),
        Some(c) => format!("exit {c}"),
        None => "killed by a signal".into(),
    }
}
