//! What follows a write the MCP server applied: a client that asked for them (the
//! experimental capability `agent-rewind/events`, in `initialize` or, for a client of the
//! stateless protocol, in a request's `_meta`) is sent `notifications/agent-rewind/operation`
//! before the tool's answer, with the facts the `post-agent-rewind` hook gets; a client that
//! did not ask gets nothing; and the user's `post-agent-rewind` hook runs, its output kept
//! off the protocol's stdout, its failure a warning in the answer.

use super::{Client, agent_turn, run_of, two_agents};
use crate::common::Repo;
use serde_json::{Value, json};
use std::io::{BufRead, Write};
#[cfg(unix)]
use std::os::unix::fs::PermissionsExt;

const METHOD: &str = "notifications/agent-rewind/operation";

/// A `tools/call` of `tool` with `args` (and `meta` as the params' `_meta` when given): the
/// answer's structured content, and the notifications written before it.
fn call(c: &mut Client, tool: &str, args: Value, meta: Option<&Value>) -> (Value, Vec<Value>) {
    let id = c.next;
    c.next += 1;
    let mut params = json!({"name": tool, "arguments": args});
    if let Some(m) = meta {
        params["_meta"] = m.clone();
    }
    let msg = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    writeln!(c.stdin, "{msg}").unwrap();
    c.stdin.flush().unwrap();
    let mut before = vec![];
    loop {
        let mut line = String::new();
        assert!(
            c.stdout.read_line(&mut line).unwrap() > 0,
            "the server closed"
        );
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not JSON-RPC on stdout ({e}): {line:?}"));
        if v["id"] == id {
            let result = &v["result"];
            assert_eq!(result["isError"], false, "{tool}: {v:#}");
            return (result["structuredContent"].clone(), before);
        }
        before.push(v);
    }
}

/// `tool` planned, then applied by its plan id: the applied answer, and the notifications
/// written before each answer (none may come with the plan).
fn plan_and_apply(
    c: &mut Client,
    tool: &str,
    args: Value,
    meta: Option<&Value>,
) -> (Value, Vec<Value>) {
    let (plan, told) = call(c, tool, args.clone(), meta);
    assert!(told.is_empty(), "a plan applies nothing: {told:#?}");
    let mut apply = args;
    apply["plan_id"] = plan["plan_id"].clone();
    let (done, told) = call(c, tool, apply, meta);
    assert_eq!(done["applied"], true, "{done:#}");
    (done, told)
}

/// The one notification in `told`: a JSON-RPC notification (no id) of [`METHOD`]; its params.
fn the_notification(told: &[Value]) -> Value {
    assert_eq!(told.len(), 1, "{told:#?}");
    let n = &told[0];
    assert_eq!(n["jsonrpc"], "2.0", "{n:#}");
    assert_eq!(n["method"], METHOD, "{n:#}");
    assert!(n.get("id").is_none(), "a notification has no id: {n:#}");
    n["params"].clone()
}

#[test]
fn a_client_that_asked_is_told_of_each_revert_and_restore_it_applied() {
    let repo = two_agents();
    let run = run_of(&repo);
    let asks = json!({"experimental": {"agent-rewind/events": {}}});
    let (mut c, init) = Client::start_with(&repo, "claude-code", asks);
    assert!(
        init["result"]["capabilities"]["experimental"]["agent-rewind/events"].is_object(),
        "the server says it offers them: {init:#}"
    );

    let turn = format!("{run}@1");
    let (done, told) = plan_and_apply(&mut c, "revert", json!({"target": turn}), None);
    let result = &done["result"];
    assert_eq!(
        the_notification(&told),
        json!({"operation": "revert", "source": result["from"], "target": result["to"],
               "backup": result["backup"]["commit"], "by": "claude session s-claude (MCP)"})
    );
    assert!(result["backup"]["commit"].is_string(), "{done:#}");
    assert!(!repo.path().join("claude.txt").exists());
    repo.assert_fsck();

    let (repo, run) = broken_by_claude();
    let asks = json!({"experimental": {"agent-rewind/events": {}}});
    let (mut c, _) = Client::start_with(&repo, "claude-code", asks);
    let args = json!({"checkpoint": format!("{run}@1"), "paths": ["claude.txt"]});
    let (done, told) = plan_and_apply(&mut c, "restore", args, None);
    let result = &done["result"];
    assert_eq!(
        the_notification(&told),
        json!({"operation": "restore", "source": result["checkpoint"], "target": null,
               "backup": result["backup"]["commit"], "by": "claude session s-claude (MCP)"})
    );
    assert_eq!(repo.read("claude.txt"), "from claude\n");
    repo.assert_fsck();
}

#[test]
fn a_client_that_did_not_ask_is_sent_nothing() {
    let repo = two_agents();
    let run = run_of(&repo);
    let (mut c, init) = Client::start(&repo, "claude-code");
    assert!(init["result"]["capabilities"]["experimental"].is_object());
    let target = json!({"target": format!("{run}@1")});
    let (_, told) = plan_and_apply(&mut c, "revert", target, None);
    assert!(told.is_empty(), "{told:#?}");
    assert!(
        !repo.path().join("claude.txt").exists(),
        "the revert was applied"
    );
    // Nothing comes late either: the next answer is the next line.
    let (_, told) = call(&mut c, "status", json!({}), None);
    assert!(told.is_empty(), "{told:#?}");
}

/// A client of the stateless protocol sends no `initialize`: it names itself and asks in
/// each request's `_meta`, as Claude Code 2.1.337 does.
#[test]
fn a_stateless_client_asks_in_its_requests_meta() {
    let repo = two_agents();
    let run = run_of(&repo);
    let mut c = Client::spawn(&repo);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.337"},
        "io.modelcontextprotocol/clientCapabilities":
            {"experimental": {"agent-rewind/events": {}}},
    });
    let target = json!({"target": format!("{run}@1")});
    let (done, told) = plan_and_apply(&mut c, "revert", target, Some(&meta));
    assert_eq!(done["by"], "claude session s-claude (MCP)", "{done:#}");
    let told = the_notification(&told);
    assert_eq!(told["operation"], "revert");
    assert_eq!(told["by"], "claude session s-claude (MCP)");
}

/// [`two_agents`], then a later turn of Claude's that changed `claude.txt`: a restore of it
/// from `@1` is Claude's to make. The repository and its run.
fn broken_by_claude() -> (Repo, String) {
    let repo = two_agents();
    agent_turn(
        &repo,
        "claude",
        "s-claude",
        None,
        &[("claude.txt", "broken\n")],
        true,
    );
    let run = run_of(&repo);
    (repo, run)
}

/// A hook that appends its arguments to `calls`, prints to its stdout, and exits `code`.
fn install_hook(repo: &Repo, calls: &std::path::Path, code: i32) {
    let hook = repo.path().join(".git/hooks/post-agent-rewind");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    let script = format!(
        "#!/bin/sh\necho \"$1 $2 $3 $4\" >> '{}'\necho hook-output\nexit {code}\n",
        calls.display()
    );
    std::fs::write(&hook, script).unwrap();
    // git for Windows runs a hook through its sh whatever its mode.
    #[cfg(unix)]
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The server's writes run the user's `post-agent-rewind` hook as the commands do: its
/// output never reaches the protocol's stdout (every line the client reads is JSON-RPC), a
/// failure is a warning in the answer, and the operation stays done.
#[test]
fn the_servers_writes_run_the_users_post_agent_rewind_hook() {
    let repo = two_agents();
    let run = run_of(&repo);
    let calls = repo.path().join(".git/hook-calls");
    install_hook(&repo, &calls, 0);
    let (mut c, _) = Client::start(&repo, "claude-code");
    let turn = format!("{run}@1");
    let (done, _) = plan_and_apply(&mut c, "revert", json!({"target": turn}), None);
    let r = &done["result"];
    let expected = format!(
        "revert {} {} {}\n",
        r["from"].as_str().unwrap(),
        r["to"].as_str().unwrap(),
        r["backup"]["commit"].as_str().unwrap()
    );
    assert_eq!(std::fs::read_to_string(&calls).unwrap(), expected);
    assert!(done.get("warnings").is_none(), "{done:#}");

    let (repo, run) = broken_by_claude();
    let calls = repo.path().join(".git/hook-calls");
    install_hook(&repo, &calls, 3);
    let (mut c, _) = Client::start(&repo, "claude-code");
    let args = json!({"checkpoint": format!("{run}@1"), "paths": ["claude.txt"]});
    let (done, _) = plan_and_apply(&mut c, "restore", args, None);
    let warnings = done["warnings"].to_string();
    assert!(
        warnings.contains("post-agent-rewind hook exited 3") && warnings.contains("stays done"),
        "{done:#}"
    );
    assert_eq!(
        repo.read("claude.txt"),
        "from claude\n",
        "the restore stays done"
    );
    let line = std::fs::read_to_string(&calls).unwrap();
    let words: Vec<&str> = line.split_whitespace().collect();
    let r = &done["result"];
    let null = "0".repeat(40);
    assert_eq!(
        words,
        [
            "restore",
            r["checkpoint"].as_str().unwrap(),
            &null,
            r["backup"]["commit"].as_str().unwrap()
        ],
        "{line}"
    );
}
