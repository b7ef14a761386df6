//! Token usage (docs/HOOKS.md, "Token usage"): each agent's turn hook reads the turn's tokens
//! from the agent's own transcript (fixtures/usage/, taken from the real CLIs' sessions: two
//! turns each, of which only the last is the turn's) or OpenCode's payload, and keeps them per
//! model in the turn's note; `show`, `list <run>` and `stats` sum and price them.

use crate::common::{Repo, tool_stdin};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/usage")
        .join(name)
}

/// Feed `payload` to `hook <agent>` (from outside the repository: the payload's cwd
/// decides); the hook exits 0.
fn hook(agent: &str, payload: &Value) {
    let elsewhere = tempfile::tempdir().unwrap();
    let out = tool_stdin(
        elsewhere.path(),
        &["hook", agent],
        payload.to_string().as_bytes(),
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The usage of the newest checkpoint of the only run.
fn last_usage(repo: &Repo) -> Value {
    let run = repo.json(&["list"])[0]["run"].as_str().unwrap().to_string();
    repo.json(&["show", &run])["usage"].clone()
}

/// Two model calls of the scripted server's numbers, as each API counts them apart.
fn two_calls(model: &str, cache_write: u64) -> Value {
    json!({model: {"input": 2000, "output": 400, "cache_read": 800, "cache_write": cache_write}})
}

#[test]
fn each_agents_turn_keeps_only_its_own_tokens_per_model() {
    let codex_turn = "01a25281-22cb-7653-aec7-29f2b1d5b9ce";
    let cases: [(&str, Value, Value); 6] = [
        (
            "claude",
            json!({"hook_event_name": "Stop", "session_id": "s-claude",
                   "transcript_path": fixture("claude.jsonl")}),
            two_calls("claude-opus-4-8", 60),
        ),
        (
            "codex",
            json!({"hook_event_name": "Stop", "session_id": "s-codex", "model": "gpt-5.5",
                   "turn_id": codex_turn, "transcript_path": fixture("codex.jsonl")}),
            two_calls("gpt-5.5", 0),
        ),
        (
            "gemini",
            json!({"hook_event_name": "AfterAgent", "session_id": "s-gemini",
                   "transcript_path": fixture("gemini.jsonl")}),
            two_calls("gemini-3.1-pro-preview", 0),
        ),
        (
            "qwen",
            json!({"hook_event_name": "Stop", "session_id": "s-qwen",
                   "transcript_path": fixture("qwen.jsonl")}),
            two_calls("scripted", 0),
        ),
        (
            "copilot",
            json!({"hook_event_name": "Stop", "session_id": "s-copilot",
                   "transcript_path": fixture("copilot.jsonl")}),
            two_calls("gpt-5.4", 0),
        ),
        (
            "pi",
            json!({"type": "agent_end", "sessionId": "s-pi",
                   "sessionFile": fixture("pi.jsonl")}),
            two_calls("scripted", 0),
        ),
    ];
    for (agent, mut payload, expected) in cases {
        let repo = Repo::new();
        payload["cwd"] = repo.path().to_str().unwrap().into();
        hook(agent, &payload);
        assert_eq!(last_usage(&repo), expected, "{agent}");
        // The transcript is pointed to, never copied: no text of it is in the note.
        let notes = repo.git(&[
            "log",
            "--format=%N",
            "--notes=refs/notes/agent-runs/*",
            "--all",
        ]);
        assert!(!notes.contains("WRITE"), "{agent}: {notes}");
    }
}

#[test]
fn opencode_sends_its_messages_tokens_and_cursor_gives_none() {
    let repo = Repo::new();
    let dir = repo.path().to_str().unwrap();
    hook(
        "opencode",
        &json!({"event": {"type": "session.idle", "properties": {"sessionID": "s-oc"}},
                "directory": dir, "usage": [
                    {"model": "scripted", "input": 1000, "output": 200, "cache_read": 400, "cache_write": 0},
                    {"model": "scripted", "input": 1000, "output": 200, "cache_read": 400, "cache_write": 0},
                    "not an entry"]}),
    );
    assert_eq!(last_usage(&repo), two_calls("scripted", 0));

    let repo = Repo::new();
    hook(
        "cursor",
        &json!({"hook_event_name": "stop", "conversation_id": "c-1",
                "workspace_roots": [repo.path()], "status": "completed"}),
    );
    let run = repo.json(&["list"])[0]["run"].as_str().unwrap().to_string();
    let shown = repo.json(&["show", &run]);
    assert_eq!(shown["event"], "turn");
    assert!(
        shown.get("usage").is_none(),
        "no usage, not zeros: {shown:#}"
    );
}

/// A Claude turn that wrote `file` (its edit hook, then its Stop with the fixture's
/// transcript).
fn claude_turn(repo: &Repo, session: &str, file: &str) {
    let cwd = repo.path().to_str().unwrap();
    repo.write(file, "a line\n");
    hook(
        "claude",
        &json!({"hook_event_name": "PostToolUse", "session_id": session, "cwd": cwd,
                "tool_name": "Write", "tool_input": {"file_path": repo.path().join(file)}}),
    );
    hook(
        "claude",
        &json!({"hook_event_name": "Stop", "session_id": session, "cwd": cwd,
                "transcript_path": fixture("claude.jsonl")}),
    );
}

#[test]
fn prices_turn_tokens_into_cost_and_runs_sum_own_and_inherited() {
    let repo = Repo::new();
    claude_turn(&repo, "s-1", "one.txt");
    claude_turn(&repo, "s-1", "two.txt");
    let run = repo.json(&["list"])[0]["run"].as_str().unwrap().to_string();

    // No price: tokens and no cost.
    let shown = repo.json(&["show", &format!("{run}@2")]);
    assert!(shown.get("cost").is_none(), "{shown:#}");
    repo.git(&[
        "config",
        "agentRewind.price.claude-opus-4-8",
        "input=3,output=15,cache_read=0.3,cache_write=3.75",
    ]);
    let shown = repo.json(&["show", &format!("{run}@2")]);
    // 2000×3 + 400×15 + 800×0.3 + 60×3.75 per million.
    assert_eq!(shown["cost"]["amount"], json!(0.012465), "{shown:#}");
    let text = repo.ok(&["show", &format!("{run}@2")]);
    assert!(
        text.contains("claude-opus-4-8 2000 in, 400 out, 800 cache read, 60 cache write"),
        "{text}"
    );

    // The run: both turns, per agent and per model.
    let u = repo.json(&["list", &run, "--usage"]);
    assert_eq!(u["turns"], 2);
    assert_eq!(u["own"]["input"], 4000);
    assert_eq!(u["own"]["cost"]["amount"], json!(0.02493));
    assert_eq!(u["agents"][0]["name"], "claude");
    assert_eq!(u["own"]["models"][0]["name"], "claude-opus-4-8");
    assert!(u.get("inherited").is_none(), "{u:#}");
    let table = repo.ok(&["list", &run]);
    assert!(
        table.contains("TOKENS") && table.contains("3260"),
        "{table}"
    );

    // A rewind to the first turn: the new run inherits that turn's tokens, and its own
    // turn is its own.
    repo.ok(&["rewind", &run, "--to", &format!("{run}@1"), "--run", "back"]);
    claude_turn(&repo, "s-1", "three.txt");
    let back = repo.json(&["list", "back", "--usage"]);
    assert_eq!(back["own"]["output"], 400, "{back:#}");
    assert_eq!(back["inherited"]["output"], 400, "{back:#}");
    assert_eq!(back["total"]["output"], 800, "{back:#}");

    // stats: the runs whose turns wrote the committed lines.
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "three"]);
    let stats = repo.json(&["stats"]);
    let runs = stats["usage"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{stats:#}");
    assert_eq!(runs[0]["run"], "back");
    assert_eq!(stats["usage"]["total"]["output"], 400, "{stats:#}");
    let text = repo.ok(&["stats"]);
    assert!(text.contains("tokens of the runs"), "{text}");

    // A bad price: an error naming the key, nothing panics.
    repo.git(&["config", "agentRewind.price.claude-opus-4-8", "input=cheap"]);
    let out = repo.run(&["show", &format!("{run}@2")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && out.status.code() != Some(101),
        "{err}"
    );
    assert!(err.contains("agentRewind.price.claude-opus-4-8"), "{err}");
}

/// A long Claude Code session (its transcript repeated 200 times, then a line of 2 MB that
/// Claude Code can append after the turn's last message, such as a large attachment): the
/// turn's tokens are only its own, and its conversation point is the newest assistant
/// message, however far from the end (a read of the last megabyte alone found none).
#[test]
fn a_long_claude_session_is_read_from_its_end_past_a_large_last_line() {
    let repo = Repo::new();
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("session.jsonl");
    let session = std::fs::read_to_string(fixture("claude.jsonl")).unwrap();
    let large = json!({"type": "attachment", "attachment": {"type": "file", "content": "x".repeat(2 << 20)}});
    std::fs::write(&transcript, format!("{}{large}\n", session.repeat(200))).unwrap();
    hook(
        "claude",
        &json!({"hook_event_name": "Stop", "session_id": "s-long", "cwd": repo.path(),
                "transcript_path": transcript}),
    );
    let run = repo.json(&["list"])[0]["run"].as_str().unwrap().to_string();
    let shown = repo.json(&["show", &run]);
    assert_eq!(
        shown["usage"],
        two_calls("claude-opus-4-8", 60),
        "{shown:#}"
    );
    assert_eq!(
        shown["meta"]["conversation_at"], "1b6b0df1-bda8-46c3-b3c2-f10e3badef79",
        "{shown:#}"
    );
    assert_eq!(shown["meta"]["model"], "claude-opus-4-8", "{shown:#}");
}
