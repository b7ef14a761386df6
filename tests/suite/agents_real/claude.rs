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
pub(super) fn claude(s: &Session, prompt: &str, args: &[&str]) -> Value {
    let mut c = s.command(&agent_cli("claude"));
    c.args(args)
        .args(["-p", prompt, "--permission-mode", "acceptEdits"])
        .args(["--output-format", "json"]);
    claude_env(s, &mut c);
    let out = s.ok(c, "claude -p");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "claude printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Claude Code's hooks installed, and its first turn (writing one.txt): the worktree's real
/// path and the session id.
fn first_turn(s: &Session) -> (std::path::PathBuf, String) {
    s.repo.ok(&["hooks", "install", "--agent", "claude"]);
    let root = s.repo.path().canonicalize().unwrap();
    let one = root.join("one.txt");
    let first = turn(s, &format!("WRITE {} one", one.display()), None);
    let session = first["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("a session id: {first}"))
        .to_string();
    assert_eq!(std::fs::read_to_string(&one).unwrap(), "one\n", "{first}");
    (root, session)
}

/// What Claude Code needs to talk to the scripted server, and nowhere else.
pub(super) fn claude_env(s: &Session, c: &mut std::process::Command) {
    c.env("ANTHROPIC_BASE_URL", s.server.url())
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
}

#[test]
fn two_turns_are_two_turn_checkpoints_with_agent_session_and_touched_files() {
    let s = Session::new();
    let (root, session) = first_turn(&s);
    let two = root.join("two.txt");
    turn(&s, &format!("WRITE {} two", two.display()), Some(&session));
    assert_eq!(std::fs::read_to_string(&two).unwrap(), "two\n");

    s.assert_turn_usage(2, true);
    s.assert_turns("claude", &session, &["one.txt", "two.txt"]);
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
    let out = s.revert_then_rewind(["one.txt", "two.txt"]);
    assert!(
        out["resume_command"]
            .as_str()
            .is_some_and(|c| c.contains("--fork-session")),
        "{out:#}"
    );
}

/// Two turns, then `rewind --to <run>@1`: the printed command continues a fork of the
/// conversation as of the first turn. Its next model request holds the first turn and not
/// the second, the one that was rewound.
#[test]
fn rewind_continues_a_fork_of_the_conversation_as_of_the_turn() {
    let s = Session::new();
    let (root, session) = first_turn(&s);
    turn(
        &s,
        &format!("WRITE {} two", root.join("two.txt").display()),
        Some(&session),
    );
    let run = s.run();
    let turn_one = s.repo.json(&["show", &format!("{run}@1")]);
    let at = turn_one["meta"]["conversation_at"]
        .as_str()
        .unwrap_or_else(|| panic!("turn 1 records where its conversation was: {turn_one:#}"))
        .to_string();
    assert!(
        turn_one["meta"]["model"].as_str().is_some(),
        "the model comes from the transcript: {turn_one:#}"
    );

    // Before anything happens, a dry run says where the conversation would resume.
    let to = format!("{run}@1");
    let dry = s.repo.json(&["rewind", &run, "--to", &to, "--dry-run"]);
    assert_eq!(dry["conversation_at"], at.as_str(), "{dry:#}");
    assert!(root.join("two.txt").exists(), "a dry run changes nothing");
    let out = s.repo.json(&["rewind", &run, "--to", &to, "--run", "back"]);
    assert_eq!(out["resume_command"], dry["resume_command"]);
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

    // `--agent-resume` runs that command itself, after the fork, with the arguments given.
    let before = s.server.agent_requests().len();
    let four = root.join("four.txt");
    let mut c = s.command(&crate::common::bin());
    c.args([
        "fork",
        &run,
        "--to",
        &to,
        "--run",
        "side",
        "--agent-resume",
        "--",
    ])
    .args(["-p", &format!("WRITE {} four", four.display())])
    .args([
        "--permission-mode",
        "acceptEdits",
        "--output-format",
        "json",
    ]);
    claude_env(&s, &mut c);
    let out = s.ok(c, "fork --agent-resume");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.starts_with("forked run side"), "{printed}");
    assert_eq!(std::fs::read_to_string(&four).unwrap(), "four\n");
    let sent = s.server.agent_requests()[before].body["messages"].to_string();
    assert!(
        sent.contains("one.txt") && !sent.contains("two.txt"),
        "{sent}"
    );
    s.repo.assert_fsck();
}

/// A resumed session is told where its run stands: the next model request after
/// `claude --resume` holds the run's manifest (run, steps, the last checkpoint and how to
/// rewind to it), and with `agentRewind.agentContext=false` it does not.
#[test]
fn a_resumed_session_is_given_the_runs_manifest() {
    let s = Session::new();
    let (root, session) = first_turn(&s);
    let run = s.run();
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
    let sent = s.sent_after(before);
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
    let sent = s.sent_after(before);
    // The conversation keeps the manifest given at the last resume (it names @1); a new
    // one would name the newest checkpoint, @2.
    assert!(sent.contains(&rewind_hint), "{sent}");
    assert!(
        !sent.contains(&format!("--to {run}@2")),
        "agentRewind.agentContext=false: no new manifest: {sent}"
    );
}

/// Claude Code as an MCP client: `hooks install --agent claude --mcp`
/// writes `.mcp.json`; a headless turn loads it (`--mcp-config`) and calls `list_runs`,
/// `diff`, and `revert` of its previous turn (a plan, then the plan applied by its id).
/// Afterwards the worktree and the run's notes prove it.
#[test]
fn claude_code_reverts_its_previous_turn_through_the_mcp_server() {
    let s = Session::new();
    let (root, session) = first_turn(&s);
    let run = s.run();
    let out = s
        .repo
        .json(&["hooks", "install", "--agent", "claude", "--mcp"]);
    assert!(
        out["agents"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["path"].as_str().unwrap().ends_with(".mcp.json")),
        "{out:#}"
    );
    let config = root.join(".mcp.json");
    let result = claude(
        &s,
        &super::mcp_revert_script(&run),
        &[
            "--resume",
            &session,
            "--mcp-config",
            config.to_str().unwrap(),
            "--allowedTools",
            "mcp__git-agent-rewind",
        ],
    );
    assert_eq!(result["is_error"], false, "{result:#}");
    // Every call reached the server and was answered by it.
    let answers: Vec<String> = s
        .server
        .agent_requests()
        .iter()
        .map(|r| r.body["messages"].to_string())
        .collect();
    s.assert_reverted_through_mcp(
        &run,
        answers.last().unwrap(),
        &format!("claude session {session}"),
    );
}
