//! Agent settings: our entries in the project-level JSON hook configuration of each agent
//! that has one, so its events call `git agent-rewind hook <agent>`:
//!
//! | agent | file | shape |
//! |---|---|---|
//! | Claude Code | `.claude/settings.json` | `hooks.<Event>[] = {matcher?, hooks: [{type, command}]}` |
//! | Codex CLI | `.codex/hooks.json` | the same |
//! | Gemini CLI | `.gemini/settings.json` | the same (plus a `name` on our entry) |
//! | Cursor | `.cursor/hooks.json` | `{version: 1, hooks: {<event>: [{command, matcher?}]}}` |
//! | Qwen Code | `.qwen/settings.json` | the same as Claude Code's |
//! | GitHub Copilot CLI | `.github/hooks/agent-rewind.json` | `{version: 1, hooks: …}` as Claude Code's |
//! | Auggie | `.augment/settings.json` | the same as Claude Code's |
//! | Factory Droid | `.factory/settings.json` | the same as Claude Code's |
//!
//! One mechanism serves them all ([`JsonConfig`]): merging keeps every existing key and hook
//! (and their order); an absent file is created; a file that is not valid JSON, or whose
//! `hooks` are not shaped as the agent expects, is refused and left byte-for-byte untouched.
//! Removing takes out exactly our entries (and the file, when we created it and nothing else
//! is left). It must never drop or rewrite an entry that is not ours.

use super::Agent;
use super::install::FileAction;
use crate::store::Store;
use agent_rewind_core::error::{Error, Result};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

pub(super) use super::jsonfile::remove_empty_dirs;
use super::jsonfile::{parsed, read, write};

/// What happened to an agent's configuration file.
#[derive(Debug, Clone, Serialize)]
pub struct SettingsChange {
    pub agent: Agent,
    pub path: String,
    pub action: FileAction,
    /// The events whose entries were added or brought up to date (install) or removed
    /// (uninstall).
    pub events: Vec<String>,
}

/// The events a merge added our entry to, and those whose entry of ours it updated.
type Merged = (Vec<String>, Vec<String>);

/// How a configuration file holds its hook entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `{"hooks": {"<Event>": [{"matcher"?, "hooks": [{"type": "command", "command"}]}]}}`.
    Grouped,
    /// `{"version": 1, "hooks": {"<event>": [{"command", "matcher"?}]}}`.
    Flat,
}

/// An agent's JSON hook configuration: where it is, its shape, the events we register for
/// (with a matcher where the event has one).
#[derive(Debug, Clone, Copy)]
pub struct JsonConfig {
    agent: Agent,
    path: &'static str,
    shape: Shape,
    events: &'static [(&'static str, Option<&'static str>)],
    /// Whether a file we create starts with `"version": 1` (and counts as empty with only it).
    versioned: bool,
    /// How many folders above the file we may have created (removed on uninstall when empty).
    folders: usize,
    /// Top-level keys the agent itself writes into the file (Qwen Code's `$version`): a file
    /// holding nothing else is empty once our entries are out.
    agents_own: &'static [&'static str],
}

impl JsonConfig {
    /// The configuration of `agent`; `None` for OpenCode, Kilo and Pi (a plugin or extension
    /// file, not JSON).
    pub fn of(agent: Agent) -> Option<JsonConfig> {
        let (path, shape, events): (_, _, &'static [_]) = match agent {
            Agent::Claude => (
                ".claude/settings.json",
                Shape::Grouped,
                &[
                    ("SessionStart", None),
                    ("Stop", None),
                    ("SubagentStop", None),
                    ("PostToolUse", Some("Edit|Write|MultiEdit|NotebookEdit")),
                ],
            ),
            Agent::Codex => (
                ".codex/hooks.json",
                Shape::Grouped,
                &[
                    ("SessionStart", None),
                    ("Stop", None),
                    ("SubagentStop", None),
                    ("PostToolUse", Some("apply_patch|Edit|Write")),
                ],
            ),
            Agent::Gemini => (
                ".gemini/settings.json",
                Shape::Grouped,
                &[
                    ("SessionStart", None),
                    ("AfterAgent", None),
                    ("AfterTool", Some("write_file|replace")),
                ],
            ),
            Agent::Cursor => (
                ".cursor/hooks.json",
                Shape::Flat,
                &[
                    ("sessionStart", None),
                    ("stop", None),
                    ("afterFileEdit", None),
                ],
            ),
            Agent::Qwen => (super::qwen::SETTINGS, Shape::Grouped, super::qwen::EVENTS),
            Agent::Copilot => (
                super::copilot::HOOKS_FILE,
                Shape::Grouped,
                super::copilot::EVENTS,
            ),
            Agent::Auggie => (
                super::auggie::SETTINGS,
                Shape::Grouped,
                super::auggie::EVENTS,
            ),
            Agent::Droid => (super::droid::SETTINGS, Shape::Grouped, super::droid::EVENTS),
            Agent::Opencode | Agent::Pi | Agent::Kilo => return None,
        };
        Some(JsonConfig {
            agent,
            path,
            shape,
            events,
            versioned: matches!(agent, Agent::Cursor | Agent::Copilot),
            folders: if agent == Agent::Copilot { 2 } else { 1 },
            agents_own: if agent == Agent::Qwen {
                super::qwen::QWENS_OWN
            } else {
                &[]
            },
        })
    }

    /// The command the agent runs for each of our events.
    pub fn command(&self) -> String {
        format!("git agent-rewind hook {}", self.agent.name())
    }

    /// The events we register for.
    pub fn events(&self) -> impl Iterator<Item = &'static str> {
        self.events.iter().map(|(e, _)| *e)
    }

    fn file(&self, store: &Store) -> Result<PathBuf> {
        Ok(store.worktree().root()?.join(self.path))
    }

    /// Whether a hook command is one of ours (also when spelled with a path to the binary).
    fn is_ours(&self, command: &str) -> bool {
        command.contains(&format!("agent-rewind hook {}", self.agent.name()))
    }

    fn has_command(&self, v: &Value) -> bool {
        v.get("command")
            .and_then(Value::as_str)
            .is_some_and(|c| self.is_ours(c))
    }

    /// Whether an entry of an event's array holds one of our commands.
    fn entry_has_ours(&self, entry: &Value) -> bool {
        match self.shape {
            Shape::Flat => self.has_command(entry),
            Shape::Grouped => entry
                .get("hooks")
                .and_then(Value::as_array)
                .is_some_and(|hs| hs.iter().any(|h| self.has_command(h))),
        }
    }

    /// Our entry for an event.
    fn entry(&self, matcher: Option<&str>) -> Value {
        let mut e = match self.shape {
            Shape::Flat => json!({ "command": self.command() }),
            Shape::Grouped => {
                let mut handler = json!({ "type": "command", "command": self.command() });
                if self.agent == Agent::Gemini {
                    // Gemini CLI enables, disables and fingerprints hooks by name.
                    handler["name"] = "git-agent-rewind".into();
                }
                json!({ "hooks": [handler] })
            }
        };
        if let Some(m) = matcher {
            let mut with = Map::new();
            with.insert("matcher".into(), m.into());
            with.extend(e.as_object_mut().expect("object").clone());
            e = Value::Object(with);
        }
        e
    }

    fn shape_error(&self, path: &Path, what: &str) -> Error {
        let expected = match self.shape {
            Shape::Grouped => {
                "{\"hooks\": {\"<Event>\": [{\"hooks\": [{\"type\": \"command\", \"command\": …}]}]}}"
            }
            Shape::Flat => "{\"version\": 1, \"hooks\": {\"<event>\": [{\"command\": …}]}}",
        };
        Error::refused(format!("{}: {what}; left it untouched", path.display()))
            .with_hint(format!("{} expects {expected}", self.agent.display()))
    }

    /// Add our entry to each event that lacks one, and bring our entries' matchers up to
    /// date; returns the events added and the events updated.
    fn merge(&self, settings: &mut Value, path: &Path, created: bool) -> Result<Merged> {
        let root = settings
            .as_object_mut()
            .ok_or_else(|| self.shape_error(path, "the top level is not a JSON object"))?;
        if root.get("hooks").is_some_and(|h| !h.is_object()) {
            return Err(self.shape_error(path, "\"hooks\" is not an object"));
        }
        // Check every event before changing any, so a refusal leaves nothing half-merged.
        if let Some(hooks) = root.get("hooks") {
            for event in self.events() {
                if hooks.get(event).is_some_and(|v| !v.is_array()) {
                    return Err(
                        self.shape_error(path, &format!("\"hooks.{event}\" is not an array"))
                    );
                }
            }
        }
        if created && self.versioned {
            root.insert("version".into(), 1.into());
        }
        let hooks = root
            .entry("hooks")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .expect("checked above");
        let (mut added, mut updated) = (vec![], vec![]);
        for (event, matcher) in self.events {
            let entries = hooks
                .entry(*event)
                .or_insert_with(|| Value::Array(vec![]))
                .as_array_mut()
                .expect("checked above");
            if !entries.iter().any(|e| self.entry_has_ours(e)) {
                entries.push(self.entry(*matcher));
                added.push(event.to_string());
            } else if self.update_matchers(entries, *matcher) {
                updated.push(event.to_string());
            }
        }
        Ok((added, updated))
    }

    /// Bring the matcher of our entries up to date (one an older version wrote); an entry
    /// that also holds someone else's hooks keeps its matcher. Whether any changed.
    fn update_matchers(&self, entries: &mut [Value], matcher: Option<&str>) -> bool {
        let mut changed = false;
        for e in entries.iter_mut().filter(|e| self.entry_has_ours(e)) {
            let only_ours = match self.shape {
                Shape::Flat => true,
                Shape::Grouped => e["hooks"]
                    .as_array()
                    .is_some_and(|hs| hs.iter().all(|h| self.has_command(h))),
            };
            if !only_ours || e.get("matcher").and_then(Value::as_str) == matcher {
                continue;
            }
            let obj = e
                .as_object_mut()
                .expect("an entry holding hooks is an object");
            match matcher {
                Some(m) => obj.insert("matcher".into(), m.into()),
                None => obj.remove("matcher"),
            };
            changed = true;
        }
        changed
    }

    /// Remove our entries (from any event); returns the events changed. Entries and events
    /// left empty by the removal go too; anything that was empty before stays.
    fn unmerge(&self, settings: &mut Value) -> Vec<String> {
        let mut removed = vec![];
        let Some(root) = settings.as_object_mut() else {
            return removed;
        };
        let Some(hooks) = root.get_mut("hooks").and_then(Value::as_object_mut) else {
            return removed;
        };
        for (event, entries) in hooks.iter_mut() {
            let Some(entries) = entries.as_array_mut() else {
                continue;
            };
            let mut changed = false;
            entries.retain_mut(|entry| match self.shape {
                Shape::Flat => {
                    let ours = self.has_command(entry);
                    changed |= ours;
                    !ours
                }
                Shape::Grouped => {
                    let Some(hs) = entry.get_mut("hooks").and_then(Value::as_array_mut) else {
                        return true;
                    };
                    let before = hs.len();
                    hs.retain(|h| !self.has_command(h));
                    if hs.len() == before {
                        return true;
                    }
                    changed = true;
                    !hs.is_empty()
                }
            });
            if changed {
                removed.push(event.clone());
            }
        }
        hooks.retain(|event, entries| {
            !(removed.contains(event) && entries.as_array().is_some_and(Vec::is_empty))
        });
        if !removed.is_empty() && hooks.is_empty() {
            root.remove("hooks");
        }
        removed
    }

    /// The configuration file (absolute) and the events that hold our command there; an
    /// unreadable or invalid file counts as holding none.
    pub fn installed(&self, store: &Store) -> Result<(PathBuf, Vec<String>)> {
        let path = self.file(store)?;
        let events = self.installed_at(&path);
        Ok((path, events))
    }

    /// The events of the configuration file at `path` that hold our command.
    pub fn installed_at(&self, path: &Path) -> Vec<String> {
        let settings = read(path, self.agent).ok().flatten().unwrap_or(Value::Null);
        settings
            .get("hooks")
            .and_then(Value::as_object)
            .map(|hooks| {
                hooks
                    .iter()
                    .filter(|(_, entries)| {
                        entries
                            .as_array()
                            .is_some_and(|es| es.iter().any(|e| self.entry_has_ours(e)))
                    })
                    .map(|(event, _)| event.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Read the agent's configuration file and merge our entries in memory: every refusal
    /// happens here, before anything is written ([`Prepared::write`]).
    pub fn prepare(&self, store: &Store) -> Result<Prepared> {
        self.prepare_at(self.file(store)?)
    }

    /// Whether the configuration file at `path` can be read and parsed (absent counts as
    /// readable): the refusal an install or uninstall would give, with nothing written.
    pub fn check_readable(&self, path: &Path) -> Result<()> {
        read(path, self.agent).map(|_| ())
    }

    /// [`JsonConfig::prepare`] of the configuration file at `path`.
    pub fn prepare_at(&self, path: PathBuf) -> Result<Prepared> {
        let existing = read(&path, self.agent)?;
        let created = existing.is_none();
        let mut settings = existing.unwrap_or_else(|| Value::Object(Map::new()));
        let (events, updated) = self.merge(&mut settings, &path, created)?;
        Ok(Prepared {
            agent: self.agent,
            path,
            settings,
            created,
            events,
            updated,
        })
    }

    /// Merge our entries into the agent's configuration file.
    pub fn install(&self, store: &Store) -> Result<SettingsChange> {
        self.prepare(store)?.write()
    }

    /// Remove our entries from the agent's configuration file; the file goes too when
    /// nothing but what we created is left (`{}`, Cursor's `{"version": 1}`, or what the agent
    /// itself adds to it).
    pub fn uninstall(&self, store: &Store) -> Result<SettingsChange> {
        self.uninstall_at(&self.file(store)?, self.folders, None)
    }

    /// [`JsonConfig::uninstall`] of the configuration file at `path`, removing up to `folders`
    /// folders above it that it leaves empty. `original`: the file's bytes and mode before our
    /// first install, written back as they were when removing our entries leaves exactly
    /// what they hold (else the file is rewritten without our entries).
    pub fn uninstall_at(
        &self,
        path: &Path,
        folders: usize,
        original: Option<(&[u8], u32)>,
    ) -> Result<SettingsChange> {
        let path = path.to_path_buf();
        let mut change = SettingsChange {
            agent: self.agent,
            path: path.display().to_string(),
            action: FileAction::Absent,
            events: vec![],
        };
        let Some(mut settings) = read(&path, self.agent)? else {
            return Ok(change);
        };
        change.events = self.unmerge(&mut settings);
        if change.events.is_empty() {
            return Ok(change);
        }
        // The file as it was before our first install, when nothing else changed since.
        if let Some((bytes, mode)) =
            original.filter(|(bytes, _)| parsed(bytes).as_ref() == Some(&settings))
        {
            agent_rewind_core::private::write_atomic(&path, bytes, Some(mode))?;
            change.action = FileAction::Removed;
            return Ok(change);
        }
        let empty = settings.as_object().is_some_and(|o| {
            o.iter().all(|(k, v)| {
                (self.versioned && k == "version" && *v == json!(1))
                    || self.agents_own.contains(&k.as_str())
            })
        });
        if empty {
            std::fs::remove_file(&path)
                .map_err(|e| Error::other(format!("could not remove {}: {e}", path.display())))?;
            remove_empty_dirs(&path, folders);
            change.action = FileAction::Deleted;
        } else {
            write(&path, &settings, false)?;
            change.action = FileAction::Removed;
        }
        Ok(change)
    }
}

/// A configuration merged in memory, not yet written.
#[derive(Debug, Clone)]
pub struct Prepared {
    agent: Agent,
    path: PathBuf,
    settings: Value,
    created: bool,
    events: Vec<String>,
    updated: Vec<String>,
}

impl Prepared {
    /// The events whose entry of ours this install changes (not those it adds).
    pub fn updated(&self) -> &[String] {
        &self.updated
    }

    /// The configuration file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether [`Prepared::write`] changes the file.
    pub fn changes(&self) -> bool {
        !self.events.is_empty() || !self.updated.is_empty()
    }

    /// Write the merged configuration (nothing when it already had our entries as they
    /// should be).
    pub fn write(self) -> Result<SettingsChange> {
        let action = match (self.events.is_empty(), self.created) {
            (true, _) if !self.updated.is_empty() => FileAction::Updated,
            (true, _) => FileAction::Unchanged,
            (false, true) => FileAction::Created,
            (false, false) => FileAction::Added,
        };
        if action != FileAction::Unchanged {
            write(&self.path, &self.settings, self.created)?;
        }
        Ok(SettingsChange {
            agent: self.agent,
            path: self.path.display().to_string(),
            action,
            events: self.events.into_iter().chain(self.updated).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const USER: &str = r#"{"model":"opus","hooks":{"Stop":[{"hooks":[{"type":"command","command":"say done"}]}],
       "PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"lint"}]}]},
       "permissions":{"allow":["Bash(ls:*)"]}}"#;

    #[test]
    fn merge_keeps_everything_and_is_idempotent() {
        for agent in [Agent::Claude, Agent::Codex, Agent::Gemini, Agent::Qwen] {
            let c = JsonConfig::of(agent).unwrap();
            let mut v: Value = serde_json::from_str(USER).unwrap();
            let p = Path::new("s.json");
            let events: Vec<String> = c.events().map(str::to_string).collect();
            assert_eq!(c.merge(&mut v, p, false).unwrap(), (events.clone(), vec![]));
            assert_eq!(c.merge(&mut v, p, false).unwrap(), (vec![], vec![]));
            let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
            assert_eq!(keys, ["model", "hooks", "permissions"]);
            assert_eq!(v["hooks"]["Stop"][0]["hooks"][0]["command"], "say done");
            assert_eq!(c.unmerge(&mut v).len(), events.len());
            assert_eq!(v, serde_json::from_str::<Value>(USER).unwrap(), "{agent}");
        }
    }

    #[test]
    fn an_outdated_matcher_of_ours_is_updated_unless_shared() {
        let c = JsonConfig::of(Agent::Codex).unwrap();
        let p = Path::new("h.json");
        let ours = json!({"type": "command", "command": c.command()});
        let lint = json!({"type": "command", "command": "lint"});
        let mut v = json!({"hooks": {"PostToolUse": [{"matcher": "apply_patch", "hooks": [ours.clone()]}]}});
        let (_, updated) = c.merge(&mut v, p, false).unwrap();
        assert_eq!(updated, ["PostToolUse"]);
        assert_eq!(
            v["hooks"]["PostToolUse"][0]["matcher"],
            "apply_patch|Edit|Write"
        );
        assert_eq!(c.merge(&mut v, p, false).unwrap(), (vec![], vec![]));

        let mut shared =
            json!({"hooks": {"PostToolUse": [{"matcher": "apply_patch", "hooks": [ours, lint]}]}});
        let (_, updated) = c.merge(&mut shared, p, false).unwrap();
        assert!(updated.is_empty());
        assert_eq!(shared["hooks"]["PostToolUse"][0]["matcher"], "apply_patch");
    }

    #[test]
    fn cursor_is_flat() {
        let c = JsonConfig::of(Agent::Cursor).unwrap();
        let mut v = json!({});
        c.merge(&mut v, Path::new("h.json"), true).unwrap();
        assert_eq!(v["version"], 1);
        assert_eq!(
            v["hooks"]["stop"][0]["command"],
            "git agent-rewind hook cursor"
        );
        c.unmerge(&mut v);
        assert_eq!(v, json!({"version": 1}));
    }

    #[test]
    fn copilots_file_is_grouped_and_versioned() {
        let c = JsonConfig::of(Agent::Copilot).unwrap();
        let mut v = json!({});
        c.merge(&mut v, Path::new("h.json"), true).unwrap();
        assert_eq!(v["version"], 1);
        assert_eq!(
            v["hooks"]["Stop"][0]["hooks"][0],
            json!({"type": "command", "command": "git agent-rewind hook copilot"})
        );
        c.unmerge(&mut v);
        assert_eq!(v, json!({"version": 1}));
    }

    #[test]
    fn wrong_shapes_are_refused_untouched() {
        let c = JsonConfig::of(Agent::Claude).unwrap();
        let p = Path::new("s.json");
        for bad in [r#"[]"#, r#"{"hooks":[]}"#, r#"{"hooks":{"Stop":{}}}"#] {
            let mut v: Value = serde_json::from_str(bad).unwrap();
            let before = v.clone();
            assert!(c.merge(&mut v, p, false).is_err(), "{bad}");
            assert_eq!(v, before, "{bad}");
        }
    }
}
