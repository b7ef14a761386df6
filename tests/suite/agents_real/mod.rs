//! The real agent CLIs, at the versions pinned in `tests/agents/package-lock.json`,
//! driven headless against [`model_server`] on 127.0.0.1 with HOME isolated: their hooks
//! record what they should into real repositories. `scripts/test` installs them before it
//! runs the tests ([`INSTALL_AGENT_CLIS`] alone installs them); without them these tests
//! fail and say so.

pub mod model_server;

mod claude;
mod codex;
mod copilot;
mod droid;
mod gemini;
mod global;
mod kilo;
mod opencode;
mod pi;
mod qwen;

use crate::common::Repo;
use model_server::ModelServer;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The one command that installs the pinned agent CLIs: what a test without them says to
/// run, and what `scripts/test` says when it cannot install them itself.
pub const INSTALL_AGENT_CLIS: &str = "scripts/test --install-only";

/// `tests/agents/node_modules/.bin/<name>`, or a failure that says how to install it.
pub fn agent_cli(name: &str) -> PathBuf {
    agent_cli_at(&format!(".bin/{name}"))
}

/// `tests/agents/node_modules/<path>`, or a failure that says how to install it.
pub fn agent_cli_at(path: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/agents/node_modules")
        .join(path);
    assert!(
        p.exists(),
        "these tests need the agent CLIs pinned in tests/agents: run `{INSTALL_AGENT_CLIS}` \
         (`scripts/test` does it before the tests); {} is missing",
        p.display()
    );
    p
}

/// A repository, an isolated HOME and a model server for one agent session.
/// The prompt that scripts the model server's MCP calls (`CALL <tool> <json>`): `list_runs`,
/// `diff` from `<run>@0`, then `revert` of `<run>@1` as a plan, then that plan applied by
/// its id (`$plan_id`, the newest a tool answered with).
pub fn mcp_revert_script(run: &str) -> String {
    let turn = format!("{run}@1");
    [
        "CALL list_runs {}".to_string(),
        format!(
            "CALL diff {}",
            serde_json::json!({"from": format!("{run}@0")})
        ),
        format!("CALL revert {}", serde_json::json!({"target": turn})),
        format!(
            "CALL revert {}",
            serde_json::json!({"target": turn, "plan_id": "$plan_id"})
        ),
    ]
    .join(" \n")
}

pub struct Session {
    pub repo: Repo,
    pub home: tempfile::TempDir,
    pub server: ModelServer,
}

impl Session {
    pub fn new() -> Session {
        Session {
            repo: Repo::new(),
            home: tempfile::tempdir().unwrap(),
            server: ModelServer::start(),
        }
    }

    /// `program` in the repository with HOME isolated, our binary first on PATH (the hooks
    /// run `git agent-rewind`) and the pinned agent CLIs next, no git configuration but the
    /// repository's, and every destination other than 127.0.0.1 sent to a closed port.
    pub fn command(&self, program: &Path) -> Command {
        let bin_dir = crate::common::bin().parent().unwrap().to_path_buf();
        let clis = agent_cli("claude").parent().unwrap().to_path_buf();
        let path = std::env::join_paths([bin_dir, clis].into_iter().chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )))
        .unwrap();
        let mut c = Command::new(program);
        c.current_dir(self.repo.path())
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path().join(".config"))
            .env("XDG_DATA_HOME", self.home.path().join(".local/share"))
            .env("XDG_CACHE_HOME", self.home.path().join(".cache"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("HTTP_PROXY", "http://127.0.0.1:9")
            .env("HTTPS_PROXY", "http://127.0.0.1:9")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("NO_COLOR", "1")
            .env("TERM", "dumb");
        c
    }

    /// Run `cmd` to its end, failing the test with its output unless it succeeds.
    pub fn ok(&self, cmd: Command, what: &str) -> Output {
        self.ok_within(cmd, what, crate::common::HANG_TIMEOUT)
    }

    /// [`Session::ok`] for a program that may take up to `limit` without hanging.
    pub fn ok_within(&self, cmd: Command, what: &str, limit: std::time::Duration) -> Output {
        let out = crate::common::bounded_by(cmd, what, limit);
        assert!(
            out.status.success(),
            "{what} failed ({}):\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }
}

impl Session {
    /// The only run recorded here.
    pub fn run(&self) -> String {
        self.repo.json(&["list"])[0]["run"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// The run holds a start and one `turn` checkpoint per file of `files`, each recorded
    /// by `agent` in `session` with that file as what it touched; returns their notes.
    pub fn assert_turns(
        &self,
        agent: &str,
        session: &str,
        files: &[&str],
    ) -> Vec<serde_json::Value> {
        let cps = crate::common::checkpoints(self.repo.path(), &self.run());
        let events: Vec<&str> = cps.iter().map(|c| c["event"].as_str().unwrap()).collect();
        let expected: Vec<&str> = std::iter::once("start")
            .chain(files.iter().map(|_| "turn"))
            .collect();
        assert_eq!(events, expected, "{cps:#?}");
        let mut shown = vec![];
        for (cp, file) in cps[1..].iter().zip(files) {
            let note = self
                .repo
                .json(&["show", cp["checkpoint"].as_str().unwrap()]);
            assert_eq!(note["agent"], agent, "{note:#}");
            assert_eq!(note["sdk_session_id"], session, "{note:#}");
            assert_eq!(note["touched"], serde_json::json!([file]), "{note:#}");
            shown.push(note);
        }
        self.repo.assert_fsck();
        shown
    }

    /// The tokens of `calls` answers of the model server ([`model_server::USAGE`] each; cache
    /// writes only where the API reports them, `cache_write`).
    pub fn expected_usage(calls: u64, cache_write: bool) -> serde_json::Value {
        let u = model_server::USAGE;
        serde_json::json!({
            "input": calls * u.input,
            "output": calls * u.output,
            "cache_read": calls * u.cache_read,
            "cache_write": if cache_write { calls * u.cache_write } else { 0 },
        })
    }

    /// The `usage` of each `turn` checkpoint of the run, oldest first.
    pub fn turn_usages(&self) -> Vec<serde_json::Value> {
        let cps = crate::common::checkpoints(self.repo.path(), &self.run());
        cps.iter()
            .filter(|c| c["event"] == "turn")
            .map(|cp| {
                self.repo
                    .json(&["show", cp["checkpoint"].as_str().unwrap()])["usage"]
                    .clone()
            })
            .collect()
    }

    /// Every `turn` checkpoint of the run carries, for one model, exactly the tokens of the
    /// `calls` answers the model server gave that turn.
    pub fn assert_turn_usage(&self, calls: u64, cache_write: bool) {
        let expected = Self::expected_usage(calls, cache_write);
        let usages = self.turn_usages();
        assert!(!usages.is_empty());
        for usage in usages {
            let models = usage
                .as_object()
                .unwrap_or_else(|| panic!("no usage: {usage}"));
            assert_eq!(models.len(), 1, "one model: {usage}");
            let (model, tokens) = models.iter().next().unwrap();
            assert!(!model.is_empty() && model != "unknown", "{usage}");
            assert_eq!(tokens, &expected, "{usage}");
        }
    }

    /// After two turns that wrote `files`: a revert of the second turn takes its file away
    /// and keeps the first's, then a rewind to the first turn; its `--json` output.
    pub fn revert_then_rewind(&self, files: [&str; 2]) -> serde_json::Value {
        let run = self.run();
        let root = self.repo.path();
        self.repo.ok(&["revert", &format!("{run}@2")]);
        assert!(
            !root.join(files[1]).exists(),
            "the reverted turn's file is gone"
        );
        assert!(root.join(files[0]).exists(), "the other turn's file stays");
        let status = self.repo.git(&["status", "--porcelain"]);
        assert!(!status.contains(files[1]), "{status}");
        let to = format!("{run}@1");
        let out = self
            .repo
            .json(&["rewind", &run, "--to", &to, "--run", "back"]);
        self.repo.assert_fsck();
        out
    }

    /// `hooks status --json` as seen with this session's HOME: `agent`'s entry.
    /// After an agent called `list_runs`, `diff` from `@0` and `revert` of `@1` (plan, then
    /// apply) through the MCP server, whose answers are in `last_request`: the first turn's
    /// `one.txt` is gone, and the run's notes name `reverter` (`<agent> session <id>`).
    pub fn assert_reverted_through_mcp(&self, run: &str, last_request: &str, reverter: &str) {
        assert!(
            last_request.contains(run),
            "list_runs named the run: {last_request}"
        );
        assert!(
            last_request.contains("+one"),
            "diff showed the first turn: {last_request}"
        );
        assert!(last_request.contains("plan_id"), "{last_request}");
        assert!(!self.repo.path().join("one.txt").exists());
        let notes = self.repo.git(&[
            "log",
            "--format=%N",
            &format!("--notes=refs/notes/agent-runs/{run}"),
            &format!("refs/agent-runs/{run}/turn"),
        ]);
        assert!(notes.contains(&format!("{reverter} (MCP)")), "{notes}");
        self.repo.assert_fsck();
    }

    pub fn hooks_status(&self, agent: &str) -> serde_json::Value {
        let mut c = self.command(&crate::common::bin());
        c.args(["--json", "hooks", "status"]);
        let out = self.ok(c, "hooks status");
        let all: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        all.as_array()
            .unwrap()
            .iter()
            .find(|a| a["agent"] == agent)
            .unwrap_or_else(|| panic!("no {agent} in {all:#}"))
            .clone()
    }

    /// The first request of the agent's that reached the server after the first `before`.
    pub fn sent_after(&self, before: usize) -> String {
        self.server.agent_requests()[before].body.to_string()
    }
}

/// The prompt that makes the scripted model write `<word>` into `<root>/<word>.txt`.
pub fn write_word(root: &Path, word: &str) -> String {
    format!(
        "WRITE {} {word}",
        root.join(format!("{word}.txt")).display()
    )
}
