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

// ---- Anthropic Messages (Claude Code) ----

fn anthropic(body: &Value) -> Reply {
    // Each answer is a message of its own, as the API names them.
    static ANSWERED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let id = format!("msg_{}", ANSWERED.fetch_add(1, Ordering::Relaxed));
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let mut items = Vec::new();
    for m in &messages {
        match (&m["role"], &m["content"]) {
            (r, Value::String(s)) if r == "user" => items.push(Item::Said(s.clone())),
            (r, Value::Array(blocks)) if r == "user" => items.extend(
                blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str().map(|t| Item::Said(t.to_string()))),
            ),
            (r, Value::Array(blocks)) if r == "assistant" => items.extend(
                blocks
                    .iter()
                    .filter_map(|b| b["id"].as_str()?.strip_prefix("toolu_"))
                    .map(|w| Item::Called(w.to_string())),
            ),
            _ => {}
        }
    }
    let movement = match has_tools(body)
        .then(|| mcp_call(&anthropic_results(&messages), &items))
        .flatten()
    {
        Some(call) => call,
        None => scripted(body, &items),
    };
    let (block, stop) = match movement {
        Move::Write { path, word } => (
            json!({"type": "tool_use", "id": format!("toolu_{word}"), "name": "Write",
                   "input": {"file_path": path, "content": format!("{word}\n")}}),
            "tool_use",
        ),
        Move::Call { id, name, input } => (
            json!({"type": "tool_use", "id": format!("toolu_{id}"),
                   "name": format!("mcp__git-agent-rewind__{name}"), "input": input}),
            "tool_use",
        ),
        Move::Search => unreachable!("Claude Code is given its MCP tools"),
        Move::Say(text) => (json!({"type": "text", "text": text}), "end_turn"),
    };
    let model = body["model"].as_str().unwrap_or("claude-test").to_string();
    let u = usage_of(body);
    let usage = json!({"input_tokens": u.input, "output_tokens": u.output,
                       "cache_read_input_tokens": u.cache_read,
                       "cache_creation_input_tokens": u.cache_write});
    if body["stream"] != true {
        return Reply::Json(json!({
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": [block], "stop_reason": stop, "stop_sequence": null, "usage": usage,
        }));
    }
    // As the API streams it: the output so far at the start, the whole output at the end.
    let mut start_usage = usage.clone();
    start_usage["output_tokens"] = json!(1);
    let (start, delta) = if block["type"] == "tool_use" {
        (
            json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
            json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
        )
    } else {
        (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": block["text"]}),
        )
    };
    Reply::Events(vec![
        (
            Some("message_start"),
            json!({"type": "message_start", "message": {"id": id, "type": "message",
                   "role": "assistant", "model": model, "content": [], "stop_reason": null,
                   "stop_sequence": null, "usage": start_usage}}),
        ),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 0, "content_block": start}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        (
            Some("content_block_stop"),
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            Some("message_delta"),
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                   "usage": {"output_tokens": u.output}}),
        ),
        (Some("message_stop"), json!({"type": "message_stop"})),
    ])
}

// ---- OpenAI Responses (Codex CLI) ----

/// A Responses API answer, streamed as Codex reads it: `response.created`, the output item
/// (`added`, its text as a delta, `done`), `response.completed`. A `WRITE` is answered with
/// Codex's freeform `apply_patch` tool (a `custom_tool_call` whose input is the patch), its
/// `call_id` naming the word.
fn responses(body: &Value, overflowed: &AtomicBool) -> Reply {
    let (mut items, mut results) = (Vec::new(), Vec::new());
    for item in body["input"].as_array().into_iter().flatten() {
        match item["type"].as_str() {
            Some("message") if item["role"] == "user" => items.extend(
                item["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c["text"].as_str().map(|t| Item::Said(t.to_string()))),
            ),
            Some("custom_tool_call" | "function_call" | "tool_search_call") => items.extend(
                item["call_id"]
                    .as_str()
                    .and_then(|id| id.strip_prefix("call_"))
                    .map(|w| Item::Called(w.to_string())),
            ),
            Some("function_call_output") => results.extend(texts(&item["output"])),
            _ => {}
        }
    }
    let searched = items
        .iter()
        .any(|i| matches!(i, Item::Called(w) if w == "search"));
    let movement = match has_tools(body)
        .then(|| mcp_call(&results, &items))
        .flatten()
    {
        // Codex defers MCP tools behind its client-side `tool_search`: search first.
        Some(Move::Call { .. }) if !searched => Move::Search,
        Some(call) => call,
        None => scripted(body, &items),
    };
    let (item, delta) = match movement {
        Move::Write { path, word } => (
            json!({"type": "custom_tool_call", "id": format!("ctc_{word}"), "status": "completed",
                   "call_id": format!("call_{word}"), "name": "apply_patch",
                   "input": format!("*** Begin Patch\n*** Add File: {path}\n+{word}\n*** End Patch")}),
            None,
        ),
        Move::Search => (
            json!({"type": "tool_search_call", "id": "ts_search", "call_id": "call_search",
                   "execution": "client", "status": "completed",
                   "arguments": {"query": "git agent-rewind checkpoints revert", "limit": 8}}),
            None,
        ),
        Move::Call { id, name, input } => (
            json!({"type": "function_call", "id": format!("fc_{id}"), "status": "completed",
                   "call_id": format!("call_{id}"), "namespace": "mcp__git_agent_rewind",
                   "name": name, "arguments": input.to_string()}),
            None,
        ),
        Move::Say(text) => (
            json!({"type": "message", "id": "msg_test", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": text, "annotations": []}]}),
            Some(text),
        ),
    };
    let mut started = item.clone();
    if delta.is_some() {
        started["content"] = json!([]);
    }
    let response = |status: &str| {
        json!({"id": "resp_test", "object": "response", "status": status,
               "model": body["model"], "output": []})
    };
    let mut events = vec![
        (
            Some("response.created"),
            json!({"type": "response.created", "response": response("in_progress")}),
        ),
        (
            Some("response.output_item.added"),
            json!({"type": "response.output_item.added", "output_index": 0, "item": started}),
        ),
    ];
    if let Some(text) = delta {
        events.push((
            Some("response.output_text.delta"),
            json!({"type": "response.output_text.delta", "item_id": "msg_test",
                   "output_index": 0, "content_index": 0, "delta": text}),
        ));
    }
    let mut completed = response("completed");
    // Copilot CLI reads the output from the completed response; Codex from the items.
    completed["output"] = json!([item.clone()]);
    let u = usage_of(body);
    completed["usage"] = json!({"input_tokens": u.input + u.cache_read,
        "input_tokens_details": {"cached_tokens": u.cache_read},
        "output_tokens": u.output, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": u.input + u.cache_read + u.output});
    if overflows(body, &items, overflowed) {
        // Past any auto-compact limit, so that Codex compacts the thread.
        completed["usage"] = json!({"input_tokens": 1_000_000, "output_tokens": 5,
                                    "total_tokens": 1_000_005});
    }
    events.extend([
        (
            Some("response.output_item.done"),
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ),
        (
            Some("response.completed"),
            json!({"type": "response.completed", "response": completed}),
        ),
    ]);
    Reply::Events(events)
}

// ---- OpenAI Chat Completions (OpenCode, Pi) ----

/// The name the agent's `write` tool gives its path argument: Pi's is `path`, OpenCode's
/// `filePath`.
fn write_path_argument(body: &Value) -> &'static str {
    let declares_path = body["tools"].as_array().into_iter().flatten().any(|t| {
        t["function"]["name"] == "write"
            && !t["function"]["parameters"]["properties"]["path"].is_null()
    });
    if declares_path { "path" } else { "filePath" }
}

/// A Chat Completions answer. A `WRITE` is answered with the agent's write tool
/// ([`chat_write`]), its call id naming the word; streamed
/// as chunks of `chat.completion.chunk` ending with `[DONE]`.
fn chat(body: &Value, overflowed: &AtomicBool) -> Reply {
    let mut items = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        if m["role"] == "user" {
            match &m["content"] {
                Value::String(t) => items.push(Item::Said(t.clone())),
                Value::Array(parts) => items.extend(
                    parts
                        .iter()
                        .filter_map(|p| p["text"].as_str().map(|t| Item::Said(t.to_string()))),
                ),
                _ => {}
            }
        }
        for call in m["tool_calls"].as_array().into_iter().flatten() {
            if let Some(w) = call["id"].as_str().and_then(|id| id.strip_prefix("call_")) {
                items.push(Item::Called(w.to_string()));
            }
        }
    }
    let (delta, finish) = match scripted(body, &items) {
        Move::Write { path, word } => (
            json!({"role": "assistant", "content": null, "tool_calls": [{
                "index": 0, "id": format!("call_{word}"), "type": "function",
                "function": chat_write(body, &path, &format!("{word}\n"))}]}),
            "tool_calls",
        ),
        Move::Call { .. } | Move::Search => unreachable!("only Claude Code and Codex call tools"),
        Move::Say(text) => (json!({"role": "assistant", "content": text}), "stop"),
    };
    let model = body["model"].clone();
    let u = usage_of(body);
    let prompt_tokens = if overflows(body, &items, overflowed) {
        1_000_000
    } else {
        u.input + u.cache_read
    };
    let usage = json!({"prompt_tokens": prompt_tokens, "completion_tokens": u.output,
                       "total_tokens": prompt_tokens + u.output,
                       "prompt_tokens_details": {"cached_tokens": u.cache_read}});
    if body["stream"] != true {
        let mut message = delta;
        if let Some(calls) = message["tool_calls"].as_array_mut() {
            for c in calls {
                c.as_object_mut().unwrap().remove("index");
            }
        }
        return Reply::Json(json!({"id": "chatcmpl-test", "object": "chat.completion",
            "created": 0, "model": model, "usage": usage,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}]}));
    }
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0,
               "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut last = chunk(json!({}), json!(finish));
    last["usage"] = usage;
    Reply::ChatEvents(vec![chunk(delta, Value::Null), last])
}

/// The file-writing call of the agent whose tools `body` offers: Qwen Code's `write_file`
/// (`file_path`) where it is offered, Factory Droid's `Create` (`file_path`), else
/// OpenCode's `write` (`filePath`).
fn chat_write(body: &Value, path: &str, content: &str) -> Value {
    let offered = |name: &str| {
        body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["function"]["name"] == name)
    };
    if offered("Create") {
        json!({"name": "Create",
               "arguments": json!({"file_path": path, "content": content}).to_string()})
    } else if offered("write_file") {
        json!({"name": "write_file",
               "arguments": json!({"file_path": path, "content": content}).to_string()})
    } else {
        json!({"name": "write",
               "arguments": json!({write_path_argument(body): path, "content": content}).to_string()})
    }
}

// ---- Gemini generateContent / streamGenerateContent (Gemini CLI) ----

fn gemini(body: &Value, stream: bool) -> Reply {
    let mut items = Vec::new();
    for c in body["contents"].as_array().into_iter().flatten() {
        for part in c["parts"].as_array().into_iter().flatten() {
            if c["role"] == "user"
                && let Some(t) = part["text"].as_str()
            {
                items.push(Item::Said(t.to_string()));
            }
            if let Some(content) = part["functionCall"]["args"]["content"].as_str() {
                items.push(Item::Called(content.trim().to_string()));
            }
        }
    }
    let config = &body["generationConfig"];
    let schema = config
        .get("responseJsonSchema")
        .or_else(|| config.get("responseSchema"));
    let movement = if has_tools(body) {
        next_move(&items)
    } else if let Some(schema) = schema {
        // Side questions asked for JSON (a model router, a next-speaker check): an instance
        // of the schema.
        Move::Say(example_of(schema).to_string())
    } else if config["responseMimeType"] == "application/json" {
        Move::Say("{}".into())
    } else {
        Move::Say("ok".into())
    };
    let part = match movement {
        Move::Write { path, word } => json!({"functionCall": {"name": "write_file",
            "args": {"file_path": path, "content": format!("{word}\n")}}}),
        Move::Call { .. } | Move::Search => unreachable!("only Claude Code and Codex call tools"),
        Move::Say(text) => json!({"text": text}),
    };
    let u = usage_of(body);
    let reply = json!({
        "candidates": [{"content": {"role": "model", "parts": [part]},
                        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": u.input + u.cache_read,
                          "cachedContentTokenCount": u.cache_read,
                          "candidatesTokenCount": u.output,
                          "totalTokenCount": u.input + u.cache_read + u.output},
        "modelVersion": "gemini-test",
    });
    if stream {
        Reply::Events(vec![(None, reply)])
    } else {
        Reply::Json(reply)
    }
}

/// The smallest instance of a JSON schema: each required property, the first of an enum.
fn example_of(schema: &Value) -> Value {
    if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    let kind = schema["type"]
        .as_str()
        .unwrap_or("object")
        .to_ascii_lowercase();
    match kind.as_str() {
        "string" => json!("ok"),
        "boolean" => json!(false),
        "number" | "integer" => json!(0),
        "array" => json!([]),
        _ => {
            let mut out = serde_json::Map::new();
            for key in schema["required"].as_array().into_iter().flatten() {
                if let Some(k) = key.as_str() {
                    out.insert(k.to_string(), example_of(&schema["properties"][k]));
                }
            }
            Value::Object(out)
        }
    }
}
