//! A run brings its workflow's text with it (the root note), so `fetch` can bring commands
//! written elsewhere. They never run just because they arrived — nor because a `rewind`,
//! `restore` or bundle `import` put a file with the same text in the worktree, nor because a
//! recorded absolute path holds it: `resume` and `watch` refuse a workflow that is not on
//! this repository's trusted list until the user says `trust <run>` (which shows the
//! commands and asks, or `--yes`), runs a file of theirs (`run FILE`, `resume --workflow
//! FILE`). Workflows run here stay trusted when their file is gone.

mod environment;

use crate::common;
use crate::common::stderr;

use common::{Repo, git_in, refs, tool_cmd};
use std::path::Path;
use std::process::Output;

const FLOW: &str = r#"[workflow]
name = "trust"

[[steps]]
name = "a"
kind = "deterministic"
run = "echo ran-a >> \"$TRUST_LOG\""

[[steps]]
name = "b"
kind = "deterministic"
run = "test -f go.txt && echo ran-b >> \"$TRUST_LOG\""
needs = ["a"]
"#;

fn tool(dir: &Path, log: &Path, args: &[&str]) -> Output {
    tool_cmd(dir)
        .args(args)
        .env("TRUST_LOG", log)
        .output()
        .expect("run git-agent-rewind")
}

fn log_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_fetched_runs_workflow_runs_only_when_trusted() {
    let tmp = tempfile::tempdir().unwrap();
    let bare = tmp.path().join("remote.git");
    git_in(
        tmp.path(),
        &["init", "-q", "--bare", "-b", "main", "remote.git"],
    );
    let url = format!("file://{}", bare.display());

    // Machine A runs the workflow from a file it never commits; step b fails there.
    let a = Repo::new();
    a.git(&["remote", "add", "origin", &url]);
    a.git(&["push", "-q", "origin", "main"]);
    a.write("flow.toml", FLOW);
    let log_a = tmp.path().join("a.log");
    let o = tool(a.path(), &log_a, &["run", "flow.toml", "--run", "w1"]);
    assert_eq!(o.status.code(), Some(1), "b fails on A: {}", stderr(&o));
    assert_eq!(log_lines(&log_a), ["ran-a"]);
    assert!(
        tool(a.path(), &log_a, &["push", "origin", "w1"])
            .status
            .success()
    );

    // Machine B fetches it. Its worktree has no flow.toml.
    let b_dir = tempfile::tempdir().unwrap();
    git_in(b_dir.path(), &["clone", "-q", &url, "."]);
    let b = Repo { dir: b_dir };
    b.git(&["config", "user.name", "B"]);
    b.git(&["config", "user.email", "b@example.com"]);
    let log_b = tmp.path().join("b.log");
    let o = tool(b.path(), &log_b, &["fetch", "origin", "w1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    b.write("go.txt", "go\n");

    // resume refuses, runs nothing and records nothing.
    let before = refs(b.path(), "refs/");
    let o = tool(b.path(), &log_b, &["resume", "w1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("is not trusted here"), "{err}");
    assert!(err.contains("git agent-rewind trust w1"), "{err}");
    assert_eq!(log_lines(&log_b), Vec::<String>::new());
    assert_eq!(
        refs(b.path(), "refs/"),
        before,
        "a refused resume wrote refs"
    );

    // So does the watcher.
    let o = tool(b.path(), &log_b, &["watch", "w1", "--once"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("trust w1"), "{}", stderr(&o));
    assert_eq!(log_lines(&log_b), Vec::<String>::new());
    assert_eq!(
        refs(b.path(), "refs/"),
        before,
        "a refused watch wrote refs"
    );

    // `trust --yes` shows the commands and trusts the text; then resume runs it (a
    // finished, b again) and it stays trusted.
    let o = tool(b.path(), &log_b, &["trust", "w1", "--yes"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(
        shown.contains("echo ran-b"),
        "the commands are shown: {shown}"
    );
    assert_eq!(
        log_lines(&log_b),
        Vec::<String>::new(),
        "trust runs nothing"
    );
    let o = tool(b.path(), &log_b, &["resume", "w1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(log_lines(&log_b), ["ran-b"]);
    let o = tool(b.path(), &log_b, &["resume", "w1"]);
    assert_eq!(o.status.code(), Some(0), "trusted now: {}", stderr(&o));
    b.assert_fsck();
}

/// A run of FLOW started here whose step b failed (no go.txt), then `remove` deleted, then
/// go.txt written and `resume` run: it must finish, running b only.
fn resume_here_after_removing(remove: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let r = Repo::new();
    r.write("flow.toml", FLOW);
    let log = tmp.path().join("r.log");
    let o = tool(r.path(), &log, &["run", "flow.toml", "--run", "w1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    std::fs::remove_file(r.path().join(remove)).unwrap();
    r.write("go.txt", "go\n");
    let o = tool(r.path(), &log, &["resume", "w1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(log_lines(&log), ["ran-a", "ran-b"]);
}

#[test]
fn a_workflow_run_here_stays_runnable_when_its_file_is_gone() {
    resume_here_after_removing("flow.toml");
}

#[test]
fn a_file_with_the_same_content_does_not_make_a_stored_workflow_trusted() {
    // A run whose list entry is missing (recorded before the list existed): the file it was
    // stored from is here with the same content, which proves nothing (a rewind of a
    // fetched run writes exactly that). `trust --yes` lets it run.
    let tmp = tempfile::tempdir().unwrap();
    let r = Repo::new();
    r.write("flow.toml", FLOW);
    let log = tmp.path().join("r.log");
    let o = tool(r.path(), &log, &["run", "flow.toml", "--run", "w1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    std::fs::remove_file(r.path().join(".git/agent-rewind/trusted-workflows")).unwrap();
    r.write("go.txt", "go\n");
    let o = tool(r.path(), &log, &["resume", "w1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("is not trusted here"), "{}", stderr(&o));
    assert_eq!(log_lines(&log), ["ran-a"], "b did not run");
    let o = tool(r.path(), &log, &["trust", "w1", "--yes"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = tool(r.path(), &log, &["resume", "w1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(log_lines(&log), ["ran-a", "ran-b"]);
}

/// A workflow written elsewhere whose step `b` leaves a mark in `$TRUST_LOG` whenever it runs
/// (and fails without go.txt, so the run can be resumed).
const EVIL: &str = r#"[workflow]
name = "evil"

[[steps]]
name = "a"
kind = "deterministic"
run = "true"

[[steps]]
name = "b"
kind = "deterministic"
run = "echo pwned >> \"$TRUST_LOG\"; test -f go.txt"
needs = ["a"]
"#;

/// Someone else's run `w1` of EVIL (its file left untracked in their worktree, so every
/// checkpoint holds it), pushed to a real bare remote; and our clone of that remote.
struct Hostile {
    tmp: tempfile::TempDir,
    theirs: Repo,
    ours: Repo,
    /// `$TRUST_LOG` of every command run in `ours`: it must stay empty.
    log: std::path::PathBuf,
}

impl Hostile {
    /// `workflow`: where they keep the file, relative to their worktree or absolute.
    fn new(workflow: Option<&Path>) -> Hostile {
        Hostile::with_text(workflow, EVIL)
    }

    /// [`Hostile::new`] for a workflow `text` whose run leaves `pwned` in `$TRUST_LOG`
    /// there and fails without go.txt.
    fn with_text(workflow: Option<&Path>, text: &str) -> Hostile {
        let tmp = tempfile::tempdir().unwrap();
        git_in(
            tmp.path(),
            &["init", "-q", "--bare", "-b", "main", "remote.git"],
        );
        let url = format!("file://{}", tmp.path().join("remote.git").display());
        let theirs = Repo::new();
        theirs.git(&["remote", "add", "origin", &url]);
        theirs.git(&["push", "-q", "origin", "main"]);
        let file = match workflow {
            Some(p) => p.to_path_buf(),
            None => theirs.path().join("evil.toml"),
        };
        std::fs::write(&file, text).unwrap();
        let their_log = tmp.path().join("theirs.log");
        let o = tool(
            theirs.path(),
            &their_log,
            &["run", file.to_str().unwrap(), "--run", "w1"],
        );
        assert_eq!(o.status.code(), Some(1), "b fails there: {}", stderr(&o));
        assert_eq!(log_lines(&their_log), ["pwned"]);
        let o = tool(theirs.path(), &their_log, &["push", "origin", "w1"]);
        assert!(o.status.success(), "{}", stderr(&o));

        let ours = Repo {
            dir: tempfile::tempdir().unwrap(),
        };
        git_in(ours.path(), &["clone", "-q", &url, "."]);
        ours.git(&["config", "user.name", "Us"]);
        ours.git(&["config", "user.email", "us@example.com"]);
        let log = tmp.path().join("ours.log");
        Hostile {
            tmp,
            theirs,
            ours,
            log,
        }
    }

    fn fetch(&self) {
        let o = self.tool(&["fetch", "origin", "w1"]);
        assert!(o.status.success(), "{}", stderr(&o));
    }

    fn tool(&self, args: &[&str]) -> Output {
        tool(self.ours.path(), &self.log, args)
    }

    /// `args` is refused as untrusted, and nothing of the workflow ran.
    fn refused(&self, args: &[&str]) {
        let o = self.tool(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("is not trusted here"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(
            stderr(&o).contains("git agent-rewind trust"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert_eq!(
            log_lines(&self.log),
            Vec::<String>::new(),
            "{args:?} ran their step"
        );
    }
}

#[test]
fn a_rewind_to_a_fetched_run_does_not_make_its_workflow_trusted() {
    let h = Hostile::new(None);
    h.fetch();
    h.ours.write("go.txt", "go\n");
    h.refused(&["resume", "w1"]);
    // The rewind checks out their evil.toml: the same text as the stored copy.
    let o = h.tool(&["rewind", "w1", "--to", "w1@-1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(h.ours.read("evil.toml"), EVIL);
    h.refused(&["resume", "w1"]);
    // The run the rewind made (now active) holds the same workflow.
    h.refused(&["resume"]);
    h.refused(&["watch", "--once"]);
    h.refused(&["watch", "w1", "--once"]);
    h.ours.assert_fsck();
}

#[test]
fn a_restore_of_a_fetched_workflow_file_does_not_let_watch_run_it() {
    let h = Hostile::new(None);
    h.fetch();
    let o = h.tool(&["restore", "w1@-1", "--", "evil.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(h.ours.read("evil.toml"), EVIL);
    let before = refs(h.ours.path(), "refs/agent-runs/");
    h.refused(&["watch", "w1", "--once"]);
    h.refused(&["resume", "w1"]);
    assert_eq!(
        refs(h.ours.path(), "refs/agent-runs/"),
        before,
        "nothing recorded"
    );
}

#[test]
fn a_recorded_absolute_path_holding_the_same_text_does_not_trust_it() {
    // They ran the file from outside their worktree; the path they recorded is absolute
    // and (here, on one machine) holds the same text when we resume.
    let outside = tempfile::tempdir().unwrap();
    let file = outside.path().join("evil.toml");
    let h = Hostile::new(Some(&file));
    h.fetch();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), EVIL);
    h.ours.write("go.txt", "go\n");
    h.refused(&["resume", "w1"]);
    h.refused(&["watch", "w1", "--once"]);
}

#[test]
fn a_run_imported_from_a_bundle_is_not_trusted_even_after_a_rewind() {
    let h = Hostile::new(None);
    let bundle = h.tmp.path().join("w1.bundle");
    let o = tool(
        h.theirs.path(),
        &h.tmp.path().join("theirs.log"),
        &["export", "w1", "-o", bundle.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = h.tool(&["import", bundle.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    h.refused(&["resume", "w1"]);
    let o = h.tool(&["rewind", "w1", "--to", "w1@-1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(h.ours.read("evil.toml"), EVIL);
    h.refused(&["resume", "w1"]);
    h.refused(&["resume"]);
}

#[test]
fn trust_asks_for_a_yes_and_then_resume_runs_the_workflow() {
    let h = Hostile::new(None);
    h.fetch();
    let list = h.ours.path().join(".git/agent-rewind/trusted-workflows");
    let listed = || std::fs::read_to_string(&list).unwrap_or_default();
    let before = listed();

    // No terminal to ask on and no --yes: the commands are shown, nothing is trusted.
    let o = h.tool(&["trust", "w1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("echo pwned"), "the commands are shown: {err}");
    assert!(err.contains("no terminal"), "{err}");
    assert!(err.contains("trust w1 --yes"), "{err}");
    assert_eq!(listed(), before, "a refused trust wrote the list");
    h.refused(&["resume", "w1"]);

    // --yes (with --json): the document lists the steps' commands and the digest trusted.
    let o = h.tool(&["--json", "trust", "w1", "--yes"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["trusted"], true, "{doc:#}");
    assert_eq!(doc["holder"], "w1", "{doc:#}");
    let digest = doc["digest"].as_str().unwrap().to_string();
    assert!(listed().contains(&digest), "{}", listed());
    let cmds: Vec<&str> = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["run"].as_str().unwrap())
        .collect();
    assert_eq!(
        cmds,
        ["true", "echo pwned >> \"$TRUST_LOG\"; test -f go.txt"]
    );
    assert_eq!(
        log_lines(&h.log),
        Vec::<String>::new(),
        "trust runs nothing"
    );

    // Trusted once, asked no more.
    let o = h.tool(&["trust", "w1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("already trusted"));

    h.ours.write("go.txt", "go\n");
    let o = h.tool(&["resume", "w1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(log_lines(&h.log), ["pwned"]);
    h.ours.assert_fsck();
}

#[test]
fn run_of_a_file_the_user_names_runs_and_trusts_it() {
    let tmp = tempfile::tempdir().unwrap();
    let r = Repo::new();
    r.write("flow.toml", FLOW);
    let log = tmp.path().join("r.log");
    let o = tool(r.path(), &log, &["run", "./flow.toml", "--run", "w1"]);
    assert_eq!(o.status.code(), Some(1), "b fails: {}", stderr(&o));
    assert_eq!(log_lines(&log), ["ran-a"]);
    r.write("go.txt", "go\n");
    let o = tool(r.path(), &log, &["resume", "w1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(log_lines(&log), ["ran-a", "ran-b"]);
    let o = tool(r.path(), &log, &["trust", "w1"]);
    assert_eq!(o.status.code(), Some(0), "already trusted: {}", stderr(&o));
}

/// `trust w1` on a terminal (stdin and stderr a pseudo-terminal) answered with `answer`:
/// its exit status, stdout, and what it wrote on the terminal.
fn trust_on_a_terminal(h: &Hostile, answer: &str) -> (Option<i32>, String, String) {
    use std::io::Write;
    let (mut master, slave) = crate::common::pseudo_terminal(80);
    // The answer waits in the terminal's line buffer until `trust` reads it.
    master.write_all(answer.as_bytes()).unwrap();
    let out = tool_cmd(h.ours.path())
        .args(["trust", "w1"])
        .env("TRUST_LOG", &h.log)
        .stdin(slave.try_clone().unwrap())
        .stderr(slave)
        .output()
        .unwrap();
    // Every end of the terminal but ours is closed now.
    let screen = crate::common::read_screen(&mut master);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        screen,
    )
}

#[test]
fn trust_on_a_terminal_shows_the_commands_and_trusts_only_on_yes() {
    let h = Hostile::new(None);
    h.fetch();
    let list = h.ours.path().join(".git/agent-rewind/trusted-workflows");
    let listed = || std::fs::read_to_string(&list).unwrap_or_default();
    let before = listed();

    let (code, _, screen) = trust_on_a_terminal(&h, "n\n");
    assert_eq!(code, Some(1), "{screen}");
    assert!(
        screen.contains("$ echo pwned"),
        "the commands are shown: {screen}"
    );
    assert!(screen.contains("[y/N]"), "{screen}");
    assert!(screen.contains("answered no"), "{screen}");
    assert_eq!(listed(), before, "answered no, yet trusted");
    h.refused(&["resume", "w1"]);

    let (code, stdout, screen) = trust_on_a_terminal(&h, "y\n");
    assert_eq!(code, Some(0), "{screen}");
    assert!(stdout.contains("trusted git-blob:"), "{stdout}");
    assert_ne!(listed(), before, "answered yes, not trusted");
    assert_eq!(
        log_lines(&h.log),
        Vec::<String>::new(),
        "trust runs nothing"
    );
    h.ours.write("go.txt", "go\n");
    let o = h.tool(&["resume", "w1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(log_lines(&h.log), ["pwned"]);
}

#[test]
fn steering_a_fetched_run_does_not_trust_its_workflow() {
    // `steer --edit` writes a file of the worktree (here: their workflow's text at its
    // recorded path) and runs nothing; the workflow is still not trusted.
    let h = Hostile::new(None);
    h.fetch();
    let copy = h.tmp.path().join("copy.toml");
    std::fs::write(&copy, EVIL).unwrap();
    let edit = format!("evil.toml={}", copy.display());
    let o = h.tool(&["steer", "w1", "--edit", &edit, "--invalidate", "b", "--yes"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(h.ours.read("evil.toml"), EVIL);
    h.refused(&["resume", "w1"]);
    h.refused(&["watch", "w1", "--once"]);
}
