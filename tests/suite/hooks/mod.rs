//! Git hooks against real git (docs/HOOKS.md): installing and removing them without clobbering
//! existing hooks, `git commit` / `git rebase` / `git commit --amend` recording into the
//! worktree's active run, and failures that never fail the user's commit. The post-commit
//! checkpoint recorded after the commit returns is in `background.rs`; every agent's hooks
//! (Claude Code's among them) are in `agents/`; those installed once for every repository
//! (`--global`), and `agentRewind.enabled`, in `global.rs`.

mod agents;
mod background;
mod global;
mod post_rewind;
use crate::common;

use common::{Repo, checkpoints, git_cmd, json_in, refs};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

/// git with the binary under test on `PATH` and no agent variables inherited.
fn git_with_path(dir: &Path) -> std::process::Command {
    let mut c = git_cmd(dir);
    c.env("PATH", crate::common::path_with_tool())
        .env_remove("AGENT_RUN")
        .env_remove("AGENT_STEP");
    c
}

fn git_hooked(dir: &Path, args: &[&str]) -> Output {
    let out = git_with_path(dir).args(args).output().expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Write `content` to `file`, stage it and commit with `message` (hooks run).
fn commit(dir: &Path, file: &str, content: &str, message: &str) -> Output {
    std::fs::write(dir.join(file), content).unwrap();
    git_hooked(dir, &["add", file]);
    git_hooked(dir, &["commit", "-q", "-m", message])
}

fn rev(dir: &Path, spec: &str) -> String {
    common::git_in(dir, &["rev-parse", spec]).trim().to_string()
}

fn hooks_dir(repo: &Repo) -> PathBuf {
    repo.path().join(".git/hooks")
}

fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o111 != 0
}

fn actions(out: &Value) -> Vec<String> {
    out["git"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["action"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn install_is_idempotent_and_uninstall_removes_what_it_created() {
    let repo = Repo::new();
    let out = repo.json(&["hooks", "install"]);
    assert_eq!(actions(&out), ["created", "created"]);
    let pc = hooks_dir(&repo).join("post-commit");
    let pr = hooks_dir(&repo).join("post-rewrite");
    for p in [&pc, &pr] {
        assert!(is_executable(p), "{} not executable", p.display());
        let text = std::fs::read_to_string(p).unwrap();
        assert!(
            text.starts_with("#!/bin/sh\n# >>> git-agent-rewind >>>\n"),
            "{text}"
        );
        assert!(text.ends_with("# <<< git-agent-rewind <<<\n"), "{text}");
    }
    let before = (std::fs::read(&pc).unwrap(), std::fs::read(&pr).unwrap());
    let again = repo.json(&["hooks", "install", "--git"]);
    assert_eq!(actions(&again), ["unchanged", "unchanged"]);
    assert_eq!(
        before,
        (std::fs::read(&pc).unwrap(), std::fs::read(&pr).unwrap())
    );

    let removed = repo.json(&["hooks", "uninstall"]);
    assert_eq!(actions(&removed), ["deleted", "deleted"]);
    assert!(!pc.exists() && !pr.exists());
    let none = repo.json(&["hooks", "uninstall", "--git"]);
    assert_eq!(actions(&none), ["absent", "absent"]);
}

/// The post-commit hook in a reftable repository: HEAD, its branch and HEAD's reflog are read
/// through git there; each commit is recorded once, with the user's commit as second parent.
#[test]
fn commits_in_a_reftable_repository_record_one_checkpoint_each() {
    let repo = Repo::new_reftable();
    let dir = repo.path();
    repo.ok(&["hooks", "install"]);
    repo.ok(&["start", "--run", "r1"]);
    for (i, file) in ["a.txt", "b.txt", "c.txt"].iter().enumerate() {
        commit(dir, file, "x\n", &format!("commit {i}"));
        let cps = checkpoints(dir, "r1");
        assert_eq!(cps.len(), i + 2, "commit {i}: one new checkpoint");
        let cp = cps.last().unwrap();
        let head = rev(dir, "HEAD");
        assert_eq!(cp["event"], "commit");
        assert_eq!(cp["git_commit_sha"], head.as_str());
        assert_eq!(cp["head_ref"], "refs/heads/main");
        assert_eq!(cp["parents"][1], head.as_str());
    }
    assert_eq!(common::git_in(dir, &["status", "--porcelain"]), "");
    repo.assert_fsck();
}

#[test]
fn commits_record_one_checkpoint_each_with_the_right_step() {
    let repo = Repo::new();
    let dir = repo.path();
    repo.ok(&["hooks", "install"]);

    // No active run: nothing at all.
    commit(dir, "a.txt", "a\n", "no run yet");
    assert!(refs(dir, "refs/agent-runs/").is_empty());
    assert!(refs(dir, "refs/notes/").is_empty());

    repo.ok(&["start", "--run", "r1"]);
    let mut n = checkpoints(dir, "r1").len();
    let expect = |n: &mut usize, msg: &str, step: &str, cps: Vec<Value>| {
        assert_eq!(cps.len(), *n + 1, "{msg}: exactly one new checkpoint");
        *n = cps.len();
        let cp = cps.last().unwrap();
        assert_eq!(cp["event"], "commit", "{msg}");
        assert_eq!(cp["step"], step, "{msg}");
        let head = rev(dir, "HEAD");
        assert_eq!(cp["git_commit_sha"], head.as_str(), "{msg}");
        // The user's commit is the checkpoint's second parent: gc can never drop it.
        assert_eq!(cp["parents"][1], head.as_str(), "{msg}");
    };

    let out = commit(dir, "b.txt", "b\n", "first in run");
    assert!(out.stdout.is_empty(), "the hook prints nothing on success");
    expect(&mut n, "default step", "commit", checkpoints(dir, "r1"));

    repo.ok(&["step", "begin", "plan"]);
    n += 1;
    commit(dir, "c.txt", "c\n", "plan work");
    expect(
        &mut n,
        "step of the newest checkpoint",
        "plan",
        checkpoints(dir, "r1"),
    );

    commit(dir, "d.txt", "d\n", "impl\n\nAgent-Step: implement");
    expect(&mut n, "trailer", "implement", checkpoints(dir, "r1"));

    std::fs::write(dir.join("e.txt"), "e\n").unwrap();
    git_hooked(dir, &["add", "e.txt"]);
    let out = git_with_path(dir)
        .env("AGENT_STEP", "review")
        .args(["commit", "-q", "-m", "env step"])
        .output()
        .unwrap();
    assert!(out.status.success());
    expect(&mut n, "AGENT_STEP", "review", checkpoints(dir, "r1"));

    // No override: the step of the run's newest checkpoint (the AGENT_STEP commit's).
    commit(dir, "f.txt", "f\n", "more review");
    expect(
        &mut n,
        "newest checkpoint's step",
        "review",
        checkpoints(dir, "r1"),
    );

    // An invalid step name: the commit goes through, nothing is recorded, a warning says why.
    std::fs::write(dir.join("g.txt"), "g\n").unwrap();
    git_hooked(dir, &["add", "g.txt"]);
    let out = git_with_path(dir)
        .env("AGENT_STEP", "not a name!")
        .args(["commit", "-q", "-m", "bad step"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: git agent-rewind hook post-commit"),
        "{stderr}"
    );
    assert!(stderr.contains("AGENT_STEP"), "{stderr}");
    assert_eq!(checkpoints(dir, "r1").len(), n);

    // AGENT_RUN overrides the active run (and starts it when new).
    std::fs::write(dir.join("h.txt"), "h\n").unwrap();
    git_hooked(dir, &["add", "h.txt"]);
    let out = git_with_path(dir)
        .env("AGENT_RUN", "r2")
        .args(["commit", "-q", "-m", "other run"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(checkpoints(dir, "r1").len(), n);
    let r2 = checkpoints(dir, "r2");
    assert_eq!(r2.last().unwrap()["event"], "commit");
    repo.assert_fsck();
}

#[test]
fn amend_records_its_mapping_on_the_commit_checkpoint() {
    let repo = Repo::new();
    repo.ok(&["hooks", "install"]);
    repo.ok(&["start", "--run", "r1"]);
    amend_and_check_the_mapping(&repo);
}

/// Commit, amend, and check that post-commit recorded the amended commit and post-rewrite
/// added the mapping to that checkpoint (in run `r1`, hooks installed).
fn amend_and_check_the_mapping(repo: &Repo) {
    let dir = repo.path();
    commit(dir, "a.txt", "a\n", "first");
    let old = rev(dir, "HEAD");
    let old_cp = checkpoints(dir, "r1").last().unwrap()["checkpoint"].clone();
    git_hooked(dir, &["commit", "-q", "--amend", "-m", "first, amended"]);
    let new = rev(dir, "HEAD");
    let cps = checkpoints(dir, "r1");
    // post-commit recorded the amended commit; post-rewrite added the mapping to it.
    let tip = cps.last().unwrap();
    assert_eq!(tip["git_commit_sha"], new.as_str());
    let rec = &tip["records"][0];
    assert_eq!(rec["type"], "rewrite");
    assert_eq!(rec["kind"], "amend");
    assert_eq!(rec["mapping"][0]["old"], old.as_str());
    assert_eq!(rec["mapping"][0]["new"], new.as_str());
    assert_eq!(rec["mapping"][0]["checkpoint"], old_cp);
    let shown = repo.ok(&["show", "r1"]);
    assert!(shown.contains("(amend, from checkpoint"), "{shown}");
}

#[test]
fn existing_hooks_keep_running_before_and_after() {
    let repo = Repo::new();
    let dir = repo.path();
    let hooks = hooks_dir(&repo);
    // Husky-style: ends with an explicit exit. pre-commit-style: ends with exec.
    let user_pc = "#!/usr/bin/env sh\n# user hook\necho post-commit >> \"$(git rev-parse --git-dir)/user-hook.log\"\nexit 0\n";
    let user_pr = "#!/bin/bash\nset -eu\nexec sh -c 'cat >> \"$(git rev-parse --git-dir)/user-rewrite.log\"'\n";
    for (name, text) in [("post-commit", user_pc), ("post-rewrite", user_pr)] {
        std::fs::write(hooks.join(name), text).unwrap();
        std::fs::set_permissions(hooks.join(name), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = repo.json(&["hooks", "install"]);
    assert_eq!(actions(&out), ["added", "added"]);
    let again = repo.json(&["hooks", "install"]);
    assert_eq!(actions(&again), ["unchanged", "unchanged"]);

    repo.ok(&["start", "--run", "r1"]);
    let n = checkpoints(dir, "r1").len();
    commit(dir, "a.txt", "a\n", "with both hooks");
    assert_eq!(checkpoints(dir, "r1").len(), n + 1);
    assert_eq!(repo.read(".git/user-hook.log"), "post-commit\n");
    let old = rev(dir, "HEAD");
    git_hooked(dir, &["commit", "-q", "--amend", "-m", "amended"]);
    let new = rev(dir, "HEAD");
    // The user's post-rewrite hook got git's input, unchanged.
    assert_eq!(repo.read(".git/user-rewrite.log"), format!("{old} {new}\n"));
    let tip = checkpoints(dir, "r1").last().unwrap().clone();
    assert_eq!(tip["records"][0]["kind"], "amend");
    assert_eq!(
        repo.read(".git/user-hook.log"),
        "post-commit\npost-commit\n"
    );

    let removed = repo.json(&["hooks", "uninstall", "--git"]);
    assert_eq!(actions(&removed), ["removed", "removed"]);
    for (name, text) in [("post-commit", user_pc), ("post-rewrite", user_pr)] {
        assert_eq!(std::fs::read_to_string(hooks.join(name)).unwrap(), text);
        assert!(is_executable(&hooks.join(name)));
    }
    let n = checkpoints(dir, "r1").len();
    commit(dir, "b.txt", "b\n", "after uninstall");
    assert_eq!(checkpoints(dir, "r1").len(), n, "no hook of ours any more");
    assert_eq!(
        repo.read(".git/user-hook.log"),
        "post-commit\npost-commit\npost-commit\n"
    );
}

#[test]
fn a_hook_in_another_language_is_refused_untouched() {
    let repo = Repo::new();
    let p = hooks_dir(&repo).join("post-commit");
    let text = "#!/usr/bin/env python3\nprint('hi')\n";
    std::fs::write(&p, text).unwrap();
    let out = repo.run(&["hooks", "install"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("python3 script"), "{stderr}");
    assert!(stderr.contains("hint:"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&p).unwrap(), text);
}

#[test]
fn core_hooks_path_is_honoured() {
    let repo = Repo::new();
    let dir = repo.path();
    repo.git(&["config", "core.hooksPath", ".githooks"]);
    let out = repo.json(&["hooks", "install"]);
    let hooks_dir = out["hooks_dir"].as_str().unwrap();
    assert!(hooks_dir.ends_with(".githooks"), "{hooks_dir}");
    assert!(dir.join(".githooks/post-commit").is_file());
    assert!(!dir.join(".git/hooks/post-commit").exists());
    repo.ok(&["start", "--run", "r1"]);
    let n = checkpoints(dir, "r1").len();
    commit(dir, "a.txt", "a\n", "through core.hooksPath");
    assert_eq!(checkpoints(dir, "r1").len(), n + 1);
}

#[test]
fn a_linked_worktree_records_into_its_own_active_run() {
    let repo = Repo::new();
    let main = repo.path();
    let wt_parent = tempfile::tempdir().unwrap();
    let wt = wt_parent.path().join("wt");
    repo.git(&["worktree", "add", "-q", "-b", "side", wt.to_str().unwrap()]);
    // Installed from the linked worktree: the hooks folder is the shared one.
    let out = json_in(&wt, &["hooks", "install"]);
    assert_eq!(
        std::fs::canonicalize(out["hooks_dir"].as_str().unwrap()).unwrap(),
        std::fs::canonicalize(main.join(".git/hooks")).unwrap()
    );
    repo.ok(&["start", "--run", "r-main"]);
    common::ok_in(&wt, &["start", "--run", "r-wt"]);
    let (m, w) = (
        checkpoints(main, "r-main").len(),
        checkpoints(main, "r-wt").len(),
    );
    commit(&wt, "w.txt", "w\n", "in the linked worktree");
    assert_eq!(checkpoints(main, "r-wt").len(), w + 1);
    assert_eq!(checkpoints(main, "r-main").len(), m);
    let tip = checkpoints(main, "r-wt").last().unwrap().clone();
    assert_eq!(tip["head_ref"], "refs/heads/side");
    commit(main, "m.txt", "m\n", "in the main worktree");
    assert_eq!(checkpoints(main, "r-main").len(), m + 1);
    assert_eq!(checkpoints(main, "r-wt").len(), w + 1);
}

/// Whether this process can be stopped by file permissions (root cannot).
fn permissions_apply(dir: &Path) -> bool {
    let probe = dir.join("probe");
    std::fs::create_dir(&probe).unwrap();
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o555)).unwrap();
    let blocked = std::fs::write(probe.join("x"), "x").is_err();
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::remove_dir_all(&probe).unwrap();
    blocked
}

fn assert_commit_survives(dir: &Path, file: &str) {
    let before = rev(dir, "HEAD");
    std::fs::write(dir.join(file), "x\n").unwrap();
    git_hooked(dir, &["add", file]);
    let out = git_with_path(dir)
        .args(["commit", "-q", "-m", file])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the commit failed: {stderr}");
    assert_ne!(rev(dir, "HEAD"), before, "the commit was made");
    assert!(
        stderr.contains("warning: git agent-rewind hook post-commit: nothing recorded"),
        "{stderr}"
    );
}

#[test]
fn a_failing_checkpoint_never_fails_the_commit() {
    // A corrupted notes ref.
    let repo = Repo::new();
    let dir = repo.path();
    repo.ok(&["hooks", "install"]);
    repo.ok(&["start", "--run", "r1"]);
    let blob = repo
        .git(&["hash-object", "-w", "--stdin"])
        .trim()
        .to_string();
    std::fs::write(
        dir.join(".git/refs/notes/agent-runs/r1"),
        format!("{blob}\n"),
    )
    .unwrap();
    assert_commit_survives(dir, "a.txt");

    // Our refs cannot be written.
    let repo = Repo::new();
    let dir = repo.path();
    repo.ok(&["hooks", "install"]);
    repo.ok(&["start", "--run", "r1"]);
    let n = checkpoints(dir, "r1").len();
    let blocked: Vec<PathBuf> = if permissions_apply(dir) {
        let ds = vec![
            dir.join(".git/refs/agent-runs/r1"),
            dir.join(".git/refs/notes/agent-runs"),
        ];
        for d in &ds {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o555)).unwrap();
        }
        ds
    } else {
        // Running as root: permissions do not stop us, so block the writer-lock folder.
        let locks = dir.join(".git/agent-rewind/locks");
        std::fs::remove_dir_all(&locks).unwrap();
        std::fs::write(&locks, "not a folder").unwrap();
        vec![]
    };
    assert_commit_survives(dir, "b.txt");
    for d in &blocked {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let _ = std::fs::remove_file(dir.join(".git/agent-rewind/locks"));
    assert_eq!(checkpoints(dir, "r1").len(), n, "nothing half-written");
    repo.assert_fsck();
}

#[test]
fn a_rebase_is_recorded_once_and_keeps_the_original_commits_reachable() {
    let repo = Repo::new();
    let dir = repo.path();
    repo.git(&["checkout", "-q", "-b", "feat"]);
    repo.git(&["checkout", "-q", "main"]);
    repo.write("main.txt", "main moved on\n");
    repo.git(&["add", "main.txt"]);
    repo.git(&["commit", "-q", "-m", "main moves on"]);
    repo.git(&["checkout", "-q", "feat"]);
    repo.ok(&["hooks", "install"]);
    repo.ok(&["start", "--run", "r1"]);
    let mut originals = vec![];
    let mut commit_cps = vec![];
    for i in 1..=3 {
        commit(
            dir,
            &format!("f{i}.txt"),
            &format!("{i}\n"),
            &format!("feat {i}"),
        );
        originals.push(rev(dir, "HEAD"));
        commit_cps.push(checkpoints(dir, "r1").last().unwrap()["checkpoint"].clone());
    }
    let n = checkpoints(dir, "r1").len();
    git_hooked(dir, &["rebase", "-q", "main"]);
    let cps = checkpoints(dir, "r1");
    assert_eq!(cps.len(), n + 1, "one checkpoint for the whole rebase");
    let tip = cps.last().unwrap();
    assert_eq!(tip["event"], "commit");
    assert_eq!(tip["git_commit_sha"], rev(dir, "HEAD").as_str());
    let records: Vec<&Value> = cps
        .iter()
        .flat_map(|c| c["records"].as_array().into_iter().flatten())
        .filter(|r| r["type"] == "rewrite")
        .collect();
    assert_eq!(records.len(), 1, "one rewrite record");
    let rec = records[0];
    assert_eq!(rec["kind"], "rebase");
    let mapping = rec["mapping"].as_array().unwrap();
    assert_eq!(mapping.len(), 3);
    for (i, m) in mapping.iter().enumerate() {
        assert_eq!(m["old"], originals[i].as_str());
        assert_eq!(m["checkpoint"], commit_cps[i]);
        assert_ne!(m["old"], m["new"]);
    }
    let shown = repo.ok(&["show", "r1"]);
    assert!(shown.contains("(rebase, from checkpoint"), "{shown}");

    // Only our chain keeps the originals alive now: expire every reflog, then prune.
    repo.assert_fsck();
    repo.git(&["reflog", "expire", "--expire=now", "--all"]);
    repo.git(&["gc", "-q", "--prune=now"]);
    repo.assert_fsck();
    for c in &originals {
        repo.git(&["cat-file", "-e", &format!("{c}^{{commit}}")]);
    }
    for cp in checkpoints(dir, "r1") {
        let id = cp["checkpoint"].as_str().unwrap();
        let shown = json_in(dir, &["show", id]);
        assert_eq!(shown["checkpoint"], id);
        repo.git(&["notes", "--ref=agent-runs/r1", "show", id]);
    }
}

/// A commit goes to the step of the run's newest checkpoint, not to the
/// step begun last: here plan was begun and ended, then a manual checkpoint of implement
/// came after, so the commit is implement's.
#[test]
fn a_commit_goes_to_the_step_of_the_runs_newest_checkpoint() {
    let repo = Repo::new();
    let dir = repo.path();
    repo.ok(&["hooks", "install"]);
    repo.ok(&["start", "--run", "r1"]);
    repo.ok(&["step", "begin", "plan"]);
    repo.ok(&["step", "end", "plan", "--status", "completed"]);
    repo.write("impl.txt", "started by hand\n");
    repo.ok(&["checkpoint", "implement", "-m", "by hand"]);
    let n = checkpoints(dir, "r1").len();
    commit(dir, "c.txt", "c\n", "implementation");
    let cps = checkpoints(dir, "r1");
    assert_eq!(cps.len(), n + 1, "one new checkpoint");
    let cp = cps.last().unwrap();
    assert_eq!(cp["event"], "commit");
    assert_eq!(cp["step"], "implement", "{cp:#}");
    assert_eq!(cp["git_commit_sha"], rev(dir, "HEAD").as_str());
    let shown = repo.json(&["show", "r1"]);
    assert_eq!(shown["meta"]["step_from"], "newest", "{shown:#}");
    repo.assert_fsck();
}
