//! `git agent-rewind mcp` driven by a client written here against the protocol (JSON-RPC
//! lines on stdio): initialize, the tool list with its schemas, each read tool, the
//! plan-then-apply writes with their guard, and the protocol's errors; the size limit of
//! one message in `limits`; what follows an applied write (the notification to a client that
//! asked, the user's `post-agent-rewind` hook) in `events`.

mod events;
mod guard;
mod limits;

use crate::common::{Repo, bin, tool_stdin};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// A running `git agent-rewind mcp` and the client's side of its pipes.
struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Client {
    /// Start the server in `repo` and introduce ourselves as `client`.
    fn start(repo: &Repo, client: &str) -> (Client, Value) {
        Client::start_with(repo, client, json!({}))
    }

    /// [`Client::start`], declaring `capabilities` in `initialize`.
    fn start_with(repo: &Repo, client: &str, capabilities: Value) -> (Client, Value) {
        let mut c = Client::spawn(repo);
        let init = c.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": capabilities,
                   "clientInfo": {"name": client, "version": "1.0"}}),
        );
        c.notify("notifications/initialized", json!({}));
        (c, init)
    }

    /// The server started in `repo`; nothing said to it yet.
    fn spawn(repo: &Repo) -> Client {
        let mut child = Command::new(bin())
            .arg("mcp")
            .current_dir(repo.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env_remove("AGENT_RUN")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the MCP server");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Client {
            child,
            stdin,
            stdout,
            next: 1,
        }
    }

    fn send(&mut self, msg: &Value) {
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next message the server writes.
    fn receive(&mut self) -> Value {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).unwrap();
        assert!(n > 0, "the server closed its output");
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not JSON-RPC on stdout ({e}): {line:?}"))
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// A request and its whole response (`result` or `error`).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(
                n > 0,
                "the server closed its output before answering {method}"
            );
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not JSON-RPC on stdout ({e}): {line:?}"));
            if v["id"] == id {
                return v;
            }
        }
    }

    /// `tools/call`: the result (structured content and `isError`).
    fn call(&mut self, tool: &str, args: Value) -> Value {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        assert!(r.get("error").is_none(), "{tool}: {r:#}");
        r["result"].clone()
    }

    /// A tool call that succeeded: its structured content.
    fn ok(&mut self, tool: &str, args: Value) -> Value {
        let r = self.call(tool, args);
        assert_eq!(r["isError"], false, "{tool}: {r:#}");
        r["structuredContent"].clone()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `hook <agent>` with `payload` (a Claude-style payload at the repository).
fn hook(repo: &Repo, agent: &str, payload: Value) {
    let out = tool_stdin(
        repo.path(),
        &["--json", "hook", agent],
        payload.to_string().as_bytes(),
        &[],
    );
    assert!(out.status.success());
}

/// A turn of `agent` (`claude` or `codex`) in session `session`: each of `files` written
/// and reported by the agent's file-edit hook (unless `reported` is false), then the end of
/// the turn, in step `step` when given (`AGENT_STEP`).
fn agent_turn(
    repo: &Repo,
    agent: &str,
    session: &str,
    step: Option<&str>,
    files: &[(&str, &str)],
    reported: bool,
) {
    let root = repo.path().canonicalize().unwrap();
    let cwd = root.to_str().unwrap();
    let env: Vec<(&str, &str)> = step.map(|s| ("AGENT_STEP", s)).into_iter().collect();
    let send = |payload: Value| {
        let out = tool_stdin(
            repo.path(),
            &["--json", "hook", agent],
            payload.to_string().as_bytes(),
            &env,
        );
        assert!(out.status.success());
    };
    for (path, content) in files {
        repo.write(path, content);
        if reported {
            send(
                json!({"session_id": session, "cwd": cwd, "hook_event_name": "PostToolUse",
                        "tool_name": "Write", "tool_input": {"file_path": root.join(path)}}),
            );
        }
    }
    send(
        json!({"session_id": session, "cwd": cwd, "hook_event_name": "Stop",
                "turn_id": format!("t-{}", files.len()), "model": "m-test"}),
    );
}

/// A run with a start, a turn of Claude Code's (writing `claude.txt`) and a turn of
/// Codex's (writing `codex.txt`), recorded by their hooks.
fn two_agents() -> Repo {
    let repo = Repo::new();
    let root = repo.path().canonicalize().unwrap();
    let cwd = root.to_str().unwrap();
    hook(
        &repo,
        "claude",
        json!({"session_id": "s-claude", "cwd": cwd, "hook_event_name": "SessionStart", "source": "startup"}),
    );
    agent_turn(
        &repo,
        "claude",
        "s-claude",
        None,
        &[("claude.txt", "from claude\n")],
        true,
    );
    agent_turn(
        &repo,
        "codex",
        "s-codex",
        None,
        &[("codex.txt", "from codex\n")],
        true,
    );
    repo
}

fn run_of(repo: &Repo) -> String {
    repo.json(&["status"])["run"].as_str().unwrap().to_string()
}

#[test]
fn initialize_lists_the_tools_with_their_schemas_and_the_read_tools_answer() {
    let repo = two_agents();
    let run = run_of(&repo);
    let (mut c, init) = Client::start(&repo, "claude-code");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init:#}"
    );
    assert!(init["result"]["serverInfo"]["name"].is_string(), "{init:#}");

    let tools = c.request("tools/list", json!({}));
    let mut names: Vec<String> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            assert_eq!(t["inputSchema"]["type"], "object", "{t:#}");
            t["name"].as_str().unwrap().to_string()
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "blame",
            "checkpoint",
            "diff",
            "list_runs",
            "log",
            "restore",
            "revert",
            "show_checkpoint",
            "status"
        ]
    );

    let runs = c.ok("list_runs", json!({}));
    assert_eq!(runs["runs"][0]["run"], run.as_str(), "{runs:#}");
    let shown = c.ok("show_checkpoint", json!({"checkpoint": format!("{run}@1")}));
    assert_eq!(shown["agent"], "claude", "{shown:#}");
    assert_eq!(shown["touched"], json!(["claude.txt"]));
    assert_eq!(c.ok("status", json!({}))["run"], run.as_str());
    let log = c.ok("log", json!({}));
    assert_eq!(log["checkpoints"].as_array().unwrap().len(), 3, "{log:#}");

    // Who wrote each line: Claude's turn wrote claude.txt (a file git does not know yet);
    // `lines` narrows as git's -L does.
    let b = c.ok("blame", json!({"file": "claude.txt"}));
    let line = &b["lines"][0];
    assert_eq!(line["origin"], "agent", "{b:#}");
    assert_eq!(line["agent"]["agent"], "claude", "{b:#}");
    assert_eq!(line["agent"]["run"], run.as_str(), "{b:#}");
    assert_eq!(b["truncated"], false);
    let b = c.ok("blame", json!({"file": "claude.txt", "lines": ["1,1"]}));
    assert_eq!(b["lines"].as_array().unwrap().len(), 1, "{b:#}");
    let r = c.call("blame", json!({"file": "claude.txt", "lines": ["5,6"]}));
    assert_eq!(r["isError"], true, "{r:#}");
    for outside in ["../outside", ".git/config", "."] {
        let r = c.call("blame", json!({"file": outside}));
        assert_eq!(r["isError"], true, "{outside}: {r:#}");
    }

    // A diff to the worktree as it is now, then between two checkpoints, one path only.
    repo.write("claude.txt", "edited by hand\n");
    let d = c.ok("diff", json!({"from": format!("{run}@1")}));
    assert_eq!(d["to"], "worktree");
    let patch = d["patch"].as_str().unwrap();
    assert!(
        patch.contains("-from claude") && patch.contains("+edited by hand"),
        "{patch}"
    );
    let d = c.ok(
        "diff",
        json!({"from": format!("{run}@0"), "to": format!("{run}@2"), "paths": ["codex.txt"]}),
    );
    let patch = d["patch"].as_str().unwrap();
    assert!(
        patch.contains("+from codex") && !patch.contains("claude.txt"),
        "{patch}"
    );

    // Errors: an unknown tool is a protocol error; an unknown checkpoint and arguments that
    // do not fit the schema are tool errors; a path outside the worktree is refused.
    let r = c.request("tools/call", json!({"name": "rewind", "arguments": {}}));
    assert!(r["error"]["code"].is_i64(), "{r:#}");
    let r = c.call("show_checkpoint", json!({"checkpoint": "nope@9"}));
    assert_eq!(r["isError"], true, "{r:#}");
    let r = c.call("diff", json!({"to": 3}));
    assert_eq!(r["isError"], true, "{r:#}");
    let r = c.call(
        "diff",
        json!({"from": format!("{run}@1"), "paths": ["../outside"]}),
    );
    assert_eq!(r["isError"], true, "{r:#}");
    repo.assert_fsck();
}

/// The server introduces itself by the tool's name and version.
#[test]
fn the_server_introduces_itself_as_the_tool() {
    let repo = Repo::new();
    let (_c, init) = Client::start(&repo, "claude-code");
    let info = &init["result"]["serverInfo"];
    assert_eq!(info["name"], "git-agent-rewind", "{init:#}");
    assert_eq!(info["version"], env!("CARGO_PKG_VERSION"), "{init:#}");
}

#[test]
fn revert_plans_first_applies_only_its_plan_and_only_the_callers_own_turns() {
    let repo = two_agents();
    let run = run_of(&repo);
    let (mut c, _) = Client::start(&repo, "claude-code");
    let turn = format!("{run}@1");

    // Without plan_id: the plan and its id, nothing written.
    let planned = c.ok("revert", json!({"target": turn}));
    assert_eq!(planned["applied"], false, "{planned:#}");
    assert_eq!(planned["plan"]["files"][0]["path"], "claude.txt");
    let id = planned["plan_id"].as_str().unwrap().to_string();
    assert!(repo.path().join("claude.txt").exists());

    // A plan whose file changed since is refused, and nothing is written.
    repo.write("claude.txt", "from claude, then edited\n");
    let stale = c.call("revert", json!({"target": turn, "plan_id": id}));
    assert_eq!(stale["isError"], true, "{stale:#}");
    assert_eq!(
        std::fs::read_to_string(repo.path().join("claude.txt")).unwrap(),
        "from claude, then edited\n"
    );
    repo.write("claude.txt", "from claude\n");

    // The plan applied: the turn's file goes, Codex's stays, an undo is named, and the
    // revert is recorded as Claude's session's.
    let applied = c.ok("revert", json!({"target": turn, "plan_id": id}));
    assert_eq!(applied["applied"], true, "{applied:#}");
    assert!(!repo.path().join("claude.txt").exists());
    assert!(repo.path().join("codex.txt").exists());
    let undo = applied["undo"].as_str().unwrap();
    assert!(undo.starts_with("git agent-rewind undo "), "{undo}");
    let all_notes = repo.git(&[
        "log",
        "--format=%N",
        &format!("--notes=refs/notes/agent-runs/{run}"),
        &format!("refs/agent-runs/{run}/turn"),
    ]);
    assert!(
        all_notes.contains("claude session s-claude (MCP)"),
        "{all_notes}"
    );

    // Codex's turn is not Claude's to revert, unless a person allows it.
    let theirs = format!("{run}@2");
    let r = c.call("revert", json!({"target": theirs}));
    assert_eq!(r["isError"], true, "{r:#}");
    assert!(
        r["structuredContent"]["error"]
            .as_str()
            .unwrap()
            .contains("recorded by codex")
    );
    repo.git(&["config", "agentRewind.mcpAllow", "other-agents"]);
    let r = c.ok("revert", json!({"target": theirs}));
    assert_eq!(r["applied"], false);

    // Undo brings the reverted file back, as the tool said.
    let words: Vec<&str> = undo.split_whitespace().collect();
    repo.ok(&words[2..]);
    assert_eq!(
        std::fs::read_to_string(repo.path().join("claude.txt")).unwrap(),
        "from claude\n"
    );
    repo.assert_fsck();
}

#[test]
fn restore_and_checkpoint_through_mcp() {
    let repo = two_agents();
    let run = run_of(&repo);
    let (mut c, _) = Client::start(&repo, "claude-code");
    // A hand edit no turn recorded is no one's to take back.
    repo.write("claude.txt", "edited by hand\n");
    let r = c.call(
        "restore",
        json!({"checkpoint": format!("{run}@1"), "paths": ["claude.txt"]}),
    );
    assert_eq!(r["isError"], true, "{r:#}");
    let why = r["structuredContent"]["error"].as_str().unwrap();
    assert!(
        why.contains("claude.txt changed since the newest checkpoint"),
        "{why}"
    );
    assert_eq!(repo.read("claude.txt"), "edited by hand\n");
    // Claude's own later turn broke it: that Claude may take back.
    agent_turn(
        &repo,
        "claude",
        "s-claude",
        None,
        &[("claude.txt", "broken\n")],
        true,
    );
    let planned = c.ok(
        "restore",
        json!({"checkpoint": format!("{run}@1"), "paths": ["claude.txt"]}),
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join("claude.txt")).unwrap(),
        "broken\n",
        "a plan writes nothing"
    );
    let id = planned["plan_id"].as_str().unwrap();
    let applied = c.ok(
        "restore",
        json!({"checkpoint": format!("{run}@1"), "paths": ["claude.txt"], "plan_id": id}),
    );
    assert_eq!(applied["applied"], true, "{applied:#}");
    assert_eq!(
        std::fs::read_to_string(repo.path().join("claude.txt")).unwrap(),
        "from claude\n"
    );
    let r = c.call(
        "restore",
        json!({"checkpoint": format!("{run}@1"), "paths": [".git/config"]}),
    );
    assert_eq!(r["isError"], true, "{r:#}");

    let cp = c.ok(
        "checkpoint",
        json!({"step": "mcp-step", "message": "via the tool"}),
    );
    let shown = repo.json(&["show", cp["checkpoint"].as_str().unwrap()]);
    assert_eq!(shown["step"], "mcp-step", "{shown:#}");
    assert_eq!(shown["meta"]["via"], "mcp", "{shown:#}");
    assert_eq!(shown["sdk_session_id"], "s-claude", "{shown:#}");
    // The index was never touched: the agents' files are as untracked as they were.
    let status = repo.git(&["status", "--porcelain"]);
    assert_eq!(status.trim(), "?? claude.txt\n?? codex.txt", "{status}");
    repo.assert_fsck();
}

/// `hooks install --agent all --mcp` puts the server into every agent's project MCP
/// configuration, keeping what was there; uninstall takes exactly that out again.
#[test]
fn hooks_install_mcp_adds_the_server_to_every_agents_configuration_and_uninstall_removes_it() {
    let repo = Repo::new();
    let root = repo.path();
    // What the user had before: another Claude server, a Codex setting, an OpenCode theme.
    repo.write(
        ".mcp.json",
        r#"{"mcpServers": {"db": {"command": "db-mcp"}}}"#,
    );
    repo.write(".codex/config.toml", "model = \"o3\"\n");
    repo.write("opencode.json", r#"{"theme": "dark"}"#);
    let before_codex = "model = \"o3\"\n";
    repo.ok(&["hooks", "install", "--agent", "all", "--mcp"]);
    let claude: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(".mcp.json")).unwrap()).unwrap();
    assert_eq!(claude["mcpServers"]["db"]["command"], "db-mcp");
    assert_eq!(
        claude["mcpServers"]["git-agent-rewind"]["args"],
        json!(["agent-rewind", "mcp"])
    );
    let codex = std::fs::read_to_string(root.join(".codex/config.toml")).unwrap();
    let parsed: toml::Table = codex.parse().unwrap();
    assert_eq!(parsed["model"].as_str(), Some("o3"));
    assert_eq!(
        parsed["mcp_servers"]["git-agent-rewind"]["command"].as_str(),
        Some("git")
    );
    for (file, key) in [
        (".gemini/settings.json", "mcpServers"),
        (".cursor/mcp.json", "mcpServers"),
        ("opencode.json", "mcp"),
    ] {
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(root.join(file)).unwrap()).unwrap();
        assert!(v[key]["git-agent-rewind"].is_object(), "{file}: {v:#}");
    }
    // Again: nothing changes.
    let again = repo.json(&["hooks", "install", "--agent", "all", "--mcp"]);
    assert!(
        again["agents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["events"].to_string().contains("mcp:"))
            .all(|a| a["action"] == "unchanged"),
        "{again:#}"
    );
    repo.ok(&["hooks", "uninstall", "--agent", "all", "--mcp"]);
    let claude: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(".mcp.json")).unwrap()).unwrap();
    assert_eq!(claude, json!({"mcpServers": {"db": {"command": "db-mcp"}}}));
    assert_eq!(
        std::fs::read_to_string(root.join(".codex/config.toml")).unwrap(),
        before_codex
    );
    let opencode: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("opencode.json")).unwrap())
            .unwrap();
    assert_eq!(opencode, json!({"theme": "dark"}));
    assert!(
        !root.join(".cursor").exists(),
        "a file that held only ours goes"
    );

    // A configuration that is not valid is refused, and nothing is written for any agent.
    repo.write(".mcp.json", "{not json");
    let out = tool_stdin(
        root,
        &["hooks", "install", "--agent", "all", "--mcp"],
        b"",
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(!root.join(".cursor").exists());
}
