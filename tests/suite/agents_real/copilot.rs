//! GitHub Copilot CLI, the real CLI (its Linux x64 binary, pinned in tests/agents):
//! `hooks install --agent copilot` writes `.github/hooks/agent-rewind.json`, then headless
//! turns (`copilot -p`, then `--resume=<id>`) against the scripted model server, reached
//! offline through Copilot's own-provider settings with the Responses API (where it offers
//! `apply_patch`, as Codex does). No GitHub login is needed. Copilot unpacks its JavaScript
//! into the cache folder on first run: the isolated HOME's `.cache`.

use super::{Session, agent_cli, write_word};
use serde_json::Value;

/// What Copilot needs to reach the model server offline.
fn copilot_env(s: &Session, c: &mut std::process::Command) {
    c.env("COPILOT_OFFLINE", "true")
        .env(
            "COPILOT_PROVIDER_BASE_URL",
            format!("{}/v1", s.server.url()),
        )
        .env("COPILOT_PROVIDER_API_KEY", "test-key")
        .env("COPILOT_PROVIDER_WIRE_API", "responses")
        .env("COPILOT_MODEL", "gpt-5.4");
}

/// The flags of every headless run.
const HEADLESS: [&str; 4] = ["--allow-all", "--no-auto-update", "--output-format", "json"];

/// `copilot <args> -p <prompt>` headless; the session id it reports.
fn copilot(s: &Session, args: &[&str], prompt: &str) -> String {
    let mut c = s.command(&agent_cli("copilot"));
    c.args(args).args(["-p", prompt]).args(HEADLESS);
    copilot_env(s, &mut c);
    let out = s.ok(c, "copilot -p");
    session_of(&String::from_utf8_lossy(&out.stdout))
}

/// The first session id in Copilot's JSON Lines output.
fn session_of(stdout: &str) -> String {
    fn find(v: &Value) -> Option<String> {
        match v {
            Value::Object(o) => o
                .iter()
                .find_map(|(k, v)| match (k.as_str(), v) {
                    ("sessionId" | "session_id", Value::String(s)) => Some(s.clone()),
                    _ => None,
                })
                .or_else(|| o.values().find_map(find)),
            Value::Array(a) => a.iter().find_map(find),
            _ => None,
        }
    }
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| find(&v))
        .unwrap_or_else(|| panic!("copilot named no session: {stdout}"))
}

/// Install → in an untrusted folder Copilot skips the hooks without a word, as `hooks
/// status` says → trusted: two turns (agent, session, touched; no model: Copilot sends
/// none), the resumed session handed the manifest → revert of the second turn → a rewind
/// that prints `copilot --resume=<id>` (its end), run by `rewind --agent-resume` → uninstall.
#[test]
fn untrusted_records_nothing_then_two_turns_a_revert_a_resume_and_an_uninstall() {
    let s = Session::new();
    let root = s.repo.path().canonicalize().unwrap();
    s.repo.ok(&["hooks", "install", "--agent", "copilot"]);
    assert_eq!(s.hooks_status("copilot")["runs"], "no");
    copilot(&s, &[], &write_word(&root, "zero"));
    assert_eq!(
        std::fs::read_to_string(root.join("zero.txt")).unwrap(),
        "zero\n",
        "Copilot worked"
    );
    assert_eq!(
        s.repo.json(&["list"]),
        serde_json::json!([]),
        "hooks skipped"
    );

    // Trusted the way Copilot records it; `hooks status` reads the same file.
    let config = s.home.path().join(".copilot/config.json");
    let mut v: Value = std::fs::read_to_string(&config)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| serde_json::json!({}));
    v["trustedFolders"] = serde_json::json!([root.to_str().unwrap()]);
    std::fs::write(&config, v.to_string()).unwrap();
    assert_eq!(s.hooks_status("copilot")["runs"], "yes");

    let session = copilot(&s, &[], &write_word(&root, "one"));
    let run = s.run();
    let before = s.server.agent_requests().len();
    let resume = format!("--resume={session}");
    assert_eq!(copilot(&s, &[&resume], &write_word(&root, "two")), session);
    let sent = s.sent_after(before);
    assert!(
        sent.contains(&format!("this session records into run {run}")),
        "the resumed session's first request holds the manifest: {sent}"
    );
    // Copilot writes its events file in batches: at a turn's Stop its usage records may
    // not be written yet (seen at a new session's first run), and then that turn has none,
    // never zeros; every turn that has usage has exactly the server's numbers, and the
    // resumed run's turn had them in every run seen.
    let usages = s.turn_usages();
    let expected = serde_json::json!({"gpt-5.4": super::Session::expected_usage(2, false)});
    assert!(
        usages.iter().all(|u| u.is_null() || *u == expected),
        "{usages:?}"
    );
    assert_eq!(usages[1], expected, "{usages:?}");
    for note in s.assert_turns("copilot", &session, &["one.txt", "two.txt"]) {
        assert!(note["meta"].get("model").is_none(), "{note:#}");
    }

    let out = s.revert_then_rewind(["one.txt", "two.txt"]);
    assert_eq!(out["resume_command"], format!("copilot --resume={session}"));
    assert!(
        out["conversation"]
            .as_str()
            .is_some_and(|n| n.contains("at its end")),
        "{out:#}"
    );
    // `rewind --agent-resume` runs it: the same session, continued at its end.
    let before = s.server.agent_requests().len();
    let mut c = s.command(&crate::common::bin());
    c.args(["rewind", "back", "--to", "back@0", "--run", "again"])
        .args(["--agent-resume", "--", "-p", &write_word(&root, "three")])
        .args(HEADLESS);
    copilot_env(&s, &mut c);
    s.ok(c, "rewind --agent-resume");
    assert_eq!(
        std::fs::read_to_string(root.join("three.txt")).unwrap(),
        "three\n"
    );
    let sent = s.sent_after(before);
    assert!(
        sent.contains("one.txt") && sent.contains("two.txt"),
        "{sent}"
    );

    let out = s.repo.json(&["hooks", "uninstall", "--agent", "copilot"]);
    assert_eq!(out["agents"][0]["action"], "deleted", "{out:#}");
    assert!(!root.join(".github").exists(), "{out:#}");
    s.repo.assert_fsck();
}
