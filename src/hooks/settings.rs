//! Agent settings: our entries in Claude Code's `.claude/settings.json` (at the root of the
//! worktree) so its `SessionStart`, `Stop` and `SubagentStop` hooks call
//! `git agent-rewind hook claude`.
//!
//! Merging keeps every existing key and hook (and their order); an absent file is created; a
//! file that is not valid JSON, or whose `hooks` are not shaped as Claude Code expects, is
//! refused and left byte-for-byte untouched. Removing takes out exactly our entries. It must
//! never drop or rewrite an entry that is not ours.

use super::Agent;
use super::install::{FileAction, write_atomic};
use crate::error::IoResultExt;
use crate::error::{Error, Result};
use crate::store::Store;
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The command Claude Code runs for each of [`CLAUDE_EVENTS`].
pub const CLAUDE_COMMAND: &str = "git agent-rewind hook claude";
/// The Claude Code hook events we register for.
pub const CLAUDE_EVENTS: [&str; 3] = ["SessionStart", "Stop", "SubagentStop"];

/// What happened to an agent's settings file.
#[derive(Debug, Clone, Serialize)]
pub struct SettingsChange {
    pub agent: Agent,
    pub path: String,
    pub action: FileAction,
    /// The events whose entries were added (install) or removed (uninstall).
    pub events: Vec<String>,
}

/// Whether a hook command is one of ours (also when spelled with a path to the binary).
fn is_ours(command: &str) -> bool {
    command.contains("agent-rewind hook claude")
}

fn claude_path(store: &Store) -> Result<PathBuf> {
    Ok(store.workdir()?.join(".claude").join("settings.json"))
}

/// Read and parse the settings; `None` when the file does not exist.
fn read(path: &Path) -> Result<Option<Value>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Error::other(format!(
                "could not read {}: {e}",
                path.display()
            )));
        }
    };
    if text.trim().is_empty() {
        return Ok(Some(Value::Object(Map::new())));
    }
    serde_json::from_str(&text).map(Some).map_err(|e| {
        Error::refused(format!(
            "{} is not valid JSON ({e}); left it untouched",
            path.display()
        ))
        .with_hint(
            "fix or move the file, then run `git agent-rewind hooks install --agent claude` again",
        )
    })
}

fn shape_error(path: &Path, what: &str) -> Error {
    Error::refused(format!(
        "{}: {what}; left it untouched",
        path.display()
    ))
    .with_hint("Claude Code expects {\"hooks\": {\"<Event>\": [{\"hooks\": [{\"type\": \"command\", \"command\": …}]}]}}")
}

/// Whether a matcher group (`{"matcher": …, "hooks": [...]}`) holds one of our commands.
fn group_has_ours(group: &Value) -> bool {
    group
        .get("hooks")
        .and_then(Value::as_array)
        .is_some_and(|hs| {
            hs.iter().any(|h| {
                h.get("command")
                    .and_then(Value::as_str)
                    .is_some_and(is_ours)
            })
        })
}

/// Add our entry to each event that lacks one; returns the events changed.
fn merge(settings: &mut Value, path: &Path) -> Result<Vec<String>> {
    let root = settings
        .as_object_mut()
        .ok_or_else(|| shape_error(path, "the top level is not a JSON object"))?;
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| shape_error(path, "\"hooks\" is not an object"))?;
    // Check every event before changing any, so a refusal leaves nothing half-merged.
    for event in CLAUDE_EVENTS {
        if hooks.get(event).is_some_and(|v| !v.is_array()) {
            return Err(shape_error(
                path,
                &format!("\"hooks.{event}\" is not an array"),
            ));
        }
    }
    let mut added = vec![];
    for event in CLAUDE_EVENTS {
        let groups = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(vec![]))
            .as_array_mut()
            .expect("checked above");
        if !groups.iter().any(group_has_ours) {
            groups.push(json!({
                "hooks": [{ "type": "command", "command": CLAUDE_COMMAND }]
            }));
            added.push(event.to_string());
        }
    }
    Ok(added)
}

/// Remove our entries (from any event); returns the events changed. Groups and events left
/// empty by the removal go too; anything that was empty before stays.
fn unmerge(settings: &mut Value) -> Vec<String> {
    let mut removed = vec![];
    let Some(root) = settings.as_object_mut() else {
        return removed;
    };
    let Some(hooks) = root.get_mut("hooks").and_then(Value::as_object_mut) else {
        return removed;
    };
    for (event, groups) in hooks.iter_mut() {
        let Some(groups) = groups.as_array_mut() else {
            continue;
        };
        let mut changed = false;
        groups.retain_mut(|group| {
            let Some(hs) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
                return true;
            };
            let before = hs.len();
            hs.retain(|h| {
                !h.get("command")
                    .and_then(Value::as_str)
                    .is_some_and(is_ours)
            });
            if hs.len() == before {
                return true;
            }
            changed = true;
            !hs.is_empty()
        });
        if changed {
            removed.push(event.clone());
        }
    }
    hooks.retain(|event, groups| {
        !(removed.contains(event) && groups.as_array().is_some_and(Vec::is_empty))
    });
    if !removed.is_empty() && hooks.is_empty() {
        root.remove("hooks");
    }
    removed
}

fn write(path: &Path, settings: &Value, created: bool) -> Result<()> {
    let mode = if created {
        0o644
    } else {
        std::fs::metadata(path).at(path)?.permissions().mode() & 0o7777
    };
    let mut text = serde_json::to_string_pretty(settings).expect("serializable");
    text.push('\n');
    write_atomic(path, &text, mode)
}

/// Merge our hook entries into `.claude/settings.json`.
pub fn install_claude(store: &Store) -> Result<SettingsChange> {
    let path = claude_path(store)?;
    let existing = read(&path)?;
    let created = existing.is_none();
    let mut settings = existing.unwrap_or_else(|| Value::Object(Map::new()));
    let events = merge(&mut settings, &path)?;
    let action = match (events.is_empty(), created) {
        (true, _) => FileAction::Unchanged,
        (false, true) => FileAction::Created,
        (false, false) => FileAction::Added,
    };
    if action != FileAction::Unchanged {
        write(&path, &settings, created)?;
    }
    Ok(SettingsChange {
        agent: Agent::Claude,
        path: path.display().to_string(),
        action,
        events,
    })
}

/// Remove our hook entries from `.claude/settings.json`.
pub fn uninstall_claude(store: &Store) -> Result<SettingsChange> {
    let path = claude_path(store)?;
    let mut change = SettingsChange {
        agent: Agent::Claude,
        path: path.display().to_string(),
        action: FileAction::Absent,
        events: vec![],
    };
    let Some(mut settings) = read(&path)? else {
        return Ok(change);
    };
    change.events = unmerge(&mut settings);
    if !change.events.is_empty() {
        write(&path, &settings, false)?;
        change.action = FileAction::Removed;
    }
    Ok(change)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keeps_everything_and_is_idempotent() {
        let mut v: Value = serde_json::from_str(
            r#"{"model":"opus","hooks":{"Stop":[{"hooks":[{"type":"command","command":"say done"}]}],
               "PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"lint"}]}]},
               "permissions":{"allow":["Bash(ls:*)"]}}"#,
        )
        .unwrap();
        let p = Path::new("s.json");
        assert_eq!(merge(&mut v, p).unwrap(), CLAUDE_EVENTS.to_vec());
        assert_eq!(merge(&mut v, p).unwrap(), Vec::<String>::new());
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["model", "hooks", "permissions"]);
        assert_eq!(v["hooks"]["Stop"][0]["hooks"][0]["command"], "say done");
        assert_eq!(v["hooks"]["Stop"][1]["hooks"][0]["command"], CLAUDE_COMMAND);
        let removed = unmerge(&mut v);
        assert_eq!(removed.len(), 3);
        let back: Value = serde_json::from_str(
            r#"{"model":"opus","hooks":{"Stop":[{"hooks":[{"type":"command","command":"say done"}]}],
               "PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"lint"}]}]},
               "permissions":{"allow":["Bash(ls:*)"]}}"#,
        )
        .unwrap();
        assert_eq!(v, back);
    }

    #[test]
    fn wrong_shapes_are_refused_untouched() {
        let p = Path::new("s.json");
        for bad in [r#"[]"#, r#"{"hooks":[]}"#, r#"{"hooks":{"Stop":{}}}"#] {
            let mut v: Value = serde_json::from_str(bad).unwrap();
            let before = v.clone();
            assert!(merge(&mut v, p).is_err(), "{bad}");
            assert_eq!(v, before, "{bad}");
        }
    }
}
