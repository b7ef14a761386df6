//! Each agent's payloads start a run, note edited files and record turns carrying the agent,
//! its session, its transcript and the touched paths (Codex notify, Cursor workspace roots);
//! concurrent edit hooks lose no path.

use crate::common::agent_fixtures::{fixture, hook, payload, retarget};
use crate::common::{Repo, checkpoints, refs, tool_stdin};
use serde_json::{Value, json};
use std::path::Path;

struct Case {
    agent: &'static str,
    start: &'static str,
    edits: &'static [&'static str],
    stop: &'static str,
    touched: &'static [&'static str],
    model: Option<&'static str>,
    resume: &'static str,
}

const CASES: [Case; 10] = [
    Case {
        agent: "claude",
        start: "session-start.json",
        edits: &["post-tool-use-edit.json"],
        stop: "stop.json",
        touched: &["src/cart.rs"],
        model: None,
        resume: "claude --resume 8f3c1a52-7d4e-4b9a-9c1e-2f6d0b7a4e31",
    },
    Case {
        agent: "codex",
        start: "session-start.json",
        edits: &["post-tool-use-apply-patch.json"],
        stop: "stop.json",
        touched: &["src/cart.rs", "src/discount.rs"],
        model: Some("gpt-5.1-codex"),
        resume: "codex resume 0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
    },
    Case {
        agent: "gemini",
        start: "session-start.json",
        edits: &["after-tool-write-file.json", "after-tool-replace.json"],
        stop: "after-agent.json",
        touched: &["src/cart.rs", "src/discount.rs"],
        model: None,
        resume: "gemini --resume 3c9e7a10-5b2d-4f8e-a1c6-7d0b9e2f4a83",
    },
    Case {
        agent: "cursor",
        start: "session-start.json",
        edits: &["after-file-edit.json"],
        stop: "stop.json",
        touched: &["src/cart.rs"],
        model: Some("claude-4.5-sonnet"),
        resume: "cursor-agent --resume b7e2c4d1-9a3f-4e6b-8c0d-2f5a7e9b1c34",
    },
    Case {
        agent: "opencode",
        start: "session-created.json",
        edits: &["file-edited.json"],
        stop: "session-idle.json",
        touched: &["src/cart.rs"],
        model: None,
        resume: "opencode --session ses_6a1f0c3e9ffeXk2Lq8Rz4TbN1d",
    },
    Case {
        agent: "qwen",
        start: "session-start.json",
        edits: &["post-tool-use-write-file.json", "post-tool-use-edit.json"],
        stop: "stop.json",
        touched: &["src/cart.rs", "src/discount.rs"],
        model: None,
        resume: "qwen --resume 6ef4d85f-e16a-45ae-ad45-3a43b895860d",
    },
    Case {
        agent: "copilot",
        start: "session-start.json",
        edits: &["post-tool-use-edit.json"],
        stop: "stop.json",
        touched: &["src/cart.rs"],
        model: None,
        resume: "copilot --resume=2df12459-3533-4bb1-ba59-8c72ef4edcd1",
    },
    // Auggie's payloads are taken from its source (it needs a login; docs/HOOKS.md).
    Case {
        agent: "auggie",
        start: "session-start.json",
        edits: &[
            "post-tool-use-save-file.json",
            "post-tool-use-str-replace.json",
        ],
        stop: "stop.json",
        touched: &["src/cart.rs", "src/discount.rs"],
        model: None,
        resume: "auggie --resume 5b1e9c7a-2d4f-4a8e-b3c6-9f0d1e2a7b84",
    },
    Case {
        agent: "kilo",
        start: "session-created.json",
        edits: &["file-edited.json"],
        stop: "session-idle.json",
        touched: &["src/cart.rs"],
        model: None,
        resume: "kilo --session ses_1c7d2e90affeKq4Ws8Lm2PzR0b",
    },
    Case {
        agent: "droid",
        start: "session-start.json",
        edits: &["post-tool-use-create.json"],
        stop: "stop.json",
        touched: &["src/cart.rs"],
        model: None,
        resume: "droid --resume 9d2c4e61-7b3a-4f0e-8c15-2a6b9e0d3f47",
    },
];

#[test]
fn every_agent_records_its_session_its_edits_and_its_turns() {
    for case in &CASES {
        let agent = case.agent;
        let repo = Repo::new();
        let dir = repo.path();
        let t = tempfile::tempdir().unwrap();
        let transcript = t.path().join("transcript.jsonl");
        std::fs::write(&transcript, b"{\"role\":\"user\",\"content\":\"hi\"}\n").unwrap();
        let p = |name: &str| payload(agent, name, dir, &transcript);

        // Session start: a run is started, recorded as this agent's, and made active.
        let started = hook(agent, &p(case.start), &[]);
        assert_eq!(started["action"], "started", "{agent}: {started}");
        let run = started["run"].as_str().unwrap().to_string();
        let root = &checkpoints(dir, &run)[0];
        assert_eq!(root["agent"], agent, "{agent}: {root}");
        assert!(
            root["label"].as_str().unwrap().contains("session"),
            "{root}"
        );
        assert_eq!(repo.json(&["status"])["run"], run.as_str());
        // A second session start joins it.
        assert_eq!(hook(agent, &p(case.start), &[])["action"], "joined");

        // Edits are noted, nothing is recorded for them.
        repo.write("src/cart.rs", "let mut total = 0;\n");
        repo.write("src/discount.rs", "pub fn apply() {}\n");
        let before = refs(dir, "refs/");
        for e in case.edits {
            let out = hook(agent, &p(e), &[]);
            assert_eq!(out["action"], "noted", "{agent} {e}: {out}");
        }
        assert_eq!(
            refs(dir, "refs/"),
            before,
            "{agent}: an edit records nothing"
        );

        // The end of the turn: a turn checkpoint with everything.
        let out = hook(agent, &p(case.stop), &[]);
        assert_eq!(out["action"], "recorded", "{agent}: {out}");
        let cps = checkpoints(dir, &run);
        let turn = cps.last().unwrap();
        assert_eq!(turn["event"], "turn", "{agent}");
        assert_eq!(turn["agent"], agent, "{agent}: {turn}");
        assert_eq!(turn["sdk_session_id"], root["sdk_session_id"], "{agent}");
        let touched: Vec<&str> = turn["touched"]
            .as_array()
            .unwrap_or_else(|| panic!("{agent}: no touched in {turn}"))
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(touched, case.touched, "{agent}");
        if let Some(m) = case.model {
            assert_eq!(turn["meta"]["model"], m, "{agent}");
        }
        let files = repo.git(&[
            "ls-tree",
            "-r",
            "--name-only",
            turn["checkpoint"].as_str().unwrap(),
        ]);
        assert!(files.contains("src/discount.rs"), "{agent}: {files}");
        if fixture(agent, case.stop)["transcript_path"].is_string() {
            let blob = repo.git(&["hash-object", transcript.to_str().unwrap()]);
            assert_eq!(
                turn["artifacts"][0]["digest"],
                format!("git-blob:{}", blob.trim()).as_str(),
                "{agent}"
            );
        }

        // The same turn again: an identical state prints `unchanged` and writes nothing.
        let before = refs(dir, "refs/");
        let again = hook(agent, &p(case.stop), &[]);
        assert_eq!(again["action"], "unchanged", "{agent}: {again}");
        assert_eq!(refs(dir, "refs/"), before, "{agent}");

        // The command that resumes the conversation: in status, and after a rewind.
        let status = repo.json(&["status"]);
        assert_eq!(status["resume_command"], case.resume, "{agent}: {status}");
        assert!(repo.ok(&["status"]).contains(case.resume), "{agent}");
        let at = format!("{run}@1");
        // After a rewind or fork, Codex's, OpenCode's, Kilo's, Qwen Code's and Factory Droid's
        // commands fork the whole session.
        let continued = match agent {
            "opencode" | "kilo" => format!("{} --fork", case.resume),
            "droid" => case.resume.replace("--resume", "--fork"),
            "qwen" => format!("{} --fork-session", case.resume),
            "codex" => case.resume.replace("codex resume", "codex fork"),
            _ => case.resume.to_string(),
        };
        let forked = repo.json(&["fork", &run, "--to", &at, "--no-checkout"]);
        assert_eq!(forked["resume_command"], continued, "{agent}: {forked}");
        let rewound = repo.json(&["rewind", &run, "--to", &at]);
        assert_eq!(rewound["resume_command"], continued, "{agent}: {rewound}");
        assert!(
            repo.ok(&[
                "rewind",
                forked["run"].as_str().unwrap(),
                "--to",
                &format!("{}@0", forked["run"].as_str().unwrap())
            ])
            .contains(&continued)
        );
        repo.assert_fsck();
    }
}

#[test]
fn codex_notify_and_cursor_workspace_roots() {
    let repo = Repo::new();
    let dir = repo.path();
    // Codex's legacy `notify` program: the payload is the last argument, stdin is empty.
    let mut n = fixture("codex", "notify.json");
    retarget(&mut n, dir);
    let out = hook("codex", b"", &[&n.to_string()]);
    assert_eq!(out["action"], "recorded", "{out}");
    let run = out["run"].as_str().unwrap().to_string();
    let turn = checkpoints(dir, &run).last().unwrap().clone();
    assert_eq!(turn["agent"], "codex");
    assert_eq!(
        turn["meta"]["turn_id"],
        "0199a1b2-d0e1-7f20-9a31-b2c3d4e5f607"
    );

    // A transcript_path of null: a turn without a pointer.
    repo.write("b.txt", "b\n");
    let t = Path::new("/nonexistent");
    let out = hook(
        "codex",
        &payload("codex", "stop-no-transcript.json", dir, t),
        &[],
    );
    assert_eq!(out["action"], "recorded", "{out}");
    assert!(
        checkpoints(dir, &run).last().unwrap()["artifacts"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // Cursor: the first workspace root that is a git worktree decides.
    let other = tempfile::tempdir().unwrap();
    let mut s = fixture("cursor", "stop.json");
    retarget(&mut s, dir);
    s["workspace_roots"] = json!([other.path(), dir]);
    s["transcript_path"] = Value::Null;
    repo.write("c.txt", "c\n");
    let out = hook("cursor", s.to_string().as_bytes(), &[]);
    assert_eq!(out["action"], "recorded", "{out}");
    assert_eq!(out["run"], run.as_str());
    assert_eq!(
        checkpoints(dir, &run).last().unwrap()["meta"]["status"],
        "completed"
    );
}

#[test]
fn concurrent_edit_hooks_lose_no_path() {
    let repo = Repo::new();
    let dir = repo.path().to_path_buf();
    let t = dir.join("none");
    hook(
        "claude",
        &payload("claude", "session-start.json", &dir, &t),
        &[],
    );
    let children: Vec<_> = (0..8)
        .map(|i| {
            let mut v = fixture("claude", "post-tool-use-edit.json");
            retarget(&mut v, &dir);
            v["tool_input"]["file_path"] = format!("{}/f{i}.txt", dir.display()).into();
            let dir = dir.clone();
            std::thread::spawn(move || {
                tool_stdin(&dir, &["hook", "claude"], v.to_string().as_bytes(), &[])
            })
        })
        .collect();
    for c in children {
        assert_eq!(c.join().unwrap().status.code(), Some(0));
    }
    repo.write("f0.txt", "x\n");
    let out = hook("claude", &payload("claude", "stop.json", &dir, &t), &[]);
    let run = out["run"].as_str().unwrap();
    let turn = checkpoints(&dir, run).last().unwrap().clone();
    let touched: Vec<String> = (0..8).map(|i| format!("f{i}.txt")).collect();
    assert_eq!(turn["touched"], json!(touched));
    // Taken: the next turn carries nothing.
    repo.write("g.txt", "g\n");
    hook("claude", &payload("claude", "stop.json", &dir, &t), &[]);
    assert!(
        checkpoints(&dir, run)
            .last()
            .unwrap()
            .get("touched")
            .is_none()
    );
}

/// After a compaction (and a resume or clear), `hook claude` prints the run's manifest as
/// Claude Code's `hookSpecificOutput.additionalContext`; at a fresh start it prints nothing.
/// The real CLI's resume is in `agents_real::claude`; its compaction could
/// not be triggered headless, so the `compact` source is driven here.
#[test]
fn a_compacted_claude_session_is_handed_the_runs_manifest() {
    let repo = Repo::new();
    let transcript = repo.path().join("t.jsonl");
    std::fs::write(&transcript, "").unwrap();
    let mut start = fixture("claude", "session-start.json");
    retarget(&mut start, repo.path());
    start["cwd"] = repo.path().to_str().unwrap().into();
    start["transcript_path"] = transcript.to_str().unwrap().into();
    let run_hook = |source: &str| {
        let mut p = start.clone();
        p["source"] = source.into();
        let out = tool_stdin(
            repo.path(),
            &["hook", "claude"],
            &serde_json::to_vec(&p).unwrap(),
            &[],
        );
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(run_hook("startup"), "", "a new session is told nothing");
    let run = repo.json(&["list"])[0]["run"].as_str().unwrap().to_string();
    let printed = run_hook("compact");
    let v: Value = serde_json::from_str(&printed)
        .unwrap_or_else(|e| panic!("one JSON document ({e}): {printed}"));
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let context = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        context.contains(&format!("records into run {run}")),
        "{context}"
    );
    assert!(
        context.contains(&format!("git agent-rewind rewind {run} --to {run}@0")),
        "{context}"
    );
    assert!(context.len() <= 2048);
    repo.git(&["config", "agentRewind.agentContext", "off"]);
    assert_eq!(run_hook("compact"), "", "agentRewind.agentContext=off");
}

/// `--agent-resume` uses Claude Code's fork at a message (an option its `--help` does not
/// list) only from the version it was checked with: an older `claude` is started without
/// it, resuming at the conversation's end, with a warning. The `claude`
/// here is a script that reports an old version and records its arguments.
#[test]
fn an_older_claude_resumes_at_the_end_and_says_so() {
    let repo = Repo::new();
    let transcript = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/claude/transcript.jsonl");
    for name in ["session-start.json", "stop.json"] {
        hook(
            "claude",
            &payload("claude", name, repo.path(), &transcript),
            &[],
        );
    }
    let run = repo.json(&["list"])[0]["run"].as_str().unwrap().to_string();
    let at = repo.json(&["show", &format!("{run}@1")])["meta"]["conversation_at"]
        .as_str()
        .unwrap()
        .to_string();
    let bin = tempfile::tempdir().unwrap();
    let args_file = bin.path().join("args");
    let fake = bin.path().join("claude");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\n[ \"$1\" = --version ] && {{ echo '2.0.14 (Claude Code)'; exit 0; }}\n\
             echo \"$@\" > {}\n",
            args_file.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap()
    );
    let out = crate::common::tool_cmd(repo.path())
        .env("PATH", path)
        .args([
            "fork",
            &run,
            "--to",
            &format!("{run}@1"),
            "--run",
            "f1",
            "--agent-resume",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("older than 2.1.197"), "{stderr}");
    let args = std::fs::read_to_string(&args_file).unwrap();
    assert!(
        args.starts_with("--resume ") && args.contains("--fork-session"),
        "{args}"
    );
    assert!(
        !args.contains("--resume-session-at") && !args.contains(&at),
        "{args}"
    );
}
