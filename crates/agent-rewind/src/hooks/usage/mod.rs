//! The tokens a turn used, per model, for its `turn` checkpoint (`usage`): read from the
//! agent's own records at the end of the turn, from its transcript ([`transcripts`], read
//! backward from the end to the turn's start: [`backward`]) or, for OpenCode, whose plugin
//! sees each message's tokens, from the payload ([`from_payload`]).
//!
//! Only this turn's calls are counted: never the transcript's earlier turns. Where an agent
//! writes no usage (Cursor), nothing is stored, never zeros. Reads files and numbers only;
//! never stores or returns any text of the conversation, and never fails a turn: what
//! cannot be read is no usage.

pub mod backward;
pub mod transcripts;

use super::payload::AgentEvent;
use crate::agent::Agent;
use crate::model::{Tokens, Usage};
use serde_json::Value;

/// Most usage entries one payload contributes.
const MAX_ENTRIES: usize = 10_000;

/// The usage of the turn `ev` ends (empty when the agent gives none).
pub fn of_turn(ev: &AgentEvent) -> Usage {
    if !ev.usage.is_empty() {
        return ev.usage.clone();
    }
    let model = ev.meta.get("model").map(String::as_str);
    // A subagent's turn reads its own transcript (named last), the main turn the session's.
    let transcript = match ev.event.as_str() {
        "SubagentStop" => ev.transcripts.last(),
        _ => ev.transcripts.first(),
    };
    let Some(path) = transcript else {
        return Usage::default();
    };
    let read = match ev.agent {
        Agent::Claude => transcripts::claude(path),
        Agent::Codex => transcripts::codex(path, ev.meta.get("turn_id").map(String::as_str), model),
        Agent::Gemini => transcripts::gemini(path),
        Agent::Qwen => transcripts::qwen(path),
        Agent::Copilot => transcripts::copilot(path),
        Agent::Pi => transcripts::pi(path),
        // OpenCode's and Kilo's usage comes with the payload (above); Auggie and Droid name
        // none that was checked.
        Agent::Cursor | Agent::Opencode | Agent::Kilo | Agent::Auggie | Agent::Droid => None,
    };
    read.unwrap_or_default()
}

/// The `usage` our OpenCode plugin sends with a turn: `[{"model", "input", "output",
/// "cache_read", "cache_write"}]`, one entry per assistant message of the turn. Entries that
/// are not objects are skipped; a count that is not a whole number counts 0.
pub fn from_payload(v: Option<&Value>) -> Usage {
    let mut usage = Usage::default();
    for e in v
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .take(MAX_ENTRIES)
        .filter(|e| e.is_object())
    {
        let n = |k: &str| e[k].as_u64().unwrap_or(0);
        usage.add(
            e["model"].as_str(),
            Tokens {
                input: n("input"),
                output: n("output"),
                cache_read: n("cache_read"),
                cache_write: n("cache_write"),
            },
        );
    }
    usage
}
