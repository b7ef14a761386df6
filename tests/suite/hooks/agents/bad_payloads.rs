//! Bad payloads exit 0 and write nothing.

use crate::common::agent_fixtures::{hook, payload, retarget};
use crate::common::{Repo, refs, tool_stdin};
use serde_json::{Value, json};
use std::process::Output;

/// `hook <agent>` without `--json`: exit 0 and nothing on stdout whatever the input.
fn quiet_hook(agent: &str, input: &[u8]) -> Output {
    let elsewhere = tempfile::tempdir().unwrap();
    let out = tool_stdin(elsewhere.path(), &["hook", agent], input, &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty(), "{agent}: nothing on stdout");
    out
}

#[test]
fn bad_payloads_exit_0_and_write_nothing() {
    let repo = Repo::new();
    let dir = repo.path();
    let outside = tempfile::tempdir().unwrap();
    let t = outside.path().join("t.jsonl");
    let cases = [
        ("claude", "stop.json", "session_id"),
        ("codex", "stop.json", "session_id"),
        ("gemini", "after-agent.json", "session_id"),
        ("cursor", "stop.json", "conversation_id"),
    ];
    let before = refs(dir, "refs/");
    for (agent, stop, id) in cases {
        let good: Value = serde_json::from_slice(&payload(agent, stop, dir, &t)).unwrap();
        let with = |k: &str, v: Value| {
            let mut x = good.clone();
            x[k] = v;
            x.to_string().into_bytes()
        };
        let inputs: Vec<(&str, Vec<u8>)> = vec![
            ("not JSON", b"{\"hook_event_name\": \"Stop\", ".to_vec()),
            ("binary", b"\x00\xff\xfe".to_vec()),
            ("an array", b"[1,2]".to_vec()),
            ("a number for the id", with(id, json!(42))),
            (
                "an object for the event",
                with("hook_event_name", json!({})),
            ),
            ("a 10 MB id", with(id, json!("x".repeat(10 << 20)))),
            (
                "a relative transcript",
                with("transcript_path", json!("rel/t.jsonl")),
            ),
        ];
        for (what, input) in inputs {
            let out = quiet_hook(agent, &input);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("ignored"), "{agent}, {what}: {err}");
            assert!(err.lines().count() <= 2, "{agent}, {what}: {err}");
        }
        // A cwd (or workspace root) outside any repository: nothing happens.
        let mut away = good.clone();
        retarget(&mut away, outside.path());
        let s = away
            .to_string()
            .replace(dir.to_str().unwrap(), outside.path().to_str().unwrap());
        let out = hook(agent, s.as_bytes(), &[]);
        assert_eq!(out["action"], "skipped", "{agent}: {out}");
        assert!(
            out["reason"]
                .as_str()
                .unwrap()
                .contains("not in a git worktree")
        );
    }
    // OpenCode: a payload without an event, an event of the wrong type.
    for input in [json!({"directory": dir}), json!({"event": "session.idle"})] {
        let out = quiet_hook("opencode", input.to_string().as_bytes());
        assert!(String::from_utf8_lossy(&out.stderr).contains("ignored"));
    }
    assert_eq!(refs(dir, "refs/"), before);
    assert!(!dir.join(".git/agent-rewind/touched").exists());

    // A 10 MB field we do not use is read and ignored: the turn is recorded.
    let mut big: Value =
        serde_json::from_slice(&payload("gemini", "after-agent.json", dir, &t)).unwrap();
    big["prompt_response"] = json!("y".repeat(10 << 20));
    assert_eq!(
        hook("gemini", big.to_string().as_bytes(), &[])["action"],
        "recorded"
    );
    // Events we do not handle are logged and ignored.
    for (agent, name) in [
        ("codex", "user-prompt-submit.json"),
        ("gemini", "session-end.json"),
        ("cursor", "before-shell-execution.json"),
        ("opencode", "message-updated.json"),
        ("claude", "pre-tool-use.json"),
    ] {
        let before = refs(dir, "refs/");
        let out = quiet_hook(agent, &payload(agent, name, dir, &t));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("ignored"),
            "{agent} {name}"
        );
        assert_eq!(refs(dir, "refs/"), before, "{agent} {name}");
    }
}
