//! A scripted model server on 127.0.0.1 for the real agent CLIs: it speaks Anthropic
//! Messages (Claude Code), OpenAI Responses (Codex, Copilot CLI), OpenAI Chat Completions
//! (OpenCode, Qwen Code, Pi) and Gemini's generateContent (Gemini CLI), streamed (SSE) or
//! not, and logs every request.
//!
//! The script is in the prompt: a user message holding `WRITE <absolute path> <word>` is
//! answered with the agent's file-writing tool call (the file gets `<word>` and a newline);
//! once the tool's result is in the conversation, the answer is the text `done <word>`.
//! Every other request (titles, classifiers, side questions) gets a short text. The first
//! Chat Completions answer to a conversation whose user said `OVERFLOW` reports a prompt of a
//! million tokens, so that OpenCode compacts the session; so does the first Responses answer to
//! such a conversation, so that Codex compacts its thread. Every answer reports token usage in
//! its API's own shape: an answer to the agent's own turn (a request with tools) the numbers of
//! [`USAGE`], a side task [`SIDE_USAGE`]. Nothing here reaches past 127.0.0.1.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

mod apis;
use apis::{anthropic, chat, gemini, responses};

/// Token usage one answer reports, as counted apart: `input` is the prompt's tokens not read
/// from a cache (the APIs of OpenAI and Gemini count the cached ones inside their prompt
/// count, Anthropic's apart), `cache_write` is reported by Anthropic's API only.
#[derive(Debug, Clone, Copy)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

/// What every answer to an agent's own turn reports: distinct numbers, so that a sum of
/// them is recognised.
pub const USAGE: Usage = Usage {
    input: 1000,
    output: 200,
    cache_read: 400,
    cache_write: 30,
};

/// What an answer to a side task (a title, a classifier) reports.
pub const SIDE_USAGE: Usage = Usage {
    input: 7,
    output: 3,
    cache_read: 0,
    cache_write: 0,
};

fn usage_of(body: &Value) -> Usage {
    if has_tools(body) { USAGE } else { SIDE_USAGE }
}

/// One request the server answered.
#[derive(Debug, Clone)]
pub struct Logged {
    pub path: String,
    pub body: Value,
}

pub struct ModelServer {
    pub port: u16,
    shared: Arc<Shared>,
}

/// What the server's threads share: the log, and whether the one overflowing answer was
/// given.
#[derive(Default)]
struct Shared {
    log: Mutex<Vec<Logged>>,
    overflowed: AtomicBool,
}

impl ModelServer {
    pub fn start() -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared::default());
        let threads = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = threads.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, &shared);
                });
            }
        });
        ModelServer { port, shared }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Logged> {
        self.shared.log.lock().unwrap().clone()
    }

    /// The requests that carried the agent's tools (the agent's own turns, not side tasks).
    pub fn agent_requests(&self) -> Vec<Logged> {
        self.requests()
            .into_iter()
            .filter(|r| has_tools(&r.body))
            .collect()
    }
}

fn has_tools(body: &Value) -> bool {
    body["tools"].as_array().is_some_and(|t| !t.is_empty())
}

/// Read one HTTP/1.1 request, answer it, close.
fn serve(stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let _method = parts.next();
    let path = parts.next().unwrap_or("").to_string();
    let (mut length, mut chunked) = (0usize, false);
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" || h == "\n" {
            break;
        }
        let lower = h.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
    }
    let body = if chunked {
        read_chunked(&mut reader)?
    } else {
        let mut b = vec![0; length];
        reader.read_exact(&mut b)?;
        b
    };
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    shared.log.lock().unwrap().push(Logged {
        path: path.clone(),
        body: body.clone(),
    });
    let reply = answer(&path, &body, &shared.overflowed);
    write_reply(stream, reply)
}

fn read_chunked(reader: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size)?;
        let n =
            usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
        let mut chunk = vec![0; n + 2];
        reader.read_exact(&mut chunk)?;
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&chunk[..n]);
    }
}

/// A reply: a JSON body, or server-sent events (Chat Completions ends its stream with a
/// `data: [DONE]` line).
enum Reply {
    Json(Value),
    Events(Vec<(Option<&'static str>, Value)>),
    ChatEvents(Vec<Value>),
}

fn write_reply(mut stream: TcpStream, reply: Reply) -> std::io::Result<()> {
    let (kind, body) = match reply {
        Reply::Json(v) => ("application/json", v.to_string()),
        Reply::Events(events) => {
            let mut s = String::new();
            for (name, data) in events {
                if let Some(n) = name {
                    s.push_str(&format!("event: {n}\n"));
                }
                s.push_str(&format!("data: {data}\n\n"));
            }
            ("text/event-stream", s)
        }
        Reply::ChatEvents(chunks) => {
            let mut s = String::new();
            for c in chunks {
                s.push_str(&format!("data: {c}\n\n"));
            }
            s.push_str("data: [DONE]\n\n");
            ("text/event-stream", s)
        }
    };
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

/// What the script says to do for this conversation.
enum Move {
    /// Write `word` into the file at `path`.
    Write { path: String, word: String },
    /// Call the MCP tool `name` with `input`, as call `id`.
    Call {
        id: String,
        name: String,
        input: Value,
    },
    /// Search the agent's deferred tools (Codex's `tool_search`).
    Search,
    /// Say this.
    Say(String),
}

/// A conversation as the script reads it: the user's words, and the words the agent's
/// file writes were called for (the script names its tool calls after the word).
enum Item {
    Said(String),
    Called(String),
}

/// The script (see the module's doc): the newest `WRITE` the user said, unless its tool
/// call was made already (agents reorder and merge messages, so order is not evidence).
fn next_move(items: &[Item]) -> Move {
    let newest = items.iter().rev().find_map(|i| match i {
        Item::Said(t) => directive(t),
        Item::Called(_) => None,
    });
    match newest {
        Some((_, word))
            if items
                .iter()
                .any(|i| matches!(i, Item::Called(w) if *w == word)) =>
        {
            Move::Say(format!("done {word}"))
        }
        Some((path, word)) => Move::Write { path, word },
        None => Move::Say("ok".into()),
    }
}

/// The agent's own turns follow the script; side questions (titles, classifiers) without
/// the agent's tools get a short text.
fn scripted(body: &Value, items: &[Item]) -> Move {
    if has_tools(body) {
        next_move(items)
    } else {
        Move::Say("ok".into())
    }
}

/// Whether this answer is the one that reports an overflowing prompt: the first agent request
/// whose user said `OVERFLOW`.
fn overflows(body: &Value, items: &[Item], overflowed: &AtomicBool) -> bool {
    has_tools(body)
        && items
            .iter()
            .any(|i| matches!(i, Item::Said(t) if t.contains("OVERFLOW")))
        && !overflowed.swap(true, Ordering::SeqCst)
}

/// The user's `CALL <tool> <json>` directives: the first not made yet (as call id
/// `call<i>`), `$plan_id` in its arguments replaced by the newest `plan_id` a tool answered
/// with (`results` holds the texts of the tool results so far); `None` once all were made
/// (or when there are none). `name` is the tool's name; the agent names it.
fn mcp_call(results: &[String], items: &[Item]) -> Option<Move> {
    let calls: Vec<(String, String)> = items
        .iter()
        .filter_map(|i| match i {
            Item::Said(t) => Some(t),
            Item::Called(_) => None,
        })
        .flat_map(|t| {
            let words: Vec<&str> = t.split_whitespace().collect();
            words
                .windows(3)
                .filter(|w| w[0] == "CALL")
                .map(|w| (w[1].to_string(), w[2].to_string()))
                .collect::<Vec<_>>()
        })
        .collect();
    let made = |i: usize| {
        items
            .iter()
            .any(|x| matches!(x, Item::Called(w) if *w == format!("call{i}")))
    };
    let i = (0..calls.len()).find(|&i| !made(i))?;
    // Codex puts a header before the tool's JSON ("Wall time: …\nOutput:\n").
    let plan_id = results
        .iter()
        .filter_map(|t| serde_json::from_str::<Value>(&t[t.find('{')?..]).ok())
        .filter_map(|v| v["plan_id"].as_str().map(str::to_string))
        .next_back()
        .unwrap_or_default();
    let (tool, args) = &calls[i];
    let input = serde_json::from_str(&args.replace("$plan_id", &plan_id)).unwrap_or(json!({}));
    Some(Move::Call {
        id: format!("call{i}"),
        name: tool.clone(),
        input,
    })
}

/// The texts of Claude Code's `tool_result` blocks.
fn anthropic_results(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .flat_map(|b| texts(&b["content"]))
        .collect()
}

/// A tool result's text: a string, or the `text` of each part.
fn texts(content: &Value) -> Vec<String> {
    match content {
        Value::String(t) => vec![t.clone()],
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str().map(str::to_string))
            .collect(),
        _ => vec![],
    }
}

/// `WRITE <path> <word>` in `text`.
fn directive(text: &str) -> Option<(String, String)> {
    let at = text.find("WRITE ")?;
    let mut words = text[at + 6..]
        .split_whitespace()
        .map(|w| w.trim_end_matches(|c: char| !c.is_alphanumeric()));
    Some((words.next()?.to_string(), words.next()?.to_string()))
}

fn answer(path: &str, body: &Value, overflowed: &AtomicBool) -> Reply {
    if path.contains("count_tokens") || path.contains("countTokens") {
        return Reply::Json(json!({"input_tokens": 10, "totalTokens": 10}));
    }
    if path.ends_with("/v1/messages") || path.contains("/v1/messages?") {
        return anthropic(body);
    }
    if path.contains(":streamGenerateContent") || path.contains(":generateContent") {
        return gemini(body, path.contains(":stream"));
    }
    if path.ends_with("/v1/responses") {
        return responses(body, overflowed);
    }
    if path.ends_with("/chat/completions") {
        return chat(body, overflowed);
    }
    Reply::Json(json!({}))
}
