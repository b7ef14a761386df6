//! Claude Code hooks (docs/HOOKS.md): the payloads of fixtures/claude recording turns with the
//! session id and a transcript pointer, malformed payloads ignored with exit 0, and the
//! `.claude/settings.json` merge that keeps everything of the user's.

use crate::common;

use common::{Repo, checkpoints, refs, tool_stdin};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

fn hooks_dir(repo: &Repo) -> PathBuf {
    repo.path().join(".git/hooks")
}

fn actions(out: &Value) -> Vec<String> {
    out["git"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["action"].as_str().unwrap().to_string())
        .collect()
}

fn fixture(name: &str) -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/claude")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// A fixture pointed at `repo` and at a transcript outside it.
fn payload(name: &str, repo: &Path, transcripts: &Path) -> Vec<u8> {
    let mut v = fixture(name);
    v["cwd"] = repo.to_str().unwrap().into();
    v["transcript_path"] = transcripts.join("session.jsonl").to_str().unwrap().into();
    if v.get("agent_transcript_path").is_some() {
        v["agent_transcript_path"] = transcripts.join("agent.jsonl").to_str().unwrap().into();
    }
    serde_json::to_vec(&v).unwrap()
}

/// Run `hook claude` from a directory outside the repository: the payload's cwd decides.
/// Nothing on stdout: it would reach the model's context.
fn claude_hook(input: &[u8]) -> Output {
    let out = claude_hook_speaking(input);
    assert!(
        out.stdout.is_empty(),
        "nothing on stdout (it would reach the model's context)"
    );
    out
}

/// [`claude_hook`] for the one event that may speak to the model: a session resumed,
/// compacted or cleared is handed the run's manifest.
fn claude_hook_speaking(input: &[u8]) -> Output {
    let elsewhere = tempfile::tempdir().unwrap();
    let out = tool_stdin(elsewhere.path(), &["hook", "claude"], input, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn claude_payloads_record_turns_with_the_session_id() {
    let repo = Repo::new();
    let dir = repo.path();
    let t = tempfile::tempdir().unwrap();
    let transcript = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/claude/transcript.jsonl"),
    )
    .unwrap();
    std::fs::write(t.path().join("session.jsonl"), &transcript).unwrap();
    std::fs::write(t.path().join("agent.jsonl"), b"{\"type\":\"user\"}\n").unwrap();
    let session = fixture("stop.json")["session_id"]
        .as_str()
        .unwrap()
        .to_string();

    // SessionStart with no active run starts one.
    claude_hook(&payload("session-start.json", dir, t.path()));
    let status = repo.json(&["status"]);
    let run = status["run"].as_str().expect("a run is active").to_string();
    let root = checkpoints(dir, &run)[0].clone();
    assert_eq!(root["event"], "start");
    assert_eq!(root["sdk_session_id"], session.as_str());

    // A resumed session joins it.
    let before = refs(dir, "refs/");
    let out = claude_hook_speaking(&payload("session-start-resume.json", dir, t.path()));
    let told: Value = serde_json::from_slice(&out.stdout).unwrap();
    let context = told["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        context.contains(&format!("records into run {run}")),
        "{context}"
    );
    assert_eq!(refs(dir, "refs/"), before);
    assert_eq!(repo.json(&["status"])["run"], run.as_str());

    // Stop: a turn checkpoint with the session id and a transcript pointer.
    repo.write("src.txt", "agent's work\n");
    claude_hook(&payload("stop.json", dir, t.path()));
    let cps = checkpoints(dir, &run);
    assert_eq!(cps.len(), 2);
    let turn = &cps[1];
    assert_eq!(turn["event"], "turn");
    assert_eq!(turn["step"], "turn");
    assert_eq!(turn["sdk_session_id"], session.as_str());
    let blob = common::git_in(
        dir,
        &[
            "hash-object",
            t.path().join("session.jsonl").to_str().unwrap(),
        ],
    )
    .trim()
    .to_string();
    let art = &turn["artifacts"][0];
    assert_eq!(
        art["uri"],
        format!("file://{}", t.path().join("session.jsonl").display()).as_str()
    );
    assert_eq!(art["digest"], format!("git-blob:{blob}").as_str());
    // A pointer only: the transcript itself is not in the repository.
    assert!(!repo.git_output(&["cat-file", "-e", &blob]).status.success());
    let tree_files = repo.git(&[
        "ls-tree",
        "-r",
        "--name-only",
        turn["checkpoint"].as_str().unwrap(),
    ]);
    assert!(tree_files.contains("src.txt"), "{tree_files}");

    // SubagentStop inside a begun step: recorded in that step, both transcripts pointed at.
    repo.ok(&["step", "begin", "review"]);
    claude_hook(&payload("subagent-stop.json", dir, t.path()));
    let cps = checkpoints(dir, &run);
    let sub = cps.last().unwrap();
    assert_eq!(sub["event"], "turn");
    assert_eq!(sub["step"], "review");
    assert_eq!(sub["sdk_session_id"], session.as_str());
    assert_eq!(sub["artifacts"].as_array().unwrap().len(), 2);
    assert_eq!(sub["meta"]["subagent_type"], "code-reviewer");
    assert_eq!(sub["meta"]["hook_event"], "SubagentStop");

    // Events we do not handle are logged and ignored.
    let before = refs(dir, "refs/");
    let out = claude_hook(&payload("pre-tool-use.json", dir, t.path()));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ignored"));
    assert_eq!(refs(dir, "refs/"), before);
    repo.assert_fsck();
}

#[test]
fn claude_garbage_and_foreign_directories_exit_0_and_write_nothing() {
    let repo = Repo::new();
    let dir = repo.path();
    let inputs: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"garbage\x00\xff".to_vec(),
        b"[1,2,3]".to_vec(),
        br#"{"hook_event_name":"Stop"}"#.to_vec(),
        br#"{"hook_event_name":"Stop","session_id":"s","cwd":"relative/path"}"#.to_vec(),
        format!(
            r#"{{"hook_event_name":"Stop","session_id":"s","cwd":{:?},"transcript_path":7}}"#,
            dir.display()
        )
        .into_bytes(),
    ];
    for input in &inputs {
        let out = tool_stdin(dir, &["hook", "claude"], input, &[]);
        assert_eq!(out.status.code(), Some(0));
        assert!(out.stdout.is_empty());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("ignored: malformed payload"), "{stderr}");
    }
    // A well-formed payload whose cwd is not a repository.
    let not_repo = tempfile::tempdir().unwrap();
    let mut v = fixture("stop.json");
    v["cwd"] = not_repo.path().to_str().unwrap().into();
    let out = tool_stdin(
        dir,
        &["hook", "claude"],
        &serde_json::to_vec(&v).unwrap(),
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(refs(dir, "refs/agent-runs/").is_empty());
    assert!(refs(dir, "refs/notes/").is_empty());
    assert!(!dir.join(".git/agent-rewind").exists(), "nothing written");

    // Unknown hook names and hooks outside a repository exit 0 too.
    for args in [&["hook", "no-such-hook"][..], &["hook", "post-commit"][..]] {
        let out = tool_stdin(not_repo.path(), args, b"", &[]);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("warning:"));
    }
}

const USER_SETTINGS: &str = r#"{
  "model": "opus",
  "permissions": {
    "allow": ["Bash(cargo test:*)"]
  },
  "hooks": {
    "Stop": [
      { "hooks": [ { "type": "command", "command": "notify-send done" } ] }
    ],
    "PreToolUse": [
      { "matcher": "Bash", "hooks": [ { "type": "command", "command": "./scripts/guard.sh" } ] }
    ]
  },
  "env": { "FOO": "1" }
}
"#;

#[test]
fn claude_settings_are_merged_and_unmerged_without_losing_anything() {
    let repo = Repo::new();
    let dir = repo.path();
    let settings = dir.join(".claude/settings.json");
    repo.write(".claude/settings.json", USER_SETTINGS);

    let out = repo.json(&["hooks", "install", "--agent", "claude"]);
    assert!(
        out["git"].as_array().unwrap().is_empty(),
        "--agent alone: no git hooks"
    );
    assert_eq!(out["agents"][0]["action"], "added");
    let v: Value = serde_json::from_str(&repo.read(".claude/settings.json")).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["model", "permissions", "hooks", "env"]);
    assert_eq!(
        v["hooks"]["Stop"][0]["hooks"][0]["command"],
        "notify-send done"
    );
    assert_eq!(v["hooks"]["PreToolUse"][0]["matcher"], "Bash");
    for event in ["SessionStart", "Stop", "SubagentStop"] {
        let groups = v["hooks"][event].as_array().unwrap();
        let ours = groups
            .iter()
            .filter(|g| g["hooks"][0]["command"] == "git agent-rewind hook claude")
            .count();
        assert_eq!(ours, 1, "{event}");
    }
    let bytes = std::fs::read(&settings).unwrap();
    let again = repo.json(&["hooks", "install", "--agent", "claude"]);
    assert_eq!(again["agents"][0]["action"], "unchanged");
    assert_eq!(std::fs::read(&settings).unwrap(), bytes);

    let removed = repo.json(&["hooks", "uninstall", "--agent", "claude"]);
    assert_eq!(removed["agents"][0]["action"], "removed");
    let back: Value = serde_json::from_str(&repo.read(".claude/settings.json")).unwrap();
    assert_eq!(back, serde_json::from_str::<Value>(USER_SETTINGS).unwrap());

    // Invalid JSON: refused with one clear line, the file untouched, no git hook written.
    let broken = "{ \"model\": \"opus\", // a comment\n}\n";
    repo.write(".claude/settings.json", broken);
    let out = repo.run(&["hooks", "install", "--git", "--agent", "claude"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains("is not valid JSON"), "{stderr}");
    assert_eq!(repo.read(".claude/settings.json"), broken);
    assert!(!hooks_dir(&repo).join("post-commit").exists());
}

#[test]
fn init_installs_git_and_agent_hooks() {
    let repo = Repo::new();
    let out = repo.json(&["init", "--hooks", "--agent", "claude"]);
    assert_eq!(actions(&out["hooks"]), ["created", "created"]);
    assert_eq!(out["hooks"]["agents"][0]["action"], "created");
    let v: Value = serde_json::from_str(&repo.read(".claude/settings.json")).unwrap();
    assert_eq!(
        v["hooks"]["Stop"][0]["hooks"][0]["command"],
        "git agent-rewind hook claude"
    );
    let again = repo.json(&["init", "--hooks", "--agent", "claude"]);
    assert_eq!(actions(&again["hooks"]), ["unchanged", "unchanged"]);
    assert_eq!(again["hooks"]["agents"][0]["action"], "unchanged");

    let out = repo.run(&["init", "--agent", "aider"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown agent"));
}

#[test]
fn a_turn_is_recorded_without_a_configured_identity() {
    // A fresh repository where the agent works before anyone set user.name/user.email:
    // recording falls back to a fixed identity instead of failing (docs/FORMAT.md).
    let repo = Repo::new();
    let dir = repo.path();
    repo.git(&["config", "--unset", "user.name"]);
    repo.git(&["config", "--unset", "user.email"]);
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("session.jsonl"), b"{}\n").unwrap();
    let mut child = common::tool_cmd(dir)
        .args(["--json", "hook", "claude"])
        .env_remove("EMAIL")
        .env_remove("GIT_COMMITTER_NAME")
        .env_remove("GIT_COMMITTER_EMAIL")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let input = payload("stop.json", dir, t.path());
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), &input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["action"], "recorded", "{v}");
    let run = v["run"].as_str().unwrap();
    assert_eq!(checkpoints(dir, run).last().unwrap()["event"], "turn");
    let reflog = repo.git(&["reflog", &format!("refs/agent-runs/{run}/HEAD")]);
    assert!(reflog.contains("agent-rewind"), "{reflog}");
}
