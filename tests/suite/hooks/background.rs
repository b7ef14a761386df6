//! The post-commit checkpoint recorded after `git commit` returns (`hooks::background`):
//! every later command sees it, the commit is never held by it, a child that dies leaves
//! nothing behind, what it could not record is told once, and `auto` picks it only for a
//! large index without a filesystem monitor.

use super::{amend_and_check_the_mapping, commit, git_with_path, rev};
use crate::common::{Repo, bounded, checkpoints, ok_in, tool_cmd, write_in};
use std::path::Path;

/// A repository with the hooks installed, run `r1` active and checkpoints of commits
/// recorded in the background.
fn background_repo() -> Repo {
    let repo = Repo::new();
    repo.ok(&["hooks", "install"]);
    repo.ok(&["start", "--run", "r1"]);
    repo.git(&["config", "agentRewind.postCommitInBackground", "true"]);
    repo
}

/// `git agent-rewind --json hook post-commit` run by hand: what the hook decided.
fn hook_action(dir: &Path) -> String {
    let out = ok_in(dir, &["--json", "hook", "post-commit"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["action"].as_str().unwrap().to_string()
}

#[test]
fn each_commit_is_recorded_in_order_and_the_next_command_sees_it() {
    let repo = background_repo();
    let dir = repo.path();
    for i in 0..4 {
        // Something committed, something left unstaged, something untracked.
        repo.write("README.md", &format!("edited {i}\n"));
        repo.write(&format!("new-{i}.txt"), "untracked\n");
        let before = checkpoints(dir, "r1").len();
        commit(
            dir,
            &format!("f{i}.txt"),
            &format!("{i}\n"),
            &format!("commit {i}"),
        );
        // No wait here: the list below waits for the checkpoint being recorded.
        let cps = checkpoints(dir, "r1");
        assert_eq!(cps.len(), before + 1, "commit {i}: one checkpoint");
        let tip = cps.last().unwrap();
        assert_eq!(tip["event"], "commit");
        assert_eq!(tip["git_commit_sha"], rev(dir, "HEAD").as_str());
        assert_eq!(
            tip["message"].as_str().unwrap().split(": ").nth(1),
            Some(format!("commit {i}").as_str())
        );
        let tree = repo.git(&[
            "rev-parse",
            &format!("{}^{{tree}}", tip["checkpoint"].as_str().unwrap()),
        ]);
        assert_eq!(
            tree.trim(),
            repo.add_all_tree(),
            "commit {i}: the worktree as it is"
        );
    }
    // By hand the hook says what it did; the state is already recorded, so nothing new.
    let n = checkpoints(dir, "r1").len();
    assert_eq!(hook_action(dir), "background");
    assert_eq!(checkpoints(dir, "r1").len(), n);
    assert_eq!(
        repo.git(&["status", "--porcelain"]),
        " M README.md\n?? new-0.txt\n?? new-1.txt\n?? new-2.txt\n?? new-3.txt\n"
    );
    repo.assert_fsck();
}

#[test]
fn commits_back_to_back_are_recorded_in_their_order_or_reported() {
    let repo = background_repo();
    let dir = repo.path();
    let before = checkpoints(dir, "r1").len();
    // No command of ours between the commits: each hook waits for the checkpoint of the
    // commit before. That checkpoint may find HEAD already moved on by the next commit
    // (a small repository commits in milliseconds): then it records nothing and the next
    // hook or command says so, never a checkpoint out of order.
    let mut made = vec![];
    let mut told = String::new();
    for i in 0..3 {
        std::fs::write(dir.join(format!("b{i}.txt")), "b\n").unwrap();
        super::git_hooked(dir, &["add", "-A"]);
        let out = super::git_hooked(dir, &["commit", "-q", "-m", &format!("b{i}")]);
        told.push_str(&String::from_utf8_lossy(&out.stderr));
        made.push(rev(dir, "HEAD"));
    }
    let out = tool_cmd(dir)
        .args(["--json", "list", "r1"])
        .output()
        .unwrap();
    assert!(out.status.success());
    told.push_str(&String::from_utf8_lossy(&out.stderr));
    let cps: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let recorded: Vec<&str> = cps[before..]
        .iter()
        .map(|c| c["git_commit_sha"].as_str().unwrap())
        .collect();
    let in_order: Vec<&str> = made
        .iter()
        .map(String::as_str)
        .filter(|c| recorded.contains(c))
        .collect();
    assert_eq!(
        recorded, in_order,
        "recorded in the commits' order, each once"
    );
    assert_eq!(
        recorded.last().copied(),
        made.last().map(String::as_str),
        "the last one is recorded"
    );
    for c in made.iter().filter(|c| !recorded.contains(&c.as_str())) {
        assert!(
            told.contains(&format!(
                "the post-commit checkpoint of commit {} was not recorded: HEAD moved on",
                &c[..12]
            )),
            "commit {c} has no checkpoint and nothing said so: {told}"
        );
    }
    repo.assert_fsck();
}

#[test]
fn the_commit_is_not_held_and_a_command_waits_for_the_checkpoint() {
    let repo = background_repo();
    let dir = repo.path();
    let before = checkpoints(dir, "r1").len();
    // Hold the run's writer lock, as another writer would: the background checkpoint
    // waits for it, the commit does not.
    let lock = std::fs::File::open(dir.join(".git/agent-rewind/locks/r1.lock")).unwrap();
    lock.lock().unwrap();
    std::fs::write(dir.join("a.txt"), "a\n").unwrap();
    super::git_hooked(dir, &["add", "a.txt"]);
    let mut git = git_with_path(dir);
    git.args(["commit", "-q", "-m", "held"]);
    let out = bounded(git, "git commit");
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "the hook returned at once, with nothing to say: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut list = tool_cmd(dir);
    list.args(["--json", "list", "r1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut list = list.spawn().unwrap();
    // There is no event to wait for: a list that did not wait would be done long before.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        list.try_wait().unwrap().is_none(),
        "list waits for the checkpoint being recorded"
    );
    lock.unlock().unwrap();
    let out = list.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cps: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cps.len(), before + 1);
    assert_eq!(
        cps.last().unwrap()["git_commit_sha"],
        rev(dir, "HEAD").as_str()
    );
    repo.assert_fsck();
}

#[test]
fn a_background_checkpoint_that_dies_leaves_nothing_behind() {
    let repo = background_repo();
    let dir = repo.path();
    let refs_before = repo.git(&["for-each-ref"]);
    let n = checkpoints(dir, "r1").len();
    std::fs::write(dir.join("a.txt"), "a\n").unwrap();
    super::git_hooked(dir, &["add", "a.txt"]);
    // The child inherits the crash point from the hook's environment and dies with the
    // objects written and no ref moved.
    let out = git_with_path(dir)
        .args(["commit", "-q", "-m", "dies"])
        .env("AGENT_REWIND_CRASH_AT", "journal:objects-written")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The kernel dropped the dead child's lock: this does not hang, and finds nothing new.
    let out = bounded(
        {
            let mut c = tool_cmd(dir);
            c.args(["list", "r1"]);
            c
        },
        "list after the child died",
    );
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "warning: the post-commit checkpoint of commit {} was not recorded: the process recording it stopped",
            &rev(dir, "HEAD")[..12]
        )),
        "the next command says so: {stderr}"
    );
    assert_eq!(checkpoints(dir, "r1").len(), n, "nothing recorded");
    let refs_after = repo.git(&["for-each-ref"]);
    assert_eq!(
        refs_before
            .lines()
            .filter(|l| !l.ends_with("refs/heads/main"))
            .collect::<Vec<_>>(),
        refs_after
            .lines()
            .filter(|l| !l.ends_with("refs/heads/main"))
            .collect::<Vec<_>>(),
        "no ref of ours moved"
    );
    repo.assert_fsck();
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    // The next commit records as usual.
    commit(dir, "b.txt", "b\n", "next");
    let cps = checkpoints(dir, "r1");
    assert_eq!(cps.len(), n + 1);
    assert_eq!(
        cps.last().unwrap()["git_commit_sha"],
        rev(dir, "HEAD").as_str()
    );
}

#[test]
fn what_it_could_not_record_is_told_once_by_the_next_command() {
    let repo = background_repo();
    let dir = repo.path();
    commit(dir, "a.txt", "a\n", "first");
    // A child started for a commit HEAD has already left (by a checkout, not by commits on
    // top of it): nothing recorded, a report.
    let old = rev(dir, "HEAD");
    repo.git(&["checkout", "-q", "--detach", "HEAD~1"]);
    let n = checkpoints(dir, "r1").len();
    let out = tool_cmd(dir)
        .args([
            "hook",
            "post-commit",
            "--background",
            &old,
            "r1",
            "commit",
            "default",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let out = tool_cmd(dir).args(["list", "r1"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success());
    assert!(
        stderr.contains(&format!(
            "warning: the post-commit checkpoint of commit {} was not recorded: HEAD moved on",
            &old[..12]
        )),
        "{stderr}"
    );
    let again = tool_cmd(dir).args(["list", "r1"]).output().unwrap();
    assert!(
        again.stderr.is_empty(),
        "told once: {}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(checkpoints(dir, "r1").len(), n);

    // Arguments that do not name a commit, a run and a step: a warning, nothing recorded.
    let out = tool_cmd(dir)
        .args(["hook", "post-commit", "--background", "nonsense"])
        .output()
        .unwrap();
    assert!(out.status.success(), "a hook never fails");
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing recorded"));
    assert_eq!(checkpoints(dir, "r1").len(), n);
}

#[test]
fn a_hook_that_fails_keeps_what_it_was_to_tell_for_the_next_command() {
    let repo = background_repo();
    let dir = repo.path();
    commit(dir, "a.txt", "a\n", "first");
    let old = rev(dir, "HEAD");
    repo.git(&["checkout", "-q", "--detach", "HEAD~1"]);
    let out = tool_cmd(dir)
        .args([
            "hook",
            "post-commit",
            "--background",
            &old,
            "r1",
            "commit",
            "default",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    // The next hook takes the report, then fails itself (a bad setting): the report must
    // not go with it.
    repo.git(&["config", "agentRewind.postCommitInBackground", "sometimes"]);
    let out = tool_cmd(dir)
        .args(["hook", "post-commit"])
        .output()
        .unwrap();
    assert!(out.status.success(), "a hook never fails");
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing recorded"));
    repo.git(&["config", "--unset", "agentRewind.postCommitInBackground"]);
    let out = tool_cmd(dir).args(["list", "r1"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "warning: the post-commit checkpoint of commit {} was not recorded: HEAD moved on",
            &old[..12]
        )),
        "{stderr}"
    );
}

#[test]
fn amend_maps_onto_the_checkpoint_recorded_in_the_background() {
    let repo = background_repo();
    amend_and_check_the_mapping(&repo);
}

#[test]
fn auto_records_in_the_background_only_for_a_large_index_without_a_monitor() {
    let repo = Repo::new();
    let dir = repo.path();
    repo.ok(&["start", "--run", "r1"]);
    assert_eq!(hook_action(dir), "recorded", "a small index: now");

    // 20,000 index entries (the threshold).
    for d in 0..100 {
        for f in 0..200 {
            write_in(dir, &format!("d{d}/f{f}.txt"), &format!("{d} {f}\n"));
        }
    }
    repo.git(&["add", "-A"]);
    // 20,000 loose objects: `git commit` starts `git gc --auto`, which must not pack and
    // prune them while the fsck below reads them.
    repo.git(&["config", "gc.autoDetach", "false"]);
    repo.git(&["commit", "-q", "-m", "many files"]);
    assert_eq!(hook_action(dir), "background", "a large index, no monitor");
    let cps = checkpoints(dir, "r1");
    assert_eq!(
        cps.last().unwrap()["git_commit_sha"],
        rev(dir, "HEAD").as_str()
    );

    repo.git(&["config", "agentRewind.postCommitInBackground", "false"]);
    assert_eq!(
        hook_action(dir),
        "unchanged",
        "turned off: now (nothing new to record)"
    );
    repo.git(&["config", "--unset", "agentRewind.postCommitInBackground"]);
    // A monitor is configured (this one fails, so the snapshot takes the full pass).
    write_in(dir, ".git/fsmon", "#!/bin/sh\nexit 1\n");
    repo.git(&["config", "core.fsmonitor", ".git/fsmon"]);
    assert_eq!(hook_action(dir), "unchanged", "with a monitor: now");
    repo.git(&["config", "--unset", "core.fsmonitor"]);

    repo.git(&["config", "agentRewind.postCommitInBackground", "sometimes"]);
    let out = tool_cmd(dir)
        .args(["--json", "hook", "post-commit"])
        .output()
        .unwrap();
    assert!(out.status.success(), "a hook never fails");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "agentRewind.postCommitInBackground = \"sometimes\" is not auto, true or false"
        ),
        "{stderr}"
    );
    // Background maintenance a checkpoint may have started folds objects: let it end.
    let maintenance = dir.join(".git/agent-rewind/maintenance.lock");
    if let Ok(lock) = std::fs::File::open(&maintenance) {
        lock.lock().unwrap();
    }
    repo.assert_fsck();
}

/// A background checkpoint that died is reported to a person even when
/// the next event is another commit (whose hook's stderr agents and IDEs throw away) and
/// commands an agent runs came between: kept until `status`, `list`, `show` or `log` has
/// shown it, then told no more.
#[test]
fn a_killed_background_checkpoint_is_kept_until_a_person_looks() {
    let repo = background_repo();
    let dir = repo.path();
    std::fs::write(dir.join("a.txt"), "a\n").unwrap();
    super::git_hooked(dir, &["add", "a.txt"]);
    let out = git_with_path(dir)
        .args(["commit", "-q", "-m", "dies"])
        .env("AGENT_REWIND_CRASH_AT", "journal:objects-written")
        .output()
        .unwrap();
    assert!(out.status.success());
    let died = rev(dir, "HEAD");
    // Why depends on timing: the recorder dies at its crash point, or, when the next commit
    // came first, finds HEAD moved on. Either way it is reported, and kept for a person.
    let warning = format!(
        "the post-commit checkpoint of commit {} was not recorded: ",
        &died[..12]
    );
    // The next event is another commit, then an agent's checkpoint.
    commit(dir, "b.txt", "b\n", "next");
    repo.write("c.txt", "c\n");
    let out = tool_cmd(dir).args(["checkpoint", "work"]).output().unwrap();
    assert!(out.status.success());
    // A person looks: told once.
    let out = tool_cmd(dir).args(["status"]).output().unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&warning), "status tells it: {stderr}");
    let again = tool_cmd(dir).args(["log"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&again.stderr).contains("was not recorded"),
        "told once: {}",
        String::from_utf8_lossy(&again.stderr)
    );
    // The commit after it was recorded as usual.
    let cps = checkpoints(dir, "r1");
    assert!(
        cps.iter()
            .any(|c| c["git_commit_sha"] == rev(dir, "HEAD").as_str()),
        "{cps:#?}"
    );
    repo.assert_fsck();
}

/// A background checkpoint whose commit HEAD has since left only through
/// plain commits on top of it (HEAD's reflog says `commit:`; the worktree was not
/// rewritten) is recorded anyway, with that commit as its user commit, instead of skipped.
#[test]
fn a_commit_left_only_by_commits_on_top_is_still_recorded() {
    let repo = background_repo();
    let dir = repo.path();
    commit(dir, "a.txt", "a\n", "first");
    let first = rev(dir, "HEAD");
    commit(dir, "b.txt", "b\n", "second");
    let n = checkpoints(dir, "r1").len();
    // The child of `first`, as if it started only now.
    let out = tool_cmd(dir)
        .args([
            "hook",
            "post-commit",
            "--background",
            &first,
            "r1",
            "commit",
            "default",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cps = checkpoints(dir, "r1");
    assert_eq!(cps.len(), n + 1, "recorded, not skipped: {cps:#?}");
    let cp = cps.last().unwrap();
    assert_eq!(cp["event"], "commit");
    assert_eq!(cp["git_commit_sha"], first.as_str(), "{cp:#}");
    assert_eq!(cp["parents"][1], first.as_str(), "{cp:#}");
    let out = tool_cmd(dir).args(["status"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("was not recorded"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    repo.assert_fsck();
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}
