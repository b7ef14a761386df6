//! Each agent's project configuration is merged on install and unmerged on uninstall without
//! losing anything of the user's; what install created, uninstall deletes.

use crate::common::Repo;
use serde_json::{Value, json};

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
    assert_eq!(agents.len(), 11, "{out}");
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
        ".qwen/settings.json",
        ".github/hooks/agent-rewind.json",
        ".pi/extensions/agent-rewind.ts",
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
    assert_eq!(removed["agents"].as_array().unwrap().len(), 11);
    for (path, v) in &configs {
        assert_eq!(&read(path), v, "{path}");
    }
    assert!(
        !repo
            .path()
            .join(".opencode/plugins/git-agent-rewind.js")
            .exists()
    );
    assert!(!repo.path().join(".pi").exists());
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
    for f in [
        ".claude",
        ".codex",
        ".cursor",
        ".opencode",
        ".qwen",
        ".github",
    ] {
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
    let out = repo.run(&["hooks", "install", "--agent", "aider"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `hooks status` tells, per agent, whether our hooks are installed and will run, reading
/// each agent's own gate from an isolated HOME: Claude's `disableAllHooks`, Codex's project
/// and hook trust, Gemini's folder trust. It writes nothing.
#[test]
fn hooks_status_reads_each_agents_own_gate() {
    let repo = crate::common::Repo::new();
    let home = tempfile::tempdir().unwrap();
    let status = |agent: &str| -> Value {
        let out = crate::common::tool_cmd(repo.path())
            .env("HOME", home.path())
            .env_remove("CODEX_HOME")
            .env_remove("GEMINI_CLI_TRUST_WORKSPACE")
            .args(["--json", "hooks", "status"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let all: Value = serde_json::from_slice(&out.stdout).unwrap();
        all.as_array()
            .unwrap()
            .iter()
            .find(|a| a["agent"] == agent)
            .unwrap()
            .clone()
    };
    assert_eq!(status("claude")["runs"], "no");
    assert!(
        status("claude")["reason"]
            .as_str()
            .unwrap()
            .contains("not installed")
    );
    repo.ok(&[
        "hooks", "install", "--agent", "claude", "--agent", "codex", "--agent", "gemini",
    ]);
    let root = repo.path().canonicalize().unwrap();

    assert_eq!(status("claude")["runs"], "yes");
    repo.write(
        ".claude/settings.local.json",
        r#"{"disableAllHooks": true}"#,
    );
    let claude = status("claude");
    assert_eq!(claude["runs"], "no");
    assert!(
        claude["reason"]
            .as_str()
            .unwrap()
            .contains("settings.local.json"),
        "{claude:#}"
    );

    assert!(
        status("codex")["reason"]
            .as_str()
            .unwrap()
            .contains("trusted project")
    );
    let config = home.path().join(".codex/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let project = format!(
        "[projects.{:?}]\ntrust_level = \"trusted\"\n",
        root.to_str().unwrap()
    );
    std::fs::write(&config, &project).unwrap();
    let codex = status("codex");
    assert_eq!(codex["runs"], "no");
    assert!(
        codex["reason"].as_str().unwrap().contains("/hooks"),
        "{codex:#}"
    );
    let hooks_file = root.join(".codex/hooks.json");
    let trusted = format!(
        "{project}[hooks.state.{:?}]\ntrusted_hash = \"abc\"\n",
        format!("{}:stop:0:0", hooks_file.display())
    );
    std::fs::write(&config, trusted).unwrap();
    assert_eq!(status("codex")["runs"], "yes");

    assert_eq!(status("gemini")["runs"], "no");
    let folders = home.path().join(".gemini/trustedFolders.json");
    std::fs::create_dir_all(folders.parent().unwrap()).unwrap();
    // TRUST_PARENT on a sibling trusts the folder they share.
    let sibling = root.parent().unwrap().join("sibling");
    std::fs::write(
        &folders,
        serde_json::json!({ sibling.to_str().unwrap(): "TRUST_PARENT" }).to_string(),
    )
    .unwrap();
    assert_eq!(status("gemini")["runs"], "yes");
    std::fs::write(
        &folders,
        serde_json::json!({ root.to_str().unwrap(): "DO_NOT_TRUST" }).to_string(),
    )
    .unwrap();
    assert_eq!(status("gemini")["runs"], "no");
    assert_eq!(
        repo.git(&["status", "--porcelain"]).lines().count(),
        3,
        "status wrote nothing of its own"
    );
}
