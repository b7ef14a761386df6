//! `hooks install|uninstall --global` and `hooks status`: the user level of the agents' hooks
//! (flags checked, library called, outcomes rendered). Works outside a repository; no hook
//! semantics live here.

use super::hooks::{HooksArgs, agents, output};
use crate::cli::{Ctx, Output};
use agent_rewind::hooks::global::{self, UserDirs};
use agent_rewind::hooks::global_status::{self, AgentLevels, LevelHooks};
use agent_rewind::hooks::install::HooksOutcome;
use agent_rewind::hooks::{Agent, switch};
use agent_rewind::store::{OpenFor, Store};
use agent_rewind_core::error::{Error, Result};

/// The flags `--global` cannot go with, refused before anything is read.
fn check_flags(a: &HooksArgs) -> Result<()> {
    if a.git || a.assisted_by {
        let flag = if a.git { "--git" } else { "--assisted-by" };
        return Err(Error::usage(format!(
            "{flag} cannot go with --global: git hooks belong to one repository"
        ))
        .with_hint(
            "run `git agent-rewind hooks install` in each repository that wants them; \
             --global installs agents' hooks only",
        ));
    }
    if a.mcp {
        return Err(Error::usage(
            "--mcp cannot go with --global: the MCP server is registered per repository",
        )
        .with_hint(
            "run `git agent-rewind hooks install --agent <agent> --mcp` in the repository",
        ));
    }
    Ok(())
}

/// What the user should know after installing `agent` at the user level.
fn install_warning(agent: Agent, dirs: &UserDirs) -> Option<String> {
    match agent {
        Agent::Codex => Some(format!(
            "Codex runs these hooks only once you trust each of them: open Codex and trust \
             them with /hooks (Codex keeps that trust in {}); until then `codex exec` skips \
             them without a word and nothing is recorded",
            dirs.codex_home().join("config.toml").display()
        )),
        Agent::Gemini => Some(
            "Gemini CLI refuses, headless, a folder you have not trusted, before any hook \
             runs: the user's hooks record in the folders you trust"
                .to_string(),
        ),
        _ => None,
    }
}

fn global_output(out: HooksOutcome) -> Output {
    let mut o = output(&out);
    o.json["global"] = true.into();
    o
}

/// `hooks install --agent <a> --global`.
pub fn install(a: &HooksArgs) -> Result<Output> {
    check_flags(a)?;
    let named = agents(&a.agents)?;
    if named.is_empty() {
        return Err(
            Error::usage("--global needs the agents to install: --agent <agent>").with_hint(
                "e.g. `git agent-rewind hooks install --agent claude --global` (or --agent all)",
            ),
        );
    }
    let dirs = UserDirs::from_env()?;
    let changes = global::install(&dirs, &named)?;
    let warnings = named
        .iter()
        .filter_map(|agent| install_warning(*agent, &dirs))
        .collect();
    Ok(global_output(HooksOutcome {
        agents: changes,
        warnings,
        ..Default::default()
    }))
}

/// `hooks uninstall [--agent <a>] --global` (no agent: every one).
pub fn uninstall(a: &HooksArgs) -> Result<Output> {
    check_flags(a)?;
    let mut named = agents(&a.agents)?;
    if named.is_empty() {
        named = Agent::ALL.to_vec();
    }
    let dirs = UserDirs::from_env()?;
    let changes = global::uninstall(&dirs, &named)?;
    Ok(global_output(HooksOutcome {
        agents: changes,
        ..Default::default()
    }))
}

/// The repository `hooks status` reports on; `None` outside one.
fn repository(ctx: &Ctx) -> Result<Option<Store>> {
    match Store::discover(&ctx.dir, OpenFor::BriefRead) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.message.starts_with("not a git repository") => Ok(None),
        Err(e) => Err(e),
    }
}

/// `hooks status`: both levels.
pub fn status(ctx: &Ctx) -> Result<Output> {
    let store = repository(ctx)?;
    let dirs = UserDirs::from_env()?;
    let agents = global_status::status(store.as_ref(), &ctx.dir, &dirs)?;
    let mut human = render_status(&agents);
    if let Some(s) = &store
        && s.config().bool(switch::ENABLED_KEY).ok().flatten() == Some(false)
    {
        human.push_str(&format!(
            "\n\n{} is false in this repository: no hook records here",
            switch::ENABLED_KEY
        ));
    }
    Ok(Output::new(
        serde_json::to_value(&agents).expect("json"),
        human,
    ))
}

fn render_level(s: &mut String, label: &str, level: &LevelHooks) {
    let installed = if level.events.is_empty() {
        "not installed".to_string()
    } else {
        format!("installed in {}", level.path)
    };
    s.push_str(&format!(
        "{label} {installed}\n            runs: {} ({})\n",
        level.runs, level.reason
    ));
}

fn render_status(agents: &[AgentLevels]) -> String {
    let mut s = String::new();
    for a in agents {
        s.push_str(&format!("{}\n", a.agent.name()));
        if let Some(repo) = &a.repository {
            render_level(&mut s, "  here:  ", repo);
        }
        render_level(&mut s, "  global:", &a.global);
    }
    s.trim_end().to_string()
}
