//! `hooks install|uninstall` and the hooks of `init --hooks/--agent`: parse flags into
//! library options and render outcomes. No hook semantics live here.

use super::init::InitArgs;
use crate::cli::{Ctx, Output};
use agent_rewind::hooks::install::{FileAction, HooksOptions, HooksOutcome};
use agent_rewind::hooks::{self, Agent};
use agent_rewind::store::Store;
use agent_rewind_core::error::Result;
use clap::{Args, Subcommand};

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind hooks install
      Install the git hooks: a checkpoint of the active run on every commit, and amends and rebases mapped onto it; existing hooks are kept and chained.
  git agent-rewind hooks install --agent claude
      Install Claude Code's hooks into its settings: a checkpoint on every turn, with the session id to resume the conversation.
  git agent-rewind hooks install --agent claude --global
      Install Claude Code's hooks in your own settings (~/.claude/settings.json): every repository it works in is recorded, from its first turn, without an install there. `git config agentRewind.enabled false` turns recording off in one repository (with --global, everywhere but where it is true).

`--assisted-by` also adds an `Assisted-by: <agent>:<model>` trailer to each commit holding agent turns (opt-in; never Co-Authored-By). `git agent-rewind hooks uninstall` removes exactly what install added, the git hooks and every agent's. In a worktree of 20,000 index entries or more without core.fsmonitor, the post-commit hook records its checkpoint in the background and the commit returns at once; later commands wait for it. agentRewind.postCommitInBackground = auto (default), true or false.";

#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Install hooks: the git hooks (the default), and/or an agent's (`--agent claude`).
    Install(HooksArgs),
    /// Remove exactly what install added (with no flags: the git hooks and every agent's).
    Uninstall(HooksArgs),
    /// Per agent, in this repository and in your own configuration (`global`): whether our
    /// hooks are installed and will run, and the step if not.
    Status,
}

#[derive(Debug, Args)]
pub struct HooksArgs {
    /// The git hooks (post-commit, post-rewrite) in the hooks folder git uses.
    #[arg(long)]
    pub git: bool,
    /// An agent's hooks: claude, codex, gemini, cursor, opencode, qwen, copilot, pi, auggie,
    /// kilo, droid, or all (merged into the agent's project configuration; see
    /// docs/HOOKS.md). Repeatable.
    #[arg(long = "agent", value_name = "AGENT")]
    pub agents: Vec<String>,
    /// Also add (uninstall: remove) `git agent-rewind mcp` in each named agent's
    /// project MCP configuration (docs/MCP.md).
    #[arg(long, requires = "agents")]
    pub mcp: bool,
    /// The opt-in prepare-commit-msg hook: an `Assisted-by: <agent>:<model>` trailer in each
    /// commit message for the agents whose turns the commit holds (never Co-Authored-By).
    #[arg(long)]
    pub assisted_by: bool,
    /// In each named agent's user-level configuration (in your home folder) instead of the
    /// repository's: every repository the agent works in is recorded. Works anywhere; never
    /// touches git hooks, which belong to one repository (docs/HOOKS.md).
    #[arg(long)]
    pub global: bool,
}

/// The `--agent` values (names or `all`), each agent once, in the order first named.
pub(super) fn agents(names: &[String]) -> Result<Vec<Agent>> {
    let mut out: Vec<Agent> = vec![];
    for n in names {
        for a in Agent::parse_many(n)? {
            if !out.contains(&a) {
                out.push(a);
            }
        }
    }
    Ok(out)
}

fn action_text(a: FileAction) -> &'static str {
    match a {
        FileAction::Created => "created",
        FileAction::Added => "block added to the existing file",
        FileAction::Updated => "block updated",
        FileAction::Unchanged => "already installed",
        FileAction::Removed => "block removed (the rest of the file kept)",
        FileAction::Deleted => "removed (the file only held ours)",
        FileAction::Absent => "nothing of ours there",
    }
}

fn render(out: &HooksOutcome) -> String {
    let mut s = String::new();
    if let Some(dir) = &out.hooks_dir {
        s.push_str(&format!("git hooks in {dir}:\n"));
        for c in &out.git {
            s.push_str(&format!("  {:<13} {}\n", c.hook, action_text(c.action)));
        }
    }
    for a in &out.agents {
        let events = if a.events.is_empty() {
            String::new()
        } else {
            format!(" ({})", a.events.join(", "))
        };
        let what = if a.events.iter().any(|e| e.starts_with("mcp:")) {
            "MCP server"
        } else {
            "hooks"
        };
        s.push_str(&format!(
            "{} {what} in {}: {}{events}\n",
            serde_json::to_value(a.agent)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            a.path,
            action_text(a.action)
        ));
    }
    s.trim_end().to_string()
}

pub(super) fn output(out: &HooksOutcome) -> Output {
    for w in &out.warnings {
        crate::cli::render::warn(w);
    }
    Output::new(serde_json::to_value(out).expect("json"), render(out))
}

/// `hooks install|uninstall|status`.
pub fn run(cmd: HooksCommand, ctx: &Ctx) -> Result<Output> {
    match cmd {
        HooksCommand::Install(a) if a.global => super::hooks_global::install(&a),
        HooksCommand::Uninstall(a) if a.global => super::hooks_global::uninstall(&a),
        HooksCommand::Status => super::hooks_global::status(ctx),
        HooksCommand::Install(a) => {
            let store = &ctx.store()?;
            let opts = install_options(&a)?;
            Ok(output(&hooks::install::install(store, &opts)?))
        }
        HooksCommand::Uninstall(a) => {
            let store = &ctx.store()?;
            let all = !a.git && a.agents.is_empty() && !a.assisted_by;
            let opts = HooksOptions {
                git: a.git || all,
                assisted_by: a.assisted_by,
                agents: if all {
                    Agent::ALL.to_vec()
                } else {
                    agents(&a.agents)?
                },
                binary: None,
                mcp: a.mcp,
            };
            Ok(output(&hooks::install::uninstall(store, &opts)?))
        }
    }
}

fn install_options(a: &HooksArgs) -> Result<HooksOptions> {
    Ok(HooksOptions {
        git: a.git || (a.agents.is_empty() && !a.assisted_by),
        agents: agents(&a.agents)?,
        assisted_by: a.assisted_by,
        binary: None,
        mcp: a.mcp,
    })
}

/// The options `init` installs hooks with (`None`: no hook flag given). Parsed before `init`
/// changes anything, so a bad agent name changes nothing.
pub fn init_options(a: &InitArgs) -> Result<Option<HooksOptions>> {
    if !a.hooks && a.agents.is_empty() {
        return Ok(None);
    }
    Ok(Some(HooksOptions {
        git: a.hooks,
        agents: agents(&a.agents)?,
        assisted_by: false,
        binary: None,
        mcp: false,
    }))
}

/// Add the hooks `init` was asked for to its output.
pub fn init_hooks(store: &Store, opts: &HooksOptions, out: &mut Output) -> Result<()> {
    let o = output(&hooks::install::install(store, opts)?);
    out.json["hooks"] = o.json;
    out.human = format!("{}\n{}", out.human, o.human);
    Ok(())
}
