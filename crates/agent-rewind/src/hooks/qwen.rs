//! Qwen Code (checked with 0.24.4): its Claude-compatible command hooks in
//! `.qwen/settings.json`, the reading of its payloads, and whether it will run them.
//!
//! - Events: `SessionStart` (`source` startup, resume or compact, and the `model`), `Stop`
//!   (a turn), `PostToolUse` of `write_file` and `edit` (`tool_input.file_path`).
//!   `UserPromptSubmit` is not used: Qwen fires it again on each tool-result continuation of
//!   the same prompt, with an empty `prompt`, so it would count one turn twice.
//! - `Stop` names no model: the hook's environment does (`QWEN_CODE_MODEL`).
//! - Qwen runs a project's hooks unless `disableAllHooks` is set, or folder trust is turned
//!   on (`security.folderTrust.enabled`, off by default) and the folder is not trusted.
//!
//! Parses and reads; never writes Qwen's files (the merge is [`super::settings`]'s).

use super::payload::{
    Fields, Kind, Parsed, claude_style_event, edited_path, object, require_edit_tool,
};
use super::status::{all_hooks_disabled, read_json};
use crate::agent::Agent;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The project settings file holding our hooks (and, with `--mcp`, our MCP server).
pub const SETTINGS: &str = ".qwen/settings.json";

/// What Qwen Code itself adds to a settings file it loads (its settings' format version):
/// nothing of the user's.
pub const QWENS_OWN: &[&str] = &["$version"];

/// The events we register for, with the matcher of each.
pub const EVENTS: &[(&str, Option<&str>)] = &[
    ("SessionStart", None),
    ("Stop", None),
    ("PostToolUse", Some("write_file|edit")),
];

/// Longest model name taken from the environment.
const MAX_MODEL: usize = 200;

/// Qwen Code's payload; `model_env` is `QWEN_CODE_MODEL` from the hook's environment, the
/// model of a turn whose payload names none.
pub fn parse(input: &[u8], model_env: Option<String>) -> Parsed {
    let o = object(input)?;
    let f = Fields(&o);
    let name = f.required_id("hook_event_name")?;
    let mut ev = claude_style_event(Agent::Qwen, &name)?;
    ev.common(&f)?;
    ev.meta_id(&f, "source", "source")?;
    ev.meta_lenient(&f, "prompt_id");
    if ev.kind == Kind::Turn
        && let Some(id) = ev.meta.get("prompt_id").cloned()
    {
        // The prompt's id names the turn; Qwen's command line forks at none.
        ev.meta.insert("conversation_at".into(), id);
    }
    if let Some(m) = model_env
        .filter(|m| !m.is_empty() && m.len() <= MAX_MODEL && !m.chars().any(char::is_control))
    {
        ev.meta.entry("model".into()).or_insert(m);
    }
    if ev.kind == Kind::Edit {
        require_edit_tool(&f, &["write_file", "edit"])?;
        if let Some(input) = f.object("tool_input")? {
            ev.edited
                .extend(input.text("file_path")?.and_then(edited_path));
        }
    }
    ev.check()
}

/// Whether Qwen Code will run the hooks of the worktree at `root`, and why.
pub fn status(root: &Path, home: &Path) -> (&'static str, String) {
    let user = home.join(".qwen/settings.json");
    let project = root.join(SETTINGS);
    if let Some(no) = all_hooks_disabled(&[&user, &project]) {
        return no;
    }
    let trust_on =
        read_json(&user).is_some_and(|v| v["security"]["folderTrust"]["enabled"] == true);
    let (runs, mut reason) = if !trust_on {
        (
            "yes",
            "Qwen Code runs the project's hooks without asking (folder trust is off, its \
             default; --safe-mode and --bare skip them)"
                .to_string(),
        )
    } else {
        let file = std::env::var_os("QWEN_CODE_TRUSTED_FOLDERS_PATH")
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".qwen/trustedFolders.json"));
        if trusted(root, &file) {
            (
                "yes",
                format!(
                    "folder trust is on and {} trusts this folder",
                    file.display()
                ),
            )
        } else {
            (
                "no",
                format!(
                    "folder trust is on in {} and this folder is not trusted: trust {} in \
                     Qwen Code (it records it in {})",
                    user.display(),
                    root.display(),
                    file.display()
                ),
            )
        }
    };
    if let Some(mcp) = mcp_approval(root, home) {
        reason.push_str("; ");
        reason.push_str(&mcp);
    }
    (runs, reason)
}

/// Whether the trust file (Gemini CLI's format, which Qwen Code kept) trusts `root`.
fn trusted(root: &Path, file: &Path) -> bool {
    let rules = read_json(file).unwrap_or(Value::Null);
    let mut trusted = false;
    for (path, level) in rules.as_object().into_iter().flatten() {
        let p = Path::new(path);
        match level.as_str() {
            Some("DO_NOT_TRUST") if p == root => return false,
            Some("TRUST_FOLDER") if root.starts_with(p) => trusted = true,
            Some("TRUST_PARENT") if p.parent().is_some_and(|d| root.starts_with(d)) => {
                trusted = true
            }
            _ => {}
        }
    }
    trusted
}

/// What Qwen Code does with our MCP server in the project settings, when it is there: a
/// project server waits for the user's approval (`qwen mcp approve`), which Qwen records in
/// `~/.qwen/mcpApprovals.json` bound to a hash of the server's definition.
fn mcp_approval(root: &Path, home: &Path) -> Option<String> {
    let name = super::mcp_config::SERVER_NAME;
    read_json(&root.join(SETTINGS))?
        .get("mcpServers")?
        .get(name)?;
    let file = std::env::var_os("QWEN_CODE_MCP_APPROVALS_PATH")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".qwen/mcpApprovals.json"));
    let status = read_json(&file).and_then(|v| {
        v.get(root.display().to_string())?
            .get(name)?
            .get("status")?
            .as_str()
            .map(str::to_string)
    });
    Some(match status.as_deref() {
        Some("approved") => format!(
            "its MCP server {name} was approved ({}; a changed definition needs approval again)",
            file.display()
        ),
        Some("rejected") => {
            format!("its MCP server {name} was rejected: `qwen mcp approve {name}` to use it")
        }
        _ => format!(
            "its MCP server {name} is pending approval: Qwen Code starts it only after \
             `qwen mcp approve {name}`"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::payload::Unusable;

    #[test]
    fn the_environment_names_the_model_of_a_turn_and_the_prompt_names_the_turn() {
        let stop = br#"{"hook_event_name":"Stop","session_id":"s-1","cwd":"/w","prompt_id":"s-1########0"}"#;
        let ev = parse(stop, Some("scripted".into())).unwrap();
        assert_eq!(ev.kind, Kind::Turn);
        assert_eq!(ev.meta["model"], "scripted");
        assert_eq!(ev.meta["conversation_at"], "s-1########0");
        let start = br#"{"hook_event_name":"SessionStart","session_id":"s-1","cwd":"/w","source":"resume","model":"m-1"}"#;
        let ev = parse(start, Some("other".into())).unwrap();
        assert_eq!(ev.meta["model"], "m-1", "the payload's model wins");
        assert_eq!(ev.meta["source"], "resume");
        let again =
            br#"{"hook_event_name":"UserPromptSubmit","session_id":"s-1","cwd":"/w","prompt":""}"#;
        assert!(matches!(parse(again, None), Err(Unusable::Unhandled(_))));
    }
}
