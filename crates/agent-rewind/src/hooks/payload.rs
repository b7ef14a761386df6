//! Reading each agent's hook payload into one [`AgentEvent`]: the small per-agent adapter of
//! the payload → turn pipeline ([`super::turn`]). The field names and event names are the
//! agents' published ones (sources in docs/HOOKS.md; examples in `fixtures/<agent>/`).
//!
//! It only parses: it never touches the repository, and anything it cannot use is an
//! [`Unusable`] saying why, never a panic.

use crate::agent::Agent;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Longest identifier (session id, event name, …) we accept.
const MAX_ID: usize = 200;
/// Most edited paths one payload contributes.
const MAX_EDITED: usize = 1_000;

/// What an agent event asks of us.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Start or join the worktree's active run.
    SessionStart,
    /// The agent finished a turn: record a `turn` checkpoint.
    Turn,
    /// The agent edited files: note them for the next turn.
    Edit,
}

/// One agent hook event, whatever agent sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentEvent {
    pub agent: Agent,
    pub kind: Kind,
    /// The agent's own name for the event (`Stop`, `AfterAgent`, `stop`, `session.idle` …).
    pub event: String,
    /// The agent's conversation id (always set for `SessionStart` and `Turn`).
    pub session_id: Option<String>,
    /// Where the repository is, best first (`cwd`, or each of `workspace_roots`).
    pub dirs: Vec<PathBuf>,
    /// Transcript files to point to (never stored).
    pub transcripts: Vec<PathBuf>,
    /// Agent-specific facts kept in the checkpoint's `meta` (`model`, `source`, `turn_id` …).
    pub meta: BTreeMap<String, String>,
    /// Files the agent edited, absolute or relative to `dirs[0]`.
    pub edited: Vec<PathBuf>,
    /// The turn's token usage when the payload carries it (OpenCode's plugin); otherwise
    /// it is read from the transcript ([`super::usage`]).
    pub usage: crate::model::Usage,
}

/// Why a payload records nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unusable {
    /// Not JSON, wrong types, a required field missing.
    Malformed(String),
    /// A valid event we do not handle.
    Unhandled(String),
}

pub(super) type Parsed = Result<AgentEvent, Unusable>;

pub(super) fn bad(why: impl Into<String>) -> Unusable {
    Unusable::Malformed(why.into())
}

/// Typed access to a payload object; a present field of the wrong type is an error.
pub(super) struct Fields<'a>(pub(super) &'a Map<String, Value>);

impl<'a> Fields<'a> {
    pub(super) fn text(&self, k: &str) -> Result<Option<&'a str>, Unusable> {
        match self.0.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(bad(format!("{k:?} is not a string"))),
        }
    }

    /// A short single-line identifier.
    pub(super) fn id(&self, k: &str) -> Result<Option<String>, Unusable> {
        match self.text(k)? {
            Some(s) if s.is_empty() || s.len() > MAX_ID || s.chars().any(char::is_control) => {
                Err(bad(format!("{k:?} is not a usable identifier")))
            }
            other => Ok(other.map(str::to_string)),
        }
    }

    pub(super) fn required_id(&self, k: &str) -> Result<String, Unusable> {
        self.id(k)?.ok_or_else(|| bad(format!("no {k:?}")))
    }

    /// An absolute path (empty counts as absent).
    pub(super) fn abs_path(&self, k: &str) -> Result<Option<PathBuf>, Unusable> {
        match self.text(k)? {
            None | Some("") => Ok(None),
            Some(s) if Path::new(s).is_absolute() && !s.contains('\0') => Ok(Some(s.into())),
            Some(s) => Err(bad(format!("{k:?} is not an absolute path: {s:?}"))),
        }
    }

    pub(super) fn object(&self, k: &str) -> Result<Option<Fields<'a>>, Unusable> {
        match self.0.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(o)) => Ok(Some(Fields(o))),
            Some(_) => Err(bad(format!("{k:?} is not an object"))),
        }
    }

    /// A number or boolean kept as text in `meta`.
    fn scalar(&self, k: &str) -> Option<String> {
        match self.0.get(k)? {
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }
}

pub(super) fn object(input: &[u8]) -> Result<Map<String, Value>, Unusable> {
    match serde_json::from_slice(input) {
        Ok(Value::Object(o)) => Ok(o),
        Ok(_) => Err(bad("not a JSON object")),
        Err(e) => Err(bad(format!("not JSON ({e})"))),
    }
}

/// A file path from a tool's input: absolute, or relative to the agent's working directory.
pub(super) fn edited_path(s: &str) -> Option<PathBuf> {
    (!s.is_empty() && !s.contains('\0') && s.len() <= 4096).then(|| PathBuf::from(s))
}

impl AgentEvent {
    pub(super) fn new(agent: Agent, kind: Kind, event: &str) -> Self {
        let mut meta = BTreeMap::new();
        meta.insert("hook_event".to_string(), event.to_string());
        AgentEvent {
            agent,
            kind,
            event: event.to_string(),
            session_id: None,
            dirs: vec![],
            transcripts: vec![],
            meta,
            edited: vec![],
            usage: Default::default(),
        }
    }

    /// `key` into `meta` when it is a usable identifier, and nothing otherwise: for fields
    /// that only inform (`prompt_id`, `effort`), whose type an agent may change.
    pub(super) fn meta_lenient(&mut self, f: &Fields, key: &str) {
        if let Ok(Some(v)) = f.id(key) {
            self.meta.insert(key.to_string(), v);
        }
    }

    pub(super) fn meta_id(
        &mut self,
        f: &Fields,
        key: &str,
        meta_key: &str,
    ) -> Result<(), Unusable> {
        if let Some(v) = f.id(key)? {
            self.meta.insert(meta_key.to_string(), v);
        }
        Ok(())
    }

    /// The fields every Claude-style payload has: `session_id`, `cwd`, `transcript_path`,
    /// `model`.
    pub(super) fn common(&mut self, f: &Fields) -> Result<(), Unusable> {
        self.session_id = f.id("session_id")?;
        self.dirs.extend(f.abs_path("cwd")?);
        self.transcripts.extend(f.abs_path("transcript_path")?);
        self.meta_id(f, "model", "model")
    }

    pub(super) fn check(self) -> Parsed {
        if self.kind != Kind::Edit && self.session_id.is_none() {
            return Err(bad("no session id"));
        }
        if self.kind == Kind::Edit && self.edited.is_empty() {
            return Err(Unusable::Unhandled(format!(
                "{} names no file it edited",
                self.event
            )));
        }
        Ok(self)
    }
}

/// The event of a Claude-style hook payload (`hook_event_name`), for the agents that copied
/// Claude Code's protocol: `SessionStart`, `Stop` (a turn) and `PostToolUse` (an edit).
pub(super) fn claude_style_event(agent: Agent, name: &str) -> Result<AgentEvent, Unusable> {
    Ok(match name {
        "SessionStart" => AgentEvent::new(agent, Kind::SessionStart, name),
        "Stop" => AgentEvent::new(agent, Kind::Turn, name),
        "PostToolUse" => AgentEvent::new(agent, Kind::Edit, name),
        _ => return Err(unhandled(name)),
    })
}

/// Refuse a `PostToolUse` whose `tool_name` is none of `edit_tools` (it edits no file).
pub(super) fn require_edit_tool(f: &Fields, edit_tools: &[&str]) -> Result<(), Unusable> {
    let tool = f.id("tool_name")?.unwrap_or_default();
    if edit_tools.contains(&tool.as_str()) {
        Ok(())
    } else {
        Err(Unusable::Unhandled(format!(
            "PostToolUse of {tool:?} edits no file"
        )))
    }
}

pub(super) fn unhandled(event: &str) -> Unusable {
    Unusable::Unhandled(format!("event {event} is not handled"))
}

/// Parse what `hook <agent>` received: its standard input, and its arguments (Codex's
/// legacy `notify` program gets the payload as its last argument).
pub fn parse(agent: Agent, input: &[u8], args: &[String]) -> Parsed {
    match agent {
        Agent::Claude => claude(input),
        Agent::Codex => {
            if input.iter().all(u8::is_ascii_whitespace)
                && let Some(arg) = args.last()
            {
                codex_notify(arg.as_bytes())
            } else {
                codex(input)
            }
        }
        Agent::Gemini => gemini(input),
        Agent::Cursor => cursor(input),
        Agent::Opencode => opencode(Agent::Opencode, input),
        Agent::Kilo => opencode(Agent::Kilo, input),
        Agent::Auggie => super::auggie::parse(input),
        Agent::Droid => super::droid::parse(input),
        Agent::Qwen => super::qwen::parse(input, std::env::var("QWEN_CODE_MODEL").ok()),
        Agent::Copilot => super::copilot::parse(input),
        Agent::Pi => super::pi::parse(input),
    }
}

/// Claude Code: `SessionStart`, `Stop`, `SubagentStop`, `PostToolUse` of the file tools.
fn claude(input: &[u8]) -> Parsed {
    let o = object(input)?;
    let f = Fields(&o);
    let name = f.required_id("hook_event_name")?;
    let mut ev = match name.as_str() {
        "SessionStart" => AgentEvent::new(Agent::Claude, Kind::SessionStart, &name),
        "Stop" | "SubagentStop" => AgentEvent::new(Agent::Claude, Kind::Turn, &name),
        "PostToolUse" => AgentEvent::new(Agent::Claude, Kind::Edit, &name),
        _ => return Err(unhandled(&name)),
    };
    ev.common(&f)?;
    ev.meta_id(&f, "source", "source")?;
    ev.meta_id(&f, "agent_id", "subagent_id")?;
    ev.meta_id(&f, "agent_type", "subagent_type")?;
    ev.meta_lenient(&f, "prompt_id");
    ev.meta_lenient(&f, "effort");
    ev.transcripts.extend(f.abs_path("agent_transcript_path")?);
    if ev.kind == Kind::Edit {
        let tool = f.id("tool_name")?.unwrap_or_default();
        if !matches!(
            tool.as_str(),
            "Edit" | "Write" | "MultiEdit" | "NotebookEdit"
        ) {
            return Err(Unusable::Unhandled(format!(
                "PostToolUse of {tool:?} edits no file"
            )));
        }
        if let Some(input) = f.object("tool_input")? {
            for k in ["file_path", "notebook_path"] {
                ev.edited.extend(input.text(k)?.and_then(edited_path));
            }
        }
    }
    ev.check()
}

/// Codex CLI hooks: `SessionStart`, `Stop`, `SubagentStop`, `PostToolUse` (`apply_patch`).
fn codex(input: &[u8]) -> Parsed {
    let o = object(input)?;
    let f = Fields(&o);
    let name = f.required_id("hook_event_name")?;
    let mut ev = match name.as_str() {
        "SessionStart" => AgentEvent::new(Agent::Codex, Kind::SessionStart, &name),
        "Stop" | "SubagentStop" => AgentEvent::new(Agent::Codex, Kind::Turn, &name),
        "PostToolUse" => AgentEvent::new(Agent::Codex, Kind::Edit, &name),
        _ => return Err(unhandled(&name)),
    };
    ev.common(&f)?;
    ev.meta_id(&f, "source", "source")?;
    ev.meta_id(&f, "turn_id", "turn_id")?;
    // The turn's id is also Codex's pointer to this point of its conversation.
    ev.meta_id(&f, "turn_id", "conversation_at")?;
    ev.meta_id(&f, "agent_id", "subagent_id")?;
    ev.meta_id(&f, "agent_type", "subagent_type")?;
    ev.transcripts.extend(f.abs_path("agent_transcript_path")?);
    if ev.kind == Kind::Edit {
        let tool = f.id("tool_name")?.unwrap_or_default();
        let input = f.object("tool_input")?;
        match (tool.as_str(), input) {
            ("apply_patch", Some(input)) => {
                ev.edited = patch_paths(input.text("command")?.unwrap_or(""));
            }
            (_, Some(input)) => ev
                .edited
                .extend(input.text("file_path")?.and_then(edited_path)),
            (_, None) => {}
        }
    }
    ev.check()
}

/// The files an `apply_patch` patch adds, updates, deletes or moves to (its
/// `*** Add File:`, `*** Update File:`, `*** Delete File:`, `*** Move to:` lines).
pub fn patch_paths(patch: &str) -> Vec<PathBuf> {
    const HEADERS: [&str; 4] = [
        "*** Add File: ",
        "*** Update File: ",
        "*** Delete File: ",
        "*** Move to: ",
    ];
    patch
        .lines()
        .filter_map(|l| HEADERS.iter().find_map(|h| l.strip_prefix(h)))
        .filter_map(|p| edited_path(p.trim()))
        .take(MAX_EDITED)
        .collect()
}

/// Codex's legacy `notify` program: `{"type": "agent-turn-complete", "thread-id", "turn-id",
/// "cwd", …}` as one argument.
fn codex_notify(input: &[u8]) -> Parsed {
    let o = object(input)?;
    let f = Fields(&o);
    let kind = f.required_id("type")?;
    if kind != "agent-turn-complete" {
        return Err(Unusable::Unhandled(format!(
            "notification {kind} is not handled"
        )));
    }
    let mut ev = AgentEvent::new(Agent::Codex, Kind::Turn, &kind);
    ev.session_id = f.id("thread-id")?;
    ev.dirs.extend(f.abs_path("cwd")?);
    ev.meta_id(&f, "turn-id", "turn_id")?;
    ev.meta_id(&f, "turn-id", "conversation_at")?;
    ev.check()
}

/// Gemini CLI: `SessionStart`, `AfterAgent`, `AfterTool` of `write_file` / `replace`.
fn gemini(input: &[u8]) -> Parsed {
    let o = object(input)?;
    let f = Fields(&o);
    let name = f.required_id("hook_event_name")?;
    let mut ev = match name.as_str() {
        "SessionStart" => AgentEvent::new(Agent::Gemini, Kind::SessionStart, &name),
        "AfterAgent" => AgentEvent::new(Agent::Gemini, Kind::Turn, &name),
        "AfterTool" => AgentEvent::new(Agent::Gemini, Kind::Edit, &name),
        _ => return Err(unhandled(&name)),
    };
    ev.common(&f)?;
    ev.meta_id(&f, "source", "source")?;
    if ev.kind == Kind::Edit {
        let tool = f.id("tool_name")?.unwrap_or_default();
        if !matches!(tool.as_str(), "write_file" | "replace") {
            return Err(Unusable::Unhandled(format!(
                "AfterTool of {tool:?} edits no file"
            )));
        }
        if let Some(input) = f.object("tool_input")? {
            ev.edited
                .extend(input.text("file_path")?.and_then(edited_path));
        }
    }
    ev.check()
}

/// Cursor: `sessionStart`, `stop`, `afterFileEdit`; no `cwd` but `workspace_roots`.
fn cursor(input: &[u8]) -> Parsed {
    let o = object(input)?;
    let f = Fields(&o);
    let name = f.required_id("hook_event_name")?;
    let mut ev = match name.as_str() {
        "sessionStart" => AgentEvent::new(Agent::Cursor, Kind::SessionStart, &name),
        "stop" => AgentEvent::new(Agent::Cursor, Kind::Turn, &name),
        "afterFileEdit" => AgentEvent::new(Agent::Cursor, Kind::Edit, &name),
        _ => return Err(unhandled(&name)),
    };
    ev.session_id = match f.id("conversation_id")? {
        Some(c) => Some(c),
        None => f.id("session_id")?,
    };
    match o.get("workspace_roots") {
        None | Some(Value::Null) => {}
        Some(Value::Array(roots)) => {
            for r in roots {
                match r.as_str() {
                    Some(s) if Path::new(s).is_absolute() => ev.dirs.push(s.into()),
                    _ => return Err(bad("\"workspace_roots\" holds a non-absolute path")),
                }
            }
        }
        Some(_) => return Err(bad("\"workspace_roots\" is not an array")),
    }
    ev.dirs.extend(f.abs_path("cwd")?);
    ev.transcripts.extend(f.abs_path("transcript_path")?);
    ev.meta_id(&f, "model", "model")?;
    ev.meta_id(&f, "generation_id", "generation_id")?;
    ev.meta_id(&f, "status", "status")?;
    if let Some(n) = f.scalar("loop_count") {
        ev.meta.insert("loop_count".into(), n);
    }
    if ev.kind == Kind::Edit {
        ev.edited.extend(f.text("file_path")?.and_then(edited_path));
    }
    ev.check()
}

/// OpenCode, through our plugin (`hooks/opencode-plugin.js`): `{"event": <an OpenCode bus
/// event>, "directory", "worktree"}` for `session.created`, `session.idle` (with the
/// plugin's `messageID`, the newest assistant message) and `file.edited`, and the plugin's
/// own `session.compacting` `{sessionID}` before OpenCode compacts a session. Kilo, an
/// OpenCode fork, has the same events, through its copy of the plugin.
fn opencode(agent: Agent, input: &[u8]) -> Parsed {
    let o = object(input)?;
    let f = Fields(&o);
    let event = f.object("event")?.ok_or_else(|| bad("no \"event\""))?;
    let name = event.required_id("type")?;
    let mut ev = match name.as_str() {
        "session.created" | "session.compacting" => {
            AgentEvent::new(agent, Kind::SessionStart, &name)
        }
        "session.idle" => AgentEvent::new(agent, Kind::Turn, &name),
        "file.edited" => AgentEvent::new(agent, Kind::Edit, &name),
        _ => return Err(unhandled(&name)),
    };
    // Newer OpenCode versions name the event's fields `data` instead of `properties`.
    let props = match event.object("properties")? {
        Some(p) => p,
        None => event
            .object("data")?
            .ok_or_else(|| bad("the event has no \"properties\""))?,
    };
    match ev.kind {
        Kind::SessionStart if name == "session.compacting" => {
            ev.session_id = props.id("sessionID")?;
            ev.meta.insert("source".into(), "compact".into());
        }
        Kind::SessionStart => {
            let info = props
                .object("info")?
                .ok_or_else(|| bad("session.created has no \"info\""))?;
            ev.session_id = info.id("id")?;
            ev.dirs.extend(info.abs_path("directory")?);
            ev.meta_id(&info, "parentID", "parent_session")?;
        }
        Kind::Turn => {
            ev.session_id = props.id("sessionID")?;
            ev.meta_id(&f, "messageID", "conversation_at")?;
            ev.usage = super::usage::from_payload(o.get("usage"));
        }
        Kind::Edit => ev.edited.extend(props.text("file")?.and_then(edited_path)),
    }
    ev.dirs.extend(f.abs_path("directory")?);
    ev.dirs.extend(f.abs_path("worktree")?);
    ev.check()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_payloads() {
        let p = parse(
            Agent::Claude,
            br#"{"session_id":"abc","transcript_path":"/t/x.jsonl","cwd":"/w","hook_event_name":"Stop","stop_hook_active":false}"#,
            &[],
        )
        .unwrap();
        assert_eq!(p.kind, Kind::Turn);
        assert_eq!(p.session_id.as_deref(), Some("abc"));
        assert_eq!(p.transcripts, [PathBuf::from("/t/x.jsonl")]);
        for bad in [
            &b"garbage"[..],
            b"[]",
            b"{}",
            br#"{"hook_event_name":"Stop"}"#,
            br#"{"hook_event_name":"Stop","session_id":42}"#,
            br#"{"hook_event_name":"Stop","session_id":"a","cwd":"relative"}"#,
        ] {
            assert!(
                matches!(parse(Agent::Claude, bad, &[]), Err(Unusable::Malformed(_))),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn patches() {
        let patch = "*** Begin Patch\n*** Add File: src/new.rs\n+fn x() {}\n*** Update File: crates/agent-rewind/src/lib.rs\n*** Move to: src/core.rs\n@@\n-a\n+b\n*** Delete File: old.txt\n*** End Patch\n";
        assert_eq!(
            patch_paths(patch),
            [
                "src/new.rs",
                "crates/agent-rewind/src/lib.rs",
                "src/core.rs",
                "old.txt"
            ]
            .map(PathBuf::from)
        );
    }

    #[test]
    fn codex_notify_argument() {
        let arg = r#"{"type":"agent-turn-complete","thread-id":"t1","turn-id":"12","cwd":"/w","input-messages":["hi"],"last-assistant-message":"done"}"#;
        let p = parse(Agent::Codex, b"", &[arg.to_string()]).unwrap();
        assert_eq!(p.kind, Kind::Turn);
        assert_eq!(p.session_id.as_deref(), Some("t1"));
        assert_eq!(p.meta["turn_id"], "12");
    }
}
