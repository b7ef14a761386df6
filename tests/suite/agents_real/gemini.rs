//! Gemini CLI, the real CLI: `hooks install --agent gemini`, then two headless turns
//! (`gemini -p`, then `--resume`) against the scripted model server, once the folder is
//! trusted: headless, an untrusted folder is refused.

use super::{Session, agent_cli};
use serde_json::Value;

/// `gemini <args> -p <prompt>` headless, tools allowed, the folder trusted when `trusted`.
fn gemini(s: &Session, prompt: &str, args: &[&str], trusted: bool) -> std::process::Output {
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
    if trusted {
        c.env("GEMINI_CLI_TRUST_WORKSPACE", "true");
    }
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

    // Headless, Gemini CLI refuses a folder that is not trusted (exit 55).
    let refused = gemini(&s, "hello", &[], false);
    assert_eq!(
        refused.status.code(),
        Some(55),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );

    let first = result(&gemini(
        &s,
        &format!("WRITE {} one", root.join("one.txt").display()),
        &[],
        true,
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
        true,
    ));
    assert_eq!(
        std::fs::read_to_string(root.join("two.txt")).unwrap(),
        "two\n"
    );

    s.assert_turns("gemini", &session, &["one.txt", "two.txt"]);
}
