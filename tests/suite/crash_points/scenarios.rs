//! The write paths the crash test drives: how each is set up, the command that writes, and
//! the commands that must succeed after a crash in it.

use super::common::{self, git_in, write_in as write};
use super::{ok, tool};
use std::path::Path;
use std::process::Stdio;

/// A new repository with one commit, in `dir`.
fn init(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    git_in(dir, &["init", "-q", "-b", "main"]);
    for (k, v) in [
        ("user.name", "Test User"),
        ("user.email", "test@example.com"),
        ("commit.gpgsign", "false"),
        ("gc.auto", "0"),
    ] {
        git_in(dir, &["config", k, v]);
    }
    write(dir, "README.md", "hello\n");
    write(dir, "crates/agent-rewind/src/lib.rs", "fn v0() {}\n");
    git_in(dir, &["add", "-A"]);
    git_in(dir, &["commit", "-q", "-m", "initial"]);
}

/// Run r1 with checkpoints s1 and s2 over different file contents, then uncommitted work.
fn run_with_history(dir: &Path) {
    init(dir);
    ok(dir, &["start", "--run", "r1"]);
    write(dir, "crates/agent-rewind/src/lib.rs", "fn v1() {}\n");
    write(dir, "notes/a.txt", "a1\n");
    ok(dir, &["checkpoint", "s1", "--run", "r1"]);
    write(dir, "crates/agent-rewind/src/lib.rs", "fn v2() {}\n");
    write(dir, "notes/b.txt", "b2\n");
    std::fs::remove_file(dir.join("notes/a.txt")).unwrap();
    ok(dir, &["checkpoint", "s2", "--run", "r1"]);
    write(
        dir,
        "crates/agent-rewind/src/lib.rs",
        "fn uncommitted() {}\n",
    );
    write(dir, "untracked.txt", "mine\n");
    git_in(dir, &["add", "crates/agent-rewind/src/lib.rs"]);
}

/// `remote/` holding [`run_with_history`], and `work/` a clone of it (the fetch paths).
fn clone_of_a_run_with_history(d: &Path) {
    let remote = d.join("remote");
    run_with_history(&remote);
    git_in(d, &["clone", "-q", remote.to_str().unwrap(), "work"]);
}

const FLOW: &str = r#"[workflow]
name = "tiny"

[[steps]]
name = "a"
kind = "deterministic"
run = "true"
inputs = ["input.txt"]

[[steps]]
name = "b"
kind = "deterministic"
run = "true"
needs = ["a"]
"#;

fn workflow_repo(dir: &Path) {
    init(dir);
    write(dir, "flow.toml", FLOW);
    write(dir, "input.txt", "one\n");
    git_in(dir, &["add", "-A"]);
    git_in(dir, &["commit", "-q", "-m", "workflow"]);
}

/// The worker's report of step a of run wx (`external_run`).
const WORKER_REPORT: &[&str] = &[
    "step",
    "end",
    "a",
    "--run",
    "wx",
    "--attempt",
    "1",
    "--status",
    "completed",
];

/// A workflow whose first step is external, run once: its worker has attempt 1 to report.
fn external_run(dir: &Path) {
    init(dir);
    write(
        dir,
        "ext.toml",
        "[workflow]\nname = \"ext\"\n[[steps]]\nname = \"a\"\nexternal = true\n[[steps]]\nname = \"b\"\nkind = \"deterministic\"\nrun = \"true\"\n",
    );
    git_in(dir, &["add", "-A"]);
    git_in(dir, &["commit", "-q", "-m", "workflow"]);
    let o = tool(dir, &["run", "ext.toml", "--run", "wx"], &[]);
    assert_eq!(o.status.code(), Some(3), "the run waits for its worker");
}

/// Rewrite the backups chain with commit dates ten days old (so `gc --older-than` trims).
fn age_backups(dir: &Path) {
    // The chain: each backup's parents are [previous backup, its index commit], the first
    // one's only [its index commit].
    let mut chain = vec![];
    let mut at = Some(
        git_in(dir, &["rev-parse", "refs/agent-rewind/backups"])
            .trim()
            .to_string(),
    );
    while let Some(c) = at.take() {
        let parents = git_in(dir, &["rev-parse", &format!("{c}^@")]);
        if parents.lines().count() == 2 {
            at = parents.lines().next().map(str::to_string);
        }
        chain.push(c);
    }
    chain.reverse();
    let mut prev: Option<String> = None;
    for c in &chain {
        let info = git_in(dir, &["cat-file", "-p", c]);
        let tree = info.lines().next().unwrap().strip_prefix("tree ").unwrap();
        let parents: Vec<&str> = info
            .lines()
            .filter_map(|l| l.strip_prefix("parent "))
            .collect();
        let message = info.split_once("\n\n").unwrap().1;
        let mut args = vec!["commit-tree".to_string(), tree.to_string()];
        if let Some(p) = &prev {
            args.extend(["-p".into(), p.clone()]);
        }
        args.extend(["-p".into(), parents.last().unwrap().to_string()]);
        let mut cmd = common::git_cmd(dir);
        cmd.args(&args)
            .env("GIT_COMMITTER_DATE", "@1000000000 +0000")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(message.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        prev = Some(String::from_utf8(out.stdout).unwrap().trim().to_string());
    }
    git_in(
        dir,
        &[
            "update-ref",
            "refs/agent-rewind/backups",
            prev.as_deref().unwrap(),
        ],
    );
}

/// One write path: how to set it up, the command, and what must work after a crash.
pub struct Scenario {
    pub name: &'static str,
    pub setup: fn(&Path),
    pub command: &'static [&'static str],
    /// Set up each case where it runs instead of copying one set-up (backups name the
    /// repository's path, so a copied repository has no undo).
    pub fresh_setup: bool,
    /// Whether the command may overwrite the user's files (after a backup).
    pub overwrites: bool,
    /// Commands that must succeed after the crash (they take the same locks again).
    pub next: fn(&Path) -> Vec<&'static [&'static str]>,
}

/// Every write path with named crash points, as data: one row a command.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "checkpoint",
        setup: run_with_history,
        command: &["checkpoint", "s3", "--run", "r1"],
        fresh_setup: false,
        overwrites: false,
        next: |_| vec![&["checkpoint", "s3", "--run", "r1"]],
    },
    Scenario {
        name: "rewind",
        setup: run_with_history,
        command: &["rewind", "r1", "--to", "s2"],
        fresh_setup: false,
        overwrites: true,
        next: |_| vec![&["checkpoint", "probe", "--run", "r1"]],
    },
    Scenario {
        name: "fork",
        setup: run_with_history,
        command: &["fork", "r1", "--to", "s2", "--run", "f1"],
        fresh_setup: false,
        overwrites: true,
        next: |_| vec![&["checkpoint", "probe", "--run", "r1"]],
    },
    Scenario {
        name: "fork-worktree",
        setup: run_with_history,
        command: &["fork", "r1", "--to", "s2", "--worktree", "../fw"],
        fresh_setup: false,
        overwrites: false,
        // The same fork again, into the same folder: what the killed one left there is
        // taken back.
        next: |_| vec![&["fork", "r1", "--to", "s2", "--worktree", "../fw"]],
    },
    Scenario {
        name: "restore",
        setup: run_with_history,
        command: &["restore", "r1@1"],
        fresh_setup: false,
        overwrites: true,
        next: |_| vec![&["restore", "r1@1"]],
    },
    Scenario {
        name: "revert",
        setup: run_with_history,
        command: &["revert", "r1", "--conflict=markers"],
        fresh_setup: false,
        overwrites: true,
        next: |_| {
            vec![
                &["revert", "r1", "--dry-run", "--conflict=markers"],
                &["checkpoint", "probe", "--run", "r1"],
            ]
        },
    },
    Scenario {
        name: "undo",
        setup: |d| {
            run_with_history(d);
            ok(d, &["rewind", "r1", "--to", "s2", "--run", "r2"]);
        },
        command: &["undo"],
        fresh_setup: true,
        overwrites: true,
        next: |_| vec![&["checkpoint", "probe", "--run", "r2"]],
    },
    Scenario {
        name: "fetch",
        setup: clone_of_a_run_with_history,
        command: &["fetch", "origin"],
        fresh_setup: false,
        overwrites: false,
        next: |_| vec![&["fetch", "origin"]],
    },
    // A named run is imported on its own (fetching everything creates the runs new
    // here together, in one rewrite of packed-refs).
    Scenario {
        name: "fetch-run",
        setup: clone_of_a_run_with_history,
        command: &["fetch", "origin", "r1"],
        fresh_setup: false,
        overwrites: false,
        next: |_| vec![&["fetch", "origin"]],
    },
    Scenario {
        name: "delete",
        setup: |d| {
            run_with_history(d);
            ok(d, &["start", "--run", "r2"]);
            git_in(d, &["pack-refs", "--all"]);
        },
        command: &["delete", "r2"],
        fresh_setup: false,
        overwrites: false,
        next: |_| {
            vec![
                &["checkpoint", "probe", "--run", "r1"],
                &["gc", "--keep", "1"],
            ]
        },
    },
    Scenario {
        name: "gc",
        setup: |d| {
            run_with_history(d);
            ok(d, &["restore", "r1@1"]);
            ok(d, &["restore", "r1@2"]);
            age_backups(d);
            ok(d, &["start", "--run", "r2"]);
        },
        command: &["gc", "--keep", "1", "--older-than", "1d"],
        fresh_setup: false,
        overwrites: false,
        next: |_| {
            vec![
                &["gc", "--keep", "1", "--older-than", "1d"],
                &["checkpoint", "probe", "--run", "r2"],
            ]
        },
    },
    Scenario {
        name: "steer",
        setup: |d| {
            workflow_repo(d);
            ok(d, &["run", "flow.toml", "--run", "wf"]);
            write(d, "../new-input.txt", "two\n");
        },
        command: &[
            "steer",
            "wf",
            "--edit",
            "input.txt=../new-input.txt",
            "--invalidate",
            "a",
            "--yes",
        ],
        fresh_setup: false,
        overwrites: true,
        next: |_| vec![&["resume", "wf"]],
    },
    Scenario {
        name: "worker-report",
        setup: external_run,
        command: WORKER_REPORT,
        fresh_setup: false,
        overwrites: false,
        // Reporting again records it (or says it is already recorded); then the run
        // goes on and completes.
        next: |_| vec![WORKER_REPORT, &["resume", "wx"]],
    },
    Scenario {
        name: "runner",
        setup: workflow_repo,
        command: &["run", "flow.toml", "--run", "wf"],
        fresh_setup: false,
        overwrites: false,
        next: |d| {
            // The run exists once its first record is published: resume it (taking
            // the runner lock a crash left), else run the workflow again.
            if d.join(".git/refs/agent-runs/wf/HEAD").exists() {
                vec![&["resume", "wf"]]
            } else {
                vec![&["run", "flow.toml", "--run", "wf"]]
            }
        },
    },
];
