//! Factory Droid, the real CLI (its Linux x64 package, pinned in tests/agents): `hooks
//! install --agent droid` merges its hooks into `.factory/settings.json`, then headless turns
//! (`droid exec`, then `droid exec --fork <id>`) against the scripted model server (Chat
//! Completions, its `Create` tool) as a custom model of the isolated HOME's
//! `~/.factory/settings.json`, with no Factory login. `droid exec` runs a project's hooks
//! without asking.

use super::{Session, agent_cli_at, write_word};
use serde_json::Value;

/// `~/.factory/settings.json`: the model server as Droid's only (custom) model.
fn configure(s: &Session) {
    let dir = s.home.path().join(".factory");
    std::fs::create_dir_all(&dir).unwrap();
    let settings = serde_json::json!({"customModels": [{
        "model": "scripted", "displayName": "scripted",
        "baseUrl": format!("{}/v1", s.server.url()), "apiKey": "test-key",
        "provider": "generic-chat-completion-api", "maxOutputTokens": 1000,
    }]});
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
}

/// The arguments of `droid exec` that reach the model server and let Droid write files.
const EXEC: [&str; 6] = ["--auto", "low", "-m", "custom:scripted", "-o", "json"];

/// `droid exec <args> <prompt>` (with [`EXEC`]); the session id it reports.
fn droid(s: &Session, args: &[&str], prompt: &str) -> String {
    let mut c = s.command(&agent_cli_at("@factory/cli-linux-x64/bin/droid"));
    c.arg("exec").args(EXEC).args(args).arg(prompt);
    let out = crate::common::bounded(c, "droid exec");
    if !out.status.success() {
        // Droid says why in its own log, not on its standard streams.
        let log = std::fs::read_to_string(s.home.path().join(".factory/logs/droid-log-single.log"))
            .unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        panic!(
            "droid exec failed ({}): {}\n{}\nits log, newest first:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            tail.join("\n")
        );
    }
    session_of(&String::from_utf8_lossy(&out.stdout))
}

/// The session id in Droid's JSON output.
fn session_of(stdout: &str) -> String {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .find_map(|v| v["session_id"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("droid named no session: {stdout}"))
}

/// Install → two turns: a new session, then `droid exec --fork <it>` (Droid's headless
/// `exec -s <id>` fetches the session from Factory's servers, so offline a conversation goes
/// on through a fork, a local copy), whose start is a `resume` handed the run's manifest;
/// agent, model, session and touched recorded → revert of the second turn → a rewind to the
/// first that prints Droid's fork of the first session, run headless (`droid exec --fork`,
/// the same flag): it holds the first turn and not the second, and records into the rewound
/// run → uninstall, which leaves the user's settings as they were.
#[test]
fn two_turns_a_manifest_a_revert_a_fork_and_an_uninstall() {
    let s = Session::new();
    let root = s.repo.path().canonicalize().unwrap();
    // A setting of the user's, kept through install and uninstall.
    std::fs::create_dir_all(root.join(".factory")).unwrap();
    let users = r#"{"enableCompletionBell": false}"#;
    std::fs::write(root.join(".factory/settings.json"), users).unwrap();
    s.repo.ok(&["hooks", "install", "--agent", "droid"]);
    let status = s.hooks_status("droid");
    assert_eq!(status["runs"], "yes", "{status:#}");
    configure(&s);

    let first = droid(&s, &[], &write_word(&root, "one"));
    assert_eq!(
        std::fs::read_to_string(root.join("one.txt")).unwrap(),
        "one\n"
    );
    let run = s.run();
    let before = s.server.agent_requests().len();
    let second = droid(&s, &["--fork", &first], &write_word(&root, "two"));
    assert_ne!(second, first, "a fork is a new session");
    let sent = s.sent_after(before);
    assert!(
        sent.contains(&format!("this session records into run {run}")),
        "the fork's first request holds the manifest: {sent}"
    );
    let cps = crate::common::checkpoints(s.repo.path(), &run);
    let events: Vec<&str> = cps.iter().map(|c| c["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["start", "turn", "turn"], "{cps:#?}");
    for (cp, (session, file)) in cps[1..]
        .iter()
        .zip([(&first, "one.txt"), (&second, "two.txt")])
    {
        let note = s.repo.json(&["show", cp["checkpoint"].as_str().unwrap()]);
        assert_eq!(note["agent"], "droid", "{note:#}");
        assert_eq!(note["sdk_session_id"], session.as_str(), "{note:#}");
        assert_eq!(note["touched"], serde_json::json!([file]), "{note:#}");
        assert_eq!(note["meta"]["model"], "custom:scripted-0", "{note:#}");
        assert!(note["meta"]["conversation_at"].is_string(), "{note:#}");
        // Droid's transcript holds no usage per message (docs/HOOKS.md): none, never zeros.
        assert!(note.get("usage").is_none(), "{note:#}");
    }

    // Revert of the second turn, then a rewind to the first: the printed command forks the
    // first turn's session, whole (Droid forks at no turn), and says so.
    let out = s.revert_then_rewind(["one.txt", "two.txt"]);
    assert_eq!(
        out["resume_command"],
        format!("droid --fork {first}"),
        "{out:#}"
    );
    assert!(
        out["conversation"]
            .as_str()
            .is_some_and(|n| n.contains("at its end")),
        "{out:#}"
    );
    let before = s.server.agent_requests().len();
    let third = droid(&s, &["--fork", &first], &write_word(&root, "three"));
    let sent = s.sent_after(before);
    assert!(
        sent.contains("one.txt") && !sent.contains("two.txt"),
        "the first session holds the first turn only: {sent}"
    );
    let back = crate::common::checkpoints(s.repo.path(), "back");
    let three = s
        .repo
        .json(&["show", back.last().unwrap()["checkpoint"].as_str().unwrap()]);
    assert_eq!(three["event"], "turn", "{three:#}");
    assert_eq!(three["touched"], serde_json::json!(["three.txt"]));
    assert_eq!(three["sdk_session_id"], third.as_str());

    // Uninstall takes out our entries and nothing else.
    let out = s.repo.json(&["hooks", "uninstall", "--agent", "droid"]);
    assert_eq!(out["agents"][0]["action"], "removed", "{out:#}");
    let left: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join(".factory/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(left, serde_json::from_str::<Value>(users).unwrap());
    assert_eq!(s.hooks_status("droid")["runs"], "no");
    s.repo.assert_fsck();
}
