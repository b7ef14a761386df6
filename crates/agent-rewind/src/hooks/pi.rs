//! Pi has no shell hooks: an extension file in the project's extension folder
//! (`.pi/extensions/agent-rewind.ts`, the template in `hooks/pi-extension.ts`; Pi loads it
//! with no build step and no trust step) subscribes to Pi's events and hands each to
//! `git-agent-rewind hook pi` as one JSON object. This module owns that file (install,
//! uninstall, whether it is there) and reading what the extension sends into one
//! [`AgentEvent`].
//!
//! The whole file is ours, recognised by its first line: installing writes it (or refreshes
//! an older copy of ours); uninstalling deletes it, with the folders it leaves empty. A file
//! of that name that is not ours is refused and left untouched. It must never touch any
//! other file of `.pi/`, and the parser never touches the repository.

use super::Agent;
use super::ownedfile::OwnedFile;
use super::payload::{AgentEvent, Fields, Kind, Parsed, Unusable, edited_path, object};
use std::path::{Path, PathBuf};

/// The extension, as installed.
pub const EXTENSION: &str = include_str!("../../../../hooks/pi-extension.ts");
/// Where it goes, relative to the worktree root.
pub const EXTENSION_PATH: &str = ".pi/extensions/agent-rewind.ts";
/// The Pi events the extension forwards.
pub const EVENTS: [&str; 4] = [
    "session_start",
    "session_compact",
    "tool_result",
    "agent_end",
];

/// The extension file, ours as a whole.
pub const FILE: OwnedFile = OwnedFile {
    agent: Agent::Pi,
    path: EXTENSION_PATH,
    text: || EXTENSION,
    first_line: "// git-agent-rewind Pi extension",
    events: &EVENTS,
};

/// Whether `text` is an extension file we wrote (any version).
pub fn is_ours(text: &str) -> bool {
    FILE.is_ours(text)
}

/// Why `hooks install --mcp` adds nothing for Pi.
pub const NO_MCP: &str = "Pi has no MCP support, by design (its README: \"No MCP\"): no MCP \
     server was added for it; its turns are still recorded by the extension";

/// Where `hooks status` looks, and the events there when the file is ours.
pub fn installed(root: &Path) -> (PathBuf, Vec<String>) {
    let p = root.join(EXTENSION_PATH);
    let ours = std::fs::read_to_string(&p).is_ok_and(|t| is_ours(&t));
    let events = if ours {
        EVENTS.iter().map(|e| e.to_string()).collect()
    } else {
        vec![]
    };
    (p, events)
}

/// Whether Pi will load the extension: it has no trust step; the project's
/// `.pi/settings.json` can exclude it in `extensions` (`!pattern` or `-path`; the user's
/// settings do not reach a project extension: checked with 0.73.1), and `--no-extensions`
/// turns discovery off for one run.
pub fn runs(root: &Path) -> (&'static str, String) {
    if let Some(no) = excluded_by(&root.join(".pi/settings.json")) {
        return no;
    }
    (
        "yes",
        "Pi loads the project's .pi/extensions/ at startup, with no trust step \
         (`pi --no-extensions` turns that off for a run)"
            .into(),
    )
}

/// What the extension sends: `{"type": <Pi event>, "cwd", "sessionId", "sessionFile",
/// "leafId", "parentSession", "model": {"provider", "id"}, "reason", "toolName", "path"}`.
pub fn parse(input: &[u8]) -> Parsed {
    let o = object(input)?;
    let f = Fields(&o);
    let name = f.required_id("type")?;
    let kind = match name.as_str() {
        "session_start" | "session_compact" => Kind::SessionStart,
        "agent_end" => Kind::Turn,
        "tool_result" => Kind::Edit,
        _ => return Err(super::payload::unhandled(&name)),
    };
    let mut ev = AgentEvent::new(Agent::Pi, kind, &name);
    ev.session_id = f.id("sessionId")?;
    ev.dirs.extend(f.abs_path("cwd")?);
    ev.transcripts.extend(f.abs_path("sessionFile")?);
    if let Some(model) = f.object("model")? {
        ev.meta_id(&model, "id", "model")?;
        ev.meta_id(&model, "provider", "provider")?;
    }
    ev.meta_lenient(&f, "parentSession");
    match kind {
        Kind::SessionStart => {
            ev.meta_id(&f, "reason", "reason")?;
            if let Some(source) = start_source(&name, &f)? {
                ev.meta.insert("source".into(), source.into());
            }
        }
        // The session's current entry: where Pi's own `/fork` and `/tree` could branch.
        Kind::Turn => ev.meta_id(&f, "leafId", "conversation_at")?,
        Kind::Edit => {
            let tool = f.id("toolName")?.unwrap_or_default();
            if !matches!(tool.as_str(), "write" | "edit") {
                return Err(Unusable::Unhandled(format!(
                    "tool_result of {tool:?} edits no file"
                )));
            }
            ev.edited.extend(f.text("path")?.and_then(edited_path));
        }
    }
    ev.check()
}

/// The session start's `source`, as the other agents name it: `compact` after a compaction;
/// `resume` when Pi says so or the session is a fork of another (`parentSession`: it holds
/// that conversation); `clear` for a new session replacing one. `None` when Pi cannot tell
/// (a headless `--session <id>` says `startup` as a new session does): the pipeline then
/// looks for the session's turns in the run.
fn start_source(name: &str, f: &Fields) -> std::result::Result<Option<&'static str>, Unusable> {
    if name == "session_compact" {
        return Ok(Some("compact"));
    }
    if f.text("parentSession")?.is_some_and(|p| !p.is_empty()) {
        return Ok(Some("resume"));
    }
    Ok(match f.text("reason")? {
        Some("resume" | "fork") => Some("resume"),
        Some("new") => Some("clear"),
        Some(_) | None => None,
    })
}

/// The verdict `no` when Pi's settings file `file` excludes our extension in `extensions`
/// (`!pattern` or `-path`), naming the file.
pub fn excluded_by(file: &Path) -> Option<(&'static str, String)> {
    let settings = std::fs::read_to_string(file)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())?;
    let excluded = settings["extensions"].as_array().is_some_and(|a| {
        a.iter()
            .filter_map(|e| e.as_str())
            .any(|e| (e.starts_with('!') || e.starts_with('-')) && e.contains("agent-rewind"))
    });
    excluded.then(|| {
        (
            "no",
            format!(
                "{} excludes our extension in \"extensions\": remove that entry to record turns",
                file.display()
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_of_the_extension() {
        let start = br#"{"type":"session_start","reason":"startup","cwd":"/w","sessionId":"01a2-b","sessionFile":"/h/.pi/agent/sessions/x.jsonl","model":{"provider":"local","id":"scripted"}}"#;
        let ev = parse(start).unwrap();
        assert_eq!(ev.kind, Kind::SessionStart);
        assert_eq!(ev.session_id.as_deref(), Some("01a2-b"));
        assert_eq!(ev.meta["model"], "scripted");
        assert!(!ev.meta.contains_key("source"), "startup cannot tell");
        let fork = br#"{"type":"session_start","reason":"startup","sessionId":"s","parentSession":"/h/p.jsonl"}"#;
        assert_eq!(parse(fork).unwrap().meta["source"], "resume");
        let end = br#"{"type":"agent_end","cwd":"/w","sessionId":"s","leafId":"d641c5eb"}"#;
        let ev = parse(end).unwrap();
        assert_eq!(ev.kind, Kind::Turn);
        assert_eq!(ev.meta["conversation_at"], "d641c5eb");
        let edit = br#"{"type":"tool_result","toolName":"bash","path":"/w/a"}"#;
        assert!(matches!(parse(edit), Err(Unusable::Unhandled(_))));
        let edit = br#"{"type":"tool_result","toolName":"write","path":"a.txt","cwd":"/w"}"#;
        assert_eq!(parse(edit).unwrap().edited, [PathBuf::from("a.txt")]);
        assert!(matches!(
            parse(br#"{"type":"agent_end"}"#),
            Err(Unusable::Malformed(_))
        ));
    }
}
