//! What is particular to Qwen Code and GitHub Copilot CLI, through the binary: the channel
//! each reads the run's manifest from on a resume, the events that record nothing (Qwen's
//! repeated `UserPromptSubmit`), the files install writes and uninstall takes out exactly,
//! and what `hooks status` says about their trust and approval rules.

use crate::common::agent_fixtures::{hook, payload};
use crate::common::{Repo, refs, tool_stdin};
use serde_json::{Value, json};
use std::path::Path;

/// `hook <agent>` without `--json` (as the agent runs it), fed a fixture: its stdout.
fn agent_reads(repo: &Repo, agent: &str, fixture: &str) -> String {
    let input = payload(agent, fixture, repo.path(), Path::new("/nonexistent"));
    let out = tool_stdin(repo.path(), &["hook", agent], &input, &[]);
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// On a resume Qwen Code is handed the manifest as `hookSpecificOutput.additionalContext`,
/// Copilot CLI as a top-level `additionalContext` (it ignores the nested form); a new
/// session is handed nothing. Qwen's `UserPromptSubmit` of a tool-result continuation and
/// Copilot's `PostToolUseFailure` record nothing.
#[test]
fn each_reads_the_manifest_on_its_own_channel_and_repeats_record_nothing() {
    for agent in ["qwen", "copilot"] {
        let repo = Repo::new();
        assert_eq!(
            agent_reads(&repo, agent, "session-start.json"),
            "",
            "{agent}"
        );
        let run = repo.json(&["status"])["run"].as_str().unwrap().to_string();
        let said = agent_reads(&repo, agent, "session-start-resume.json");
        let v: Value = serde_json::from_str(said.trim()).unwrap_or_else(|e| panic!("{e}: {said}"));
        let context = match agent {
            "qwen" => {
                assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
                &v["hookSpecificOutput"]["additionalContext"]
            }
            _ => {
                assert!(v.get("hookSpecificOutput").is_none(), "{v}");
                &v["additionalContext"]
            }
        };
        assert!(
            context
                .as_str()
                .is_some_and(|c| c.contains(&format!("this session records into run {run}"))),
            "{agent}: {v}"
        );
        let ignored = match agent {
            "qwen" => "user-prompt-submit-continuation.json",
            _ => "post-tool-use-failure.json",
        };
        let before = refs(repo.path(), "refs/");
        let p = payload(agent, ignored, repo.path(), Path::new("/nonexistent"));
        let out = hook(agent, &p, &[]);
        assert_eq!(out["action"], "ignored", "{agent}: {out}");
        assert_eq!(refs(repo.path(), "refs/"), before, "{agent}");
    }
}

/// `hooks install --agent copilot --mcp` writes our own hook file (`version: 1`, the
/// Claude-style entries) and `.github/mcp.json`, and says the hooks run only in a trusted
/// folder; uninstall takes out both files and the folders it made, and leaves the rest of
/// `.github/` alone.
#[test]
fn copilots_hook_file_and_mcp_server_come_and_go_exactly() {
    let repo = Repo::new();
    let root = repo.path();
    repo.write(".github/workflows/ci.yml", "on: push\n");
    let out = repo.run(&["hooks", "install", "--agent", "copilot", "--mcp"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("only in a folder you trust") && stderr.contains("trustedFolders"),
        "{stderr}"
    );
    let hooks: Value = serde_json::from_str(&repo.read(".github/hooks/agent-rewind.json")).unwrap();
    assert_eq!(hooks["version"], 1, "{hooks:#}");
    for event in ["SessionStart", "Stop", "PostToolUse"] {
        assert_eq!(
            hooks["hooks"][event][0]["hooks"][0],
            json!({"type": "command", "command": "git agent-rewind hook copilot"}),
            "{hooks:#}"
        );
    }
    let mcp: Value = serde_json::from_str(&repo.read(".github/mcp.json")).unwrap();
    assert_eq!(
        mcp["mcpServers"]["git-agent-rewind"]["args"],
        json!(["agent-rewind", "mcp"])
    );
    let again = repo.json(&["hooks", "install", "--agent", "copilot"]);
    assert_eq!(again["agents"][0]["action"], "unchanged", "{again:#}");

    let out = repo.json(&["hooks", "uninstall", "--agent", "copilot", "--mcp"]);
    let actions: Vec<&Value> = out["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["action"])
        .collect();
    assert_eq!(actions, [&json!("deleted"), &json!("deleted")], "{out:#}");
    assert!(!root.join(".github/hooks").exists());
    assert!(!root.join(".github/mcp.json").exists());
    assert_eq!(repo.read(".github/workflows/ci.yml"), "on: push\n");
}

/// Qwen Code: `--mcp` puts our server beside the hooks in `.qwen/settings.json` and says it
/// waits for `qwen mcp approve`, as `hooks status` does until Qwen records the approval;
/// uninstall deletes a file that holds nothing but Qwen's own `$version` after ours.
#[test]
fn qwens_mcp_server_waits_for_approval_and_uninstall_is_exact() {
    let repo = Repo::new();
    let root = repo.path();
    let home = tempfile::tempdir().unwrap();
    let out = repo.run(&["hooks", "install", "--agent", "qwen", "--mcp"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("qwen mcp approve git-agent-rewind"),
        "{stderr}"
    );
    let status = qwen_status(root, home.path(), &[]);
    assert_eq!(status["runs"], "yes", "{status:#}");
    assert!(
        status["reason"]
            .as_str()
            .unwrap()
            .contains("pending approval"),
        "{status:#}"
    );
    let approvals = json!({ root.canonicalize().unwrap().to_str().unwrap():
        {"git-agent-rewind": {"hash": "h", "status": "approved"}} });
    std::fs::create_dir_all(home.path().join(".qwen")).unwrap();
    std::fs::write(
        home.path().join(".qwen/mcpApprovals.json"),
        approvals.to_string(),
    )
    .unwrap();
    let status = qwen_status(root, home.path(), &[]);
    assert!(
        status["reason"].as_str().unwrap().contains("was approved"),
        "{status:#}"
    );

    // Qwen adds its settings' format version to a file it loads.
    let file = root.join(".qwen/settings.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    v["$version"] = 4.into();
    std::fs::write(&file, v.to_string()).unwrap();
    let out = repo.json(&["hooks", "uninstall", "--agent", "qwen", "--mcp"]);
    assert_eq!(out["agents"][1]["action"], "deleted", "{out:#}");
    assert!(!root.join(".qwen").exists(), "{out:#}");
}

/// `hooks status --json` with `home` as HOME and `env`: the entry of `agent`.
pub(super) fn status_of(agent: &str, root: &Path, home: &Path, env: &[(&str, &str)]) -> Value {
    let mut e = vec![("HOME", home.to_str().unwrap())];
    e.extend_from_slice(env);
    let out = tool_stdin(root, &["--json", "hooks", "status"], b"", &e);
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
}

fn qwen_status(root: &Path, home: &Path, env: &[(&str, &str)]) -> Value {
    status_of("qwen", root, home, env)
}

/// `hooks status` for Copilot CLI: `no` in an untrusted folder, `yes` once
/// `~/.copilot/config.json` lists it in `trustedFolders` or with `COPILOT_ALLOW_ALL=true`,
/// `no` with `disableAllHooks`. For Qwen Code: `yes` by default, `no` once folder trust is
/// on and the folder is not trusted, `yes` when `trustedFolders.json` trusts it.
#[test]
fn status_follows_each_agents_trust_rules() {
    let repo = Repo::new();
    let root = repo.path().canonicalize().unwrap();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    repo.ok(&["hooks", "install", "--agent", "copilot", "--agent", "qwen"]);
    let copilot = |env: &[(&str, &str)]| status_of("copilot", &root, h, env);

    let untrusted = copilot(&[]);
    assert_eq!(untrusted["runs"], "no", "{untrusted:#}");
    assert!(
        untrusted["reason"]
            .as_str()
            .unwrap()
            .contains("trustedFolders")
    );
    assert_eq!(copilot(&[("COPILOT_ALLOW_ALL", "true")])["runs"], "yes");
    assert_eq!(copilot(&[("COPILOT_ALLOW_ALL", "1")])["runs"], "no");
    std::fs::create_dir_all(h.join(".copilot")).unwrap();
    std::fs::write(
        h.join(".copilot/config.json"),
        json!({"trustedFolders": [root.to_str().unwrap()]}).to_string(),
    )
    .unwrap();
    assert_eq!(copilot(&[])["runs"], "yes");
    repo.write(
        ".github/copilot/settings.json",
        r#"{"disableAllHooks": true}"#,
    );
    let off = copilot(&[]);
    assert_eq!(off["runs"], "no", "{off:#}");
    assert!(off["reason"].as_str().unwrap().contains("disableAllHooks"));

    assert_eq!(qwen_status(&root, h, &[])["runs"], "yes");
    std::fs::create_dir_all(h.join(".qwen")).unwrap();
    std::fs::write(
        h.join(".qwen/settings.json"),
        r#"{"security": {"folderTrust": {"enabled": true}}}"#,
    )
    .unwrap();
    let untrusted = qwen_status(&root, h, &[]);
    assert_eq!(untrusted["runs"], "no", "{untrusted:#}");
    std::fs::write(
        h.join(".qwen/trustedFolders.json"),
        json!({ root.to_str().unwrap(): "TRUST_FOLDER" }).to_string(),
    )
    .unwrap();
    assert_eq!(qwen_status(&root, h, &[])["runs"], "yes");
}
