//! `hook <name>`: the entry point the installed hooks call.
//!
//! It must never fail the operation that called it: whatever happens (an error, even a panic
//! in the library) it reports on stderr and returns a successful output, and it prints
//! nothing on stdout unless `--json` is given (Claude Code and Codex add a SessionStart hook's
//! stdout to the model's context).
//!
//! A post-commit checkpoint the library hands to the background is recorded by this program
//! started again as `hook post-commit --background <commit> <run> <step> <source>`: this
//! module owns that spelling, on both sides.

use crate::cli::render::{terminal_safe, warn};
use crate::cli::{Ctx, Output};
use agent_rewind::hooks;
use agent_rewind_core::process::Purpose;
use clap::Args;
use std::io::{IsTerminal, Read};
use std::path::Path;

/// The post-commit hook's first argument that marks the child (git passes post-commit none).
const BACKGROUND_FLAG: &str = "--background";

/// Most bytes a hook reads from its standard input.
const MAX_STDIN: u64 = 64 * 1024 * 1024;

#[derive(Debug, Args)]
pub struct HookArgs {
    /// post-commit, post-rewrite, or an agent: claude, codex, gemini, cursor, opencode, qwen,
    /// copilot, pi.
    pub name: String,
    /// The arguments git passes to the hook (post-rewrite: amend or rebase).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// Start this program again in `dir` to record `job`'s post-commit checkpoint, in a process group of its own (a ^C at the
/// prompt right after the commit must not stop it), with the post-commit lock as its
/// standard input so that it holds the lock for as long as it runs.
fn start_background(dir: &Path, job: &hooks::background::Job, lock: std::fs::File) -> bool {
    let Ok(exe) = std::env::current_exe() else {
        return false;
    };
    let mut child = agent_rewind_core::process::command(Purpose::BackgroundCheckpoint, exe);
    child
        .args(["hook", "post-commit", BACKGROUND_FLAG])
        .args(job.to_args())
        .current_dir(dir)
        .stdin(lock)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    agent_rewind_core::platform::process::own_process_group(&mut child);
    child.spawn().is_ok()
}

/// Standard input for hooks that take some; nothing when it is a terminal (never wait for a
/// person).
fn read_stdin(name: &str) -> Vec<u8> {
    let mut buf = vec![];
    let reads = name == "post-rewrite" || hooks::Agent::from_name(name).is_some();
    if reads && !std::io::stdin().is_terminal() {
        let _ = std::io::stdin()
            .lock()
            .take(MAX_STDIN)
            .read_to_end(&mut buf);
    }
    buf
}

/// `hook <name>`: always a successful output; problems go to stderr.
pub fn run(a: HookArgs, ctx: &Ctx) -> Output {
    let dir = &ctx.dir;
    let stdin = read_stdin(&a.name);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        match a.args.split_first() {
            Some((flag, job)) if a.name == "post-commit" && flag == BACKGROUND_FLAG => {
                hooks::run_background_checkpoint(dir, job)
            }
            _ => {
                let start = |job: &_, lock| start_background(dir, job, lock);
                hooks::run_hook(&a.name, &a.args, dir, &stdin, Some(&start))
            }
        }
    }));
    let prefix = format!("git agent-rewind hook {}", a.name);
    match result {
        Ok(Ok(out)) => {
            if out.wrote()
                && let Ok(store) =
                    agent_rewind::store::Store::discover(dir, agent_rewind::store::OpenFor::Work)
            {
                crate::cli::maintenance::after_recording(&store);
            }
            for w in &out.warnings {
                warn(&format!("{prefix}: {w}"));
            }
            if out.action == agent_rewind::hooks::HookAction::Ignored
                && let Some(r) = &out.reason
            {
                warn(&format!("{prefix}: ignored: {r}"));
            }
            let human = agent_context(&a.name, out.context.as_deref());
            Output::raw(
                serde_json::to_value(&out).expect("json"),
                human.into_bytes(),
            )
        }
        Ok(Err(e)) => {
            warn(&format!("{prefix}: nothing recorded: {}", e.message));
            if let Some(h) = &e.hint {
                crate::cli::stderr_line(&format!("hint: {}", terminal_safe(h)));
            }
            Output::new(
                serde_json::json!({"hook": a.name, "action": "failed", "error": e.message}),
                String::new(),
            )
        }
        Err(_) => {
            warn(&format!("{prefix}: nothing recorded (internal error)"));
            Output::new(
                serde_json::json!({"hook": a.name, "action": "failed", "error": "internal error"}),
                String::new(),
            )
        }
    }
}

/// What the agent reads on our stdout: nothing, except the run's manifest after a
/// compaction, resume or clear, in the agent's documented form: a `SessionStart` hook's
/// `hookSpecificOutput.additionalContext`, which Claude Code (checked with 2.1.337), Codex
/// CLI (which copied Claude Code's hook protocol; checked with 0.171.0), Gemini CLI
/// (checked with 0.61.0) and Qwen Code (checked with 0.24.4) add to the model's context;
/// Copilot CLI's top-level `additionalContext`. OpenCode's plugin takes it as plain text
/// and adds it to the compaction's context (`experimental.session.compacting`; checked with
/// 1.18.33 and 1.19.5; Kilo's copy of the plugin does the same, checked with 7.7.9). Factory Droid reads the same
/// `hookSpecificOutput.additionalContext` (checked with 0.225.2). Pi's extension takes it as plain text too, and gives it to the model with the
/// next prompt (`before_agent_start`; checked with 0.73.1).
fn agent_context(hook: &str, context: Option<&str>) -> String {
    match (hooks::Agent::from_name(hook), context) {
        (Some(hooks::Agent::Opencode | hooks::Agent::Kilo | hooks::Agent::Pi), Some(c)) => {
            format!("{c}\n")
        }
        // Copilot CLI reads a top-level `additionalContext` (it ignores Claude's nested one;
        // checked with 1.0.102).
        (Some(hooks::Agent::Copilot), Some(c)) => {
            format!("{}\n", serde_json::json!({ "additionalContext": c }))
        }
        (
            Some(
                hooks::Agent::Claude
                | hooks::Agent::Codex
                | hooks::Agent::Gemini
                | hooks::Agent::Qwen
                | hooks::Agent::Droid,
            ),
            Some(c),
        ) => {
            let out = serde_json::json!({
                "hookSpecificOutput": {
                    "hookEventName": "SessionStart",
                    "additionalContext": c,
                }
            });
            format!("{out}\n")
        }
        _ => String::new(),
    }
}
