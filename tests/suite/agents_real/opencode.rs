//! OpenCode, the real CLI (its Linux x64 package, pinned in tests/agents): `hooks install
//! --agent opencode` writes the plugin, then headless turns (`opencode run`, then
//! `--session`) against the scripted model server (Chat Completions) through an
//! `@ai-sdk/openai-compatible` provider. Offline, OpenCode's own install of its plugin
//! package into each configuration folder would wait 70–90 s for the registry; npm's
//! `offline` setting makes it give up at once (it then runs without that package, as our
//! plugin needs nothing from it).

use super::{Session, agent_cli_at};
use serde_json::Value;
use std::path::Path;

/// `~/.config/opencode/opencode.json`: the model server as the only provider and model, with
/// a context limit that the server's one overflowing answer exceeds.
fn configure(s: &Session) {
    let dir = s.home.path().join(".config/opencode");
    std::fs::create_dir_all(&dir).unwrap();
    let config = serde_json::json!({
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": false,
        "share": "disabled",
        "provider": {"local": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "local",
            "options": {"baseURL": format!("{}/v1", s.server.url()), "apiKey": "test-key"},
            "models": {"test": {"name": "test", "tool_call": true,
                                "limit": {"context": 100000, "output": 1000}}}
        }},
        "model": "local/test",
        "small_model": "local/test",
    });
    std::fs::write(dir.join("opencode.json"), config.to_string()).unwrap();
}

/// `opencode run --format json <args> <prompt>`; the session id its events name.
fn run(s: &Session, args: &[&str], prompt: &str) -> String {
    let mut c = s.command(&agent_cli_at("opencode-linux-x64/bin/opencode"));
    c.args(["run", "--format", "json"])
        .args(args)
        .arg(prompt)
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
        .env("npm_config_offline", "true");
    let out = s.ok(c, "opencode run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|e| e["sessionID"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("opencode run named no session: {stdout}"))
}

fn write(root: &Path, word: &str) -> String {
    format!(
        "WRITE {} {word}",
        root.join(format!("{word}.txt")).display()
    )
}

/// Install → two turns (agent, touched, session and the turn's message recorded) → a rewind
/// that names the fork OpenCode can make, run as printed → a compaction that is handed the
/// run's manifest → revert of one turn → uninstall, which leaves only OpenCode's own files.
#[test]
fn two_turns_a_rewind_a_compaction_a_revert_and_an_uninstall() {
    let s = Session::new();
    s.repo.ok(&["hooks", "install", "--agent", "opencode"]);
    assert_eq!(s.hooks_status("opencode")["runs"], "yes");
    configure(&s);
    let root = s.repo.path().canonicalize().unwrap();

    let session = run(&s, &[], &write(&root, "one"));
    assert_eq!(
        run(&s, &["--session", &session], &write(&root, "two")),
        session
    );
    assert_eq!(
        std::fs::read_to_string(root.join("two.txt")).unwrap(),
        "two\n"
    );
    s.assert_turn_usage(2, false);
    let notes = s.assert_turns("opencode", &session, &["one.txt", "two.txt"]);
    for n in &notes {
        let at = n["meta"]["conversation_at"].as_str().unwrap_or_default();
        assert!(at.starts_with("msg_"), "the turn's message: {n:#}");
    }
    let run_id = s.run();

    // Rewind to the first turn: the printed command forks the whole session and says so.
    let to = format!("{run_id}@1");
    let out = s
        .repo
        .json(&["rewind", &run_id, "--to", &to, "--run", "back"]);
    assert!(!root.join("two.txt").exists(), "the second turn is rewound");
    assert_eq!(
        out["resume_command"],
        format!("opencode --session {session} --fork"),
        "{out:#}"
    );
    assert!(out["conversation_at"].is_null(), "{out:#}");
    let note = out["conversation"].as_str().unwrap_or_default();
    assert!(note.contains("at its end"), "{out:#}");
    // Run it as a user would (headless): a new session, holding the whole conversation, that
    // records into the new run. Its first answer overflows the model's context: OpenCode
    // compacts the session, and the compaction's request holds the run's manifest.
    let before = s.server.requests().len();
    let forked = run(
        &s,
        &["--session", &session, "--fork"],
        &format!("{} OVERFLOW", write(&root, "three")),
    );
    assert_ne!(forked, session);
    let bodies: Vec<String> = s.server.requests()[before..]
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    let first = bodies.iter().find(|b| b.contains("three.txt")).unwrap();
    assert!(
        first.contains("one.txt") && first.contains("two.txt"),
        "the fork holds every turn, as the note says: {first}"
    );
    assert!(
        bodies.iter().any(|b| b.contains("records into run back")),
        "a request after the overflow holds the manifest: {bodies:#?}"
    );
    let back = crate::common::checkpoints(s.repo.path(), "back");
    let three = back.last().unwrap();
    assert_eq!(three["event"], "turn", "{back:#?}");
    let three_note = s
        .repo
        .json(&["show", three["checkpoint"].as_str().unwrap()]);
    assert_eq!(three_note["touched"], serde_json::json!(["three.txt"]));
    assert_eq!(three_note["sdk_session_id"], forked.as_str());

    // Revert the forked session's turn: its file goes, the others stay.
    s.repo
        .ok(&["revert", three["checkpoint"].as_str().unwrap()]);
    assert!(!root.join("three.txt").exists());
    assert!(root.join("one.txt").exists());
    let status = s.repo.git(&["status", "--porcelain"]);
    assert!(!status.contains("three.txt"), "{status}");

    // Uninstall removes the plugin; what is left in .opencode is OpenCode's own.
    let out = s.repo.json(&["hooks", "uninstall", "--agent", "opencode"]);
    assert_eq!(out["agents"][0]["action"], "deleted", "{out:#}");
    assert!(!root.join(".opencode/plugins").exists());
    // OpenCode wrote its .gitignore there; uninstall names it and leaves it.
    let said = out["warnings"].to_string();
    assert!(said.contains("OpenCode's own files (.gitignore"), "{out:#}");
    let left: Vec<String> = std::fs::read_dir(root.join(".opencode"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        left.iter().all(|f| OPENCODE_OWN.contains(&f.as_str())),
        "{left:?}"
    );
    s.repo.assert_fsck();
}

/// What OpenCode itself writes into a configuration folder (docs/HOOKS.md).
const OPENCODE_OWN: [&str; 5] = [
    ".gitignore",
    "package.json",
    "package-lock.json",
    "bun.lock",
    "node_modules",
];
