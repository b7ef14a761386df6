//! `hooks status` at both levels: per agent, our hooks in the repository (the project level,
//! [`super::status`]) and in the user's own configuration ([`super::global`]), each with
//! whether the agent will run them. The user level has gates of its own:
//!
//! - Claude Code: `disableAllHooks` (user or project settings); otherwise it runs the user's
//!   hooks in every folder (interactively once the folder's trust prompt was accepted, as
//!   for project hooks);
//! - Codex CLI: no project trust (the user's layer is never disabled), but each hook
//!   definition must be trusted with `/hooks`, keyed to `$CODEX_HOME/hooks.json`;
//! - Gemini CLI: headless, it refuses a folder that is not trusted before any hook runs;
//! - Qwen Code: `disableAllHooks` only: its user hooks run in untrusted folders too;
//! - GitHub Copilot CLI: `disableAllHooks` only: its user hooks run in untrusted folders;
//! - OpenCode: its user plugin folder is always loaded; Cursor: nothing known;
//! - Pi: an exclusion of our extension in the user's settings.
//!
//! Reads the agents' files; never writes them, and never records trust for the user.

use super::Agent;
use super::global::UserDirs;
use super::status::{AgentHooks, all_hooks_disabled, read_json};
use crate::store::Store;
use agent_rewind_core::error::Result;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Our hooks of one agent at one level, and whether the agent will run them.
#[derive(Debug, Clone, Serialize)]
pub struct LevelHooks {
    /// The configuration file holding our hooks at this level.
    pub path: String,
    /// The events whose entries hold our command (empty: not installed).
    pub events: Vec<String>,
    /// Whether the agent will run them: `yes`, `no`, or `unknown` (nothing to check).
    pub runs: &'static str,
    /// Why, and what to do when it will not.
    pub reason: String,
}

/// One agent at both levels. Serialized with the repository level's fields at the top (as
/// before the user level existed; absent outside a repository) and the user level's under
/// `global`.
#[derive(Debug, Clone, Serialize)]
pub struct AgentLevels {
    pub agent: Agent,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub repository: Option<LevelHooks>,
    pub global: LevelHooks,
}

impl From<AgentHooks> for LevelHooks {
    fn from(a: AgentHooks) -> Self {
        LevelHooks {
            path: a.path,
            events: a.events,
            runs: a.runs,
            reason: a.reason,
        }
    }
}

/// Every agent at both levels: `store` is the repository (`None` outside one), `cwd` the
/// folder an agent started here would work in.
pub fn status(store: Option<&Store>, cwd: &Path, dirs: &UserDirs) -> Result<Vec<AgentLevels>> {
    let repository = match store {
        Some(s) => Some(super::status::status(s, dirs.home())?),
        None => None,
    };
    let folder = match store {
        Some(s) => s.worktree().root()?.to_path_buf(),
        None => cwd.to_path_buf(),
    };
    let folder = std::fs::canonicalize(&folder).unwrap_or(folder);
    let mut out = vec![];
    for agent in Agent::ALL {
        let repo = repository
            .as_ref()
            .and_then(|r| r.iter().find(|a| a.agent == agent).cloned());
        let both = repo.as_ref().is_some_and(|r| !r.events.is_empty());
        let (path, events) = super::global::installed(dirs, agent);
        let (runs, mut reason) = if events.is_empty() {
            (
                "no",
                format!(
                    "not installed: `git agent-rewind hooks install --agent {} --global`",
                    agent.name()
                ),
            )
        } else {
            user_gate(agent, &folder, &path, dirs)
        };
        if both && !events.is_empty() {
            reason.push_str(&format!(
                "; also installed in this repository: keep one level (`git agent-rewind hooks \
                 uninstall --agent {}` here, or the same with --global)",
                agent.name()
            ));
        }
        out.push(AgentLevels {
            agent,
            repository: repo.map(LevelHooks::from),
            global: LevelHooks {
                path: path.display().to_string(),
                events,
                runs,
                reason,
            },
        });
    }
    Ok(out)
}

/// Whether `agent` runs the user-level hooks in `path` when started in `folder`.
fn user_gate(agent: Agent, folder: &Path, path: &Path, dirs: &UserDirs) -> (&'static str, String) {
    match agent {
        Agent::Claude => {
            let files = [
                path.to_path_buf(),
                folder.join(".claude/settings.json"),
                folder.join(".claude/settings.local.json"),
            ];
            all_hooks_disabled(&files.iter().map(PathBuf::as_path).collect::<Vec<_>>()).unwrap_or((
                "yes",
                "Claude Code runs the user's hooks in every folder (interactively once you \
                     accept the folder's trust prompt, as for a project's hooks)"
                    .into(),
            ))
        }
        Agent::Codex => codex(path, dirs),
        Agent::Gemini => {
            let (runs, reason) = super::status::gemini(folder, &dirs.gemini_home());
            match runs {
                "yes" => ("yes", format!("the user's hooks run here: {reason}")),
                _ => (runs, reason),
            }
        }
        Agent::Cursor => ("unknown", "Cursor's CLI could not be checked here".into()),
        Agent::Opencode => (
            "yes",
            "OpenCode loads its user plugin folder at startup, in every folder".into(),
        ),
        Agent::Qwen => all_hooks_disabled(&[path]).unwrap_or((
            "yes",
            "Qwen Code runs the user's hooks in every folder, trusted or not (--safe-mode and \
             --bare skip them)"
                .into(),
        )),
        Agent::Copilot => {
            let settings = dirs.copilot_home().join("settings.json");
            all_hooks_disabled(&[&settings]).unwrap_or((
                "yes",
                "GitHub Copilot CLI runs the user's hooks in every folder, also one you have \
                 not trusted"
                    .into(),
            ))
        }
        Agent::Pi => pi(dirs),
        Agent::Kilo => match super::kilo::runs() {
            ("yes", _) => (
                "yes",
                "Kilo loads its user plugin folder at startup, in every folder".into(),
            ),
            other => other,
        },
        Agent::Auggie => super::auggie::status(),
        Agent::Droid => droid(path),
    }
}

/// Codex runs a user-level hook once the user trusted that hook definition; the folder's
/// trust does not matter for the user's own layer.
fn codex(hooks_file: &Path, dirs: &UserDirs) -> (&'static str, String) {
    let config_path = dirs.codex_home().join("config.toml");
    let config: toml::Table = std::fs::read_to_string(&config_path)
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or_default();
    let trusted = super::status::trusted_codex_hooks(&config, hooks_file);
    if trusted == 0 {
        return (
            "no",
            format!(
                "Codex runs a hook only after you trust it: open Codex and run /hooks (it \
                 records the trust in {}; `codex exec` skips untrusted hooks without a word)",
                config_path.display()
            ),
        );
    }
    (
        "yes",
        format!(
            "trust recorded for {trusted} of our hook entries, in every folder (Codex checks \
             each against a hash of its definition: a changed hook needs /hooks again)"
        ),
    )
}

/// Pi loads its user extension folder unless its settings exclude our extension.
fn pi(dirs: &UserDirs) -> (&'static str, String) {
    if let Some(no) = super::pi::excluded_by(&dirs.pi_agent_dir().join("settings.json")) {
        return no;
    }
    (
        "yes",
        "Pi loads the user's extensions folder at startup, in every folder, with no trust step \
         (`pi --no-extensions` turns that off for a run)"
            .into(),
    )
}

/// Factory Droid runs the user's hooks in every folder unless `hooks.hooksDisabled` is set in
/// the user's settings.
fn droid(path: &Path) -> (&'static str, String) {
    match read_json(path).is_some_and(|v| v["hooks"]["hooksDisabled"] == true) {
        true => (
            "no",
            format!(
                "hooks.hooksDisabled is true in {}: remove it to record turns",
                path.display()
            ),
        ),
        false => (
            "yes",
            "Factory Droid runs the user's hooks in every folder (`droid exec` without asking, \
             its interactive screen once you trusted the folder)"
                .into(),
        ),
    }
}
