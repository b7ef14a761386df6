//! Hostile notes and refs: everything read from a note or a
//! fetched ref is checked against the objects before use. A rewind validates its whole plan
//! before it writes the first byte; a fetch validates every checkpoint of a chain, not only
//! the tip; cyclic lineage never makes `log --graph` loop.

use crate::common;
use crate::common::stderr;

use common::{Repo, git_in, ok_in, refs, run_in};
use serde_json::Value;
use std::path::Path;

/// A run with three checkpoints: start (seq 0), plan (seq 1), implement (seq 2).
fn make_run(r: &Repo, run: &str) {
    r.ok(&["start", "--run", run]);
    r.write("plan.md", &format!("plan of {run}\n"));
    r.ok(&["checkpoint", "plan", "--run", run, "--status", "completed"]);
    r.write("impl.txt", &format!("implementation of {run}\n"));
    r.ok(&[
        "checkpoint",
        "implement",
        "--run",
        run,
        "--status",
        "completed",
    ]);
}

/// The note of `commit` in `run`'s notes, as JSON values (one per line).
fn note(dir: &Path, run: &str, commit: &str) -> Vec<Value> {
    git_in(
        dir,
        &["notes", &format!("--ref=agent-runs/{run}"), "show", commit],
    )
    .lines()
    .filter(|l| !l.trim().is_empty())
    .map(|l| serde_json::from_str(l).unwrap())
    .collect()
}

/// Replace the note of `commit` in `run`'s notes with `lines`.
fn set_note(dir: &Path, run: &str, commit: &str, lines: &[Value]) {
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let file = dir.join(".git/crafted-note");
    std::fs::write(&file, body).unwrap();
    git_in(
        dir,
        &[
            "notes",
            &format!("--ref=agent-runs/{run}"),
            "add",
            "-f",
            "-F",
            file.to_str().unwrap(),
            commit,
        ],
    );
    std::fs::remove_file(file).unwrap();
}

/// Change the checkpoint line of `commit`'s note with `f`.
fn edit_line(dir: &Path, run: &str, commit: &str, f: impl FnOnce(&mut Value)) {
    let mut lines = note(dir, run, commit);
    let cp = lines
        .iter_mut()
        .find(|l| l["type"] == "checkpoint")
        .unwrap();
    f(cp);
    set_note(dir, run, commit, &lines);
}

/// Everything a rewind could change, including the files.
fn everything(r: &Repo) -> Vec<String> {
    let mut files = vec![];
    for f in ["README.md", "plan.md", "impl.txt"] {
        files.push(std::fs::read_to_string(r.path().join(f)).unwrap_or_default());
    }
    vec![
        format!("{:?}", refs(r.path(), "refs/")),
        r.git(&["symbolic-ref", "-q", "HEAD"]),
        r.git(&["ls-files", "-s", "--debug"]),
        r.git(&[
            "status",
            "--porcelain",
            "--untracked-files=all",
            "--ignored",
        ]),
        files.join("\n--\n"),
        format!(
            "{:?}",
            std::fs::read_dir(r.path().join(".git/hooks"))
                .map(|d| d
                    .filter_map(|e| e.ok())
                    .map(|e| e.file_name())
                    .collect::<Vec<_>>())
                .unwrap_or_default()
        ),
    ]
}

/// A commit on top of `main` whose tree holds `.git/hooks/post-checkout`.
fn evil_commit(r: &Repo) -> String {
    let dir = r.path();
    let mk = |input: String| {
        let mut c = common::git_cmd(dir)
            .arg("mktree")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        c.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        let out = c.wait_with_output().unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    std::fs::write(dir.join(".git/evil"), "#!/bin/sh\ntouch /tmp/pwned\n").unwrap();
    let blob = r
        .git(&["hash-object", "-w", ".git/evil"])
        .trim()
        .to_string();
    std::fs::remove_file(dir.join(".git/evil")).unwrap();
    let hooks = mk(format!("100755 blob {blob}\tpost-checkout\n"));
    let git = mk(format!("040000 tree {hooks}\thooks\n"));
    let readme = r.rev("main:README.md");
    let top = mk(format!(
        "040000 tree {git}\t.git\n100644 blob {readme}\tREADME.md\n"
    ));
    r.git(&["commit-tree", &top, "-p", "main", "-m", "innocent"])
        .trim()
        .to_string()
}

/// Append a crafted checkpoint (seq 3, step `x`) to `run` whose commit has `second` as
/// second parent and whose note names `sha` as `git_commit_sha`.
fn craft_checkpoint(r: &Repo, run: &str, second: &str, sha: &str) -> String {
    let tip = r.rev(&format!("refs/agent-runs/{run}/HEAD"));
    let msg = format!(
        "agent-rewind: {run} manual x\n\nAgent-Run: {run}\nAgent-Step: x\nAgent-Attempt: 1\nAgent-Event: manual\nAgent-Schema: 1\n"
    );
    let tree = r.rev(&format!("{tip}^{{tree}}"));
    let c = r
        .git(&["commit-tree", &tree, "-p", &tip, "-p", second, "-m", &msg])
        .trim()
        .to_string();
    let mut lines = note(r.path(), run, &tip);
    let cp = lines
        .iter_mut()
        .find(|l| l["type"] == "checkpoint")
        .unwrap();
    cp["seq"] = 3.into();
    cp["step"] = "x".into();
    cp["event"] = "manual".into();
    cp["git_commit_sha"] = sha.into();
    set_note(r.path(), run, &c, &lines);
    r.git(&[
        "update-ref",
        &format!("refs/agent-runs/{run}/HEAD"),
        &c,
        &tip,
    ]);
    c
}

#[test]
fn a_note_pointing_git_commit_sha_at_a_blob_is_refused_before_anything_changes() {
    let r = Repo::new();
    make_run(&r, "r1");
    r.write("impl.txt", "uncommitted work\n");
    // `rewind --to implement` goes to the checkpoint right before it: plan's.
    let plan = r.rev("refs/agent-runs/r1/plan");
    let blob = r.rev("main:README.md");
    edit_line(r.path(), "r1", &plan, |l| {
        l["git_commit_sha"] = blob.clone().into()
    });
    let before = everything(&r);
    rewinds_are_refused(&r, "implement", "git_commit_sha", &before);
    let wt = r.path().join("../hostile-wt-blob");
    let out = run_in(
        r.path(),
        &[
            "fork",
            "r1",
            "--to",
            "implement",
            "--worktree",
            wt.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!wt.exists());
    assert_eq!(everything(&r), before);
    r.assert_fsck();
}

/// `rewind r1 --to <to>`, in place and with `--no-checkout`, fails (exit 1) with `why` in
/// its error and changes nothing of `before`.
fn rewinds_are_refused(r: &Repo, to: &str, why: &str, before: &[String]) {
    for extra in [&[][..], &["--no-checkout"][..]] {
        let mut args = vec!["rewind", "r1", "--to", to, "--run", "r2"];
        args.extend_from_slice(extra);
        let out = run_in(r.path(), &args);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(why), "{}", stderr(&out));
        assert_eq!(everything(r), before, "{extra:?}");
    }
}

#[test]
fn a_crafted_commit_holding_git_hooks_is_never_checked_out() {
    let r = Repo::new();
    make_run(&r, "r1");
    r.write("impl.txt", "uncommitted work\n");
    let evil = evil_commit(&r);
    // The crafted checkpoint keeps the commit as its second parent, so the note agrees with
    // the commit graph: only the tree check can stop it.
    craft_checkpoint(&r, "r1", &evil, &evil);
    let before = everything(&r);
    rewinds_are_refused(&r, "r1@3", ".git", &before);
    assert!(!r.path().join(".git/hooks/post-checkout").exists());
    // A note naming a commit the checkpoint does not hold is refused as well.
    let r2 = Repo::new();
    make_run(&r2, "r1");
    let evil2 = evil_commit(&r2);
    let main = r2.rev("main");
    craft_checkpoint(&r2, "r1", &main, &evil2);
    let before = everything(&r2);
    let out = run_in(r2.path(), &["rewind", "r1", "--to", "r1@3"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("not a parent"), "{}", stderr(&out));
    assert_eq!(everything(&r2), before);
}

/// A bare remote, a clone that crafts, a clone that fetches.
struct Remote {
    _bare: tempfile::TempDir,
    url: String,
}

impl Remote {
    fn new() -> Remote {
        let bare = tempfile::tempdir().unwrap();
        git_in(bare.path(), &["init", "-q", "--bare", "-b", "main"]);
        let url = bare.path().display().to_string();
        Remote { _bare: bare, url }
    }
    fn clone(&self) -> Repo {
        let dir = tempfile::tempdir().unwrap();
        git_in(dir.path(), &["clone", "-q", &self.url, "."]);
        let r = Repo { dir };
        r.git(&["config", "user.name", "T"]);
        r.git(&["config", "user.email", "t@example.com"]);
        r
    }
}

fn result_of(report: &Value, run: &str) -> Value {
    report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run"] == run)
        .cloned()
        .unwrap_or_else(|| panic!("no {run} in {report:#}"))
}

#[test]
fn fetch_validates_every_checkpoint_of_a_chain_not_only_the_tip() {
    let remote = Remote::new();
    let a = remote.clone();
    a.write("README.md", "hello\n");
    a.git(&["add", "-A"]);
    a.git(&["commit", "-q", "-m", "initial"]);
    a.git(&["push", "-q", "origin", "main"]);
    for run in [
        "good",
        "blobsha",
        "middle",
        "headstep",
        "headlower",
        "badtime",
        "cycle1",
        "evil",
        "seqjump",
    ] {
        make_run(&a, run);
    }
    let plan = |run: &str| a.rev(&format!("refs/agent-runs/{run}/plan"));
    let blob = a.rev("main:README.md");
    edit_line(a.path(), "blobsha", &plan("blobsha"), |l| {
        l["git_commit_sha"] = blob.clone().into()
    });
    // A middle checkpoint claiming another run and seq 99.
    edit_line(a.path(), "middle", &plan("middle"), |l| {
        l["run"] = "other".into();
        l["seq"] = 99.into();
    });
    edit_line(a.path(), "seqjump", &plan("seqjump"), |l| {
        l["seq"] = 7.into()
    });
    edit_line(a.path(), "headstep", &plan("headstep"), |l| {
        l["step"] = "HEAD".into()
    });
    edit_line(a.path(), "headlower", &plan("headlower"), |l| {
        l["step"] = "head".into()
    });
    edit_line(a.path(), "badtime", &plan("badtime"), |l| {
        l["ts"] = "2026-12-01T10:00:00\u{e9}1:00".into()
    });
    // A root claiming to come from a checkpoint it does not descend from.
    let root = a.rev("refs/agent-runs/cycle1/HEAD~2");
    let good_tip = a.rev("refs/agent-runs/good/HEAD");
    edit_line(a.path(), "cycle1", &root, |l| {
        l["forked_from"] = serde_json::json!({"run": "good", "checkpoint": good_tip});
    });
    let evil = evil_commit(&a);
    craft_checkpoint(&a, "evil", &a.rev("main"), &evil);
    a.git(&[
        "push",
        "-q",
        "origin",
        "refs/agent-runs/*:refs/agent-runs/*",
        "refs/notes/agent-runs/*:refs/notes/agent-runs/*",
    ]);

    let b = remote.clone();
    let out = run_in(b.path(), &["--json", "fetch"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result_of(&report, "good")["result"], "new", "{report:#}");
    for bad in [
        "blobsha",
        "middle",
        "headstep",
        "headlower",
        "badtime",
        "cycle1",
        "evil",
        "seqjump",
    ] {
        assert_eq!(
            result_of(&report, bad)["result"],
            "skipped",
            "{bad}: {report:#}"
        );
        eprintln!("{bad}: {}", result_of(&report, bad)["detail"]);
    }
    let listed: Vec<String> = serde_json::from_str::<Value>(&ok_in(b.path(), &["--json", "list"]))
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(listed, ["good"]);
    let own: Vec<String> = refs(b.path(), "refs/agent-runs/")
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert!(
        own.iter().all(|n| n.starts_with("refs/agent-runs/good/")),
        "{own:?}"
    );
    assert_eq!(b.missing_objects_under_our_refs(), None);
}

#[test]
fn cyclic_lineage_never_makes_log_graph_loop() {
    let r = Repo::new();
    make_run(&r, "p");
    r.ok(&[
        "fork",
        "p",
        "--to",
        "implement",
        "--run",
        "q",
        "--no-checkout",
    ]);
    // Make p claim to come from q: p -> q -> p.
    let p_root = r.rev("refs/agent-runs/p/HEAD~2");
    let q_root = r.rev("refs/agent-runs/q/HEAD");
    edit_line(r.path(), "p", &p_root, |l| {
        l["forked_from"] = serde_json::json!({"run": "q", "checkpoint": q_root});
    });
    for run in ["p", "q"] {
        let out = run_in(r.path(), &["log", "--graph", run]);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.lines().count() < 10, "{text}");
        let out = run_in(r.path(), &["--json", "log", "--graph", run]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(out.stdout.len() < 10_000);
    }
}

// ---------------------------------------------------------------------------------------
// Item 9 parts: steer --edit targets, export -o, step names equal to HEAD.

const FLOW: &str = r#"[workflow]
name = "flow"

[[steps]]
name = "build"
kind = "deterministic"
run = "true"
inputs = ["TASK.md"]
"#;

#[test]
fn steer_edit_refuses_git_dirs_in_any_spelling_symlinks_and_paths_outside() {
    let r = Repo::new();
    r.write("TASK.md", "task\n");
    r.write("flow.toml", FLOW);
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "flow"]);
    r.ok(&["run", "flow.toml", "--run", "r1"]);
    let outside = tempfile::tempdir().unwrap();
    let payload = outside.path().join("payload");
    std::fs::write(&payload, "#!/bin/sh\necho pwned\n").unwrap();
    agent_rewind_core::platform::links::create_symlink(
        r.path().join(".git"),
        r.path().join("gitlink"),
    )
    .unwrap();
    agent_rewind_core::platform::links::create_symlink(outside.path(), r.path().join("outlink"))
        .unwrap();
    agent_rewind_core::platform::links::create_symlink(
        outside.path().join("victim"),
        r.path().join("victim-link"),
    )
    .unwrap();
    std::fs::write(outside.path().join("victim"), "victim\n").unwrap();
    std::fs::create_dir_all(r.path().join("sub")).unwrap();
    agent_rewind_core::platform::links::create_symlink("../.git/hooks", r.path().join("sub/hooks"))
        .unwrap();
    let before = everything(&r);
    let config = std::fs::read(r.path().join(".git/config")).unwrap();
    for target in [
        ".git/config",
        ".GIT/config",
        ".Git/hooks/post-checkout",
        "a/.git/config",
        "git~1/config",
        "gitlink/hooks/post-checkout",
        "sub/hooks/post-checkout",
        "outlink/x",
        "victim-link",
        "../outside.txt",
        "/etc/passwd",
        "",
    ] {
        let edit = format!("{target}={}", payload.display());
        let out = run_in(r.path(), &["steer", "r1", "--edit", &edit, "--yes"]);
        assert!(
            matches!(out.status.code(), Some(1) | Some(2)),
            "{target}: {}",
            stderr(&out)
        );
        assert!(!stderr(&out).is_empty(), "{target}");
        assert_eq!(everything(&r), before, "{target}");
    }
    assert_eq!(std::fs::read(r.path().join(".git/config")).unwrap(), config);
    assert!(!r.path().join(".git/hooks/post-checkout").exists());
    assert_eq!(
        std::fs::read_to_string(outside.path().join("victim")).unwrap(),
        "victim\n"
    );
    assert!(!outside.path().join("x").exists());
    // A plain file of the worktree is still edited.
    let edit = format!("TASK.md={}", payload.display());
    r.ok(&["steer", "r1", "--edit", &edit, "--yes"]);
    assert_eq!(r.read("TASK.md"), "#!/bin/sh\necho pwned\n");
}

#[test]
fn export_refuses_an_existing_file_without_force() {
    let r = Repo::new();
    make_run(&r, "r1");
    r.write("keep.bundle", "precious\n");
    let out = run_in(r.path(), &["export", "r1", "-o", "keep.bundle"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
    assert!(stderr(&out).contains("--force"), "{}", stderr(&out));
    assert_eq!(r.read("keep.bundle"), "precious\n");
    r.ok(&["export", "r1", "-o", "keep.bundle", "--force"]);
    r.git(&["bundle", "verify", "-q", "keep.bundle"]);
}

#[test]
fn step_names_equal_to_head_in_any_case_are_refused() {
    let r = Repo::new();
    r.ok(&["start", "--run", "r1"]);
    let before = refs(r.path(), "refs/");
    for name in ["HEAD", "head", "Head", "hEAD"] {
        for args in [
            vec!["checkpoint", name, "--run", "r1"],
            vec!["step", "begin", name, "--run", "r1"],
        ] {
            let out = run_in(r.path(), &args);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
            assert!(stderr(&out).contains("HEAD"), "{}", stderr(&out));
        }
    }
    assert_eq!(refs(r.path(), "refs/"), before);
}

/// Refs are read as git reads them: a loose ref overrides its packed value, lock and dot
/// files beside refs are skipped, and a loose ref that does not hold an object id is an
/// error naming it, with nothing written.
#[test]
fn refs_are_read_as_git_reads_them_and_a_broken_one_is_named() {
    let r = Repo::new();
    make_run(&r, "r1");
    make_run(&r, "r2");
    r.git(&["pack-refs", "--all"]);
    assert!(!r.path().join(".git/refs/agent-runs/r1/HEAD").exists());
    // A loose HEAD written after packing wins over the packed one.
    r.ok(&["checkpoint", "review", "--run", "r1"]);
    let head = r.rev("refs/agent-runs/r1/HEAD");
    let listed: Value = serde_json::from_str(&r.ok(&["--json", "list"])).unwrap();
    let r1 = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["run"] == "r1")
        .unwrap_or_else(|| panic!("{listed:#}"))
        .clone();
    assert!(
        r1.to_string().contains(&head[..12]),
        "list shows r1's loose HEAD {head}: {r1:#}"
    );
    // A held lock and a dot file beside the refs are not refs.
    let dir = r.path().join(".git/refs/agent-runs/r2");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("HEAD.lock"), "garbage\n").unwrap();
    std::fs::write(dir.join(".hidden"), "garbage\n").unwrap();
    r.ok(&["list"]);
    std::fs::remove_file(dir.join("HEAD.lock")).unwrap();
    std::fs::remove_file(dir.join(".hidden")).unwrap();
    // A loose ref that does not hold an id: a one-line error naming it.
    std::fs::write(dir.join("HEAD"), "not an object id\n").unwrap();
    let before = std::fs::read_dir(r.path().join(".git/agent-rewind"))
        .map(|d| d.count())
        .unwrap_or(0);
    let out = r.run(&["list"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = stderr(&out);
    assert!(err.starts_with("error: "), "{err}");
    assert!(err.contains("refs/agent-runs/r2/HEAD"), "{err}");
    let after = std::fs::read_dir(r.path().join(".git/agent-rewind"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(before, after, "a failed list wrote something");
}
