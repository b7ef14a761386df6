//! The agent's own pointer to a point of its conversation, recorded on each `turn`
//! checkpoint (`meta.conversation_at`) so that `rewind` and `fork` can continue a fork of the
//! conversation as of that turn ([`crate::agent::Agent::continue_command`]).
//!
//! - Claude Code: the `uuid` of the transcript's last `assistant` line when `Stop` arrives
//!   (the transcript is JSON Lines, read backward from its end up to that line: a long
//!   session costs no more than a short one).
//! - Codex: the payload's `turn_id` (kept as `meta.turn_id` by the payload reader).
//! - Gemini CLI, Cursor, OpenCode: no pointer their CLIs can fork at is exposed.
//!
//! Reads the transcript and nothing else; never stores any of it but the one id.

use super::usage::backward::{Backward, holds};
use std::path::Path;

/// The longest id kept.
const MAX_ID: usize = 128;

/// What the last `assistant` line of a Claude Code transcript says.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ClaudeTail {
    /// Its `uuid`: where `--resume-session-at` forks the conversation.
    pub message: String,
    /// Its `message.model` (Claude's `SessionStart` carries none).
    pub model: Option<String>,
}

/// The newest `assistant` line with a usable `uuid` of the Claude Code transcript at `path`,
/// read backward from its end (so only the lines after it are passed over, whatever the
/// session's length); `None` when there is none or the file cannot be read.
pub fn claude_last_message(path: &Path) -> Option<ClaudeTail> {
    let mut lines = Backward::open(path)?;
    while let Some(line) = lines.next_line() {
        // A cheap filter before parsing: most lines are not the assistant's.
        if !holds(&line, br#""assistant""#) {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&line) else {
            continue;
        };
        if v["type"] == "assistant"
            && let Some(id) = v["uuid"].as_str()
            && !id.is_empty()
            && id.len() <= MAX_ID
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            let model = v["message"]["model"]
                .as_str()
                .filter(|m| !m.is_empty() && m.len() <= MAX_ID && !m.chars().any(char::is_control))
                .map(str::to_string);
            return Some(ClaudeTail {
                message: id.to_string(),
                model,
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_assistant_line_wins_and_junk_is_skipped() {
        let dir = std::env::temp_dir().join(format!("agent-rewind-conv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.jsonl");
        std::fs::write(
            &p,
            concat!(
                r#"{"type":"user","uuid":"u1"}"#,
                "\n",
                r#"{"type":"assistant","uuid":"a-1"}"#,
                "\n",
                "not json \"assistant\"\n",
                r#"{"type":"assistant","uuid":"a-2","message":{"model":"m-9"}}"#,
                "\n",
                r#"{"type":"assistant","uuid":"bad id; rm -rf"}"#,
                "\n",
                r#"{"type":"last-prompt"}"#,
                "\n",
            ),
        )
        .unwrap();
        let tail = claude_last_message(&p).unwrap();
        assert_eq!(tail.message, "a-2");
        assert_eq!(tail.model.as_deref(), Some("m-9"));
        assert_eq!(claude_last_message(&dir.join("missing")), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
