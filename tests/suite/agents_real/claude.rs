//! Claude Code, the real CLI: `hooks install --agent claude`, then two headless turns
//! (`claude -p`, then `--resume`) against the scripted model server.

use super::{Session, agent_cli};
use serde_json::Value;

/// One headless turn, continuing session `resume` when given; returns Claude's JSON result.
fn turn(s: &Session, prompt: &str, resume: Option<&str>) -> Value {
    let resume: Vec<&str> = resume.map(|id| vec!["--resume", id]).unwrap_or_default();
    claude(s, prompt, &resume)
}

/// `claude <args> -p <prompt>` headless, edits accepted; returns its JSON result.
fn claude(s: &Session, prompt: &str, args: &[&str]) -> Value {
    let mut c = s.command(&agent_cli("claude"));
    c.args(args)
        .args(["-p", prompt, "--permission-mode", "acceptEdits"])
        .args(["--output-format", "json"])
        .env("ANTHROPIC_BASE_URL", s.server.url())
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
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

/// Two turns, then `rewind --to <run>@1`: the printed command continues a fork of the
/// conversation as of the first turn. Its next model request holds the first turn and not
/// the second, the one that was rewound (issue 31 item 1).
#[test]
fn rewind_continues_a_fork_of_the_conversation_as_of_the_turn() {
    let s = Session::new();
    s.repo.ok(&["hooks", "install", "--agent", "claude"]);
    let root = s.repo.path().canonicalize().unwrap();
    let first = turn(
        &s,
        &format!("WRITE {} one", root.join("one.txt").display()),
        None,
    );
    let session = first["session_id"].as_str().unwrap().to_string();
    turn(
        &s,
        &format!("WRITE {} two", root.join("two.txt").display()),
        Some(&session),
    );
    let run = s.repo.json(&["list"])[0]["run"]
        .as_str()
        .unwrap()
        .to_string();
    let turn_one = s.repo.json(&["show", &format!("{run}@1")]);
    let at = turn_one["meta"]["conversation_at"]
        .as_str()
        .unwrap_or_else(|| panic!("turn 1 records where its conversation was: {turn_one:#}"))
        .to_string();
    assert!(
        turn_one["meta"]["model"].as_str().is_some(),
        "the model comes from the transcript: {turn_one:#}"
    );

    let out = s
        .repo
        .json(&["rewind", &run, "--to", &format!("{run}@1"), "--run", "back"]);
    assert!(
        !root.join("two.txt").exists(),
        "the second turn's file is rewound"
    );
    assert_eq!(out["conversation_at"], at.as_str(), "{out:#}");
    let command = out["resume_command"].as_str().unwrap();
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(
        words,
        [
            "claude",
            "--resume",
            &session,
            "--fork-session",
            "--resume-session-at",
            &at
        ],
        "{out:#}"
    );
    let human = s.repo.ok(&["show", "back@0"]);
    assert!(human.contains("back"), "{human}");

    // Run the printed command, as a user would, with one more prompt.
    let before = s.server.agent_requests().len();
    let forked = claude(
        &s,
        &format!("WRITE {} three", root.join("three.txt").display()),
        &words[1..],
    );
    assert_ne!(
        forked["session_id"],
        session.as_str(),
        "a new session: {forked:#}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("three.txt")).unwrap(),
        "three\n"
    );
    let next = &s.server.agent_requests()[before];
    let sent = next.body["messages"].to_string();
    assert!(
        sent.contains("one.txt"),
        "the first turn is in the conversation: {sent}"
    );
    assert!(
        !sent.contains("two.txt"),
        "the rewound turn is not in the conversation: {sent}"
    );
    s.repo.assert_fsck();
}

/// A resumed session is told where its run stands: the next model request after
/// `claude --resume` holds the run's manifest (run, steps, the last checkpoint and how to
/// rewind to it), and with `agentRewind.agentContext=false` it does not (issue 31 item 2).
#[test]
fn a_resumed_session_is_given_the_runs_manifest() {
    let s = Session::new();
    s.repo.ok(&["hooks", "install", "--agent", "claude"]);
    let root = s.repo.path().canonicalize().unwrap();
    let first = turn(
        &s,
        &format!("WRITE {} one", root.join("one.txt").display()),
        None,
    );
    let session = first["session_id"].as_str().unwrap().to_string();
    let run = s.repo.json(&["list"])[0]["run"]
        .as_str()
        .unwrap()
        .to_string();
    let first_sent = s.server.agent_requests()[0].body.to_string();
    assert!(
        !first_sent.contains("git agent-rewind: this session records"),
        "a new session is not given a manifest"
    );

    let before = s.server.agent_requests().len();
    turn(
        &s,
        &format!("WRITE {} two", root.join("two.txt").display()),
        Some(&session),
    );
    let sent = s.server.agent_requests()[before].body.to_string();
    let rewind_hint = format!("git agent-rewind rewind {run} --to {run}@1");
    assert!(
        sent.contains(&format!("this session records into run {run}"))
            && sent.contains(&rewind_hint),
        "the resumed session's first request holds the manifest: {sent}"
    );

    s.repo.git(&["config", "agentRewind.agentContext", "false"]);
    let before = s.server.agent_requests().len();
    turn(
        &s,
        &format!("WRITE {} three", root.join("three.txt").display()),
        Some(&session),
    );
    let sent = s.server.agent_requests()[before].body.to_string();
    // The conversation keeps the manifest given at the last resume (it names @1); a new
    // one would name the newest checkpoint, @2.
    assert!(sent.contains(&rewind_hint), "{sent}");
    assert!(
        !sent.contains(&format!("--to {run}@2")),
        "agentRewind.agentContext=false: no new manifest: {sent}"
    );
}
