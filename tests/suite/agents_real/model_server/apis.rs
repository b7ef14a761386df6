//! The scripted model server's answers in each API's own shape: Anthropic Messages, OpenAI
//! Responses, OpenAI Chat Completions and Gemini's generateContent. What to answer is decided
//! by the script in the parent module; this only writes it as each API would.

use super::*;

// ---- Anthropic Messages (Claude Code) ----

pub(super) fn anthropic(body: &Value) -> Reply {
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
pub(super) fn responses(body: &Value, overflowed: &AtomicBool) -> Reply {
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
pub(super) fn chat(body: &Value, overflowed: &AtomicBool) -> Reply {
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

pub(super) fn gemini(body: &Value, stream: bool) -> Reply {
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
