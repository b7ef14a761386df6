//! OpenCode, the real CLI (its Linux x64 package, pinned in tests/agents): `hooks install
//! --agent opencode` writes the plugin, then headless turns (`opencode run`, then
//! `--session`) against the scripted model server (Chat Completions) through an
//! `@ai-sdk/openai-compatible` provider. Offline, OpenCode's own install of its plugin
//! package into each configuration folder would wait 70–90 s for the registry; npm's
//! `offline` setting makes it give up at once (it then runs without that package, as our
//! plugin needs nothing from it).
//!
//! Kilo, an OpenCode fork that loads the same plugin, runs the same scenarios through
//! [`Cli`] (tests/suite/agents_real/kilo.rs).

use super::{Session, agent_cli_at, write_word};
use crate::common::HANG_TIMEOUT;
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

/// What tells OpenCode and its forks apart in these tests.
pub struct Cli {
    /// `hooks install --agent <agent>`, and the agent its notes name.
    pub agent: &'static str,
    /// The binary, under tests/agents/node_modules.
    pub binary: &'static str,
    /// The user's configuration file, under HOME.
    pub config: &'static str,
    /// The project's configuration folder, where the plugin goes.
    pub folder: &'static str,
    /// The environment that keeps it offline and quiet.
    pub env: &'static [(&'static str, &'static str)],
    /// How uninstall names the CLI when it says what it left in the folder.
    pub name: &'static str,
    /// How long one `run` may take before it counts as hung.
    pub hang_bound: Duration,
}

pub const OPENCODE: Cli = Cli {
    agent: "opencode",
    binary: "opencode-linux-x64/bin/opencode",
    config: ".config/opencode/opencode.json",
    folder: ".opencode",
    env: &[
        ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
        ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
        ("npm_config_offline", "true"),
    ],
    name: "OpenCode",
    hang_bound: HANG_TIMEOUT,
};

/// What OpenCode (and Kilo) write into a configuration folder themselves (docs/HOOKS.md).
const OPENCODE_OWN: [&str; 5] = [
    ".gitignore",
    "package.json",
    "package-lock.json",
    "bun.lock",
    "node_modules",
];

impl Cli {
    /// The user's configuration: the model server as the only provider and model, with a
    /// context limit that the server's one overflowing answer exceeds.
    pub fn configure(&self, s: &Session) {
        let file = s.home.path().join(self.config);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let config = serde_json::json!({
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": false,
            "share": "disabled",
            "provider": {"local": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "local",
                "options": {"baseURL": format!("{}/v1", s.server.url()), "apiKey": "test-key"},
                "models": {"test": {"name": "test", "tool_call": true,
                                    "limit": {"context": 100000, "output": 1000}}}
            }},
            "model": "local/test",
            "small_model": "local/test",
        });
        std::fs::write(file, config.to_string()).unwrap();
    }

    /// `<cli> run --format json <args> <prompt>`, not started.
    pub fn command(&self, s: &Session, args: &[&str], prompt: &str) -> Command {
        let mut c = s.command(&agent_cli_at(self.binary));
        c.args(["run", "--format", "json"])
            .args(args)
            .arg(prompt)
            .envs(self.env.iter().copied());
        c
    }

    /// Run `command` to its end; the session id its events name.
    pub fn session_of(&self, s: &Session, command: Command) -> String {
        let out = s.ok_within(command, &format!("{} run", self.agent), self.hang_bound);
        let stdout = String::from_utf8_lossy(&out.stdout);
        stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find_map(|e| e["sessionID"].as_str().map(str::to_string))
            .unwrap_or_else(|| panic!("{} run named no session: {stdout}", self.agent))
    }

    /// `<cli> run --format json <args> <prompt>`; the session id its events name.
    pub fn run(&self, s: &Session, args: &[&str], prompt: &str) -> String {
        self.session_of(s, self.command(s, args, prompt))
    }
}

/// Install → two turns (agent, touched, session, tokens and the turn's message recorded) →
/// a rewind that names the fork the CLI can make, run as printed → a compaction that is
/// handed the run's manifest → revert of one turn → uninstall, which leaves only the CLI's
/// own files.
pub fn two_turns_a_rewind_a_compaction_a_revert_and_an_uninstall(cli: &Cli) {
    let s = Session::new();
    s.repo.ok(&["hooks", "install", "--agent", cli.agent]);
    assert_eq!(s.hooks_status(cli.agent)["runs"], "yes");
    cli.configure(&s);
    let root = s.repo.path().canonicalize().unwrap();

    let session = cli.run(&s, &[], &write_word(&root, "one"));
    assert_eq!(
        cli.run(&s, &["--session", &session], &write_word(&root, "two")),
        session
    );
    assert_eq!(
        std::fs::read_to_string(root.join("two.txt")).unwrap(),
        "two\n"
    );
    s.assert_turn_usage(2, false);
    let notes = s.assert_turns(cli.agent, &session, &["one.txt", "two.txt"]);
    for n in &notes {
        let at = n["meta"]["conversation_at"].as_str().unwrap_or_default();
        assert!(at.starts_with("msg_"), "the turn's message: {n:#}");
    }
    let run_id = s.run();

    // Rewind to the first turn: the printed command forks the whole session and says so.
    let to = format!("{run_id}@1");
    let out = s
        .repo
        .json(&["rewind", &run_id, "--to", &to, "--run", "back"]);
    assert!(!root.join("two.txt").exists(), "the second turn is rewound");
    assert_eq!(
        out["resume_command"],
        format!("{} --session {session} --fork", cli.agent),
        "{out:#}"
    );
    assert!(out["conversation_at"].is_null(), "{out:#}");
    let note = out["conversation"].as_str().unwrap_or_default();
    assert!(note.contains("at its end"), "{out:#}");
    // Run it as a user would (headless): a new session, holding the whole conversation, that
    // records into the new run. Its first answer overflows the model's context: the CLI
    // compacts the session, and the compaction's request holds the run's manifest.
    let before = s.server.requests().len();
    let forked = cli.run(
        &s,
        &["--session", &session, "--fork"],
        &format!("{} OVERFLOW", write_word(&root, "three")),
    );
    assert_ne!(forked, session);
    let bodies: Vec<String> = s.server.requests()[before..]
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    let first = bodies.iter().find(|b| b.contains("three.txt")).unwrap();
    assert!(
        first.contains("one.txt") && first.contains("two.txt"),
        "the fork holds every turn, as the note says: {first}"
    );
    assert!(
        bodies.iter().any(|b| b.contains("records into run back")),
        "a request after the overflow holds the manifest: {bodies:#?}"
    );
    // The run's last turn is recorded by the time `run` returned (the plugin's `dispose`
    // waits for its command).
    let back = crate::common::checkpoints(s.repo.path(), "back");
    let three = back.last().unwrap();
    assert_eq!(three["event"], "turn", "{back:#?}");
    let three_note = s
        .repo
        .json(&["show", three["checkpoint"].as_str().unwrap()]);
    assert_eq!(three_note["touched"], serde_json::json!(["three.txt"]));
    assert_eq!(three_note["sdk_session_id"], forked.as_str());

    // Revert the forked session's turn: its file goes, the others stay.
    s.repo
        .ok(&["revert", three["checkpoint"].as_str().unwrap()]);
    assert!(!root.join("three.txt").exists());
    assert!(root.join("one.txt").exists());
    let status = s.repo.git(&["status", "--porcelain"]);
    assert!(!status.contains("three.txt"), "{status}");

    // Uninstall removes the plugin; what is left in the folder is the CLI's own.
    let out = s.repo.json(&["hooks", "uninstall", "--agent", cli.agent]);
    assert_eq!(out["agents"][0]["action"], "deleted", "{out:#}");
    let folder = root.join(cli.folder);
    assert!(!folder.join("plugins").exists());
    // The CLI wrote its .gitignore there; uninstall names it and leaves it.
    let said = out["warnings"].to_string();
    let own = format!("{}'s own files (.gitignore", cli.name);
    assert!(said.contains(&own), "{out:#}");
    let left: Vec<String> = std::fs::read_dir(&folder)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        left.iter().all(|f| OPENCODE_OWN.contains(&f.as_str())),
        "{left:?}"
    );
    s.repo.assert_fsck();
}

/// A turn whose hook is still running when the CLI would exit is recorded by the time `run`
/// returns: the CLI does not wait for a plugin's event handler, but for its `dispose`, which
/// waits for the hook. The hook is made slow by a `git-agent-rewind` in front of ours on
/// PATH that holds a turn's payload for a while before it hands it on.
pub fn a_turn_whose_hook_outlasts_the_cli_is_recorded_when_it_returns(cli: &Cli) {
    let s = Session::new();
    s.repo.ok(&["hooks", "install", "--agent", cli.agent]);
    cli.configure(&s);
    let root = s.repo.path().canonicalize().unwrap();
    let slow = tempfile::tempdir().unwrap();
    let wrapper = slow.path().join("git-agent-rewind");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n\
             payload=$(cat)\n\
             case \"$payload\" in *'\"session.idle\"'*) sleep 3 ;; esac\n\
             printf '%s' \"$payload\" | exec '{}' \"$@\"\n",
            crate::common::bin().display()
        ),
    )
    .unwrap();
    #[cfg(unix)]
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();

    let mut c = cli.command(&s, &[], &write_word(&root, "one"));
    let path = c
        .get_envs()
        .find(|(k, _)| *k == "PATH")
        .and_then(|(_, v)| v)
        .unwrap()
        .to_owned();
    let path = std::env::join_paths(
        std::iter::once(slow.path().to_path_buf()).chain(std::env::split_paths(&path)),
    )
    .unwrap();
    c.env("PATH", path);
    let session = cli.session_of(&s, c);
    s.assert_turns(cli.agent, &session, &["one.txt"]);
}

#[test]
fn two_turns_a_rewind_a_compaction_a_revert_and_an_uninstall_opencode() {
    two_turns_a_rewind_a_compaction_a_revert_and_an_uninstall(&OPENCODE);
}

#[test]
fn a_turn_whose_hook_outlasts_opencode_is_recorded_when_it_returns() {
    a_turn_whose_hook_outlasts_the_cli_is_recorded_when_it_returns(&OPENCODE);
}
