//! Qwen Code, the real CLI: `hooks install --agent qwen` merges its hooks into
//! `.qwen/settings.json`, then headless turns (`qwen <prompt>`, then `--resume`) against the
//! scripted model server (Chat Completions, its `write_file` tool) through Qwen's OpenAI
//! provider. Qwen runs a project's hooks without asking (folder trust is off by default).

use super::{Session, agent_cli, write_word};
use serde_json::Value;

/// `~/.qwen/settings.json`: the OpenAI provider (its endpoint and model come from the
/// environment, [`qwen_env`]).
pub(super) fn configure(s: &Session) {
    let dir = s.home.path().join(".qwen");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("settings.json"),
        r#"{"security": {"auth": {"selectedType": "openai"}},
            "privacy": {"usageStatisticsEnabled": false}}"#,
    )
    .unwrap();
}

/// What Qwen needs to reach the model server.
fn qwen_env(s: &Session, c: &mut std::process::Command) {
    c.env("OPENAI_API_KEY", "test-key")
        .env("OPENAI_BASE_URL", format!("{}/v1", s.server.url()))
        .env("OPENAI_MODEL", "scripted");
}

/// `qwen <args> <prompt> --yolo --output-format json`; the session id it reports.
pub(super) fn qwen(s: &Session, args: &[&str], prompt: &str) -> String {
    let mut c = s.command(&agent_cli("qwen"));
    c.args(args)
        .arg(prompt)
        .args(["--yolo", "--output-format", "json"]);
    qwen_env(s, &mut c);
    let out = s.ok(c, "qwen");
    session_of(&String::from_utf8_lossy(&out.stdout))
}

/// The session id in Qwen's JSON output (an array of messages, each naming it).
fn session_of(stdout: &str) -> String {
    let v: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("qwen printed no JSON ({e}): {stdout}"));
    v.as_array()
        .into_iter()
        .flatten()
        .find_map(|m| m["session_id"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("qwen named no session: {stdout}"))
}

/// Install → two turns (agent, model, session and touched recorded; the resumed session
/// handed the run's manifest) → revert of the second turn → a rewind that prints Qwen's fork
/// of the session, run by `fork --agent-resume` (a new session, recorded in the new run) →
/// uninstall, which leaves the settings as they were.
#[test]
fn two_turns_a_manifest_a_revert_a_fork_and_an_uninstall() {
    let s = Session::new();
    let root = s.repo.path().canonicalize().unwrap();
    // A setting of the user's, kept through install and uninstall.
    std::fs::create_dir_all(root.join(".qwen")).unwrap();
    let users = r#"{"ui": {"theme": "Default"}}"#;
    std::fs::write(root.join(".qwen/settings.json"), users).unwrap();
    s.repo.ok(&["hooks", "install", "--agent", "qwen"]);
    let status = s.hooks_status("qwen");
    assert_eq!(status["runs"], "yes", "{status:#}");
    configure(&s);

    let session = qwen(&s, &[], &write_word(&root, "one"));
    assert_eq!(
        std::fs::read_to_string(root.join("one.txt")).unwrap(),
        "one\n"
    );
    let run = s.run();
    let before = s.server.agent_requests().len();
    assert!(
        !s.server.agent_requests()[0]
            .body
            .to_string()
            .contains("this session records"),
        "a new session is not given a manifest"
    );
    assert_eq!(
        qwen(&s, &["--resume", &session], &write_word(&root, "two")),
        session
    );
    let sent = s.sent_after(before);
    assert!(
        sent.contains(&format!("this session records into run {run}")),
        "the resumed session's first request holds the manifest: {sent}"
    );
    s.assert_turn_usage(2, false);
    for note in s.assert_turns("qwen", &session, &["one.txt", "two.txt"]) {
        assert_eq!(note["meta"]["model"], "scripted", "{note:#}");
    }

    // Revert of the second turn, then a rewind to the first: the printed command forks the
    // whole session (Qwen's command line forks at no turn), and says so.
    let out = s.revert_then_rewind(["one.txt", "two.txt"]);
    assert_eq!(
        out["resume_command"],
        format!("qwen --resume {session} --fork-session"),
        "{out:#}"
    );
    assert!(
        out["conversation"]
            .as_str()
            .is_some_and(|n| n.contains("at its end")),
        "{out:#}"
    );
    // `fork --agent-resume` runs it: a new session holding every turn, as the note says,
    // recorded into the fork's run.
    let before = s.server.agent_requests().len();
    let mut c = s.command(&crate::common::bin());
    c.args(["fork", &run, "--to", &format!("{run}@1"), "--run", "side"])
        .args(["--agent-resume", "--", &write_word(&root, "three")])
        .args(["--yolo", "--output-format", "json"]);
    qwen_env(&s, &mut c);
    let forked = s.ok(c, "fork --agent-resume");
    let printed = String::from_utf8_lossy(&forked.stdout);
    assert!(printed.starts_with("forked run side"), "{printed}");
    assert_eq!(
        std::fs::read_to_string(root.join("three.txt")).unwrap(),
        "three\n"
    );
    let sent = s.sent_after(before);
    assert!(
        sent.contains("one.txt") && sent.contains("two.txt"),
        "{sent}"
    );
    let side = crate::common::checkpoints(s.repo.path(), "side");
    let three = s
        .repo
        .json(&["show", side.last().unwrap()["checkpoint"].as_str().unwrap()]);
    assert_eq!(three["event"], "turn", "{three:#}");
    assert_eq!(three["touched"], serde_json::json!(["three.txt"]));
    assert_ne!(three["sdk_session_id"], session.as_str(), "a new session");

    // Uninstall takes out our entries and nothing else.
    let out = s.repo.json(&["hooks", "uninstall", "--agent", "qwen"]);
    assert_eq!(out["agents"][0]["action"], "removed", "{out:#}");
    let left: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(".qwen/settings.json")).unwrap())
            .unwrap();
    // Qwen added its settings' format version; the rest is the user's, as it was.
    let mut users: Value = serde_json::from_str(users).unwrap();
    users["$version"] = left["$version"].clone();
    assert!(left["$version"].is_number(), "{left:#}");
    assert_eq!(left, users);
    s.repo.assert_fsck();
}
