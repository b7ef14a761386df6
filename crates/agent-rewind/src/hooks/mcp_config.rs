//! `hooks install --agent <a> --mcp`: our MCP server (`git agent-rewind mcp`) in each
//! agent's project-level MCP configuration, under the name `git-agent-rewind`, and
//! `hooks uninstall --mcp` taking exactly that entry out again.
//!
//! | agent | file | entry |
//! |---|---|---|
//! | Claude Code | `.mcp.json` | `mcpServers.git-agent-rewind` `{type, command, args}` |
//! | Codex CLI | `.codex/config.toml` | `[mcp_servers.git-agent-rewind]` `command`, `args` |
//! | Gemini CLI | `.gemini/settings.json` | `mcpServers.git-agent-rewind` `{command, args}` |
//! | Cursor | `.cursor/mcp.json` | `mcpServers.git-agent-rewind` `{command, args}` |
//! | OpenCode | `opencode.json` | `mcp.git-agent-rewind` `{type: local, command: [...]}` |
//! | Qwen Code | `.qwen/settings.json` | `mcpServers.git-agent-rewind` `{command, args}` |
//! | GitHub Copilot CLI | `.github/mcp.json` | `mcpServers.git-agent-rewind` `{type: local, command, args, tools}` |
//! | Auggie | `.augment/settings.json` | `mcpServers.git-agent-rewind` `{command, args}` |
//! | Kilo | `kilo.json` | `mcp.git-agent-rewind` `{type: local, command: [...]}` |
//! | Factory Droid | `.factory/mcp.json` | `mcpServers.git-agent-rewind` `{type: stdio, command, args}` |
//!
//! Pi has no MCP by design: it has no such file, and asking for one is refused here
//! (`hooks install --mcp` skips Pi before it gets here, saying why).
//!
//! Owns those entries only: every other key of the file is kept in its order; a file that
//! is not valid JSON or TOML is refused and left untouched; a file that held nothing else is
//! deleted on uninstall, with a folder it leaves empty.

use super::Agent;
use super::install::{FileAction, write_atomic};
use super::settings::SettingsChange;
use crate::store::Store;
use agent_rewind_core::error::{Error, Result};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// The name our server has in every configuration.
pub const SERVER_NAME: &str = "git-agent-rewind";

/// Where `agent` reads project MCP servers, relative to the worktree's top; `None` for an
/// agent without MCP (Pi).
pub fn config_path(agent: Agent) -> Option<&'static str> {
    Some(match agent {
        Agent::Claude => ".mcp.json",
        Agent::Codex => ".codex/config.toml",
        Agent::Gemini => ".gemini/settings.json",
        Agent::Cursor => ".cursor/mcp.json",
        Agent::Opencode => "opencode.json",
        Agent::Qwen => super::qwen::SETTINGS,
        Agent::Copilot => ".github/mcp.json",
        Agent::Auggie => super::auggie::SETTINGS,
        Agent::Kilo => super::kilo::MCP_FILE,
        Agent::Droid => super::droid::MCP_FILE,
        Agent::Pi => return None,
    })
}

/// The file of `agent`'s project MCP servers, or a refusal for an agent without MCP.
fn config_file(store: &Store, agent: Agent) -> Result<PathBuf> {
    match config_path(agent) {
        Some(p) => Ok(store.worktree().root()?.join(p)),
        None => Err(Error::usage(format!(
            "{} has no MCP configuration",
            agent.display()
        ))),
    }
}

/// The JSON key holding the servers, and our entry in it.
fn json_entry(agent: Agent) -> (&'static str, Value) {
    match agent {
        Agent::Claude | Agent::Droid => (
            "mcpServers",
            json!({"type": "stdio", "command": "git", "args": ["agent-rewind", "mcp"]}),
        ),
        Agent::Copilot => (
            "mcpServers",
            json!({"type": "local", "command": "git", "args": ["agent-rewind", "mcp"],
                   "tools": ["*"]}),
        ),
        Agent::Opencode | Agent::Kilo => (
            "mcp",
            json!({"type": "local", "command": ["git", "agent-rewind", "mcp"], "enabled": true}),
        ),
        _ => (
            "mcpServers",
            json!({"command": "git", "args": ["agent-rewind", "mcp"]}),
        ),
    }
}

/// Codex's table for our server.
const CODEX_TABLE: &str =
    "[mcp_servers.git-agent-rewind]\ncommand = \"git\"\nargs = [\"agent-rewind\", \"mcp\"]\n";
const CODEX_HEADER: &str = "[mcp_servers.git-agent-rewind]";

fn change(agent: Agent, path: &Path, action: FileAction) -> SettingsChange {
    SettingsChange {
        agent,
        path: path.display().to_string(),
        action,
        events: vec![format!("mcp:{SERVER_NAME}")],
    }
}

fn read(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::other(format!(
            "could not read {}: {e}",
            path.display()
        ))),
    }
}

fn refused(path: &Path, what: &str, e: impl std::fmt::Display) -> Error {
    Error::refused(format!(
        "{} is not valid {what} ({e}); left it untouched",
        path.display()
    ))
    .with_hint("fix or move the file, then run `git agent-rewind hooks install --mcp` again")
}

/// What installing would do (checked for every agent before any file is written).
pub fn check(store: &Store, agent: Agent) -> Result<FileAction> {
    Ok(plan(store, agent)?.0)
}

/// The action and the new text of the file.
fn plan(store: &Store, agent: Agent) -> Result<(FileAction, PathBuf, Option<String>)> {
    let path = config_file(store, agent)?;
    let text = read(&path)?;
    if agent == Agent::Codex {
        let old = text.clone().unwrap_or_default();
        old.parse::<toml::Table>()
            .map_err(|e| refused(&path, "TOML", e.message()))?;
        let kept = without_codex_table(&old);
        let mut new = kept.trim_end().to_string();
        if !new.is_empty() {
            new.push_str("\n\n");
        }
        new.push_str(CODEX_TABLE);
        let action = match &text {
            None => FileAction::Created,
            Some(t) if *t == new => FileAction::Unchanged,
            Some(t) if t.contains(CODEX_HEADER) => FileAction::Updated,
            Some(_) => FileAction::Added,
        };
        return Ok((action, path, Some(new)));
    }
    let mut doc: Map<String, Value> = match &text {
        None => Map::new(),
        Some(t) if t.trim().is_empty() => Map::new(),
        Some(t) => match serde_json::from_str(t).map_err(|e| refused(&path, "JSON", e))? {
            Value::Object(m) => m,
            _ => return Err(refused(&path, "JSON", "not an object")),
        },
    };
    let (key, entry) = json_entry(agent);
    let servers = doc.entry(key).or_insert_with(|| json!({}));
    let Some(servers) = servers.as_object_mut() else {
        return Err(refused(
            &path,
            "configuration",
            format!("\"{key}\" is not an object"),
        ));
    };
    let action = match servers.get(SERVER_NAME) {
        _ if text.is_none() => FileAction::Created,
        Some(v) if *v == entry => FileAction::Unchanged,
        Some(_) => FileAction::Updated,
        None => FileAction::Added,
    };
    servers.insert(SERVER_NAME.to_string(), entry);
    let mut new = serde_json::to_string_pretty(&Value::Object(doc)).expect("serializable");
    new.push('\n');
    Ok((action, path, Some(new)))
}

/// Add (or bring up to date) our server in `agent`'s configuration.
pub fn install(store: &Store, agent: Agent) -> Result<SettingsChange> {
    let (action, path, new) = plan(store, agent)?;
    if action != FileAction::Unchanged
        && let Some(text) = new
    {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::other(format!("could not create {}: {e}", dir.display())))?;
        }
        write_atomic(&path, &text, mode_of(&path).unwrap_or(0o644))?;
    }
    Ok(change(agent, &path, action))
}

/// Take our server out of `agent`'s configuration.
pub fn uninstall(store: &Store, agent: Agent) -> Result<SettingsChange> {
    let path = config_file(store, agent)?;
    let Some(text) = read(&path)? else {
        return Ok(change(agent, &path, FileAction::Absent));
    };
    let rest = if agent == Agent::Codex {
        if !text.contains(CODEX_HEADER) {
            return Ok(change(agent, &path, FileAction::Absent));
        }
        without_codex_table(&text).trim_end().to_string()
    } else {
        let Ok(Value::Object(mut doc)) = serde_json::from_str::<Value>(&text) else {
            return Ok(change(agent, &path, FileAction::Absent));
        };
        let (key, _) = json_entry(agent);
        let Some(servers) = doc.get_mut(key).and_then(Value::as_object_mut) else {
            return Ok(change(agent, &path, FileAction::Absent));
        };
        if servers.remove(SERVER_NAME).is_none() {
            return Ok(change(agent, &path, FileAction::Absent));
        }
        if servers.is_empty() {
            doc.remove(key);
        }
        // A settings file Qwen Code loaded holds its format version too, never the user's.
        let own: &[&str] = if agent == Agent::Qwen {
            super::qwen::QWENS_OWN
        } else {
            &[]
        };
        if doc.keys().all(|k| own.contains(&k.as_str())) {
            String::new()
        } else {
            serde_json::to_string_pretty(&Value::Object(doc)).expect("serializable")
        }
    };
    if rest.trim().is_empty() {
        std::fs::remove_file(&path)
            .map_err(|e| Error::other(format!("could not remove {}: {e}", path.display())))?;
        if !matches!(agent, Agent::Claude | Agent::Opencode | Agent::Kilo) {
            super::settings::remove_empty_dirs(&path, 1);
        }
        return Ok(change(agent, &path, FileAction::Deleted));
    }
    write_atomic(&path, &format!("{rest}\n"), mode_of(&path).unwrap_or(0o644))?;
    Ok(change(agent, &path, FileAction::Removed))
}

/// The permission bits of an existing file.
fn mode_of(path: &Path) -> Option<u32> {
    std::fs::metadata(path)
        .ok()
        .map(|m| agent_rewind_core::platform::mode::permission_bits(&m))
}

/// `text` without our `[mcp_servers.git-agent-rewind]` table (its header up to the next
/// table's header).
fn without_codex_table(text: &str) -> String {
    let mut out = String::new();
    let mut ours = false;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with('[') {
            ours = t == CODEX_HEADER;
        }
        if !ours {
            out.push_str(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_codex_table_is_cut_out_whole() {
        let text = "model = \"x\"\n\n[mcp_servers.git-agent-rewind]\ncommand = \"git\"\nargs = []\n\n[projects.\"/w\"]\ntrust_level = \"trusted\"\n";
        assert_eq!(
            without_codex_table(text),
            "model = \"x\"\n\n[projects.\"/w\"]\ntrust_level = \"trusted\"\n"
        );
    }
}
