//! Pi's extension payloads (`fixtures/pi/`) through `hook pi`, and its extension file
//! installed, checked, refused and uninstalled.

use crate::common::agent_fixtures::{fixture, hook, retarget};
use crate::common::{Repo, checkpoints, tool_stdin};
use serde_json::{Value, json};
use std::path::Path;

const SESSION: &str = "01a25128-1c7c-7528-978c-39a4027b4734";

/// A fixture pointed at `repo`, its session file at `transcript`, with `set` applied.
fn payload(name: &str, repo: &Path, transcript: &Path, set: &[(&str, &str)]) -> Vec<u8> {
    let mut v = fixture("pi", name);
    retarget(&mut v, repo);
    v["sessionFile"] = transcript.to_str().unwrap().into();
    for (k, val) in set {
        v[*k] = (*val).into();
    }
    serde_json::to_vec(&v).unwrap()
}

/// What `hook pi` prints for the agent (no `--json`): what the extension hands the model.
fn printed(dir: &Path, input: &[u8]) -> String {
    let out = tool_stdin(dir, &["hook", "pi"], input, &[]);
    assert_eq!(out.status.code(), Some(0));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn pi_records_its_turns_and_a_resumed_or_compacted_session_is_handed_the_manifest() {
    let repo = Repo::new();
    let dir = repo.path();
    let t = tempfile::tempdir().unwrap();
    let transcript = t.path().join("session.jsonl");
    std::fs::write(&transcript, b"{\"type\":\"session\"}\n").unwrap();
    let p = |name: &str, set: &[(&str, &str)]| payload(name, dir, &transcript, set);

    // A new session: a run, and nothing for the model.
    assert_eq!(printed(dir, &p("session-start.json", &[])), "");
    let run = repo.json(&["status"])["run"].as_str().unwrap().to_string();
    repo.write("src/cart.rs", "let mut total = 0;\n");
    assert_eq!(
        hook("pi", &p("tool-result.json", &[]), &[])["action"],
        "noted"
    );
    // A tool that edits no file is not noted.
    let bash = p("tool-result.json", &[("toolName", "bash")]);
    assert_eq!(hook("pi", &bash, &[])["action"], "ignored");
    let out = hook("pi", &p("agent-end.json", &[]), &[]);
    assert_eq!(out["action"], "recorded", "{out}");
    let turn = checkpoints(dir, &run).last().unwrap().clone();
    assert_eq!(turn["event"], "turn");
    assert_eq!(turn["agent"], "pi");
    assert_eq!(turn["sdk_session_id"], SESSION);
    assert_eq!(turn["touched"], json!(["src/cart.rs"]));
    assert_eq!(turn["meta"]["model"], "claude-sonnet-4-5");
    assert_eq!(turn["meta"]["provider"], "anthropic");
    assert_eq!(turn["meta"]["conversation_at"], "d641c5eb");
    let blob = repo.git(&["hash-object", transcript.to_str().unwrap()]);
    assert_eq!(
        turn["artifacts"][0]["digest"],
        format!("git-blob:{}", blob.trim()).as_str()
    );

    // The same session starting again (Pi says `startup` for `--session <id>` too): it has
    // a turn in the run, so it resumed, and the model is handed the manifest as plain text.
    let again = printed(dir, &p("session-start.json", &[]));
    assert!(
        again.starts_with(&format!(
            "git agent-rewind: this session records into run {run}"
        )),
        "{again}"
    );
    assert!(again.contains(&format!("{run}@1")), "{again}");
    // Another session with no turn in the run: nothing.
    let other = p(
        "session-start.json",
        &[("sessionId", "01a25128-ffff-7528-978c-000000000000")],
    );
    assert_eq!(printed(dir, &other), "");
    // A fork of a session (`parentSession`) holds that conversation: handed the manifest.
    let fork = p(
        "session-start.json",
        &[
            ("sessionId", "01a25128-eeee-7528-978c-000000000000"),
            ("parentSession", "/h/p.jsonl"),
        ],
    );
    assert!(printed(dir, &fork).contains("records into run"));
    // After a compaction.
    let compacted = hook("pi", &p("session-compact.json", &[]), &[]);
    assert_eq!(compacted["action"], "joined", "{compacted}");
    assert!(
        compacted["context"]
            .as_str()
            .unwrap()
            .contains("records into run")
    );
    // agentRewind.agentContext=false turns it off.
    repo.git(&["config", "agentRewind.agentContext", "false"]);
    assert_eq!(printed(dir, &p("session-compact.json", &[])), "");

    // Resuming: `--session` continues at the end; after a fork, `--fork` copies the whole
    // session, and the note says so.
    assert_eq!(
        repo.json(&["status"])["resume_command"],
        format!("pi --session {SESSION}").as_str()
    );
    let forked = repo.json(&["fork", &run, "--to", &format!("{run}@1"), "--no-checkout"]);
    assert_eq!(
        forked["resume_command"],
        format!("pi --fork {SESSION}").as_str()
    );
    let note = forked["conversation"].as_str().unwrap();
    assert!(
        note.contains("whole session") && note.contains("entry d641c5eb"),
        "{note}"
    );
    repo.assert_fsck();
}

#[test]
fn pi_extension_installs_beside_the_users_files_and_uninstall_takes_out_only_ours() {
    let repo = Repo::new();
    let root = repo.path();
    repo.write(".pi/extensions/mine.ts", "export default function () {}\n");
    repo.write(".pi/settings.json", "{\"theme\": \"dark\"}\n");
    let status = |repo: &Repo| -> Value {
        repo.json(&["hooks", "status"])
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["agent"] == "pi")
            .unwrap()
            .clone()
    };
    assert_eq!(status(&repo)["runs"], "no");

    let out = repo.json(&["hooks", "install", "--agent", "pi"]);
    assert_eq!(out["agents"][0]["action"], "created", "{out}");
    let ext = repo.read(".pi/extensions/agent-rewind.ts");
    assert!(ext.starts_with("// git-agent-rewind Pi extension"), "{ext}");
    assert!(ext.contains("\"hook\", \"pi\""), "{ext}");
    let s = status(&repo);
    assert_eq!(s["runs"], "yes", "{s}");
    assert!(
        s["reason"].as_str().unwrap().contains("--no-extensions"),
        "{s}"
    );
    let again = repo.json(&["hooks", "install", "--agent", "pi"]);
    assert_eq!(again["agents"][0]["action"], "unchanged");

    // The project's settings can exclude it; status says so.
    repo.write(
        ".pi/settings.json",
        "{\"theme\": \"dark\", \"extensions\": [\"-extensions/agent-rewind.ts\"]}\n",
    );
    let s = status(&repo);
    assert_eq!(s["runs"], "no", "{s}");
    assert!(
        s["reason"]
            .as_str()
            .unwrap()
            .contains("excludes our extension"),
        "{s}"
    );
    repo.write(".pi/settings.json", "{\"theme\": \"dark\"}\n");

    // Pi has no MCP: --mcp says so and writes no MCP configuration for it.
    let out = repo.run(&["hooks", "install", "--agent", "pi", "--mcp"]);
    assert!(out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("Pi has no MCP support"), "{said}");
    let listed: Vec<String> = std::fs::read_dir(root.join(".pi"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(!root.join(".mcp.json").exists());

    // Uninstall takes out ours only.
    let out = repo.json(&["hooks", "uninstall", "--agent", "pi"]);
    assert_eq!(out["agents"][0]["action"], "deleted", "{out}");
    assert!(!root.join(".pi/extensions/agent-rewind.ts").exists());
    assert_eq!(
        repo.read(".pi/extensions/mine.ts"),
        "export default function () {}\n"
    );
    assert_eq!(repo.read(".pi/settings.json"), "{\"theme\": \"dark\"}\n");
    let out = repo.json(&["hooks", "uninstall", "--agent", "pi"]);
    assert_eq!(out["agents"][0]["action"], "absent", "{out}");

    // A file of that name that is not ours: refused, and nothing written for any agent.
    repo.write(".pi/extensions/agent-rewind.ts", "// someone else's\n");
    let out = repo.run(&["hooks", "install", "--agent", "claude", "--agent", "pi"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not ours"));
    assert_eq!(
        repo.read(".pi/extensions/agent-rewind.ts"),
        "// someone else's\n"
    );
    assert!(!root.join(".claude").exists());
    let out = repo.json(&["hooks", "uninstall", "--agent", "pi"]);
    assert_eq!(out["agents"][0]["action"], "absent", "{out}");
    assert_eq!(
        repo.read(".pi/extensions/agent-rewind.ts"),
        "// someone else's\n"
    );
}
