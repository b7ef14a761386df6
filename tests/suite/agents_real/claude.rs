//! Claude Code, the real CLI: `hooks install --agent claude`, then two headless turns
//! (`claude -p`, then `--resume`) against the scripted model server.

use super::{Session, agent_cli};
use serde_json::Value;

/// One headless turn; returns Claude's JSON result.
fn turn(s: &Session, prompt: &str, resume: Option<&str>) -> Value {
    let mut c = s.command(&agent_cli("claude"));
    c.args([
        "-p",
        prompt,
        "--permission-mode",
        "acceptEdits",
        "--output-format",
        "json",
    ])
    .env("ANTHROPIC_BASE_URL", s.server.url())
    .env("ANTHROPIC_API_KEY", "sk-ant-test")
    .env("DISABLE_AUTOUPDATER", "1")
    .env("DISABLE_TELEMETRY", "1")
    .env("DISABLE_ERROR_REPORTING", "1")
    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
    if let Some(id) = resume {
        c.args(["--resume", id]);
    }
    let out = s.ok(c, "claude -p");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "claude printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

#[test]
fn two_turns_are_two_turn_checkpoints_with_agent_session_and_touched_files() {
    let s = Session::new();
    s.repo.ok(&["hooks", "install", "--agent", "claude"]);
    let root = s.repo.path().canonicalize().unwrap();
    let one = root.join("one.txt");
    let two = root.join("two.txt");

    let first = turn(&s, &format!("WRITE {} one", one.display()), None);
    let session = first["session_id"]
        .as_str()
        .expect("a session id")
        .to_string();
    assert_eq!(std::fs::read_to_string(&one).unwrap(), "one\n", "{first}");
    turn(&s, &format!("WRITE {} two", two.display()), Some(&session));
    assert_eq!(std::fs::read_to_string(&two).unwrap(), "two\n");

    let runs = s.repo.json(&["list"]);
    let run = runs.as_array().unwrap()[0]["run"]
        .as_str()
        .unwrap()
        .to_string();
    let cps = crate::common::checkpoints(s.repo.path(), &run);
    let events: Vec<&str> = cps.iter().map(|c| c["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["start", "turn", "turn"], "{cps:#?}");
    for (cp, file) in cps[1..].iter().zip(["one.txt", "two.txt"]) {
        let shown = s.repo.json(&["show", cp["checkpoint"].as_str().unwrap()]);
        assert_eq!(shown["agent"], "claude", "{shown:#}");
        assert_eq!(shown["sdk_session_id"], session.as_str(), "{shown:#}");
        assert_eq!(shown["touched"], serde_json::json!([file]), "{shown:#}");
    }
    let requests = s.server.requests();
    assert!(
        requests.iter().all(|r| r.path.starts_with("/v1/messages")),
        "Claude Code spoke only the Messages API: {:?}",
        requests.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
    assert!(
        s.server.agent_requests().len() >= 4,
        "two turns of a tool call and an answer each reached the model server"
    );
    s.repo.assert_fsck();
}
