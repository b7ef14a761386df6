//! GitHub Copilot CLI (checked with 1.0.102): our hook file in the repository,
//! `.github/hooks/agent-rewind.json`, written in the Claude-style form Copilot accepts
//! (`{"version": 1, "hooks": {"<PascalCase event>": [{matcher?, hooks: [{type, command}]}]}}`,
//! whose payloads are Claude's snake_case ones), the reading of those payloads, and whether
//! Copilot will run the hooks.
//!
//! - Events: `SessionStart` (`source` new or resume), `Stop` (a turn; `transcript_path`),
//!   `PostToolUse` of its file tools. Copilot reports its `apply_patch` as `tool_name: "Edit"`
//!   with the patch itself, a string, as `tool_input`.
//! - No payload names the model: Copilot's turns carry none.
//! - Copilot runs a repository's hooks only in a trusted folder (`trustedFolders` in
//!   `~/.copilot/config.json`, `--trust-folder`, or `COPILOT_ALLOW_ALL=true`); in another it
//!   skips them without a word. `disableAllHooks` turns them all off.
//!
//! Parses and reads; never writes Copilot's files and never records trust for the user.

use super::payload::{
    Fields, Kind, Parsed, claude_style_event, edited_path, object, patch_paths, require_edit_tool,
};
use super::status::{all_hooks_disabled, read_json};
use crate::agent::Agent;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Our hook file, relative to the worktree's top: all of it is ours.
pub const HOOKS_FILE: &str = ".github/hooks/agent-rewind.json";

/// The events we register for, with the matcher of each (matched against the names Copilot
/// reports in these payloads).
pub const EVENTS: &[(&str, Option<&str>)] = &[
    ("SessionStart", None),
    ("Stop", None),
    ("PostToolUse", Some("Edit|Write|MultiEdit")),
];

/// A Claude-style payload of Copilot CLI.
pub fn parse(input: &[u8]) -> Parsed {
    let o = object(input)?;
    let f = Fields(&o);
    let name = f.required_id("hook_event_name")?;
    let mut ev = claude_style_event(Agent::Copilot, &name)?;
    ev.common(&f)?;
    ev.meta_id(&f, "source", "source")?;
    ev.meta_lenient(&f, "stop_reason");
    if ev.kind == Kind::Edit {
        require_edit_tool(&f, &["Edit", "Write", "MultiEdit"])?;
        match o.get("tool_input") {
            Some(Value::String(patch)) => ev.edited = patch_paths(patch),
            Some(Value::Object(_)) | None | Some(Value::Null) => {
                if let Some(input) = f.object("tool_input")? {
                    for k in ["file_path", "path"] {
                        ev.edited.extend(input.text(k)?.and_then(edited_path));
                    }
                }
            }
            Some(_) => {
                return Err(super::payload::bad(
                    "\"tool_input\" is neither a patch nor an object",
                ));
            }
        }
    }
    ev.check()
}

/// Copilot's own folder: `COPILOT_HOME`, else `~/.copilot`.
fn copilot_home(home: &Path) -> PathBuf {
    std::env::var_os("COPILOT_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".copilot"))
}

/// Whether Copilot CLI will run the repository's hooks at `root`, and why.
pub fn status(root: &Path, home: &Path) -> (&'static str, String) {
    let own = copilot_home(home);
    let files = [
        own.join("settings.json"),
        root.join(".github/copilot/settings.json"),
        root.join(".github/copilot/settings.local.json"),
    ];
    if let Some(no) = all_hooks_disabled(&files.iter().map(|f| f.as_path()).collect::<Vec<_>>()) {
        return no;
    }
    if std::env::var("COPILOT_ALLOW_ALL").is_ok_and(|v| v == "true") {
        return (
            "yes",
            "COPILOT_ALLOW_ALL=true trusts every folder".to_string(),
        );
    }
    let config = own.join("config.json");
    let listed = read_json(&config).is_some_and(|v| {
        v["trustedFolders"]
            .as_array()
            .is_some_and(|a| a.iter().any(|p| p.as_str().map(Path::new) == Some(root)))
    });
    if listed {
        return (
            "yes",
            format!("{} lists this folder in trustedFolders", config.display()),
        );
    }
    ("no", untrusted_steps(root, &config))
}

/// What to do so that Copilot runs the repository's hooks at `root`.
fn untrusted_steps(root: &Path, config: &Path) -> String {
    format!(
        "GitHub Copilot CLI skips a repository's hooks without a word in a folder you have not \
         trusted: trust {} when Copilot asks (it adds it to \"trustedFolders\" in {}), or run \
         it with --trust-folder (new sessions only) or COPILOT_ALLOW_ALL=true",
        root.display(),
        config.display()
    )
}

/// What `hooks install --agent copilot` says every time: the hooks run only in a trusted
/// folder.
pub fn install_warning(root: &Path) -> String {
    format!(
        "GitHub Copilot CLI runs these hooks only in a folder you trust: trust {} when Copilot \
         asks (\"trustedFolders\" in ~/.copilot/config.json), or run it with --trust-folder \
         or COPILOT_ALLOW_ALL=true. Until then it skips them without a word and nothing is \
         recorded",
        root.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::payload::Unusable;

    #[test]
    fn an_edit_is_a_patch_string_or_an_object() {
        let patch = br#"{"hook_event_name":"PostToolUse","session_id":"s","cwd":"/w","tool_name":"Edit","tool_input":"*** Begin Patch\n*** Add File: /w/a.txt\n+a\n*** End Patch\n"}"#;
        assert_eq!(parse(patch).unwrap().edited, [PathBuf::from("/w/a.txt")]);
        let object = br#"{"hook_event_name":"PostToolUse","session_id":"s","cwd":"/w","tool_name":"Write","tool_input":{"path":"b.txt"}}"#;
        assert_eq!(parse(object).unwrap().edited, [PathBuf::from("b.txt")]);
        let shell = br#"{"hook_event_name":"PostToolUse","session_id":"s","cwd":"/w","tool_name":"Bash","tool_input":{"command":"ls"}}"#;
        assert!(matches!(parse(shell), Err(Unusable::Unhandled(_))));
        let number = br#"{"hook_event_name":"PostToolUse","session_id":"s","cwd":"/w","tool_name":"Edit","tool_input":7}"#;
        assert!(matches!(parse(number), Err(Unusable::Malformed(_))));
    }
}
