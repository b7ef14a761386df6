//! Gemini CLI, the real CLI: `hooks install --agent gemini`, then two headless turns
//! (`gemini -p`, then `--resume`) against the scripted model server, once the folder is
//! trusted: headless, an untrusted folder is refused.

use super::{Session, agent_cli};
use serde_json::Value;

/// `gemini <args> -p <prompt>` headless, tools allowed (folder trust as the user set it).
fn gemini(s: &Session, prompt: &str, args: &[&str]) -> std::process::Output {
    let settings = s.home.path().join(".gemini/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        r#"{"security": {"auth": {"selectedType": "gemini-api-key"}},
            "general": {"disableAutoUpdate": true}, "privacy": {"usageStatisticsEnabled": false}}"#,
    )
    .unwrap();
    let mut c = s.command(&agent_cli("gemini"));
    c.args(args)
        .args(["-p", prompt, "--yolo", "--output-format", "json"])
        .env("GEMINI_API_KEY", "test-key")
        .env("GOOGLE_GEMINI_BASE_URL", s.server.url());
    crate::common::bounded(c, "gemini -p")
}

fn result(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "gemini failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "gemini printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

#[test]
fn two_turns_are_two_turn_checkpoints_and_an_untrusted_folder_is_refused() {
    let s = Session::new();
    s.repo.ok(&["hooks", "install", "--agent", "gemini"]);
    let root = s.repo.path().canonicalize().unwrap();

    // Headless, Gemini CLI refuses a folder that is not trusted (exit 55), as `hooks status`
    // says beforehand.
    let status = s.hooks_status("gemini");
    assert_eq!(status["runs"], "no", "{status:#}");
    assert!(
        status["reason"].as_str().unwrap().contains("exit 55"),
        "{status:#}"
    );
    let refused = gemini(&s, "hello", &[]);
    assert_eq!(
        refused.status.code(),
        Some(55),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    // Trusted the way Gemini CLI records it; `hooks status` reads the same file.
    std::fs::write(
        s.home.path().join(".gemini/trustedFolders.json"),
        serde_json::json!({ root.to_str().unwrap(): "TRUST_FOLDER" }).to_string(),
    )
    .unwrap();
    assert_eq!(s.hooks_status("gemini")["runs"], "yes");

    let first = result(&gemini(
        &s,
        &format!("WRITE {} one", root.join("one.txt").display()),
        &[],
    ));
    let session = first["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{first:#}"))
        .to_string();
    assert_eq!(
        std::fs::read_to_string(root.join("one.txt")).unwrap(),
        "one\n"
    );
    result(&gemini(
        &s,
        &format!("WRITE {} two", root.join("two.txt").display()),
        &["--resume", &session],
    ));
    assert_eq!(
        std::fs::read_to_string(root.join("two.txt")).unwrap(),
        "two\n"
    );

    s.assert_turn_usage(2, false);
    s.assert_turns("gemini", &session, &["one.txt", "two.txt"]);
    // The resumed session was handed the run's manifest.
    let run = s.run();
    let resumed = s
        .server
        .agent_requests()
        .iter()
        .map(|r| r.body.to_string())
        .find(|b| b.contains("two.txt"))
        .unwrap();
    assert!(
        resumed.contains(&format!("records into run {run}")),
        "the resumed session's request holds the manifest: {resumed}"
    );
    // Revert of one turn; a rewind prints the command that continues the conversation at
    // its end, and says so (Gemini CLI exposes no turn to fork at).
    let out = s.revert_then_rewind(["one.txt", "two.txt"]);
    assert_eq!(out["resume_command"], format!("gemini --resume {session}"));
    assert!(
        out["conversation"]
            .as_str()
            .is_some_and(|n| n.contains("at its end")),
        "{out:#}"
    );
}
