//! One install for every repository: `hooks install --agent <a> --global` writes each agent's
//! user-level configuration in an isolated HOME, from any folder; status shows both levels;
//! uninstall puts every file back byte for byte; the hook it installs records the first turn
//! of a repository nobody initialized, is a quiet no-op outside a repository and where
//! `agentRewind.enabled` is false (git's precedence).

use crate::common::agent_fixtures::payload;
use crate::common::{Repo, refs, tool_cmd};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

/// The variables that move an agent's user-level folder: none inherited.
const AGENT_DIRS: [&str; 8] = [
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "GEMINI_CLI_HOME",
    "XDG_CONFIG_HOME",
    "QWEN_HOME",
    "COPILOT_HOME",
    "PI_CODING_AGENT_DIR",
    "GEMINI_CLI_TRUST_WORKSPACE",
];

/// The tool in `dir` with `home` as HOME, `stdin` on its standard input and `env` set.
fn as_user(dir: &Path, home: &Path, args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut c = tool_cmd(dir);
    c.env("HOME", home)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for k in AGENT_DIRS {
        c.env_remove(k);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// [`as_user`] that must succeed; its `--json` output.
fn json_as_user(dir: &Path, home: &Path, args: &[&str]) -> Value {
    let mut a = vec!["--json"];
    a.extend_from_slice(args);
    let out = as_user(dir, home, &a, b"", &[]);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A file's bytes and permission bits; `None` for a folder.
type Content = Option<(Vec<u8>, u32)>;

/// Every file below `dir` with its bytes and permission bits, and every folder.
fn tree(dir: &Path) -> Vec<(PathBuf, Content)> {
    let mut out = vec![];
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let md = std::fs::symlink_metadata(&p).unwrap();
            if md.is_dir() {
                todo.push(p.clone());
                out.push((p, None));
            } else {
                let mode = md.permissions().mode() & 0o7777;
                out.push((p.clone(), Some((std::fs::read(&p).unwrap(), mode))));
            }
        }
    }
    out.sort();
    out
}

/// The user's own files, written in their own formats and modes.
fn users_files(home: &Path) {
    let write = |rel: &str, text: &str, mode: u32| {
        let p = home.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    // Four spaces and a permission of 600: not how we write JSON.
    write(
        ".claude/settings.json",
        "{\n    \"model\": \"opus\",\n    \"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}]}\n}\n",
        0o600,
    );
    write(
        ".gemini/settings.json",
        "{\"general\":{\"vimMode\":true}}",
        0o644,
    );
    write(".qwen/settings.json", "{}\n", 0o640);
    write(
        ".config/opencode/opencode.json",
        "{\"model\": \"x\"}\n",
        0o644,
    );
    write(".codex/config.toml", "model = \"gpt-5.5\"\n", 0o600);
}

#[test]
fn global_install_of_every_agent_is_exact_from_anywhere_and_uninstall_puts_every_byte_back() {
    let home = tempfile::tempdir().unwrap();
    let nowhere = tempfile::tempdir().unwrap();
    users_files(home.path());
    let before = tree(home.path());

    let out = json_as_user(
        nowhere.path(),
        home.path(),
        &["hooks", "install", "--agent", "all", "--global"],
    );
    assert_eq!(out["global"], true, "{out}");
    assert!(
        out["git"].as_array().unwrap().is_empty(),
        "no git hooks: {out}"
    );
    let files: Vec<(String, String)> = out["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["agent"].as_str().unwrap().to_string(),
                a["path"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let h = home.path().display().to_string();
    let expected = [
        ("claude", ".claude/settings.json"),
        ("codex", ".codex/hooks.json"),
        ("gemini", ".gemini/settings.json"),
        ("cursor", ".cursor/hooks.json"),
        ("opencode", ".config/opencode/plugins/git-agent-rewind.js"),
        ("qwen", ".qwen/settings.json"),
        ("copilot", ".copilot/hooks/agent-rewind.json"),
        ("pi", ".pi/agent/extensions/agent-rewind.ts"),
        ("auggie", ".augment/settings.json"),
        ("kilo", ".config/kilo/plugins/git-agent-rewind.js"),
        ("droid", ".factory/settings.json"),
    ];
    for (agent, rel) in expected {
        assert!(
            files.contains(&(agent.to_string(), format!("{h}/{rel}"))),
            "{agent}: {files:?}"
        );
    }
    let read = |rel: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(home.path().join(rel)).unwrap()).unwrap()
    };
    let claude = read(".claude/settings.json");
    assert_eq!(claude["model"], "opus", "the user's keys are kept");
    assert_eq!(
        claude["hooks"]["Stop"][0]["hooks"][0]["command"],
        "say done"
    );
    assert_eq!(
        claude["hooks"]["Stop"][1]["hooks"][0]["command"], "git agent-rewind hook claude",
        "the same entry point as a repository's install"
    );
    assert_eq!(
        read(".codex/hooks.json")["hooks"]["Stop"][0]["hooks"][0]["command"],
        "git agent-rewind hook codex"
    );
    assert_eq!(read(".gemini/settings.json")["general"]["vimMode"], true);

    // Twice: no byte changes.
    let installed = tree(home.path());
    let again = json_as_user(
        nowhere.path(),
        home.path(),
        &["hooks", "install", "--agent", "all", "--global"],
    );
    for a in again["agents"].as_array().unwrap() {
        assert_eq!(a["action"], "unchanged", "{a}");
    }
    assert_eq!(tree(home.path()), installed);
    assert!(
        std::fs::read_dir(nowhere.path()).unwrap().next().is_none(),
        "nothing written where it ran"
    );

    // Status in a repository: both levels.
    let repo = Repo::new();
    let status = json_as_user(repo.path(), home.path(), &["hooks", "status"]);
    let claude = status
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == "claude")
        .unwrap();
    assert_eq!(
        claude["events"],
        serde_json::json!([]),
        "not in the repository"
    );
    assert_eq!(
        claude["global"]["path"],
        format!("{h}/.claude/settings.json")
    );
    assert_eq!(claude["global"]["runs"], "yes", "{claude}");
    assert_eq!(claude["global"]["events"].as_array().unwrap().len(), 4);

    let removed = json_as_user(
        nowhere.path(),
        home.path(),
        &["hooks", "uninstall", "--global"],
    );
    assert_eq!(
        removed["agents"].as_array().unwrap().len(),
        expected.len(),
        "{removed}"
    );
    assert_eq!(
        tree(home.path()),
        before,
        "every file back byte for byte with its mode, nothing else left"
    );
}

#[test]
fn global_refuses_git_hooks_and_a_file_it_cannot_read_and_then_writes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let repo = Repo::new();
    for flag in ["--git", "--assisted-by", "--mcp"] {
        let out = as_user(
            repo.path(),
            home.path(),
            &["hooks", "install", "--agent", "claude", "--global", flag],
            b"",
            &[],
        );
        assert_eq!(out.status.code(), Some(2), "{flag}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--global"), "{flag}: {err}");
    }
    let out = as_user(
        repo.path(),
        home.path(),
        &["hooks", "install", "--global"],
        b"",
        &[],
    );
    assert_eq!(out.status.code(), Some(2));

    // One agent's file is not JSON: refused before any other is written.
    let broken = "{ \"hooks\": // no\n}";
    std::fs::create_dir_all(home.path().join(".qwen")).unwrap();
    std::fs::write(home.path().join(".qwen/settings.json"), broken).unwrap();
    let before = tree(home.path());
    let out = as_user(
        repo.path(),
        home.path(),
        &["hooks", "install", "--agent", "all", "--global"],
        b"",
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not valid JSON"));
    assert_eq!(tree(home.path()), before, "nothing written");
    assert!(
        !repo.path().join(".claude").exists(),
        "never the repository's configuration"
    );
    assert!(
        !repo.path().join(".git/hooks/post-commit").exists(),
        "never git hooks"
    );
}

/// A SessionStart and a Stop of Claude Code in `dir`, as the user-level hook calls them.
fn claude_turn(dir: &Path, home: &Path, env: &[(&str, &str)]) -> [Output; 2] {
    let transcript = home.join("t.jsonl");
    std::fs::write(&transcript, "{}\n").unwrap();
    ["session-start.json", "stop.json"].map(|name| {
        let input = payload("claude", name, dir, &transcript);
        as_user(home, home, &["hook", "claude"], &input, env)
    })
}

#[test]
fn the_first_turn_in_a_repository_nobody_initialized_starts_its_run_and_sets_it_up() {
    let home = tempfile::tempdir().unwrap();
    json_as_user(
        home.path(),
        home.path(),
        &["hooks", "install", "--agent", "claude", "--global"],
    );
    let repo = Repo::empty();
    repo.write("a.txt", "a\n");
    for out in claude_turn(repo.path(), home.path(), &[]) {
        assert!(out.status.success());
        assert!(out.stdout.is_empty(), "the agent is shown nothing");
    }
    let list = repo.json(&["list"]);
    let run = list[0]["run"].as_str().unwrap();
    let cps = crate::common::checkpoints(repo.path(), run);
    let events: Vec<&str> = cps.iter().map(|c| c["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["start", "turn"], "{cps:#?}");
    assert_eq!(
        repo.git(&["config", "--get-all", "notes.displayRef"])
            .trim(),
        "refs/notes/agent-runs/*",
        "set up as `init` does"
    );
    repo.assert_fsck();
}

#[test]
fn agent_rewind_enabled_false_turns_recording_off_with_gits_precedence() {
    let home = tempfile::tempdir().unwrap();
    let global = home.path().join("gitconfig");
    let off = Repo::new();
    off.git(&["config", "agentRewind.enabled", "false"]);
    let config_before = std::fs::read(off.path().join(".git/config")).unwrap();
    for out in claude_turn(off.path(), home.path(), &[]) {
        assert_eq!(out.status.code(), Some(0));
        assert!(out.stdout.is_empty() && out.stderr.is_empty(), "quiet");
    }
    assert!(refs(off.path(), "refs/agent-runs/").is_empty());
    assert!(
        !off.path().join(".git/agent-rewind").exists(),
        "nothing written"
    );
    assert_eq!(
        std::fs::read(off.path().join(".git/config")).unwrap(),
        config_before,
        "not even init's set-up"
    );

    // Off in the user's configuration, on in one repository: recorded only there.
    std::fs::write(&global, "[agentRewind]\n\tenabled = false\n").unwrap();
    let g = global.to_str().unwrap();
    let elsewhere = Repo::new();
    let on = Repo::new();
    on.git(&["config", "agentRewind.enabled", "true"]);
    claude_turn(elsewhere.path(), home.path(), &[("GIT_CONFIG_GLOBAL", g)]);
    claude_turn(on.path(), home.path(), &[("GIT_CONFIG_GLOBAL", g)]);
    assert!(refs(elsewhere.path(), "refs/agent-runs/").is_empty());
    assert!(!refs(on.path(), "refs/agent-runs/").is_empty());

    // `git -c` wins over the repository's `true`.
    let before = refs(on.path(), "refs/agent-runs/");
    on.write("b.txt", "b\n");
    claude_turn(
        on.path(),
        home.path(),
        &[
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "agentRewind.enabled"),
            ("GIT_CONFIG_VALUE_0", "false"),
        ],
    );
    assert_eq!(refs(on.path(), "refs/agent-runs/"), before);
}

#[test]
fn a_folder_outside_any_repository_is_a_quiet_no_op() {
    let home = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("notes.txt"), "mine\n").unwrap();
    let home_before = tree(home.path());
    let folder_before = tree(folder.path());
    let transcript = folder.path().join("t.jsonl");
    for name in ["session-start.json", "post-tool-use-edit.json", "stop.json"] {
        let input = payload("claude", name, folder.path(), &transcript);
        let out = as_user(folder.path(), home.path(), &["hook", "claude"], &input, &[]);
        assert_eq!(out.status.code(), Some(0), "{name}");
        assert!(
            out.stdout.is_empty() && out.stderr.is_empty(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(tree(folder.path()), folder_before);
    assert_eq!(tree(home.path()), home_before);
}
