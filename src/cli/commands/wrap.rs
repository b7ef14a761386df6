//! `wrap -- <command> [args…]`: run any agent on this terminal and record its work as
//! checkpoints (the library's `ops::wrap`). Prints nothing while the command runs (it owns
//! the terminal); afterwards one summary line on stderr (stdout stays the command's), and
//! exits with the command's status.

use crate::cli::{Ctx, Output, render, stderr_line};
use agent_rewind::ops;
use agent_rewind::ops::wrap::{WrapOptions, WrapReport};
use agent_rewind_core::error::Result;
use clap::Args;
use std::ffi::OsString;

/// The examples ending `-h`, and the exit status.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind wrap -- aider --model sonnet
      Run aider as usual; a checkpoint whenever the files changed and then stayed quiet for 2 s, and one when it exits.
  git -c agentRewind.wrapQuiet=500ms agent-rewind wrap -- ./my-agent.sh
      The same for a home-made script, with a shorter quiet time.

Joins the active run of this worktree, or starts one labelled `wrap: <command>`; every checkpoint's agent is the command's name.
Exit status: the command's; 128 + n when a signal n ended it (as a shell reports it); 127 when the command is not found, 126 when it is not executable (nothing recorded).";

#[derive(Debug, Args)]
pub struct WrapArgs {
    /// The command to run and its arguments (after `--`).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND",
        value_parser = clap::value_parser!(OsString)
    )]
    pub command: Vec<OsString>,
}

pub fn run(a: WrapArgs, json: bool, ctx: &Ctx) -> Result<Output> {
    let mut argv = a.command.into_iter();
    let program = argv.next().unwrap_or_default();
    let opts = WrapOptions {
        program,
        args: argv.collect(),
        dir: ctx.dir.clone(),
    };
    let store = ctx.store()?;
    // Settings first: a bad one is refused before anything runs.
    ops::wrap::quiet_time(&store)?;
    let path = match ops::wrap::resolve(&opts.program, &ctx.dir) {
        Ok(p) => p,
        Err(unrunnable) => return Ok(unrunnable_output(unrunnable, json)),
    };
    let report = ops::wrap::wrap(&store, &opts, &path)?;
    if !report.checkpoints.is_empty() || report.started_run {
        crate::cli::maintenance::after_recording(&store);
    }
    for w in &report.warnings {
        render::warn(w);
    }
    if !json {
        stderr_line(&render::terminal_safe(&summary(&report)));
    }
    let mut out = Output::new(serde_json::to_value(&report).expect("json"), String::new());
    out.exit_code = report.exit_code;
    Ok(out)
}

/// `wrap: aider exited 0; 3 checkpoints in run r1`.
fn summary(r: &WrapReport) -> String {
    let end = match &r.signal {
        Some(s) => format!("{} ended by {s} (exit {})", r.agent, r.exit_code),
        None => format!("{} exited {}", r.agent, r.exit_code),
    };
    let what = match r.checkpoints.len() {
        0 => "nothing changed, no checkpoint".to_string(),
        1 => "1 checkpoint".to_string(),
        n => format!("{n} checkpoints"),
    };
    let started = if r.started_run {
        ", started by wrap"
    } else {
        ""
    };
    format!("wrap: {end}; {what} in run {}{started}", r.run)
}

/// A command that cannot be run: git's style error on stderr, the shell's exit status.
fn unrunnable_output(u: ops::wrap::Unrunnable, json: bool) -> Output {
    stderr_line(&format!(
        "error: {}",
        render::terminal_safe(&u.error.message)
    ));
    if let Some(h) = &u.error.hint {
        stderr_line(&format!("hint: {}", render::terminal_safe(h)));
    }
    let doc = serde_json::json!({"error": {
        "kind": u.error.kind.as_str(),
        "message": u.error.message,
        "hint": u.error.hint,
    }});
    let mut out = Output::new(
        if json { doc } else { serde_json::Value::Null },
        String::new(),
    );
    out.exit_code = u.exit_code;
    out
}
