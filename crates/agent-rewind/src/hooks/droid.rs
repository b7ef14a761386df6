//! Factory Droid (checked with 0.225.2): its Claude-compatible command hooks in the
//! project's `.factory/settings.json`, the reading of its payloads, and whether it will run
//! them.
//!
//! - Events: `SessionStart` (`source` startup, resume, clear or compact), `Stop` (a turn;
//!   `transcript_path` = `~/.factory/sessions/<folder>/<session>.jsonl`), `SubagentStop`,
//!   `PostToolUse` of its file tools (`Create`, `Edit`, `MultiEdit`: `tool_input.file_path`;
//!   `ApplyPatch`: the patch).
//! - No payload names the model: Droid keeps the session's model in
//!   `<session>.settings.json` beside the transcript, which a turn reads.
//! - Droid merges `.factory/hooks.json` over the `hooks` of `.factory/settings.json` event by
//!   event: an event that `hooks.json` names hides ours. `hooks.hooksDisabled: true` in any
//!   settings file turns them all off; its interactive screen skips them in a folder the user
//!   has not trusted yet, `droid exec` does not.
//!
//! Parses and reads; never writes Droid's files (the merge is [`super::settings`]'s).

use super::payload::{
    Fields, Kind, Parsed, claude_style_event, edited_path, object, patch_paths, require_edit_tool,
};
use super::status::read_json;
use crate::agent::Agent;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The project settings file holding our hooks.
pub const SETTINGS: &str = ".factory/settings.json";
/// Droid's own hook file, whose events hide those of the settings file.
pub const HOOKS_FILE: &str = ".factory/hooks.json";
/// Where Droid reads a project's MCP servers.
pub const MCP_FILE: &str = ".factory/mcp.json";

/// Droid's file tools.
const EDIT_TOOLS: [&str; 4] = ["Create", "Edit", "MultiEdit", "ApplyPatch"];

/// The events we register for, with the matcher of each.
pub const EVENTS: &[(&str, Option<&str>)] = &[
    ("SessionStart", None),
    ("Stop", None),
    ("SubagentStop", None),
    ("PostToolUse", Some("Create|Edit|MultiEdit|ApplyPatch")),
];

/// Largest session settings file read for the model.
const MAX_SESSION_SETTINGS: u64 = 256 * 1024;
/// Longest model name taken from it.
const MAX_MODEL: usize = 200;

/// A payload of Factory Droid.
pub fn parse(input: &[u8]) -> Parsed {
    let o = object(input)?;
    let f = Fields(&o);
    let name = f.required_id("hook_event_name")?;
    let mut ev = match name.as_str() {
        "SubagentStop" => super::payload::AgentEvent::new(Agent::Droid, Kind::Turn, &name),
        _ => claude_style_event(Agent::Droid, &name)?,
    };
    ev.common(&f)?;
    ev.meta_id(&f, "source", "source")?;
    ev.meta_lenient(&f, "permission_mode");
    // A resumed or forked session names the one it continues.
    ev.meta_lenient(&f, "previous_session_id");
    if let Some(p) = ev.meta.remove("previous_session_id") {
        ev.meta.insert("parent_session".into(), p);
    }
    if ev.kind == Kind::Turn
        && let Ok(Some(id)) = f.id("message_id")
    {
        // The turn's last message: where this point of the conversation is.
        ev.meta.insert("conversation_at".into(), id);
    }
    if ev.kind == Kind::Edit {
        require_edit_tool(&f, &EDIT_TOOLS)?;
        match o.get("tool_input") {
            Some(Value::String(patch)) => ev.edited = patch_paths(patch),
            _ => {
                if let Some(input) = f.object("tool_input")? {
                    ev.edited
                        .extend(input.text("file_path")?.and_then(edited_path));
                    if let Some(patch) = input.text("input")? {
                        ev.edited.extend(patch_paths(patch));
                    }
                }
            }
        }
    }
    if ev.kind == Kind::Turn
        && let Some(m) = ev.transcripts.first().and_then(|t| session_model(t))
    {
        ev.meta.entry("model".into()).or_insert(m);
    }
    ev.check()
}

/// The model of the session whose transcript is `transcript`: the `model` of the
/// `<session>.settings.json` Droid keeps beside it (`custom:` models as Droid names them).
fn session_model(transcript: &Path) -> Option<String> {
    let settings = transcript.with_extension("settings.json");
    let md = std::fs::metadata(&settings).ok()?;
    if !md.is_file() || md.len() > MAX_SESSION_SETTINGS {
        return None;
    }
    let v = read_json(&settings)?;
    let m = v.get("model")?.as_str()?;
    (!m.is_empty() && m.len() <= MAX_MODEL && !m.chars().any(char::is_control))
        .then(|| m.to_string())
}

/// Whether Factory Droid will run the hooks of the worktree at `root`, and why.
pub fn status(root: &Path, home: &Path) -> (&'static str, String) {
    let own = home.join(".factory");
    let files = [
        own.join("settings.json"),
        root.join(SETTINGS),
        root.join(".factory/settings.local.json"),
    ];
    if let Some(f) = files
        .iter()
        .find(|f| read_json(f).is_some_and(|v| v["hooks"]["hooksDisabled"] == true))
    {
        return (
            "no",
            format!(
                "hooks.hooksDisabled is true in {}: remove it to record turns",
                f.display()
            ),
        );
    }
    let hooks_file = root.join(HOOKS_FILE);
    let hidden: Vec<&str> = read_json(&hooks_file)
        .map(|v| {
            EVENTS
                .iter()
                .map(|(e, _)| *e)
                .filter(|e| v.get(*e).is_some())
                .collect()
        })
        .unwrap_or_default();
    if !hidden.is_empty() {
        return (
            "no",
            format!(
                "{} defines {}: Droid takes those events from it instead of {}, so ours do not \
                 run; move its entries for them into {} (or ours into it)",
                hooks_file.display(),
                hidden.join(", "),
                SETTINGS,
                SETTINGS
            ),
        );
    }
    let trusted = trusted_folders(&own).iter().any(|p| root.starts_with(p));
    (
        "yes",
        if trusted {
            "Factory Droid runs the project's hooks (this folder is trusted)".to_string()
        } else {
            format!(
                "`droid exec` runs the project's hooks without asking; its interactive screen \
                 runs them once you trust {} when it asks",
                root.display()
            )
        },
    )
}

/// The folders the user trusted in Droid (`trustedFolders` of `~/.factory/settings.json`).
fn trusted_folders(own: &Path) -> Vec<PathBuf> {
    read_json(&own.join("settings.json"))
        .and_then(|v| v.get("trustedFolders").cloned())
        .map(|t| match t {
            Value::Object(m) => m.keys().map(PathBuf::from).collect(),
            Value::Array(a) => a
                .iter()
                .filter_map(|p| p.as_str().map(PathBuf::from))
                .collect(),
            _ => vec![],
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::payload::Unusable;

    #[test]
    fn a_turn_takes_its_model_from_the_session_settings_beside_the_transcript() {
        let dir = std::env::temp_dir().join(format!("droid-model-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let transcript = dir.join("s-1.jsonl");
        std::fs::write(&transcript, "{}\n").unwrap();
        std::fs::write(
            dir.join("s-1.settings.json"),
            r#"{"model": "custom:scripted-0"}"#,
        )
        .unwrap();
        let stop = serde_json::json!({"hook_event_name": "Stop", "session_id": "s-1",
            "cwd": "/w", "transcript_path": transcript, "message_id": "m-9"});
        let ev = parse(stop.to_string().as_bytes()).unwrap();
        assert_eq!(ev.kind, Kind::Turn);
        assert_eq!(ev.meta["model"], "custom:scripted-0");
        assert_eq!(ev.meta["conversation_at"], "m-9");
        let create = br#"{"hook_event_name":"PostToolUse","session_id":"s","cwd":"/w","tool_name":"Create","tool_input":{"file_path":"/w/a.txt","content":"a"}}"#;
        assert_eq!(parse(create).unwrap().edited, [PathBuf::from("/w/a.txt")]);
        let shell = br#"{"hook_event_name":"PostToolUse","session_id":"s","cwd":"/w","tool_name":"Execute","tool_input":{"command":"ls"}}"#;
        assert!(matches!(parse(shell), Err(Unusable::Unhandled(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
