//! Each agent's own usage records in its transcript, read back from the transcript's end to
//! the start of the turn that just ended (docs/HOOKS.md, "Token usage", says where each
//! agent writes them and which version was checked):
//!
//! - Claude Code: `assistant` lines' `message.usage` and `message.model`, one line per
//!   content block of a message (the same `message.id`, counted once); the turn starts at
//!   the user's prompt (a `user` line that is not a tool's result).
//! - Codex: the `token_usage_record` of the turn (`turn_id`), whose `turn_token_usage` is
//!   the whole turn's; older rollouts without it: the `token_count` events' `last_token_usage`
//!   since the turn's `task_started`.
//! - Gemini CLI and Qwen Code: `gemini` (Gemini) / `assistant` (Qwen) records with `tokens` /
//!   `usageMetadata` and `model`; a record rewritten later keeps its `id` (Gemini) and is
//!   counted once; the turn starts at the user's text.
//! - Copilot CLI: `session.usage_record` events (`data.usage`) since the last `user.message`.
//! - Pi: `message` entries of the assistant with `usage`, since the last user message.
//!
//! Reads the transcript and keeps numbers and model names only; never any message text.

use super::backward::{Backward, holds};
use crate::model::{Tokens, Usage};
use serde_json::Value;
use std::collections::HashSet;
use std::path::Path;

/// What one transcript line says, to a reader of usage.
enum Seen {
    /// A model call's tokens; `key` names the call when the agent writes it more than once
    /// (the newest copy counts).
    Call {
        key: Option<String>,
        model: Option<String>,
        tokens: Tokens,
    },
    /// The user's prompt that started the turn: nothing before it is this turn's.
    TurnStart,
    Skip,
}

/// The sum of the calls of the turn that ends the transcript at `path`: the lines after the
/// newest [`Seen::TurnStart`], read from the end. Only lines holding one of `needles` are
/// parsed (the agents write compact JSON: `"type":"user"` has no space). `None` when the file cannot be read; an empty usage when it holds no call.
fn sum_turn(path: &Path, needles: &[&[u8]], classify: impl Fn(&Value) -> Seen) -> Option<Usage> {
    let mut lines = Backward::open(path)?;
    let mut usage = Usage::default();
    let mut counted: HashSet<String> = HashSet::new();
    while let Some(line) = lines.next_line() {
        if !needles.iter().any(|n| holds(&line, n)) {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        match classify(&v) {
            Seen::TurnStart => break,
            Seen::Skip => {}
            Seen::Call { key, model, tokens } => {
                if key.is_none_or(|k| counted.insert(k)) {
                    usage.add(model.as_deref(), tokens);
                }
            }
        }
    }
    Some(usage)
}

fn count(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

fn text(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

/// A prompt's count that includes its cached tokens, less those.
fn uncached(prompt: &Value, cached: &[&Value]) -> u64 {
    cached
        .iter()
        .fold(count(prompt), |left, c| left.saturating_sub(count(c)))
}

/// Claude Code (`~/.claude/projects/<project>/<session>.jsonl`).
pub fn claude(path: &Path) -> Option<Usage> {
    sum_turn(
        path,
        &[br#""usage""#, br#""type":"user""#],
        |v| match v["type"].as_str() {
            Some("assistant") => {
                let m = &v["message"];
                let u = &m["usage"];
                if !u.is_object() {
                    return Seen::Skip;
                }
                Seen::Call {
                    key: text(&m["id"]).or_else(|| text(&v["uuid"])),
                    model: text(&m["model"]),
                    tokens: Tokens {
                        input: count(&u["input_tokens"]),
                        output: count(&u["output_tokens"]),
                        cache_read: count(&u["cache_read_input_tokens"]),
                        cache_write: count(&u["cache_creation_input_tokens"]),
                    },
                }
            }
            Some("user") if claude_prompt(v) => Seen::TurnStart,
            _ => Seen::Skip,
        },
    )
}

/// Whether a Claude Code `user` line is the user's prompt (not a tool's result, not a line
/// Claude Code adds itself).
fn claude_prompt(v: &Value) -> bool {
    if v["isMeta"] == true || v.get("toolUseResult").is_some() || v["isCompactSummary"] == true {
        return false;
    }
    match &v["message"]["content"] {
        Value::String(_) => true,
        Value::Array(parts) => parts.iter().all(|p| p["type"] != "tool_result"),
        _ => false,
    }
}

/// Codex (`~/.codex/sessions/…/rollout-….jsonl`): the turn `turn` (the newest when `None`).
pub fn codex(path: &Path, turn: Option<&str>, model: Option<&str>) -> Option<Usage> {
    let mut lines = Backward::open(path)?;
    let mut usage = Usage::default();
    let mut totals_seen: HashSet<u64> = HashSet::new();
    while let Some(line) = lines.next_line() {
        let record = holds(&line, br#""token_usage_record""#);
        if !record && !holds(&line, br#""token_count""#) && !holds(&line, br#""task_started""#) {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        let p = &v["payload"];
        if v["type"] == "token_usage_record" {
            if turn.is_some_and(|t| p["turn_id"] != t) {
                continue;
            }
            // The turn's own running sum: its newest record is the whole turn.
            let mut whole = Usage::default();
            whole.add(model, codex_tokens(&p["turn_token_usage"]));
            return Some(whole);
        }
        match p["type"].as_str() {
            Some("task_started" | "turn_started") => break,
            Some("token_count") if p["info"].is_object() => {
                // The same total written twice is one call.
                let total = count(&p["info"]["total_token_usage"]["total_tokens"]);
                if totals_seen.insert(total) {
                    usage.add(model, codex_tokens(&p["info"]["last_token_usage"]));
                }
            }
            _ => {}
        }
    }
    Some(usage)
}

fn codex_tokens(u: &Value) -> Tokens {
    Tokens {
        input: uncached(
            &u["input_tokens"],
            &[&u["cached_input_tokens"], &u["cache_write_input_tokens"]],
        ),
        output: count(&u["output_tokens"]),
        cache_read: count(&u["cached_input_tokens"]),
        cache_write: count(&u["cache_write_input_tokens"]),
    }
}

/// Gemini CLI (`~/.gemini/tmp/<project>/chats/session-….jsonl`).
pub fn gemini(path: &Path) -> Option<Usage> {
    sum_turn(path, &[br#""tokens""#, br#""type":"user""#], |v| {
        match v["type"].as_str() {
            Some("gemini") if v["tokens"].is_object() => {
                let t = &v["tokens"];
                Seen::Call {
                    key: text(&v["id"]),
                    model: text(&v["model"]),
                    tokens: Tokens {
                        input: uncached(&t["input"], &[&t["cached"]]),
                        output: count(&t["output"]).saturating_add(count(&t["thoughts"])),
                        cache_read: count(&t["cached"]),
                        cache_write: 0,
                    },
                }
            }
            Some("user") if said(&v["content"], "text") => Seen::TurnStart,
            _ => Seen::Skip,
        }
    })
}

/// Qwen Code (`~/.qwen/projects/<project>/chats/<session>.jsonl`).
pub fn qwen(path: &Path) -> Option<Usage> {
    sum_turn(
        path,
        &[br#""usageMetadata""#, br#""type":"user""#],
        |v| match v["type"].as_str() {
            Some("assistant") if v["usageMetadata"].is_object() => {
                let u = &v["usageMetadata"];
                Seen::Call {
                    key: text(&v["uuid"]),
                    model: text(&v["model"]),
                    tokens: Tokens {
                        input: uncached(&u["promptTokenCount"], &[&u["cachedContentTokenCount"]]),
                        output: count(&u["candidatesTokenCount"])
                            .saturating_add(count(&u["thoughtsTokenCount"])),
                        cache_read: count(&u["cachedContentTokenCount"]),
                        cache_write: 0,
                    },
                }
            }
            Some("user") if said(&v["message"]["parts"], "text") => Seen::TurnStart,
            _ => Seen::Skip,
        },
    )
}

/// Whether a list of content parts holds one with `key` (a text, not a tool's response).
fn said(parts: &Value, key: &str) -> bool {
    match parts {
        Value::String(_) => true,
        Value::Array(a) => a.iter().any(|p| p.get(key).is_some()),
        _ => false,
    }
}

/// GitHub Copilot CLI (`~/.copilot/session-state/<session>/events.jsonl`).
pub fn copilot(path: &Path) -> Option<Usage> {
    sum_turn(
        path,
        &[br#""session.usage_record""#, br#""user.message""#],
        |v| match v["type"].as_str() {
            Some("session.usage_record") => {
                let u = &v["data"]["usage"];
                Seen::Call {
                    key: text(&v["id"]),
                    model: text(&u["model"]),
                    tokens: Tokens {
                        input: uncached(
                            &u["inputTokens"],
                            &[&u["cacheReadTokens"], &u["cacheWriteTokens"]],
                        ),
                        output: count(&u["outputTokens"]),
                        cache_read: count(&u["cacheReadTokens"]),
                        cache_write: count(&u["cacheWriteTokens"]),
                    },
                }
            }
            Some("user.message") => Seen::TurnStart,
            _ => Seen::Skip,
        },
    )
}

/// Pi (`~/.pi/agent/sessions/<project>/<time>_<session>.jsonl`).
pub fn pi(path: &Path) -> Option<Usage> {
    sum_turn(path, &[br#""usage""#, br#""role":"user""#], |v| {
        let m = &v["message"];
        if v["type"] != "message" {
            return Seen::Skip;
        }
        match m["role"].as_str() {
            Some("assistant") if m["usage"].is_object() => {
                let u = &m["usage"];
                Seen::Call {
                    key: text(&v["id"]),
                    model: text(&m["model"]),
                    tokens: Tokens {
                        input: count(&u["input"]),
                        output: count(&u["output"]),
                        cache_read: count(&u["cacheRead"]),
                        cache_write: count(&u["cacheWrite"]),
                    },
                }
            }
            Some("user") => Seen::TurnStart,
            _ => Seen::Skip,
        }
    })
}
