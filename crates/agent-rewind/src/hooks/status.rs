//! `hooks status`: per agent, whether our hooks are installed here and whether the agent will
//! actually run them, with the exact step when it will not. Each agent has its own gate:
//!
//! - Claude Code: `disableAllHooks` in its user, project or local settings;
//! - Codex CLI: the project's trust and, for each hook definition, the user's trust
//!   (`[projects."<root>"] trust_level` and `[hooks.state."<file>:…"]` in
//!   `$CODEX_HOME/config.toml`, default `~/.codex`); Codex compares a hash we cannot
//!   verify, so a recorded trust is reported as recorded, not as proven;
//! - Gemini CLI: folder trust (`~/.gemini/trustedFolders.json`, or
//!   `GEMINI_CLI_TRUST_WORKSPACE=true`); headless, an untrusted folder is refused;
//! - Qwen Code: `disableAllHooks`, and folder trust when it is turned on ([`super::qwen`]);
//! - GitHub Copilot CLI: folder trust (`trustedFolders`, `COPILOT_ALLOW_ALL`) and
//!   `disableAllHooks` ([`super::copilot`]);
//! - OpenCode: its plugin file; Cursor: its hooks file (nothing more is known);
//! - Pi: its extension file, unless the project's `.pi/settings.json` excludes it (no
//!   trust step);
//! - Kilo: its plugin file, unless `KILO_DISABLE_PROJECT_CONFIG` is set ([`super::kilo`]);
//! - Auggie: no trust step, a login ([`super::auggie`]);
//! - Factory Droid: `hooks.hooksDisabled`, and `.factory/hooks.json` hiding our events
//!   ([`super::droid`]).
//!
//! Reads the agents' files; never writes them, and never records trust for the user.

use super::Agent;
use super::settings::JsonConfig;
use crate::store::Store;
use agent_rewind_core::error::Result;
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One agent's hooks here.
#[derive(Debug, Clone, Serialize)]
pub struct AgentHooks {
    pub agent: Agent,
    /// The configuration file holding our hooks.
    pub path: String,
    /// The events whose entries hold our command (empty: not installed).
    pub events: Vec<String>,
    /// Whether the agent will run them: `yes`, `no`, or `unknown` (nothing to check).
    pub runs: &'static str,
    /// Why, and what to do when it will not.
    pub reason: String,
}

/// The status of every agent's hooks in this worktree; `home` is the user's home folder.
pub fn status(store: &Store, home: &Path) -> Result<Vec<AgentHooks>> {
    let workdir = store.worktree().root()?;
    // The agents record real paths.
    let root = std::fs::canonicalize(workdir).unwrap_or_else(|_| workdir.to_path_buf());
    let mut out = vec![];
    for agent in Agent::ALL {
        let (path, events) = match JsonConfig::of(agent) {
            Some(config) => config.installed(store)?,
            None if agent == Agent::Pi => super::pi::installed(&root),
            None if agent == Agent::Kilo => super::kilo::installed(&root),
            None => {
                let p = root.join(super::opencode::PLUGIN_PATH);
                let ours = std::fs::read_to_string(&p)
                    .is_ok_and(|t| t.lines().next() == super::opencode::PLUGIN.lines().next());
                let events = if ours {
                    super::opencode::EVENTS
                        .iter()
                        .map(|e| e.to_string())
                        .collect()
                } else {
                    vec![]
                };
                (p, events)
            }
        };
        let (runs, reason) = if events.is_empty() {
            (
                "no",
                format!(
                    "not installed: `git agent-rewind hooks install --agent {}`",
                    agent.name()
                ),
            )
        } else {
            match agent {
                Agent::Claude => claude(&root, home),
                Agent::Codex => codex(&root, &path, home),
                Agent::Gemini => gemini(&root, home),
                Agent::Opencode => (
                    "yes",
                    "OpenCode loads the project's plugin folder at startup".into(),
                ),
                Agent::Cursor => ("unknown", "Cursor's CLI could not be checked here".into()),
                Agent::Qwen => super::qwen::status(&root, home),
                Agent::Copilot => super::copilot::status(&root, home),
                Agent::Pi => super::pi::runs(&root),
                Agent::Kilo => super::kilo::runs(),
                Agent::Auggie => super::auggie::status(),
                Agent::Droid => super::droid::status(&root, home),
            }
        };
        out.push(AgentHooks {
            agent,
            path: path.display().to_string(),
            events,
            runs,
            reason,
        });
    }
    Ok(out)
}

/// A JSON settings file of an agent (`None`: missing or not JSON).
pub(super) fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// The "no" of an agent whose settings file among `files` turns every hook off with
/// `disableAllHooks` (Claude Code's key, which Qwen Code and Copilot CLI copied).
pub(super) fn all_hooks_disabled(files: &[&Path]) -> Option<(&'static str, String)> {
    let f = files
        .iter()
        .find(|f| read_json(f).is_some_and(|v| v["disableAllHooks"] == true))?;
    Some((
        "no",
        format!(
            "disableAllHooks is true in {}: remove it to record turns",
            f.display()
        ),
    ))
}

/// Claude Code runs project hooks without asking, unless a settings file turns all off.
fn claude(root: &Path, home: &Path) -> (&'static str, String) {
    let files = [
        home.join(".claude/settings.json"),
        root.join(".claude/settings.json"),
        root.join(".claude/settings.local.json"),
    ];
    if let Some(no) = all_hooks_disabled(&files.iter().map(|f| f.as_path()).collect::<Vec<_>>()) {
        return no;
    }
    (
        "yes",
        "Claude Code runs the project's hooks without asking".into(),
    )
}

/// Codex runs a project hook once the project is trusted and the user trusted that hook.
fn codex(root: &Path, hooks_file: &Path, home: &Path) -> (&'static str, String) {
    let codex_home = std::env::var_os("CODEX_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".codex"));
    let config_path = codex_home.join("config.toml");
    let config: toml::Table = std::fs::read_to_string(&config_path)
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or_default();
    let project_trusted = config
        .get("projects")
        .and_then(|p| p.get(root.display().to_string()))
        .and_then(|p| p.get("trust_level"))
        .and_then(|t| t.as_str())
        == Some("trusted");
    if !project_trusted {
        return (
            "no",
            format!(
                "Codex loads a project's hooks only in a trusted project: trust {} in Codex \
                 (it writes [projects.\"{}\"] trust_level = \"trusted\" to {})",
                root.display(),
                root.display(),
                config_path.display()
            ),
        );
    }
    let trusted = trusted_codex_hooks(&config, hooks_file);
    if trusted == 0 {
        return (
            "no",
            "Codex runs a hook only after you trust it: open Codex here and run /hooks \
             (`codex exec` skips untrusted hooks without a word)"
                .into(),
        );
    }
    (
        "yes",
        format!(
            "trust recorded for {trusted} of our hook entries (Codex checks each against a hash \
             of its definition: a changed hook needs /hooks again)"
        ),
    )
}

/// Gemini CLI refuses, headless, a folder the user has not trusted.
pub(super) fn gemini(root: &Path, home: &Path) -> (&'static str, String) {
    if std::env::var("GEMINI_CLI_TRUST_WORKSPACE").is_ok_and(|v| v == "true") {
        return (
            "yes",
            "GEMINI_CLI_TRUST_WORKSPACE=true trusts this folder".into(),
        );
    }
    let file = home.join(".gemini/trustedFolders.json");
    let rules = read_json(&file).unwrap_or(Value::Null);
    let rules = rules.as_object().cloned().unwrap_or_default();
    let mut trusted = false;
    for (path, level) in &rules {
        let p = Path::new(path);
        match level.as_str() {
            Some("DO_NOT_TRUST") if p == root => {
                return (
                    "no",
                    format!("{} marks this folder DO_NOT_TRUST", file.display()),
                );
            }
            Some("TRUST_FOLDER") if root.starts_with(p) => trusted = true,
            Some("TRUST_PARENT") if p.parent().is_some_and(|d| root.starts_with(d)) => {
                trusted = true
            }
            _ => {}
        }
    }
    if trusted {
        (
            "yes",
            format!("the folder is trusted in {}", file.display()),
        )
    } else {
        (
            "no",
            format!(
                "Gemini CLI refuses an untrusted folder headless (exit 55): trust {} in Gemini \
                 CLI (it records it in {}), or run it with --skip-trust",
                root.display(),
                file.display()
            ),
        )
    }
}

/// How many hook definitions of `hooks_file` the user trusted in Codex's `config.toml`
/// (`[hooks.state."<file>:<event>:<i>:<j>"]`).
pub(super) fn trusted_codex_hooks(config: &toml::Table, hooks_file: &Path) -> usize {
    let prefix = format!("{}:", hooks_file.display());
    config
        .get("hooks")
        .and_then(|h| h.get("state"))
        .and_then(|s| s.as_table())
        .map(|t| t.keys().filter(|k| k.starts_with(&prefix)).count())
        .unwrap_or(0)
}
