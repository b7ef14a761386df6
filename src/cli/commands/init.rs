//! `init`: one-time set-up of the repository, optionally with hooks.

use super::hooks;
use crate::cli::{Ctx, Output};
use agent_rewind::ops;
use agent_rewind_core::error::Result;
use clap::Args;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind init
      Set this repository up (idempotent): `git log` shows the runs' notes and leaves the runs' many refs out of its decorations.
  git agent-rewind init --hooks --agent claude
      Also install the git hooks (a checkpoint on every commit) and Claude Code's hooks (a checkpoint on every turn).";

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Also install the git hooks (post-commit, post-rewrite).
    #[arg(long)]
    pub hooks: bool,
    /// Also install an agent's hooks (claude, codex, gemini, cursor, opencode, qwen, copilot,
    /// pi, auggie, kilo, droid, all). Repeatable.
    #[arg(long = "agent", value_name = "AGENT")]
    pub agents: Vec<String>,
}

pub fn run(a: InitArgs, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    let hook_opts = hooks::init_options(&a)?;
    let out = ops::init::init(&store)?;
    let human = if out.added.is_empty() {
        format!("already initialized ({})", out.git_dir)
    } else {
        format!("initialized {}: set {}", out.git_dir, out.added.join(", "))
    };
    let mut output = Output::new(serde_json::to_value(&out).expect("json"), human);
    if let Some(opts) = hook_opts {
        hooks::init_hooks(&store, &opts, &mut output)?;
    }
    Ok(output)
}
