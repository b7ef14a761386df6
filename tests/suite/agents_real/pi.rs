//! Pi, the real CLI (pinned in tests/agents): `hooks install --agent pi` writes the
//! extension, then headless turns (`pi -p --mode json`, then `--session <id>`) against the
//! scripted model server (Chat Completions) through a `local` provider in the isolated
//! HOME's `~/.pi/agent/models.json`, with `PI_OFFLINE=1`.

use super::{Session, agent_cli, write_word};
use serde_json::Value;
use std::process::Command;

/// `~/.pi/agent/models.json`: the model server as provider `local` with model `scripted`.
fn configure(s: &Session) {
    let dir = s.home.path().join(".pi/agent");
    std::fs::create_dir_all(&dir).unwrap();
    let models = serde_json::json!({"providers": {"local": {
        "baseUrl": format!("{}/v1", s.server.url()),
        "api": "openai-completions",
        "apiKey": "test-key",
        "models": [{"id": "scripted"}],
    }}});
    std::fs::write(dir.join("models.json"), models.to_string()).unwrap();
}

/// Pi's environment beside the session's.
fn pi_env(c: &mut Command) {
    c.env("PI_OFFLINE", "1");
}

/// The headless arguments that pick the scripted model, then `prompt`.
fn headless(prompt: &str) -> Vec<String> {
    [
        "-p",
        "--provider",
        "local",
        "--model",
        "scripted",
        "--mode",
        "json",
        prompt,
    ]
    .map(str::to_string)
    .to_vec()
}

/// The session id in the first line (the session header) of Pi's JSON output.
fn session_of(stdout: &[u8]) -> String {
    let text = String::from_utf8_lossy(stdout);
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "session")
        .and_then(|e| e["id"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("pi named no session: {text}"))
}

/// `pi <args> -p … <prompt>`; the session id it printed.
fn pi(s: &Session, args: &[&str], prompt: &str) -> String {
    let mut c = s.command(&agent_cli("pi"));
    c.args(args).args(headless(prompt));
    pi_env(&mut c);
    session_of(&s.ok(c, "pi -p").stdout)
}

/// Install → two turns (agent, model, session, touched and the session's entry recorded;
/// the resumed session is handed the run's manifest) → a revert of the second turn and a
/// rewind that names the fork Pi can make → `fork --agent-resume` runs it → uninstall.
#[test]
fn two_turns_a_rewind_with_its_continuation_a_revert_and_an_uninstall() {
    let s = Session::new();
    s.repo.ok(&["hooks", "install", "--agent", "pi"]);
    let status = s.hooks_status("pi");
    assert_eq!(status["runs"], "yes", "{status:#}");
    configure(&s);
    let root = s.repo.path().canonicalize().unwrap();

    let session = pi(&s, &[], &write_word(&root, "one"));
    assert_eq!(
        std::fs::read_to_string(root.join("one.txt")).unwrap(),
        "one\n"
    );
    let first = s.server.agent_requests();
    assert!(
        !first
            .iter()
            .any(|r| r.body.to_string().contains("records into run")),
        "a new session is not handed the manifest"
    );
    // `--session` starts as a new session does (reason `startup`); the session's turn in
    // the run tells it resumed.
    let before = s.server.agent_requests().len();
    assert_eq!(
        pi(&s, &["--session", &session], &write_word(&root, "two")),
        session
    );
    let resumed = s.sent_after(before);
    assert!(
        resumed.contains("records into run") && resumed.contains("one.txt"),
        "the resumed session holds the first turn and the manifest: {resumed}"
    );
    s.assert_turn_usage(2, false);
    let notes = s.assert_turns("pi", &session, &["one.txt", "two.txt"]);
    for n in &notes {
        assert_eq!(n["meta"]["model"], "scripted", "{n:#}");
        assert_eq!(n["meta"]["provider"], "local", "{n:#}");
        let at = n["meta"]["conversation_at"].as_str().unwrap_or_default();
        assert!(!at.is_empty(), "the session's entry: {n:#}");
        let transcript = n["artifacts"].to_string();
        assert!(transcript.contains(".pi/agent/sessions"), "{n:#}");
    }
    assert_ne!(
        notes[0]["meta"]["conversation_at"], notes[1]["meta"]["conversation_at"],
        "each turn its own entry"
    );

    // Revert the second turn, then rewind to the first: the printed command forks the
    // whole session and says so.
    let run = s.run();
    let out = s.revert_then_rewind(["one.txt", "two.txt"]);
    assert_eq!(
        out["resume_command"],
        format!("pi --fork {session}"),
        "{out:#}"
    );
    let note = out["conversation"].as_str().unwrap_or_default();
    assert!(
        note.contains("at its end") && note.contains("entry"),
        "{out:#}"
    );

    // `fork --agent-resume` runs that command with the arguments given: a new session,
    // holding the whole conversation and handed the run's manifest, recording into the new
    // run.
    let before = s.server.agent_requests().len();
    let mut c = s.command(&crate::common::bin());
    c.args(["fork", &run, "--to", &format!("{run}@1"), "--run", "side"])
        .args(["--agent-resume", "--"])
        .args(headless(&write_word(&root, "three")));
    pi_env(&mut c);
    let out = s.ok(c, "fork --agent-resume");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.starts_with("forked run side"), "{printed}");
    let forked = session_of(&out.stdout);
    assert_ne!(forked, session);
    assert_eq!(
        std::fs::read_to_string(root.join("three.txt")).unwrap(),
        "three\n"
    );
    let sent = s.sent_after(before);
    assert!(
        sent.contains("one.txt") && sent.contains("two.txt"),
        "the fork holds every turn, as the note says: {sent}"
    );
    assert!(sent.contains("records into run side"), "{sent}");
    let side = crate::common::checkpoints(s.repo.path(), "side");
    let three = side.last().unwrap();
    let three_note = s
        .repo
        .json(&["show", three["checkpoint"].as_str().unwrap()]);
    assert_eq!(three_note["event"], "turn", "{three_note:#}");
    assert_eq!(three_note["touched"], serde_json::json!(["three.txt"]));
    assert_eq!(three_note["sdk_session_id"], forked.as_str());

    // Uninstall takes out the extension and the folders it leaves empty, nothing else.
    let out = s.repo.json(&["hooks", "uninstall", "--agent", "pi"]);
    assert_eq!(out["agents"][0]["action"], "deleted", "{out:#}");
    assert!(!root.join(".pi/extensions").exists());
    assert_eq!(s.hooks_status("pi")["runs"], "no");
    let status = s
        .repo
        .git(&["status", "--porcelain", "--untracked-files=all"]);
    assert!(!status.contains(".pi/"), "{status}");
    s.repo.assert_fsck();
}
