//! Crash at every write step (issue 13 item 8) and no lock that outlives its process blocks
//! (issue 18 item 2). Every write path runs once with `AGENT_REWIND_CRASH_TRACE` to list the
//! crash points it passes (src/crash.rs), then once per point with `AGENT_REWIND_CRASH_AT`,
//! where the process aborts. After each abort: `git fsck --strict` is clean, every run's HEAD
//! has its note, the user's files are as before or as after — or, where an overwrite had
//! started, `undo` brings back the state before byte for byte — and the next commands (which
//! take the same locks: writer flocks, ref locks, `packed-refs.lock`, `index.lock`, the runner
//! lock) succeed. Every command is bounded by a generous timeout that fails the test if hit.

mod common;

use common::{bounded, git_in, tool_cmd};
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Instant;

fn tool(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = tool_cmd(dir);
    c.args(args)
        .env_remove("AGENT_REWIND_CRASH_AT")
        .env_remove("AGENT_REWIND_CRASH_TRACE");
    for (k, v) in env {
        c.env(k, v);
    }
    bounded(c, &format!("git-agent-rewind {args:?}"))
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let o = tool(dir, args, &[]);
    assert!(
        o.status.success(),
        "{args:?} failed in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn write(dir: &Path, rel: &str, content: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

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
    write(dir, "src/lib.rs", "fn v0() {}\n");
    git_in(dir, &["add", "-A"]);
    git_in(dir, &["commit", "-q", "-m", "initial"]);
}

/// Run r1 with checkpoints s1 and s2 over different file contents, then uncommitted work.
fn run_with_history(dir: &Path) {
    init(dir);
    ok(dir, &["start", "--run", "r1"]);
    write(dir, "src/lib.rs", "fn v1() {}\n");
    write(dir, "notes/a.txt", "a1\n");
    ok(dir, &["checkpoint", "s1", "--run", "r1"]);
    write(dir, "src/lib.rs", "fn v2() {}\n");
    write(dir, "notes/b.txt", "b2\n");
    std::fs::remove_file(dir.join("notes/a.txt")).unwrap();
    ok(dir, &["checkpoint", "s2", "--run", "r1"]);
    write(dir, "src/lib.rs", "fn uncommitted() {}\n");
    write(dir, "untracked.txt", "mine\n");
    git_in(dir, &["add", "src/lib.rs"]);
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
struct Scenario {
    name: &'static str,
    setup: fn(&Path),
    command: &'static [&'static str],
    /// Set up each case where it runs instead of copying one set-up (backups name the
    /// repository's path, so a copied repository has no undo).
    fresh_setup: bool,
    /// Whether the command may overwrite the user's files (after a backup).
    overwrites: bool,
    /// Commands that must succeed after the crash (they take the same locks again).
    next: fn(&Path) -> Vec<&'static [&'static str]>,
}

fn scenarios() -> Vec<Scenario> {
    vec![
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
                    &["revert", "r1", "--dry-run"],
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
    ]
}

/// The user's side of a worktree: files (mode and bytes), HEAD, and the index entries.
#[derive(Debug, PartialEq, Eq, Clone)]
struct UserState {
    files: BTreeMap<String, (u32, Vec<u8>)>,
    head: String,
    index: String,
}

fn files_of(root: &Path, dir: &Path, out: &mut BTreeMap<String, (u32, Vec<u8>)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        if rel == ".git" {
            continue;
        }
        let m = std::fs::symlink_metadata(&p).unwrap();
        if m.is_dir() {
            files_of(root, &p, out);
        } else if m.file_type().is_symlink() {
            let t = std::fs::read_link(&p).unwrap();
            out.insert(rel, (0o120000, t.to_string_lossy().as_bytes().to_vec()));
        } else {
            out.insert(
                rel,
                (m.permissions().mode() & 0o111, std::fs::read(&p).unwrap()),
            );
        }
    }
}

fn user_state(dir: &Path) -> UserState {
    let mut files = BTreeMap::new();
    files_of(dir, dir, &mut files);
    let head_ref = common::git_cmd(dir)
        .args(["symbolic-ref", "-q", "HEAD"])
        .output()
        .unwrap();
    let head_id = common::git_cmd(dir)
        .args(["rev-parse", "-q", "--verify", "HEAD"])
        .output()
        .unwrap();
    UserState {
        files,
        head: format!(
            "{} {}",
            String::from_utf8_lossy(&head_ref.stdout).trim(),
            String::from_utf8_lossy(&head_id.stdout).trim()
        ),
        index: git_in(dir, &["ls-files", "-s"]),
    }
}

/// `cp -a src dst`.
fn copy_tree(src: &Path, dst: &Path) {
    let o = Command::new("cp")
        .arg("-a")
        .arg(src)
        .arg(dst)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "cp: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A case's repository: a copy of the template, or set up anew.
fn prepare(sc: &Scenario, template: &Path, case: &Path) {
    if sc.fresh_setup {
        (sc.setup)(&case.join("repo"));
    } else {
        copy_tree(template, case);
    }
}

/// The points a command passes, in order, as `name#n`.
fn trace(dir: &Path, command: &[&str]) -> Vec<String> {
    let o = tool(dir, command, &[("AGENT_REWIND_CRASH_TRACE", "1")]);
    assert!(
        o.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("crash-point: "))
        .map(str::to_string)
        .collect()
}

/// Which occurrences of each point to crash at: the first and the last.
fn chosen(points: &[String]) -> Vec<String> {
    let mut count: BTreeMap<&str, u32> = BTreeMap::new();
    for p in points {
        let (name, _) = p.split_once('#').unwrap();
        *count.entry(name).or_default() += 1;
    }
    points
        .iter()
        .filter(|p| {
            let (name, n) = p.split_once('#').unwrap();
            let n: u32 = n.parse().unwrap();
            n == 1 || n == count[name]
        })
        .cloned()
        .collect()
}

/// Every run's HEAD has its note.
fn assert_runs_have_notes(dir: &Path, ctx: &str) {
    let heads = git_in(
        dir,
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            "refs/agent-runs/",
        ],
    );
    for line in heads.lines() {
        let (name, id) = line.split_once(' ').unwrap();
        let Some(run) = name
            .strip_prefix("refs/agent-runs/")
            .and_then(|r| r.strip_suffix("/HEAD"))
        else {
            continue;
        };
        let o = common::git_cmd(dir)
            .args(["notes", &format!("--ref=agent-runs/{run}"), "show", id])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{ctx}: run {run}'s HEAD {id} has no note"
        );
    }
}

fn assert_fsck(dir: &Path, ctx: &str) {
    let o = common::git_cmd(dir)
        .args(["fsck", "--strict", "--no-progress"])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{ctx}: git fsck --strict: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Where the command runs inside a case folder (`work/` beside `remote/`, else `repo/`).
fn repo_in(base: &Path) -> std::path::PathBuf {
    if base.join("work").exists() {
        base.join("work")
    } else {
        base.join("repo")
    }
}

/// Crash `sc`'s command at `point` in a fresh copy and check every invariant.
fn crash_case(sc: &Scenario, template: &Path, case: &Path, point: &str, after: &UserState) {
    let ctx = format!("{} crashed at {point}", sc.name);
    prepare(sc, template, case);
    let dir = repo_in(case);
    let before = user_state(&dir);
    let o = tool(&dir, sc.command, &[("AGENT_REWIND_CRASH_AT", point)]);
    assert_eq!(
        o.status.signal(),
        Some(6),
        "{ctx}: the process did not abort there ({:?}): {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    assert_fsck(&dir, &ctx);
    assert_runs_have_notes(&dir, &ctx);
    let now = user_state(&dir);
    if now.files != before.files {
        if sc.overwrites {
            // An overwrite had started: undo brings back the state before.
            let u = tool(&dir, &["undo"], &[]);
            assert!(
                u.status.success(),
                "{ctx}: undo failed: {}",
                String::from_utf8_lossy(&u.stderr)
            );
            assert_eq!(user_state(&dir), before, "{ctx}: undo is not exact");
        } else {
            assert!(
                now.files == after.files,
                "{ctx}: the user's files are neither as before nor as after"
            );
        }
    }
    // Nothing left behind blocks the next commands.
    for next in (sc.next)(&dir) {
        let o = tool(&dir, next, &[]);
        assert!(
            o.status.success(),
            "{ctx}: then {next:?} failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert_fsck(&dir, &ctx);
    assert_runs_have_notes(&dir, &ctx);
    std::fs::remove_dir_all(case).unwrap();
}

#[test]
fn every_write_path_survives_a_crash_at_every_point() {
    let root = tempfile::tempdir().unwrap();
    let scenarios = scenarios();
    let mut reached: BTreeSet<String> = BTreeSet::new();
    // Set up each path once and trace the points its command passes.
    let mut cases: Vec<(usize, String)> = vec![];
    let mut afters = vec![];
    for (k, sc) in scenarios.iter().enumerate() {
        let template = root.path().join(format!("{}-template", sc.name));
        std::fs::create_dir_all(&template).unwrap();
        // The fetch path sets up `remote/` and `work/` itself.
        if sc.name.starts_with("fetch") {
            (sc.setup)(&template);
        } else if !sc.fresh_setup {
            (sc.setup)(&template.join("repo"));
        }
        let reference = root.path().join(format!("{}-reference", sc.name));
        prepare(sc, &template, &reference);
        let points = trace(&repo_in(&reference), sc.command);
        afters.push(user_state(&repo_in(&reference)));
        assert!(!points.is_empty(), "{}: no crash point passed", sc.name);
        for p in &points {
            let name = p.split_once('#').unwrap().0;
            assert!(
                agent_rewind::crash::POINTS.contains(&name),
                "{}: point {name} is not listed in crash::POINTS",
                sc.name
            );
            reached.insert(name.to_string());
        }
        cases.extend(chosen(&points).into_iter().map(|p| (k, p)));
    }
    let listed: BTreeSet<String> = agent_rewind::crash::POINTS
        .iter()
        .map(|p| p.to_string())
        .collect();
    let missed: Vec<&String> = listed.difference(&reached).collect();
    assert!(
        missed.is_empty(),
        "points no write path reached: {missed:?}"
    );

    // Crash at each point, a few cases at a time.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((k, point)) = cases.get(i) else {
                        break;
                    };
                    let sc = &scenarios[*k];
                    let template = root.path().join(format!("{}-template", sc.name));
                    let case = root.path().join(format!("case-{i}"));
                    crash_case(sc, &template, &case, point, &afters[*k]);
                }
            });
        }
    });
    eprintln!("{} crash cases in {:?}", cases.len(), started.elapsed());
}
