//! Codex CLI, the real CLI: `hooks install --agent codex`, the project trusted in an isolated
//! `~/.codex/config.toml` whose model provider is the scripted model server (Responses API),
//! then headless turns (`codex exec`, then `codex exec resume`). Codex runs a project's hooks
//! only once the user trusted each hook definition; untrusted, it skips them without a word.

use super::{Session, agent_cli};
use serde_json::Value;

/// `~/.codex/config.toml`: the model server as the provider, a model slug Codex knows (so it
/// offers `apply_patch`), the repository trusted as a project. Hook trust is never written.
fn configure(s: &Session) {
    configure_with(s, "");
}

/// [`configure`], with `settings` (top-level keys) added.
fn configure_with(s: &Session, settings: &str) {
    let root = s.repo.path().canonicalize().unwrap();
    let dir = s.home.path().join(".codex");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        format!(
            r#"model = "gpt-5.5"
model_provider = "local"
check_for_update_on_startup = false
{}
[model_providers.local]
name = "local"
base_url = "{}/v1"
wire_api = "responses"
env_key = "CODEX_TEST_KEY"

[projects.{}]
trust_level = "trusted"
"#,
            settings,
            s.server.url(),
            serde_json::to_string(&root.display().to_string()).unwrap()
        ),
    )
    .unwrap();
}

/// `hooks install --agent codex <install>`, the configuration, and a first turn (hook trust
/// bypassed) writing `one.txt`: the repository's root and the thread id.
fn first_turn(s: &Session, install: &[&str]) -> (std::path::PathBuf, String) {
    s.repo
        .ok(&[&["hooks", "install", "--agent", "codex"][..], install].concat());
    configure(s);
    let root = s.repo.path().canonicalize().unwrap();
    let thread = exec(
        s,
        &["--dangerously-bypass-hook-trust"],
        &format!("WRITE {} one", root.join("one.txt").display()),
    );
    (root, thread)
}

/// `codex exec --json -s danger-full-access <args> <prompt>`; returns the thread id it
/// announced.
fn exec(s: &Session, args: &[&str], prompt: &str) -> String {
    exec_output(s, args, prompt).0
}

/// [`exec`], with everything Codex printed (stdout, then stderr).
fn exec_output(s: &Session, args: &[&str], prompt: &str) -> (String, String) {
    let mut c = s.command(&agent_cli("codex"));
    c.args(["exec", "--json", "-s", "danger-full-access"])
        .args(args)
        .arg(prompt)
        .env("CODEX_TEST_KEY", "test-key");
    let out = s.ok(c, "codex exec");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let thread = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "thread.started")
        .and_then(|e| e["thread_id"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("codex exec announced no thread: {stdout}"));
    let printed = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    (thread, printed)
}

/// Untrusted hooks record nothing; with hook trust bypassed (tests only) two turns are a
/// start and two `turn` checkpoints with agent, session and touched files (Codex).
#[test]
fn untrusted_hooks_record_nothing_and_two_turns_are_two_turn_checkpoints() {
    let s = Session::new();
    s.repo.ok(&["hooks", "install", "--agent", "codex"]);
    configure(&s);
    let root = s.repo.path().canonicalize().unwrap();

    let (_, printed) = exec_output(
        &s,
        &[],
        &format!("WRITE {} zero", root.join("zero.txt").display()),
    );
    assert!(
        !printed.to_lowercase().contains("hook"),
        "Codex skips untrusted hooks without a word: {printed}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("zero.txt")).unwrap(),
        "zero\n",
        "Codex worked"
    );
    assert_eq!(
        s.repo.json(&["list"]),
        serde_json::json!([]),
        "untrusted hooks were skipped: nothing recorded"
    );
    // `hooks status` says so, and what to do.
    let status = s.hooks_status("codex");
    assert_eq!(status["runs"], "no", "{status:#}");
    assert!(
        status["reason"].as_str().unwrap().contains("/hooks"),
        "{status:#}"
    );

    let bypass = ["--dangerously-bypass-hook-trust"];
    let thread = exec(
        &s,
        &bypass,
        &format!("WRITE {} one", root.join("one.txt").display()),
    );
    assert_eq!(
        std::fs::read_to_string(root.join("one.txt")).unwrap(),
        "one\n"
    );
    let resumed = exec(
        &s,
        &[&bypass[..], &["resume", &thread]].concat(),
        &format!("WRITE {} two", root.join("two.txt").display()),
    );
    assert_eq!(resumed, thread, "the same thread continued");
    assert_eq!(
        std::fs::read_to_string(root.join("two.txt")).unwrap(),
        "two\n"
    );

    s.assert_turn_usage(2, false);
    for shown in s.assert_turns("codex", &thread, &["one.txt", "two.txt"]) {
        assert_eq!(shown["meta"]["model"], "gpt-5.5", "{shown:#}");
    }
    let requests = s.server.requests();
    assert!(
        requests.iter().all(|r| r.path == "/v1/responses"),
        "Codex spoke only the Responses API: {:?}",
        requests.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
    s.repo.assert_fsck();
}

/// `hooks install --agent codex` says, on stderr and in `--json` `warnings`, that Codex runs
/// the hooks only once the project and each hook definition are trusted; a re-install that changes our hook definition says Codex will ask again; one that
/// changes nothing does not (Codex).
#[test]
fn install_says_codex_needs_the_user_to_trust_the_hooks() {
    let s = Session::new();
    let out = s.repo.run(&["hooks", "install", "--agent", "codex"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Codex runs these hooks only once you trust them")
            && stderr.contains("/hooks")
            && stderr.contains("trust_level = \"trusted\"")
            && stderr.contains("skips them without a word"),
        "{stderr}"
    );
    assert!(!stderr.contains("ask for trust again"), "{stderr}");

    let again = s.repo.json(&["hooks", "install", "--agent", "codex"]);
    assert_eq!(again["agents"][0]["action"], "unchanged", "{again:#}");
    let warnings = again["warnings"].to_string();
    assert!(warnings.contains("/hooks"), "{again:#}");
    assert!(!warnings.contains("ask for trust again"), "{again:#}");

    // An entry of ours as an older version wrote it (another matcher): Codex trusted that
    // definition's hash, so bringing it up to date needs the user's trust again.
    let file = s.repo.path().join(".codex/hooks.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    v["hooks"]["PostToolUse"][0]["matcher"] = "apply_patch".into();
    std::fs::write(&file, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let changed = s.repo.json(&["hooks", "install", "--agent", "codex"]);
    assert_eq!(changed["agents"][0]["action"], "updated", "{changed:#}");
    assert_eq!(
        changed["agents"][0]["events"],
        serde_json::json!(["PostToolUse"])
    );
    assert!(
        changed["warnings"]
            .to_string()
            .contains("Codex will ask for trust again: our PostToolUse hook definition"),
        "{changed:#}"
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        v["hooks"]["PostToolUse"][0]["matcher"],
        "apply_patch|Edit|Write"
    );
}

/// A resumed Codex session is handed the run's manifest: the first model request after
/// `codex exec resume` holds it, as `SessionStart`'s `hookSpecificOutput.additionalContext`.
#[test]
fn a_resumed_codex_session_is_given_the_runs_manifest() {
    let s = Session::new();
    let (root, thread) = first_turn(&s, &[]);
    let bypass = ["--dangerously-bypass-hook-trust"];
    let run = s.run();
    let first = s.server.agent_requests()[0].body.to_string();
    assert!(
        !first.contains("git agent-rewind: this session records"),
        "a new session is not given a manifest"
    );
    let before = s.server.agent_requests().len();
    exec(
        &s,
        &[&bypass[..], &["resume", &thread]].concat(),
        &format!("WRITE {} two", root.join("two.txt").display()),
    );
    let sent = s.sent_after(before);
    assert!(
        sent.contains(&format!("this session records into run {run}"))
            && sent.contains(&format!("git agent-rewind rewind {run} --to {run}@1")),
        "the resumed session's first request holds the manifest: {sent}"
    );
    // Revert of one turn; a rewind prints the command that continues the conversation at
    // its end, and says so (Codex's CLI forks at no turn).
    let turn_one = s.repo.json(&["show", &format!("{run}@1")]);
    let turn_id = turn_one["meta"]["conversation_at"]
        .as_str()
        .unwrap_or_else(|| panic!("the turn's id: {turn_one:#}"))
        .to_string();
    assert_eq!(turn_one["meta"]["turn_id"], turn_id.as_str());
    let out = s.revert_then_rewind(["one.txt", "two.txt"]);
    assert_eq!(out["resume_command"], format!("codex fork {thread}"));
    let note = out["conversation"].as_str().unwrap_or_default();
    assert!(
        note.contains("at its end") && note.contains(&turn_id),
        "{out:#}"
    );
    // The printed command, headless (`codex exec fork`): a new thread holding every turn,
    // as the note says.
    let before = s.server.agent_requests().len();
    let forked = exec(
        &s,
        &[&bypass[..], &["fork", &thread]].concat(),
        &format!("WRITE {} three", root.join("three.txt").display()),
    );
    assert_ne!(forked, thread);
    let sent = s.sent_after(before);
    assert!(
        sent.contains("one.txt") && sent.contains("two.txt"),
        "{sent}"
    );
}

/// Codex as an MCP client: `hooks install --agent codex --mcp` writes
/// `[mcp_servers.git-agent-rewind]` into the project's `.codex/config.toml`; Codex starts the
/// server and defers its tools behind its client-side `tool_search` (the namespace
/// `mcp__git_agent_rewind`, described by our server's `initialize` instructions). A resumed
/// session searches, then calls `list_runs`, `diff`, and `revert` of its previous turn (a
/// plan, then the plan applied by its id). Afterwards the worktree and the run's notes prove
/// it.
#[test]
fn codex_reverts_its_previous_turn_through_the_mcp_server() {
    let s = Session::new();
    let (root, thread) = first_turn(&s, &["--mcp"]);
    let bypass = ["--dangerously-bypass-hook-trust"];
    let run = s.run();
    let (_, printed) = exec_output(
        &s,
        &[&bypass[..], &["resume", &thread]].concat(),
        &super::mcp_revert_script(&run),
    );
    let all: Vec<String> = s
        .server
        .agent_requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    assert!(
        all[0]
            .contains("mcp__git_agent_rewind: git agent-rewind: the checkpoints of this worktree"),
        "{}",
        all[0]
    );
    assert!(!root.join("one.txt").exists(), "{printed}");
    s.assert_reverted_through_mcp(
        &run,
        all.last().unwrap(),
        &format!("codex session {thread}"),
    );
}

/// A compaction of a Codex thread hands it the run's manifest. The scripted server reports a
/// million tokens for the first answer to a prompt saying `OVERFLOW`, past
/// `model_auto_compact_token_limit`, so Codex compacts the thread in the middle of its
/// first turn (its compaction request: the history, no tools), fires `PreCompact`,
/// `PostCompact`, then `SessionStart` with `source: compact`; our `SessionStart` hook
/// answers with the manifest, and the next request holds it. A new thread is given none,
/// so the manifest can only have come from the compaction; it names the run's start, the
/// newest checkpoint when the compaction came (Codex).
#[test]
fn a_compacted_codex_thread_is_given_the_runs_manifest() {
    let s = Session::new();
    s.repo.ok(&["hooks", "install", "--agent", "codex"]);
    configure_with(&s, "model_auto_compact_token_limit = 100000\n");
    let root = s.repo.path().canonicalize().unwrap();
    let thread = exec(
        &s,
        &["--dangerously-bypass-hook-trust"],
        &format!("OVERFLOW WRITE {} one", root.join("one.txt").display()),
    );
    assert_eq!(
        std::fs::read_to_string(root.join("one.txt")).unwrap(),
        "one\n"
    );
    let run = s.run();
    let manifest = format!("git agent-rewind rewind {run} --to {run}@0");
    let requests = s.server.requests();
    let bodies: Vec<String> = requests.iter().map(|r| r.body.to_string()).collect();
    let compaction = requests
        .iter()
        .position(|r| r.body["tools"].as_array().is_none_or(|t| t.is_empty()))
        .unwrap_or_else(|| panic!("Codex compacted the thread: {bodies:#?}"));
    assert!(
        bodies[compaction].contains("OVERFLOW"),
        "the compaction request holds the history: {}",
        bodies[compaction]
    );
    assert!(
        bodies[..compaction].iter().all(|b| !b.contains(&manifest)),
        "a new thread is given no manifest"
    );
    let after = bodies
        .get(compaction + 1)
        .unwrap_or_else(|| panic!("a request after the compaction: {bodies:#?}"));
    assert!(
        after.contains(&format!("this session records into run {run}"))
            && after.contains(&manifest),
        "the first request after the compaction holds the manifest: {after}"
    );
    s.assert_turns("codex", &thread, &["one.txt"]);
}
