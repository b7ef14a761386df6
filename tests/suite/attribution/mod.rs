//! Who wrote this line: `blame`, `stats` and the history-rewriting matrix, on
//! repositories whose agent turns are recorded the way a real session records them — the
//! Claude Code hook payloads (session start, one file edit per write, the turn's `Stop`)
//! fed through `git agent-rewind hook claude`, and commits through the installed git hooks.

use crate::common::Repo;
use crate::common::agent_fixtures::hook;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

mod blame;
mod gitai;
mod gitai_notes;
mod rewrites;
mod stats;
mod trace;
mod trailers;

/// An agent session in a repository: its id, its transcript (naming its model), its hooks.
pub struct Agent {
    dir: PathBuf,
    session: String,
    transcript: PathBuf,
    _home: tempfile::TempDir,
}

impl Agent {
    /// A Claude Code session of `model` starting in `dir` (it starts a run, made active).
    pub fn start(dir: &Path, session: &str, model: &str) -> Agent {
        let home = tempfile::tempdir().unwrap();
        let transcript = home.path().join(format!("{session}.jsonl"));
        let line = json!({"type": "assistant", "uuid": format!("{session}-1"),
            "message": {"role": "assistant", "model": model, "content": []}});
        std::fs::write(&transcript, format!("{line}\n")).unwrap();
        let a = Agent {
            dir: dir.to_path_buf(),
            session: session.to_string(),
            transcript,
            _home: home,
        };
        a.send(json!({"hook_event_name": "SessionStart", "source": "startup"}));
        a
    }

    fn send(&self, mut event: Value) -> Value {
        let o = event.as_object_mut().unwrap();
        o.insert("session_id".into(), self.session.clone().into());
        o.insert("cwd".into(), self.dir.to_str().unwrap().into());
        o.insert(
            "transcript_path".into(),
            self.transcript.to_str().unwrap().into(),
        );
        hook("claude", &serde_json::to_vec(&event).unwrap(), &[])
    }

    /// The agent writes `content` to `rel` (its Write tool, then the PostToolUse hook).
    pub fn write(&self, rel: &str, content: &str) {
        crate::common::write_in(&self.dir, rel, content);
        let path = self.dir.join(rel);
        self.send(
            json!({"hook_event_name": "PostToolUse", "tool_name": "Write",
            "tool_input": {"file_path": path.to_str().unwrap(), "content": content}}),
        );
    }

    /// The end of the turn: a `turn` checkpoint; its id.
    pub fn turn(&self) -> String {
        let out = self.send(json!({"hook_event_name": "Stop", "stop_hook_active": false}));
        out["checkpoint"].as_str().unwrap_or_default().to_string()
    }
}

/// A repository with the git hooks installed and `app.txt` committed by a person.
pub fn repo_with(base: &str) -> Repo {
    let r = Repo::new();
    r.ok(&["hooks", "install"]);
    r.write("app.txt", base);
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "base"]);
    r
}

/// `git commit -a` by the person.
pub fn commit(r: &Repo, message: &str) {
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", message]);
}

/// Who wrote each line of `file` (at `rev`, or in the worktree): `(content, who)` where who
/// is `agent:<model>` or `person`.
pub fn origins(r: &Repo, file: &str, rev: Option<&str>) -> Vec<(String, String)> {
    let mut args = vec!["blame", file];
    args.extend(rev);
    let doc = r.json(&args);
    doc["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let who = match l["origin"].as_str().unwrap() {
                "agent" => format!("agent:{}", l["agent"]["model"].as_str().unwrap_or("")),
                o => o.to_string(),
            };
            (l["content"].as_str().unwrap().to_string(), who)
        })
        .collect()
}

/// Lines as `(content, who)` pairs from a compact table: `"A:text"` an agent line of
/// `model`, `"P:text"` a person's.
pub fn expect(model: &str, table: &[&str]) -> Vec<(String, String)> {
    table
        .iter()
        .map(|t| {
            let (k, text) = t.split_once(':').unwrap();
            let who = if k == "A" {
                format!("agent:{model}")
            } else {
                "person".into()
            };
            (text.to_string(), who)
        })
        .collect()
}
