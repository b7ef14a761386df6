//! Augment's Auggie CLI (read from the source of 0.36.0; Auggie needs an Augment login and
//! runs only Augment's hosted models, so no test drives it): its command hooks in the
//! project's `.augment/settings.json`, and the reading of its payloads.
//!
//! - The file: `{"hooks": {"<Event>": [{"matcher"?, "hooks": [{"type": "command",
//!   "command"}]}]}}`, Claude Code's shape. Auggie also reads `.augment/settings.local.json`,
//!   the user's `~/.augment/settings.json` and `/etc/augment/settings.json`.
//! - Events: `SessionStart` (no `source`: a resumed session does not say so), `Stop` (a
//!   turn; `agent_stop_cause`), `PostToolUse` of its file tools with `file_changes`
//!   (`[{path, changeType}]`, which Auggie derives from `save-file`, `str-replace-editor`,
//!   `remove-files` and `apply_patch`).
//! - Every payload: `hook_event_name`, `conversation_id`, `workspace_roots`. None names the
//!   model or a transcript.
//!
//! Parses only; never writes Auggie's files (the merge is [`super::settings`]'s).

use super::payload::{AgentEvent, Fields, Kind, Parsed, Unusable, bad, edited_path, object};
use crate::agent::Agent;
use serde_json::Value;

/// The project settings file holding our hooks (and, with `--mcp`, our MCP server).
pub const SETTINGS: &str = ".augment/settings.json";

/// Auggie's file tools, whose calls carry `file_changes`.
const EDIT_TOOLS: &str = "save-file|str-replace-editor|remove-files|apply_patch";

/// The events we register for, with the matcher of each.
pub const EVENTS: &[(&str, Option<&str>)] = &[
    ("SessionStart", None),
    ("Stop", None),
    ("PostToolUse", Some(EDIT_TOOLS)),
];

/// A payload of Auggie.
pub fn parse(input: &[u8]) -> Parsed {
    let o = object(input)?;
    let f = Fields(&o);
    let name = f.required_id("hook_event_name")?;
    let kind = match name.as_str() {
        "SessionStart" => Kind::SessionStart,
        "Stop" => Kind::Turn,
        "PostToolUse" => Kind::Edit,
        _ => return Err(super::payload::unhandled(&name)),
    };
    let mut ev = AgentEvent::new(Agent::Auggie, kind, &name);
    ev.session_id = f.id("conversation_id")?;
    match o.get("workspace_roots") {
        None | Some(Value::Null) => {}
        Some(Value::Array(roots)) => {
            for r in roots {
                match r.as_str() {
                    Some(s) if std::path::Path::new(s).is_absolute() => ev.dirs.push(s.into()),
                    _ => return Err(bad("\"workspace_roots\" holds a non-absolute path")),
                }
            }
        }
        Some(_) => return Err(bad("\"workspace_roots\" is not an array")),
    }
    ev.meta_lenient(&f, "agent_stop_cause");
    if kind == Kind::Edit {
        let tool = f.id("tool_name")?.unwrap_or_default();
        if !EDIT_TOOLS.split('|').any(|t| t == tool) {
            return Err(Unusable::Unhandled(format!(
                "PostToolUse of {tool:?} edits no file"
            )));
        }
        match o.get("file_changes") {
            None | Some(Value::Null) => {}
            Some(Value::Array(changes)) => {
                for c in changes {
                    let path = c.get("path").and_then(Value::as_str);
                    ev.edited.extend(path.and_then(edited_path));
                }
            }
            Some(_) => return Err(bad("\"file_changes\" is not an array")),
        }
    }
    ev.check()
}

/// Whether Auggie will run the hooks: its source shows no trust step and no switch that turns
/// a project's hooks off, but it runs nothing without an Augment login.
pub fn status() -> (&'static str, String) {
    (
        "yes",
        "Auggie runs the project's hooks without asking (it has no trust step); it runs at all \
         only once you are logged in to Augment (`auggie login`)"
            .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn the_conversation_is_the_session_and_file_changes_are_the_edits() {
        let stop = br#"{"hook_event_name":"Stop","conversation_id":"c-1","workspace_roots":["/w"],"agent_stop_cause":"end_turn"}"#;
        let ev = parse(stop).unwrap();
        assert_eq!(ev.kind, Kind::Turn);
        assert_eq!(ev.session_id.as_deref(), Some("c-1"));
        assert_eq!(ev.dirs, [PathBuf::from("/w")]);
        assert_eq!(ev.meta["agent_stop_cause"], "end_turn");
        let save = br#"{"hook_event_name":"PostToolUse","conversation_id":"c-1","workspace_roots":["/w"],"tool_name":"save-file","tool_input":{"path":"a.txt","file_content":"a"},"tool_output":"ok","tool_error":null,"is_mcp_tool":false,"file_changes":[{"path":"a.txt","changeType":"create","content":"a"}]}"#;
        assert_eq!(parse(save).unwrap().edited, [PathBuf::from("a.txt")]);
        let view = br#"{"hook_event_name":"PostToolUse","conversation_id":"c-1","workspace_roots":["/w"],"tool_name":"view","tool_input":{"path":"a.txt"}}"#;
        assert!(matches!(parse(view), Err(Unusable::Unhandled(_))));
        let rel = br#"{"hook_event_name":"Stop","conversation_id":"c-1","workspace_roots":["w"]}"#;
        assert!(matches!(parse(rel), Err(Unusable::Malformed(_))));
    }
}
