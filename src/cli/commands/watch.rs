//! `watch [<run>…] [--once]`: drive runs to the end, printing one line per launch as it
//! happens (human output) and a summary when the watcher stops.

use crate::cli::{Ctx, Output, render};
use agent_rewind::ops;
use agent_rewind::ops::watch::WatchEvent;
use agent_rewind::workflow::external::Launch;
use agent_rewind_core::error::Result;
use clap::Args;
use std::io::Write;

/// The examples ending `-h`, and the exit status.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind watch
      Drive the active run: launch each step as it becomes ready, until the run completes or waits for a person.
  git agent-rewind watch r1 r2
      Drive two runs at once.
  git agent-rewind watch r1 --once
      One pass: launch what is ready, then exit.

Looks at the runs' refs every 100 ms, backing off to once a second while nothing changes.
Exit status (as `run`): 0 every run completed; 1 a step failed, a gate was rejected, or an error; 3 a run waits for a person (or, after --once, for its workers).";

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The runs to drive (default: the active run of this worktree).
    pub runs: Vec<String>,
    /// One pass: launch every step that is ready, then exit.
    #[arg(long)]
    pub once: bool,
}

pub fn run(a: WatchArgs, json: bool, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    let runs = if a.runs.is_empty() {
        agent_rewind::journal::active_run(&store)?
            .into_iter()
            .collect()
    } else {
        a.runs
            .iter()
            .map(|r| ops::address::run(&store, r))
            .collect::<Result<Vec<_>>>()?
    };
    let style = &ctx.style(&store)?;
    let mut print = |e: &WatchEvent| {
        // A launch recorded its step's begin.
        if matches!(e, WatchEvent::Launched(_)) {
            crate::cli::maintenance::after_recording(&store);
        }
        if json {
            return;
        }
        let line = match e {
            WatchEvent::Launched(l) => launch_line(l, style),
            WatchEvent::Waiting(r) => format!(
                "waiting: run {} {}",
                style.bold(&r.run),
                r.stopped.as_deref().unwrap_or("waits")
            ),
        };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", render::terminal_safe(&line));
        let _ = out.flush();
    };
    let report = ops::watch::watch(&store, &runs, a.once, &mut print)?;
    crate::cli::maintenance::after_recording(&store);
    let mut human = String::new();
    for r in &report.runs {
        let how = match (&r.stopped, r.outcome) {
            (_, agent_rewind::workflow::runner::Outcome::Completed) => style.status("completed"),
            (Some(why), _) => why.clone(),
            (None, o) => format!("{o:?}").to_lowercase(),
        };
        human.push_str(&format!("run {}: {how}\n", style.bold(&r.run)));
        if r.outcome != agent_rewind::workflow::runner::Outcome::Completed {
            human.push_str(&format!("  next: {}\n", r.next_action));
        }
    }
    let mut out = Output::new(
        serde_json::to_value(&report).expect("json"),
        human.trim_end().to_string(),
    );
    out.exit_code = report.exit_code;
    Ok(out)
}

/// `launched r1/test attempt 1 (not run yet)`, or for an external step `dispatched …` with
/// the command its worker reports with.
fn launch_line(l: &Launch, st: &render::Style) -> String {
    if l.external {
        format!(
            "dispatched {}/{} attempt {} to a worker ({}); it reports with: {}",
            st.bold(&l.run),
            l.step,
            l.attempt,
            l.reason,
            agent_rewind::workflow::external::report_command(&l.run, &l.step, l.attempt)
        )
    } else {
        format!(
            "launched {}/{} attempt {} ({})",
            st.bold(&l.run),
            l.step,
            l.attempt,
            l.reason
        )
    }
}
