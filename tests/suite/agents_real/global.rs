//! One install for every repository, with the real CLIs: Claude Code and Qwen Code with only
//! `hooks install --agent <a> --global` (run outside any repository, HOME isolated) record a
//! turn in a repository they never saw and nobody initialized, and the repository's own
//! configuration stays untouched; uninstall leaves the user's settings as they were.

use super::{Session, agent_cli, write_word};

/// `hooks install|uninstall --agent <agent> --global` run in the session's HOME, outside the
/// repository.
fn global(s: &Session, verb: &str, agent: &str) {
    let mut c = s.command(&crate::common::bin());
    c.current_dir(s.home.path())
        .args(["--json", "hooks", verb, "--agent", agent, "--global"]);
    s.ok(c, "hooks --global");
}

/// The repository holds no configuration of `agent` of ours and was set up by the first run.
fn assert_untouched_and_set_up(s: &Session, dot: &str) {
    assert!(
        !s.repo.path().join(dot).exists(),
        "nothing written in the repository's {dot}"
    );
    assert_eq!(
        s.repo
            .git(&["config", "--get-all", "notes.displayRef"])
            .trim(),
        "refs/notes/agent-runs/*"
    );
}

#[test]
fn claude_code_with_only_a_global_install_records_a_repository_it_never_saw() {
    let s = Session::new();
    std::fs::create_dir_all(s.home.path().join(".claude")).unwrap();
    let users = "{\n    \"theme\": \"dark\"\n}\n";
    let settings = s.home.path().join(".claude/settings.json");
    std::fs::write(&settings, users).unwrap();
    global(&s, "install", "claude");
    let status = s.hooks_status("claude");
    assert_eq!(status["global"]["runs"], "yes", "{status:#}");
    assert_eq!(status["events"], serde_json::json!([]), "{status:#}");

    let root = s.repo.path().canonicalize().unwrap();
    let mut c = s.command(&agent_cli("claude"));
    c.args([
        "-p",
        &write_word(&root, "one"),
        "--permission-mode",
        "acceptEdits",
    ])
    .args(["--output-format", "json"]);
    super::claude::claude_env(&s, &mut c);
    let out = s.ok(c, "claude -p");
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let session = result["session_id"].as_str().unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("one.txt")).unwrap(),
        "one\n"
    );
    s.assert_turns("claude", session, &["one.txt"]);
    assert_untouched_and_set_up(&s, ".claude");

    global(&s, "uninstall", "claude");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), users);
}

#[test]
fn qwen_code_with_only_a_global_install_records_a_repository_it_never_saw() {
    let s = Session::new();
    // The user's own settings (the provider), which our entries join.
    super::qwen::configure(&s);
    global(&s, "install", "qwen");
    let status = s.hooks_status("qwen");
    assert_eq!(status["global"]["runs"], "yes", "{status:#}");

    let root = s.repo.path().canonicalize().unwrap();
    let session = super::qwen::qwen(&s, &[], &write_word(&root, "one"));
    assert_eq!(
        std::fs::read_to_string(root.join("one.txt")).unwrap(),
        "one\n"
    );
    s.assert_turns("qwen", &session, &["one.txt"]);
    assert_untouched_and_set_up(&s, ".qwen");

    global(&s, "uninstall", "qwen");
    let settings: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(s.home.path().join(".qwen/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(settings["security"]["auth"]["selectedType"], "openai");
    assert!(settings.get("hooks").is_none(), "{settings:#}");
}
