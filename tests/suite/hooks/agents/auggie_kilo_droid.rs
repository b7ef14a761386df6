//! What is particular to Auggie, Kilo and Factory Droid, through the binary: the files
//! install writes (with `--mcp`) and uninstall takes out exactly, the channel Droid and Kilo
//! read the run's manifest from on a resume or compaction, and what `hooks status` says
//! about Droid's rules.

use super::qwen_copilot::status_of;
use crate::common::agent_fixtures::payload;
use crate::common::{Repo, tool_stdin};
use serde_json::{Value, json};
use std::path::Path;

/// `hook <agent>` without `--json` (as the agent runs it), fed `input`: its stdout.
fn agent_reads(repo: &Repo, agent: &str, input: &[u8]) -> String {
    let out = tool_stdin(repo.path(), &["hook", agent], input, &[]);
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// Droid's resumed session is handed the manifest as `hookSpecificOutput.additionalContext`;
/// Kilo's compaction, through its plugin, as plain text; a new session is handed nothing.
#[test]
fn droid_and_kilo_read_the_manifest_on_their_own_channel() {
    let repo = Repo::new();
    let none = Path::new("/nonexistent");
    let start = payload("droid", "session-start.json", repo.path(), none);
    assert_eq!(agent_reads(&repo, "droid", &start), "");
    let run = repo.json(&["status"])["run"].as_str().unwrap().to_string();
    let resumed = payload("droid", "session-start-resume.json", repo.path(), none);
    let said = agent_reads(&repo, "droid", &resumed);
    let v: Value = serde_json::from_str(said.trim()).unwrap_or_else(|e| panic!("{e}: {said}"));
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    assert!(
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .is_some_and(|c| c.contains(&format!("this session records into run {run}"))),
        "{v}"
    );
    let compacting = json!({"event": {"type": "session.compacting",
        "properties": {"sessionID": "ses_1c7d2e90affeKq4Ws8Lm2PzR0b"}},
        "directory": repo.path(), "worktree": repo.path()});
    let said = agent_reads(&repo, "kilo", compacting.to_string().as_bytes());
    assert!(
        said.contains(&format!("this session records into run {run}")) && !said.starts_with('{'),
        "plain text: {said}"
    );
}

/// `hooks install --agent auggie --agent kilo --agent droid --mcp`: Auggie's hooks and
/// server in `.augment/settings.json` beside the user's keys, Kilo's plugin file and its
/// server in `kilo.json`, Droid's hooks in `.factory/settings.json` and its server in
/// `.factory/mcp.json`; uninstall leaves exactly what the user had.
#[test]
fn install_and_uninstall_are_exact() {
    let repo = Repo::new();
    let root = repo.path();
    repo.write(".augment/settings.json", "{\"theme\": \"dark\"}\n");
    repo.write("kilo.json", "{\"model\": \"local/test\"}\n");
    let args = [
        "--agent", "auggie", "--agent", "kilo", "--agent", "droid", "--mcp",
    ];
    let out = repo.json(&[&["hooks", "install"][..], &args].concat());
    assert_eq!(out["agents"].as_array().unwrap().len(), 6, "{out:#}");
    let augment: Value = serde_json::from_str(&repo.read(".augment/settings.json")).unwrap();
    assert_eq!(augment["theme"], "dark");
    assert_eq!(
        augment["hooks"]["PostToolUse"][0]["matcher"],
        "save-file|str-replace-editor|remove-files|apply_patch"
    );
    assert_eq!(
        augment["hooks"]["Stop"][0]["hooks"][0],
        json!({"type": "command", "command": "git agent-rewind hook auggie"})
    );
    assert_eq!(
        augment["mcpServers"]["git-agent-rewind"],
        json!({"command": "git", "args": ["agent-rewind", "mcp"]})
    );
    let plugin = repo.read(".kilo/plugins/git-agent-rewind.js");
    assert!(plugin.contains("\"hook\", \"kilo\""), "{plugin}");
    let kilo: Value = serde_json::from_str(&repo.read("kilo.json")).unwrap();
    assert_eq!(
        kilo["mcp"]["git-agent-rewind"]["command"],
        json!(["git", "agent-rewind", "mcp"])
    );
    let factory: Value = serde_json::from_str(&repo.read(".factory/settings.json")).unwrap();
    for event in ["SessionStart", "Stop", "SubagentStop", "PostToolUse"] {
        assert!(factory["hooks"][event].is_array(), "{factory:#}");
    }
    let mcp: Value = serde_json::from_str(&repo.read(".factory/mcp.json")).unwrap();
    assert_eq!(mcp["mcpServers"]["git-agent-rewind"]["type"], "stdio");
    let again = repo.json(&["hooks", "install", "--agent", "auggie", "--agent", "droid"]);
    assert!(
        again["agents"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["action"] == "unchanged"),
        "{again:#}"
    );

    repo.ok(&[&["hooks", "uninstall"][..], &args].concat());
    assert_eq!(
        repo.read(".augment/settings.json"),
        "{\n  \"theme\": \"dark\"\n}\n"
    );
    let kilo: Value = serde_json::from_str(&repo.read("kilo.json")).unwrap();
    assert_eq!(kilo, json!({"model": "local/test"}));
    for gone in [".kilo", ".factory"] {
        assert!(!root.join(gone).exists(), "{gone} is left");
    }
    let status = repo.git(&["status", "--porcelain", "--untracked-files=all"]);
    assert!(
        !status.contains(".kilo") && !status.contains(".factory"),
        "{status}"
    );
}

/// `hooks status` for Droid: `yes` once installed; `no` when `hooks.hooksDisabled` is set
/// in the user's settings, or when `.factory/hooks.json` names an event of ours (Droid takes
/// that event from it instead). Auggie and Kilo: `yes` once installed.
#[test]
fn status_follows_droids_rules() {
    let repo = Repo::new();
    let root = repo.path().canonicalize().unwrap();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    for agent in ["droid", "auggie", "kilo"] {
        assert_eq!(status_of(agent, &root, h, &[])["runs"], "no", "{agent}");
    }
    repo.ok(&[
        "hooks", "install", "--agent", "droid", "--agent", "auggie", "--agent", "kilo",
    ]);
    for agent in ["droid", "auggie", "kilo"] {
        assert_eq!(status_of(agent, &root, h, &[])["runs"], "yes", "{agent}");
    }
    repo.write(".factory/hooks.json", "{\"Stop\": []}\n");
    let hidden = status_of("droid", &root, h, &[]);
    assert_eq!(hidden["runs"], "no", "{hidden:#}");
    assert!(
        hidden["reason"].as_str().unwrap().contains("Stop"),
        "{hidden:#}"
    );
    std::fs::remove_file(root.join(".factory/hooks.json")).unwrap();
    std::fs::create_dir_all(h.join(".factory")).unwrap();
    std::fs::write(
        h.join(".factory/settings.json"),
        r#"{"hooks": {"hooksDisabled": true}}"#,
    )
    .unwrap();
    let off = status_of("droid", &root, h, &[]);
    assert_eq!(off["runs"], "no", "{off:#}");
    assert!(
        off["reason"].as_str().unwrap().contains("hooksDisabled"),
        "{off:#}"
    );
    let kilo = status_of("kilo", &root, h, &[("KILO_DISABLE_PROJECT_CONFIG", "1")]);
    assert_eq!(kilo["runs"], "no", "{kilo:#}");
}
