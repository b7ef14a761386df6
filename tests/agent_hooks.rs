//! Hooks of every agent (Codex CLI, Gemini CLI, Cursor, OpenCode, Claude Code): the payloads
//! of `fixtures/<agent>/` fed through the binary start a run, note edited files and record
//! turns carrying the agent, its session, its transcript and the touched paths; each
//! agent's project configuration is merged and unmerged without losing anything of the
//! user's; bad payloads exit 0 and write nothing.

mod common;

use common::{Repo, checkpoints, refs, tool_stdin};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Output;

/// The project root every fixture names.
const FIXTURE_ROOT: &str = "/home/dev/src/shop-api";

fn fixture(agent: &str, name: &str) -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(agent)
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every string under `v` naming the fixture project moved to `repo`.
fn retarget(v: &mut Value, repo: &Path) {
    match v {
        Value::String(s) if s.starts_with(FIXTURE_ROOT) => {
            *s = format!("{}{}", repo.display(), &s[FIXTURE_ROOT.len()..]);
        }
        Value::Array(a) => a.iter_mut().for_each(|x| retarget(x, repo)),
        Value::Object(o) => o.values_mut().for_each(|x| retarget(x, repo)),
        _ => {}
    }
}

/// A fixture pointed at `repo`, its transcript (when it names one) at `transcript`.
fn payload(agent: &str, name: &str, repo: &Path, transcript: &Path) -> Vec<u8> {
    let mut v = fixture(agent, name);
    retarget(&mut v, repo);
    if v.get("transcript_path").is_some_and(Value::is_string) {
        v["transcript_path"] = transcript.to_str().unwrap().into();
    }
    serde_json::to_vec(&v).unwrap()
}

/// `hook <agent> --json` from a directory outside the repository (the payload decides),
/// exit 0, its outcome.
fn hook(agent: &str, input: &[u8], args: &[&str]) -> Value {
    let elsewhere = tempfile::tempdir().unwrap();
    let mut a = vec!["--json", "hook", agent];
    a.extend_from_slice(args);
    let out = tool_stdin(elsewhere.path(), &a, input, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `hook <agent>` without `--json`: exit 0 and nothing on stdout whatever the input.
fn quiet_hook(agent: &str, input: &[u8]) -> Output {
    let elsewhere = tempfile::tempdir().unwrap();
    let out = tool_stdin(elsewhere.path(), &["hook", agent], input, &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty(), "{agent}: nothing on stdout");
    out
}

struct Case {
    agent: &'static str,
    start: &'static str,
    edits: &'static [&'static str],
    stop: &'static str,
    touched: &'static [&'static str],
    model: Option<&'static str>,
    resume: &'static str,
}

const CASES: [Case; 5] = [
    Case {
        agent: "claude",
        start: "session-start.json",
        edits: &["post-tool-use-edit.json"],
        stop: "stop.json",
        touched: &["src/cart.rs"],
        model: None,
        resume: "claude --resume 8f3c1a52-7d4e-4b9a-9c1e-2f6d0b7a4e31",
    },
    Case {
        agent: "codex",
        start: "session-start.json",
        edits: &["post-tool-use-apply-patch.json"],
        stop: "stop.json",
        touched: &["src/cart.rs", "src/discount.rs"],
        model: Some("gpt-5.1-codex"),
        resume: "codex resume 0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
    },
    Case {
        agent: "gemini",
        start: "session-start.json",
        edits: &["after-tool-write-file.json", "after-tool-replace.json"],
        stop: "after-agent.json",
        touched: &["src/cart.rs", "src/discount.rs"],
        model: None,
        resume: "gemini --resume 3c9e7a10-5b2d-4f8e-a1c6-7d0b9e2f4a83",
    },
    Case {
        agent: "cursor",
        start: "session-start.json",
        edits: &["after-file-edit.json"],
        stop: "stop.json",
        touched: &["src/cart.rs"],
        model: Some("claude-4.5-sonnet"),
        resume: "cursor-agent --resume b7e2c4d1-9a3f-4e6b-8c0d-2f5a7e9b1c34",
    },
    Case {
        agent: "opencode",
        start: "session-created.json",
        edits: &["file-edited.json"],
        stop: "session-idle.json",
        touched: &["src/cart.rs"],
        model: None,
        resume: "opencode --session ses_6a1f0c3e9ffeXk2Lq8Rz4TbN1d",
    },
];

#[test]
fn every_agent_records_its_session_its_edits_and_its_turns() {
    for case in &CASES {
        let agent = case.agent;
        let repo = Repo::new();
        let dir = repo.path();
        let t = tempfile::tempdir().unwrap();
        let transcript = t.path().join("transcript.jsonl");
        std::fs::write(&transcript, b"{\"role\":\"user\",\"content\":\"hi\"}\n").unwrap();
        let p = |name: &str| payload(agent, name, dir, &transcript);

        // Session start: a run is started, recorded as this agent's, and made active.
        let started = hook(agent, &p(case.start), &[]);
        assert_eq!(started["action"], "started", "{agent}: {started}");
        let run = started["run"].as_str().unwrap().to_string();
        let root = &checkpoints(dir, &run)[0];
        assert_eq!(root["agent"], agent, "{agent}: {root}");
        assert!(
            root["label"].as_str().unwrap().contains("session"),
            "{root}"
        );
        assert_eq!(repo.json(&["status"])["run"], run.as_str());
        // A second session start joins it.
        assert_eq!(hook(agent, &p(case.start), &[])["action"], "joined");

        // Edits are noted, nothing is recorded for them.
        repo.write("src/cart.rs", "let mut total = 0;\n");
        repo.write("src/discount.rs", "pub fn apply() {}\n");
        let before = refs(dir, "refs/");
        for e in case.edits {
            let out = hook(agent, &p(e), &[]);
            assert_eq!(out["action"], "noted", "{agent} {e}: {out}");
        }
        assert_eq!(
            refs(dir, "refs/"),
            before,
            "{agent}: an edit records nothing"
        );

        // The end of the turn: a turn checkpoint with everything.
        let out = hook(agent, &p(case.stop), &[]);
        assert_eq!(out["action"], "recorded", "{agent}: {out}");
        let cps = checkpoints(dir, &run);
        let turn = cps.last().unwrap();
        assert_eq!(turn["event"], "turn", "{agent}");
        assert_eq!(turn["agent"], agent, "{agent}: {turn}");
        assert_eq!(turn["sdk_session_id"], root["sdk_session_id"], "{agent}");
        let touched: Vec<&str> = turn["touched"]
            .as_array()
            .unwrap_or_else(|| panic!("{agent}: no touched in {turn}"))
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(touched, case.touched, "{agent}");
        if let Some(m) = case.model {
            assert_eq!(turn["meta"]["model"], m, "{agent}");
        }
        let files = repo.git(&[
            "ls-tree",
            "-r",
            "--name-only",
            turn["checkpoint"].as_str().unwrap(),
        ]);
        assert!(files.contains("src/discount.rs"), "{agent}: {files}");
        if fixture(agent, case.stop)["transcript_path"].is_string() {
            let blob = repo.git(&["hash-object", transcript.to_str().unwrap()]);
            assert_eq!(
                turn["artifacts"][0]["digest"],
                format!("git-blob:{}", blob.trim()).as_str(),
                "{agent}"
            );
        }

        // The same turn again: an identical state prints `unchanged` and writes nothing.
        let before = refs(dir, "refs/");
        let again = hook(agent, &p(case.stop), &[]);
        assert_eq!(again["action"], "unchanged", "{agent}: {again}");
        assert_eq!(refs(dir, "refs/"), before, "{agent}");

        // The command that resumes the conversation: in status, and after a rewind.
        let status = repo.json(&["status"]);
        assert_eq!(status["resume_command"], case.resume, "{agent}: {status}");
        assert!(repo.ok(&["status"]).contains(case.resume), "{agent}");
        let at = format!("{run}@1");
        let forked = repo.json(&["fork", &run, "--to", &at, "--no-checkout"]);
        assert_eq!(forked["resume_command"], case.resume, "{agent}: {forked}");
        let rewound = repo.json(&["rewind", &run, "--to", &at]);
        assert_eq!(rewound["resume_command"], case.resume, "{agent}: {rewound}");
        assert!(
            repo.ok(&[
                "rewind",
                forked["run"].as_str().unwrap(),
                "--to",
                &format!("{}@0", forked["run"].as_str().unwrap())
            ])
            .contains(case.resume)
        );
        repo.assert_fsck();
    }
}

#[test]
fn codex_notify_and_cursor_workspace_roots() {
    let repo = Repo::new();
    let dir = repo.path();
    // Codex's legacy `notify` program: the payload is the last argument, stdin is empty.
    let mut n = fixture("codex", "notify.json");
    retarget(&mut n, dir);
    let out = hook("codex", b"", &[&n.to_string()]);
    assert_eq!(out["action"], "recorded", "{out}");
    let run = out["run"].as_str().unwrap().to_string();
    let turn = checkpoints(dir, &run).last().unwrap().clone();
    assert_eq!(turn["agent"], "codex");
    assert_eq!(
        turn["meta"]["turn_id"],
        "0199a1b2-d0e1-7f20-9a31-b2c3d4e5f607"
    );

    // A transcript_path of null: a turn without a pointer.
    repo.write("b.txt", "b\n");
    let t = Path::new("/nonexistent");
    let out = hook(
        "codex",
        &payload("codex", "stop-no-transcript.json", dir, t),
        &[],
    );
    assert_eq!(out["action"], "recorded", "{out}");
    assert!(
        checkpoints(dir, &run).last().unwrap()["artifacts"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // Cursor: the first workspace root that is a git worktree decides.
    let other = tempfile::tempdir().unwrap();
    let mut s = fixture("cursor", "stop.json");
    retarget(&mut s, dir);
    s["workspace_roots"] = json!([other.path(), dir]);
    s["transcript_path"] = Value::Null;
    repo.write("c.txt", "c\n");
    let out = hook("cursor", s.to_string().as_bytes(), &[]);
    assert_eq!(out["action"], "recorded", "{out}");
    assert_eq!(out["run"], run.as_str());
    assert_eq!(
        checkpoints(dir, &run).last().unwrap()["meta"]["status"],
        "completed"
    );
}

#[test]
fn bad_payloads_exit_0_and_write_nothing() {
    let repo = Repo::new();
    let dir = repo.path();
    let outside = tempfile::tempdir().unwrap();
    let t = outside.path().join("t.jsonl");
    let cases = [
        ("claude", "stop.json", "session_id"),
        ("codex", "stop.json", "session_id"),
        ("gemini", "after-agent.json", "session_id"),
        ("cursor", "stop.json", "conversation_id"),
    ];
    let before = refs(dir, "refs/");
    for (agent, stop, id) in cases {
        let good: Value = serde_json::from_slice(&payload(agent, stop, dir, &t)).unwrap();
        let with = |k: &str, v: Value| {
            let mut x = good.clone();
            x[k] = v;
            x.to_string().into_bytes()
        };
        let inputs: Vec<(&str, Vec<u8>)> = vec![
            ("not JSON", b"{\"hook_event_name\": \"Stop\", ".to_vec()),
            ("binary", b"\x00\xff\xfe".to_vec()),
            ("an array", b"[1,2]".to_vec()),
            ("a number for the id", with(id, json!(42))),
            (
                "an object for the event",
                with("hook_event_name", json!({})),
            ),
            ("a 10 MB id", with(id, json!("x".repeat(10 << 20)))),
            (
                "a relative transcript",
                with("transcript_path", json!("rel/t.jsonl")),
            ),
        ];
        for (what, input) in inputs {
            let out = quiet_hook(agent, &input);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("ignored"), "{agent}, {what}: {err}");
            assert!(err.lines().count() <= 2, "{agent}, {what}: {err}");
        }
        // A cwd (or workspace root) outside any repository: nothing happens.
        let mut away = good.clone();
        retarget(&mut away, outside.path());
        let s = away
            .to_string()
            .replace(dir.to_str().unwrap(), outside.path().to_str().unwrap());
        let out = hook(agent, s.as_bytes(), &[]);
        assert_eq!(out["action"], "skipped", "{agent}: {out}");
        assert!(
            out["reason"]
                .as_str()
                .unwrap()
                .contains("not in a git worktree")
        );
    }
    // OpenCode: a payload without an event, an event of the wrong type.
    for input in [json!({"directory": dir}), json!({"event": "session.idle"})] {
        let out = quiet_hook("opencode", input.to_string().as_bytes());
        assert!(String::from_utf8_lossy(&out.stderr).contains("ignored"));
    }
    assert_eq!(refs(dir, "refs/"), before);
    assert!(!dir.join(".git/agent-rewind/touched").exists());

    // A 10 MB field we do not use is read and ignored: the turn is recorded.
    let mut big: Value =
        serde_json::from_slice(&payload("gemini", "after-agent.json", dir, &t)).unwrap();
    big["prompt_response"] = json!("y".repeat(10 << 20));
    assert_eq!(
        hook("gemini", big.to_string().as_bytes(), &[])["action"],
        "recorded"
    );
    // Events we do not handle are logged and ignored.
    for (agent, name) in [
        ("codex", "user-prompt-submit.json"),
        ("gemini", "session-end.json"),
        ("cursor", "before-shell-execution.json"),
        ("opencode", "message-updated.json"),
        ("claude", "pre-tool-use.json"),
    ] {
        let before = refs(dir, "refs/");
        let out = quiet_hook(agent, &payload(agent, name, dir, &t));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("ignored"),
            "{agent} {name}"
        );
        assert_eq!(refs(dir, "refs/"), before, "{agent} {name}");
    }
}

/// The user's own configuration of each agent, before we install anything.
fn user_configs() -> Vec<(&'static str, Value)> {
    vec![
        (
            ".claude/settings.json",
            json!({"model": "opus", "hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}]}}),
        ),
        (
            ".codex/hooks.json",
            json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done", "timeout": 30}]}]}}),
        ),
        (
            ".gemini/settings.json",
            json!({"general": {"vimMode": true}, "hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [{"name": "guard", "type": "command", "command": "guard.sh", "timeout": 5000}]}]}}),
        ),
        (
            ".cursor/hooks.json",
            json!({"version": 1, "hooks": {"afterFileEdit": [{"command": "./fmt.sh"}]}}),
        ),
    ]
}

#[test]
fn install_merges_every_agent_and_uninstall_removes_exactly_ours() {
    let repo = Repo::new();
    let configs = user_configs();
    for (path, v) in &configs {
        repo.write(path, &serde_json::to_string_pretty(v).unwrap());
    }
    let out = repo.json(&["hooks", "install", "--agent", "all"]);
    let agents = out["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 5, "{out}");
    assert!(
        out["git"].as_array().unwrap().is_empty(),
        "--agent alone: no git hooks"
    );
    let read = |p: &str| -> Value { serde_json::from_str(&repo.read(p)).unwrap() };

    let claude = read(".claude/settings.json");
    assert_eq!(claude["model"], "opus");
    assert_eq!(
        claude["hooks"]["PostToolUse"][0]["hooks"][0]["command"],
        "lint"
    );
    assert_eq!(
        claude["hooks"]["PostToolUse"][1]["matcher"],
        "Edit|Write|MultiEdit|NotebookEdit"
    );
    let codex = read(".codex/hooks.json");
    assert_eq!(codex["hooks"]["Stop"][0]["hooks"][0]["command"], "say done");
    assert_eq!(
        codex["hooks"]["Stop"][1]["hooks"][0]["command"],
        "git agent-rewind hook codex"
    );
    assert_eq!(
        codex["hooks"]["PostToolUse"][0]["matcher"],
        "apply_patch|Edit|Write"
    );
    let gemini = read(".gemini/settings.json");
    assert_eq!(gemini["general"]["vimMode"], true);
    assert_eq!(
        gemini["hooks"]["AfterAgent"][0]["hooks"][0]["name"],
        "git-agent-rewind"
    );
    assert_eq!(
        gemini["hooks"]["AfterTool"][0]["matcher"],
        "write_file|replace"
    );
    let cursor = read(".cursor/hooks.json");
    assert_eq!(cursor["hooks"]["afterFileEdit"][0]["command"], "./fmt.sh");
    assert_eq!(
        cursor["hooks"]["afterFileEdit"][1]["command"],
        "git agent-rewind hook cursor"
    );
    assert_eq!(
        cursor["hooks"]["stop"][0]["command"],
        "git agent-rewind hook cursor"
    );
    let plugin = repo.read(".opencode/plugins/git-agent-rewind.js");
    assert!(plugin.contains("\"agent-rewind\", \"hook\", \"opencode\""));

    // Idempotent: installing again changes no byte.
    let files = [
        ".claude/settings.json",
        ".codex/hooks.json",
        ".gemini/settings.json",
        ".cursor/hooks.json",
        ".opencode/plugins/git-agent-rewind.js",
    ];
    let bytes: Vec<String> = files.iter().map(|f| repo.read(f)).collect();
    let again = repo.json(&["hooks", "install", "--agent", "codex", "--agent", "all"]);
    for a in again["agents"].as_array().unwrap() {
        assert_eq!(a["action"], "unchanged", "{a}");
    }
    let after: Vec<String> = files.iter().map(|f| repo.read(f)).collect();
    assert_eq!(after, bytes);

    // Uninstall removes exactly ours: every user file back as it was, ours gone.
    let removed = repo.json(&["hooks", "uninstall", "--agent", "all"]);
    assert_eq!(removed["agents"].as_array().unwrap().len(), 5);
    for (path, v) in &configs {
        assert_eq!(&read(path), v, "{path}");
    }
    assert!(
        !repo
            .path()
            .join(".opencode/plugins/git-agent-rewind.js")
            .exists()
    );
    let nothing = repo.json(&["hooks", "uninstall", "--agent", "all"]);
    for a in nothing["agents"].as_array().unwrap() {
        assert_eq!(a["action"], "absent", "{a}");
    }
}

#[test]
fn install_creates_and_uninstall_deletes_what_it_created_and_refuses_what_it_cannot_read() {
    let repo = Repo::new();
    repo.ok(&["hooks", "install", "--agent", "cursor", "--agent", "gemini"]);
    let cursor: Value = serde_json::from_str(&repo.read(".cursor/hooks.json")).unwrap();
    assert_eq!(cursor["version"], 1);
    repo.ok(&[
        "hooks",
        "uninstall",
        "--agent",
        "cursor",
        "--agent",
        "gemini",
    ]);
    assert!(!repo.path().join(".cursor/hooks.json").exists());
    assert!(!repo.path().join(".gemini/settings.json").exists());

    // A configuration that is not JSON: refused, and nothing written for any agent.
    let broken = "{ \"hooks\": { // comment\n} }\n";
    repo.write(".gemini/settings.json", broken);
    let out = repo.run(&["hooks", "install", "--agent", "all"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is not valid JSON") && err.contains("hint:"),
        "{err}"
    );
    assert_eq!(repo.read(".gemini/settings.json"), broken);
    for f in [".claude", ".codex", ".cursor", ".opencode"] {
        assert!(!repo.path().join(f).exists(), "{f}");
    }
    // A plugin file of that name that is not ours: refused, untouched.
    std::fs::remove_file(repo.path().join(".gemini/settings.json")).unwrap();
    repo.write(
        ".opencode/plugins/git-agent-rewind.js",
        "export const Mine = 1\n",
    );
    let out = repo.run(&["hooks", "install", "--agent", "opencode"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        repo.read(".opencode/plugins/git-agent-rewind.js"),
        "export const Mine = 1\n"
    );
    repo.ok(&["hooks", "uninstall", "--agent", "opencode"]);
    assert!(
        repo.path()
            .join(".opencode/plugins/git-agent-rewind.js")
            .exists()
    );
    // An unknown agent is a usage error.
    let out = repo.run(&["hooks", "install", "--agent", "copilot"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn concurrent_edit_hooks_lose_no_path() {
    let repo = Repo::new();
    let dir = repo.path().to_path_buf();
    let t = dir.join("none");
    hook(
        "claude",
        &payload("claude", "session-start.json", &dir, &t),
        &[],
    );
    let children: Vec<_> = (0..8)
        .map(|i| {
            let mut v = fixture("claude", "post-tool-use-edit.json");
            retarget(&mut v, &dir);
            v["tool_input"]["file_path"] = format!("{}/f{i}.txt", dir.display()).into();
            let dir = dir.clone();
            std::thread::spawn(move || {
                tool_stdin(&dir, &["hook", "claude"], v.to_string().as_bytes(), &[])
            })
        })
        .collect();
    for c in children {
        assert_eq!(c.join().unwrap().status.code(), Some(0));
    }
    repo.write("f0.txt", "x\n");
    let out = hook("claude", &payload("claude", "stop.json", &dir, &t), &[]);
    let run = out["run"].as_str().unwrap();
    let turn = checkpoints(&dir, run).last().unwrap().clone();
    let touched: Vec<String> = (0..8).map(|i| format!("f{i}.txt")).collect();
    assert_eq!(turn["touched"], json!(touched));
    // Taken: the next turn carries nothing.
    repo.write("g.txt", "g\n");
    hook("claude", &payload("claude", "stop.json", &dir, &t), &[]);
    assert!(
        checkpoints(&dir, run)
            .last()
            .unwrap()
            .get("touched")
            .is_none()
    );
}

/// The OpenCode plugin itself, run by Node.js (OpenCode runs plugins on Bun, which provides
/// the same `node:child_process`): its events reach `git agent-rewind hook opencode`. Skipped,
/// saying so, where no `node` is installed.
#[test]
fn the_opencode_plugin_forwards_its_events() {
    if std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("node is not installed: the OpenCode plugin was not run");
        return;
    }
    let repo = Repo::new();
    let dir = repo.path();
    repo.ok(&["hooks", "install", "--agent", "opencode"]);
    let js = tempfile::tempdir().unwrap();
    let plugin = js.path().join("plugin.mjs");
    std::fs::copy(dir.join(".opencode/plugins/git-agent-rewind.js"), &plugin).unwrap();
    let events: Vec<Value> = [
        "session-created.json",
        "file-edited.json",
        "session-idle.json",
    ]
    .iter()
    .map(|f| {
        let mut v = fixture("opencode", f);
        retarget(&mut v, dir);
        v["event"].clone()
    })
    .collect();
    let driver = format!(
        "import {{ GitAgentRewind }} from {plugin:?};\n\
         const hooks = await GitAgentRewind({{ directory: {dir:?}, worktree: {dir:?} }});\n\
         for (const event of {events}) await hooks.event({{ event }});\n",
        plugin = plugin.to_str().unwrap(),
        dir = dir.to_str().unwrap(),
        events = Value::from(events),
    );
    std::fs::write(js.path().join("driver.mjs"), driver).unwrap();
    repo.write("src/cart.rs", "let mut total = 0;\n");
    let bin_dir = common::bin().parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
    let out = std::process::Command::new("node")
        .arg(js.path().join("driver.mjs"))
        .current_dir(dir)
        .env("PATH", path)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("AGENT_RUN")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status = repo.json(&["status"]);
    let run = status["run"]
        .as_str()
        .expect("session.created started a run");
    let turn = checkpoints(dir, run).last().unwrap().clone();
    assert_eq!(turn["event"], "turn", "{turn}");
    assert_eq!(turn["agent"], "opencode");
    assert_eq!(turn["touched"], json!(["src/cart.rs"]));
    assert_eq!(
        status["resume_command"],
        "opencode --session ses_6a1f0c3e9ffeXk2Lq8Rz4TbN1d"
    );
}
