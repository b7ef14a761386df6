//! Interoperability with plain git: everything `git agent-rewind` writes must be readable,
//! checkable and walkable by the `git` binary itself (DESIGN.md §1, §3), and recording must
//! never touch the user's index, HEAD or files.

mod common;

use common::{Repo, add_all_tree_in, git_cmd, git_in, ok_in};
use serde_json::Value;
use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const RUN: &str = "r1";

/// One recorded checkpoint and what plain git says about the worktree around it.
struct Recorded {
    json: Value,
    /// The tree `git add -A` would have written at that moment.
    expected_tree: String,
    status_before: String,
    status_after: String,
    index_before: Option<Vec<u8>>,
    index_after: Option<Vec<u8>>,
    head_before: String,
    head_after: String,
}

impl Recorded {
    fn id(&self) -> &str {
        self.json["checkpoint"].as_str().expect("checkpoint id")
    }
}

/// A run of several checkpoints over a worktree with every kind of change.
struct Scenario {
    repo: Repo,
    /// The user's HEAD commit when the run started.
    base_head: String,
    /// The commit the user made in the middle of the run.
    agent_commit: String,
    cps: Vec<Recorded>,
}

fn porcelain(dir: &Path) -> String {
    git_in(dir, &["status", "--porcelain=v1", "-uall", "--ignored"])
}

fn head_state(dir: &Path) -> String {
    let out = git_cmd(dir)
        .args(["rev-parse", "--symbolic-full-name", "HEAD"])
        .output()
        .unwrap();
    let out2 = git_cmd(dir)
        .args(["rev-parse", "--verify", "-q", "HEAD"])
        .output()
        .unwrap();
    format!(
        "{}|{}|{}",
        String::from_utf8_lossy(&out.stdout).trim(),
        String::from_utf8_lossy(&out2.stdout).trim(),
        git_in(dir, &["for-each-ref", "refs/heads/", "refs/tags/"])
    )
}

/// Run the tool with `--json`, recording git's view of the worktree before and after.
fn record(repo: &Repo, args: &[&str]) -> Recorded {
    let dir = repo.path();
    let status_before = porcelain(dir);
    let head_before = head_state(dir);
    let expected_tree = add_all_tree_in(repo.path());
    let index_before = repo.index_bytes();
    let mut a = vec!["--json"];
    a.extend_from_slice(args);
    let out = ok_in(dir, &a);
    let index_after = repo.index_bytes();
    let head_after = head_state(dir);
    let status_after = porcelain(dir);
    let json: Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
    Recorded {
        json,
        expected_tree,
        status_before,
        status_after,
        index_before,
        index_after,
        head_before,
        head_after,
    }
}

fn chmod(repo: &Repo, rel: &str, mode: u32) {
    let p = repo.path().join(rel);
    let mut perm = std::fs::metadata(&p).unwrap().permissions();
    perm.set_mode(mode);
    std::fs::set_permissions(&p, perm).unwrap();
}

fn scenario() -> Scenario {
    let repo = Repo::new();
    repo.write(".gitignore", "build/\n*.log\n");
    repo.write("src/lib.rs", "pub fn a() {}\n");
    repo.write("src/util/helpers.rs", "pub fn h() {}\n");
    repo.write("docs/guide.md", "# Guide\n");
    repo.write("old.txt", "old\n");
    repo.write("gone.txt", "gone\n");
    repo.write("script.sh", "#!/bin/sh\necho hi\n");
    repo.write("replaced.txt", "will become a symlink\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "base"]);
    let base_head = repo.rev("HEAD");

    let mut cps = vec![];
    cps.push(record(
        &repo,
        &["start", "--run", RUN, "--label", "interop"],
    ));
    cps.push(record(&repo, &["step", "begin", "plan", "--kind", "agent"]));
    repo.write("PLAN.md", "1. do it\n");
    cps.push(record(
        &repo,
        &["step", "end", "plan", "--status", "completed"],
    ));

    // Every kind of change at once.
    repo.write("src/lib.rs", "pub fn a() { /* unstaged */ }\n");
    repo.write("docs/guide.md", "# Guide\nstaged\n");
    repo.git(&["add", "docs/guide.md"]);
    repo.write("docs/guide.md", "# Guide\nstaged\nthen unstaged\n");
    repo.git(&["rm", "-q", "old.txt"]);
    std::fs::remove_file(repo.path().join("gone.txt")).unwrap();
    repo.write("new_staged.txt", "staged new file\n");
    repo.git(&["add", "new_staged.txt"]);
    repo.write("staged_then_deleted.txt", "x\n");
    repo.git(&["add", "staged_then_deleted.txt"]);
    std::fs::remove_file(repo.path().join("staged_then_deleted.txt")).unwrap();
    chmod(&repo, "script.sh", 0o755);
    repo.write("tool.sh", "#!/bin/sh\nexit 0\n");
    chmod(&repo, "tool.sh", 0o755);
    std::os::unix::fs::symlink("src/lib.rs", repo.path().join("link")).unwrap();
    std::fs::remove_file(repo.path().join("replaced.txt")).unwrap();
    std::os::unix::fs::symlink("docs/guide.md", repo.path().join("replaced.txt")).unwrap();
    repo.write("src/deep/nested/new.rs", "// untracked in a new folder\n");
    repo.write("build/out.o", "ignored\n");
    repo.write("debug.log", "ignored\n");
    cps.push(record(
        &repo,
        &[
            "checkpoint",
            "implement",
            "--kind",
            "agent",
            "--meta",
            "attempt=1",
        ],
    ));

    // The agent commits its work; the next checkpoint's second parent is that commit.
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "agent commit"]);
    let agent_commit = repo.rev("HEAD");
    repo.write("README.md", "hello\nafter the commit\n");
    cps.push(record(
        &repo,
        &["checkpoint", "implement", "--event", "commit"],
    ));

    repo.write("test-results.txt", "ok 1\nok 2\n");
    cps.push(record(
        &repo,
        &[
            "checkpoint",
            "test",
            "--kind",
            "deterministic",
            "--status",
            "completed",
        ],
    ));
    Scenario {
        repo,
        base_head,
        agent_commit,
        cps,
    }
}

fn parents(repo: &Repo, id: &str) -> Vec<String> {
    repo.git(&["log", "-1", "--format=%P", id])
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

fn lines(s: &str) -> Vec<String> {
    s.lines().map(str::to_string).collect()
}

#[test]
fn fsck_strict_is_clean_after_a_run() {
    let s = scenario();
    s.repo.assert_fsck();
    // Every object our refs reach is present (connectivity, not just existence).
    if let Some(err) = s.repo.missing_objects_under_our_refs() {
        panic!("{err}");
    }
}

#[test]
fn git_notes_show_prints_our_json_lines() {
    let s = scenario();
    let notes_ref = format!("agent-runs/{RUN}");
    // `git notes list` knows exactly our checkpoints.
    let listed: BTreeSet<String> = s
        .repo
        .git(&["notes", "--ref", &notes_ref, "list"])
        .lines()
        .map(|l| l.split_whitespace().nth(1).unwrap().to_string())
        .collect();
    let ids: BTreeSet<String> = s.cps.iter().map(|c| c.id().to_string()).collect();
    assert_eq!(listed, ids);

    let steps = [
        None,
        Some("plan"),
        Some("plan"),
        Some("implement"),
        Some("implement"),
        Some("test"),
    ];
    let events = ["start", "begin", "finish", "manual", "commit", "manual"];
    for (i, cp) in s.cps.iter().enumerate() {
        let body = s.repo.git(&["notes", "--ref", &notes_ref, "show", cp.id()]);
        let parsed: Vec<Value> = body
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("note line not JSON ({e}): {l}"))
            })
            .collect();
        assert!(!parsed.is_empty(), "empty note for {}", cp.id());
        for v in &parsed {
            assert!(v["type"].is_string(), "a line without type: {v}");
        }
        let cl: Vec<&Value> = parsed
            .iter()
            .filter(|v| v["type"] == "checkpoint")
            .collect();
        assert_eq!(cl.len(), 1, "one checkpoint line in {body}");
        let cl = cl[0];
        assert_eq!(cl["schema"], "agent-rewind/checkpoint/v1");
        assert_eq!(cl["run"], RUN);
        assert_eq!(cl["seq"], i as u64);
        assert_eq!(cl["step"].as_str(), steps[i], "step of seq {i}");
        assert_eq!(cl["event"], events[i], "event of seq {i}");
        // The note agrees with what the command printed.
        assert_eq!(cl["seq"], cp.json["seq"]);
        assert_eq!(cl["ts"], cp.json["ts"]);
    }
}

#[test]
fn first_parent_log_walks_the_chain() {
    let s = scenario();
    let listed = s.repo.json(&["list", RUN]);
    let listed_ids: Vec<String> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["checkpoint"].as_str().unwrap().to_string())
        .collect();
    let recorded_ids: Vec<String> = s.cps.iter().map(|c| c.id().to_string()).collect();
    assert_eq!(listed_ids, recorded_ids);
    let seqs: Vec<u64> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (0..recorded_ids.len() as u64).collect::<Vec<_>>());

    let walked = lines(&s.repo.git(&[
        "log",
        "--first-parent",
        "--format=%H",
        &format!("refs/agent-runs/{RUN}/HEAD"),
    ]));
    let mut expected: Vec<String> = recorded_ids.iter().rev().cloned().collect();
    expected.extend(lines(&s.repo.git(&[
        "rev-list",
        "--first-parent",
        &s.base_head,
    ])));
    assert_eq!(walked, expected);
    assert_eq!(walked[recorded_ids.len()], s.base_head);
}

#[test]
fn git_log_with_notes_glob_shows_the_metadata() {
    let s = scenario();
    let tip = s.cps.last().unwrap();
    let out = s.repo.git(&[
        "log",
        "--notes=agent-runs/*",
        "-1",
        &format!("refs/agent-runs/{RUN}/HEAD"),
    ]);
    assert!(out.contains(&format!("commit {}", tip.id())), "{out}");
    assert!(out.contains(&format!("Notes (agent-runs/{RUN}):")), "{out}");
    let note_line = out
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with('{') && l.contains("\"type\":\"checkpoint\""))
        .unwrap_or_else(|| panic!("no checkpoint line in git log output:\n{out}"));
    let v: Value = serde_json::from_str(note_line).unwrap();
    assert_eq!(v["run"], RUN);
    assert_eq!(v["step"], "test");
    assert_eq!(v["seq"], (s.cps.len() - 1) as u64);
    assert_eq!(v["status"], "completed");

    // After `init`, plain `git log` shows them without being asked (notes.displayRef).
    s.repo.ok(&["init"]);
    let out = s
        .repo
        .git(&["log", "-1", &format!("refs/agent-runs/{RUN}/HEAD")]);
    assert!(out.contains(&format!("Notes (agent-runs/{RUN}):")), "{out}");
}

#[test]
fn snapshot_tree_equals_git_add_all() {
    let s = scenario();
    for (i, cp) in s.cps.iter().enumerate() {
        let tree = s.repo.rev(&format!("{}^{{tree}}", cp.id()));
        assert_eq!(
            tree,
            cp.expected_tree,
            "seq {i}: snapshot tree differs from `git add -A`:\n{}",
            s.repo.git(&["diff-tree", "-r", &cp.expected_tree, &tree])
        );
    }
    // Spot-check what plain git sees in the busy checkpoint.
    let busy = s.cps[3].id();
    let ls = s.repo.git(&["ls-tree", "-r", busy]);
    let entry = |path: &str| {
        ls.lines()
            .find(|l| l.ends_with(&format!("\t{path}")))
            .map(|l| l.split_whitespace().next().unwrap().to_string())
    };
    assert_eq!(entry("script.sh").as_deref(), Some("100755"), "{ls}");
    assert_eq!(entry("tool.sh").as_deref(), Some("100755"), "{ls}");
    assert_eq!(entry("link").as_deref(), Some("120000"), "{ls}");
    assert_eq!(entry("replaced.txt").as_deref(), Some("120000"), "{ls}");
    assert_eq!(entry("src/deep/nested/new.rs").as_deref(), Some("100644"));
    assert_eq!(entry("new_staged.txt").as_deref(), Some("100644"));
    assert_eq!(entry("old.txt"), None);
    assert_eq!(entry("gone.txt"), None);
    assert_eq!(entry("staged_then_deleted.txt"), None);
    assert_eq!(entry("build/out.o"), None);
    assert_eq!(entry("debug.log"), None);
    assert_eq!(
        s.repo.git(&["cat-file", "-p", &format!("{busy}:link")]),
        "src/lib.rs"
    );
    assert_eq!(
        s.repo
            .git(&["cat-file", "-p", &format!("{busy}:docs/guide.md")]),
        "# Guide\nstaged\nthen unstaged\n"
    );
    assert_eq!(
        s.repo
            .git(&["cat-file", "-p", &format!("{busy}:src/lib.rs")]),
        "pub fn a() { /* unstaged */ }\n"
    );
}

#[test]
fn recording_leaves_index_status_and_head_untouched() {
    let s = scenario();
    for (i, cp) in s.cps.iter().enumerate() {
        assert_eq!(
            cp.status_before, cp.status_after,
            "seq {i}: git status changed"
        );
        assert!(
            cp.index_before == cp.index_after,
            "seq {i}: .git/index bytes changed"
        );
        assert_eq!(
            cp.head_before, cp.head_after,
            "seq {i}: HEAD/branches changed"
        );
    }
    // The busy checkpoint really had staged, unstaged and untracked changes to protect.
    let st = &s.cps[3].status_before;
    for want in [
        " M src/lib.rs",
        "MM docs/guide.md",
        "D  old.txt",
        " D gone.txt",
        "A  new_staged.txt",
        "AD staged_then_deleted.txt",
        "?? src/deep/nested/new.rs",
        "!! debug.log",
    ] {
        assert!(st.lines().any(|l| l == want), "missing {want:?} in\n{st}");
    }
    assert!(!s.repo.path().join(".git/index.lock").exists());
}

#[test]
fn second_parent_is_the_users_head_when_it_differs() {
    let s = scenario();
    let ids: Vec<&str> = s.cps.iter().map(|c| c.id()).collect();
    // A fresh run's first checkpoint: first parent = the user's HEAD, nothing else.
    assert_eq!(parents(&s.repo, ids[0]), vec![s.base_head.clone()]);
    for i in 1..=3 {
        assert_eq!(
            parents(&s.repo, ids[i]),
            vec![ids[i - 1].to_string(), s.base_head.clone()],
            "seq {i}"
        );
    }
    for i in 4..=5 {
        assert_eq!(
            parents(&s.repo, ids[i]),
            vec![ids[i - 1].to_string(), s.agent_commit.clone()],
            "seq {i}"
        );
        assert_eq!(s.cps[i].json["git_commit_sha"], s.agent_commit.as_str());
    }
    assert_eq!(s.cps[0].json["git_commit_sha"], s.base_head.as_str());
    assert_eq!(s.cps[0].json["head_ref"], "refs/heads/main");
    // The agent's commit stays reachable from the run even if the branch goes away.
    s.repo.git(&["checkout", "-q", "--detach", &s.base_head]);
    s.repo.git(&["branch", "-q", "-D", "main"]);
    s.repo.git(&["reflog", "expire", "--expire=now", "--all"]);
    s.repo.git(&["gc", "-q", "--prune=now"]);
    assert_eq!(
        s.repo.git(&["cat-file", "-t", &s.agent_commit]).trim(),
        "commit"
    );
    s.repo.assert_fsck();
}

#[test]
fn identity_trailers_are_in_the_commit_message() {
    let s = scenario();
    let expected = [
        (None, 1, "start"),
        (Some("plan"), 1, "begin"),
        (Some("plan"), 1, "finish"),
        (Some("implement"), 1, "manual"),
        (Some("implement"), 1, "commit"),
        (Some("test"), 1, "manual"),
    ];
    for (cp, (step, attempt, event)) in s.cps.iter().zip(expected) {
        let body = s.repo.git(&["log", "-1", "--format=%B", cp.id()]);
        let mut want = format!("Agent-Run: {RUN}\n");
        if let Some(st) = step {
            want.push_str(&format!("Agent-Step: {st}\n"));
        }
        want.push_str(&format!(
            "Agent-Attempt: {attempt}\nAgent-Event: {event}\nAgent-Schema: 1\n"
        ));
        assert!(body.contains(&want), "trailers missing in:\n{body}");
        // …and git itself parses them as trailers.
        let parsed = s
            .repo
            .git(&["log", "-1", "--format=%(trailers:only,unfold)", cp.id()]);
        assert_eq!(parsed.trim_end(), want.trim_end(), "git's trailer parse");
        let run = s.repo.git(&[
            "log",
            "-1",
            "--format=%(trailers:key=Agent-Run,valueonly)",
            cp.id(),
        ]);
        assert_eq!(run.trim(), RUN);
    }
}

#[test]
fn rerecording_an_identical_checkpoint_writes_nothing() {
    let s = scenario();
    let tip = s.cps.last().unwrap();
    let refs_before = s.repo.git(&["for-each-ref"]);
    let objects_before = object_files(s.repo.path());
    let again = s.repo.json(&[
        "checkpoint",
        "test",
        "--kind",
        "deterministic",
        "--status",
        "completed",
    ]);
    assert_eq!(again["unchanged"], true, "{again}");
    assert_eq!(again["checkpoint"], tip.json["checkpoint"]);
    assert_eq!(again["seq"], tip.json["seq"]);
    assert_eq!(s.repo.git(&["for-each-ref"]), refs_before);
    assert_eq!(object_files(s.repo.path()), objects_before);
    assert_eq!(
        s.repo.json(&["list", RUN]).as_array().unwrap().len(),
        s.cps.len()
    );

    // A status change is meaningful on its own; so is a file change.
    let failed = s.repo.json(&[
        "checkpoint",
        "test",
        "--kind",
        "deterministic",
        "--status",
        "failed",
    ]);
    assert_eq!(failed["unchanged"], false);
    assert_ne!(failed["checkpoint"], tip.json["checkpoint"]);
    assert_eq!(failed["seq"], s.cps.len() as u64);
    s.repo.write("test-results.txt", "ok 1\nnot ok 2\n");
    let changed = s.repo.json(&[
        "checkpoint",
        "test",
        "--kind",
        "deterministic",
        "--status",
        "failed",
    ]);
    assert_eq!(changed["unchanged"], false);
    assert_ne!(changed["checkpoint"], failed["checkpoint"]);
}

/// Every object in the repository, as text (binary parts lossily decoded).
fn all_objects(repo: &Repo) -> String {
    let out = repo.git_output(&["cat-file", "--batch-all-objects", "--batch"]);
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn object_files(dir: &Path) -> Vec<String> {
    let mut out = vec![];
    fn walk(p: &Path, base: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(p).unwrap() {
            let e = e.unwrap();
            let path = e.path();
            if e.file_type().unwrap().is_dir() {
                walk(&path, base, out);
            } else {
                out.push(path.strip_prefix(base).unwrap().display().to_string());
            }
        }
    }
    let base = dir.join(".git/objects");
    walk(&base, &base, &mut out);
    out.sort();
    out
}

fn json_in(dir: &Path, args: &[&str]) -> Value {
    let mut a = vec!["--json"];
    a.extend_from_slice(args);
    let out = ok_in(dir, &a);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

#[test]
fn works_in_a_linked_worktree() {
    let repo = Repo::new();
    let holder = tempfile::tempdir().unwrap();
    let wt = holder.path().join("wt");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "wt-branch",
        wt.to_str().unwrap(),
    ]);
    let wt_head = git_in(&wt, &["rev-parse", "HEAD"]).trim().to_string();
    let index_path = wt.join(git_in(&wt, &["rev-parse", "--git-path", "index"]).trim());
    let main_index = repo.index_bytes();

    let started = json_in(&wt, &["start", "--run", "wt-run"]);
    std::fs::write(wt.join("README.md"), "changed in the linked worktree\n").unwrap();
    std::fs::write(wt.join("new.txt"), "untracked\n").unwrap();
    let expected = add_all_tree_in(&wt);
    let wt_index = std::fs::read(&index_path).unwrap();
    // No --run: the linked worktree's active run is used.
    let cp = json_in(&wt, &["checkpoint", "edit"]);
    assert_eq!(cp["run"], "wt-run");
    assert_eq!(cp["seq"], 1);
    assert_eq!(cp["head_ref"], "refs/heads/wt-branch");
    assert_eq!(cp["git_commit_sha"], wt_head.as_str());
    let id = cp["checkpoint"].as_str().unwrap();
    assert_eq!(
        git_in(&wt, &["rev-parse", &format!("{id}^{{tree}}")]).trim(),
        expected
    );
    assert_eq!(
        git_in(&wt, &["log", "-1", "--format=%P", id]).trim(),
        format!("{} {wt_head}", started["checkpoint"].as_str().unwrap())
    );
    assert_eq!(std::fs::read(&index_path).unwrap(), wt_index);
    assert!(
        repo.index_bytes() == main_index,
        "main worktree index changed"
    );
    // The main worktree's files are not what was snapshot.
    assert_eq!(repo.read("README.md"), "hello\n");

    // Refs and notes are shared: plain git in the main worktree sees them.
    assert_eq!(repo.rev("refs/agent-runs/wt-run/HEAD"), id);
    let note = repo.git(&["notes", "--ref=agent-runs/wt-run", "show", id]);
    assert!(note.contains("\"step\":\"edit\""), "{note}");
    let listed = repo.json(&["list", "wt-run"]);
    assert_eq!(listed.as_array().unwrap().len(), 2);
    // The active run belongs to the linked worktree only.
    assert_eq!(repo.json(&["status"])["run"], Value::Null);
    assert_eq!(json_in(&wt, &["status"])["run"], "wt-run");
    repo.assert_fsck();
}

#[test]
fn works_on_a_detached_head() {
    let repo = Repo::new();
    repo.write("a.txt", "a\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "second"]);
    repo.git(&["checkout", "-q", "--detach", "HEAD~1"]);
    let head = repo.rev("HEAD");
    let start = repo.json(&["start", "--run", "det"]);
    assert_eq!(start["head_ref"], Value::Null);
    assert_eq!(start["git_commit_sha"], head.as_str());
    repo.write("b.txt", "b\n");
    let expected = add_all_tree_in(repo.path());
    let cp = repo.json(&["checkpoint", "work"]);
    let id = cp["checkpoint"].as_str().unwrap();
    assert_eq!(cp["head_ref"], Value::Null);
    assert_eq!(cp["git_commit_sha"], head.as_str());
    assert_eq!(repo.rev(&format!("{id}^{{tree}}")), expected);
    assert_eq!(
        parents(&repo, id),
        vec![
            start["checkpoint"].as_str().unwrap().to_string(),
            head.clone()
        ]
    );
    // Still detached, at the same commit.
    assert!(
        !repo
            .git_output(&["symbolic-ref", "-q", "HEAD"])
            .status
            .success()
    );
    assert_eq!(repo.rev("HEAD"), head);
    repo.assert_fsck();
}

#[test]
fn works_on_an_unborn_branch() {
    let repo = Repo::empty();
    repo.write("a.txt", "a\n");
    repo.write("dir/b.txt", "b\n");
    assert!(repo.index_bytes().is_none());
    // No commit and no index at all yet.
    let expected0 = add_all_tree_in(repo.path());
    let first = repo.json(&["checkpoint", "plan", "--run", "u"]);
    assert!(repo.index_bytes().is_none(), "the tool created an index");
    let list = repo.json(&["list", "u"]);
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2, "implicit start + plan: {list:?}");
    let root = list[0]["checkpoint"].as_str().unwrap();
    assert_eq!(list[0]["event"], "start");
    assert_eq!(list[0]["git_commit_sha"], Value::Null);
    assert_eq!(list[0]["head_ref"], "refs/heads/main");
    assert_eq!(
        parents(&repo, root),
        Vec::<String>::new(),
        "root has no parent"
    );
    let id1 = first["checkpoint"].as_str().unwrap();
    assert_eq!(parents(&repo, id1), vec![root.to_string()]);
    assert_eq!(repo.rev(&format!("{id1}^{{tree}}")), expected0);
    assert!(
        !repo
            .git_output(&["rev-parse", "--verify", "-q", "HEAD"])
            .status
            .success()
    );

    // With an index but still no commit.
    repo.git(&["add", "a.txt"]);
    repo.write("a.txt", "a changed\n");
    let idx = repo.index_bytes();
    let expected1 = add_all_tree_in(repo.path());
    let second = repo.json(&["checkpoint", "plan", "--run", "u", "--meta", "n=2"]);
    assert!(repo.index_bytes() == idx, "index changed");
    let id2 = second["checkpoint"].as_str().unwrap();
    assert_eq!(repo.rev(&format!("{id2}^{{tree}}")), expected1);
    assert_eq!(parents(&repo, id2), vec![id1.to_string()]);

    // The first user commit becomes the second parent.
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "first"]);
    let head = repo.rev("HEAD");
    let third = repo.json(&["checkpoint", "plan", "--run", "u", "--meta", "n=3"]);
    let id3 = third["checkpoint"].as_str().unwrap();
    assert_eq!(parents(&repo, id3), vec![id2.to_string(), head.clone()]);
    assert_eq!(third["git_commit_sha"], head.as_str());
    let walked = lines(&repo.git(&[
        "log",
        "--first-parent",
        "--format=%H",
        "refs/agent-runs/u/HEAD",
    ]));
    assert_eq!(
        walked,
        vec![
            id3.to_string(),
            id2.to_string(),
            id1.to_string(),
            root.to_string()
        ]
    );
    repo.assert_fsck();
}

#[test]
fn secrets_and_large_untracked_files_are_left_out_and_listed() {
    let repo = Repo::new();
    repo.write("tracked_big.bin", &"t".repeat(100));
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "big tracked"]);
    repo.git(&["config", "agentRewind.maxUntrackedSize", "1k"]);
    repo.write(".env", "SECRET=1\n");
    repo.write("config/.env.local", "SECRET=2\n");
    repo.write("id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\n");
    repo.write("keys/server.pem", "pem\n");
    repo.write("big.dat", &"x".repeat(2048));
    repo.write("small.txt", &"y".repeat(1000));
    // Tracked files are not subject to the untracked size limit.
    repo.write("tracked_big.bin", &"z".repeat(4096));

    let cp = repo.json(&["checkpoint", "plan"]);
    let id = cp["checkpoint"].as_str().unwrap().to_string();
    let in_tree: BTreeSet<String> = repo
        .git(&["ls-tree", "-r", "--name-only", &id])
        .lines()
        .map(str::to_string)
        .collect();
    let want: BTreeSet<String> = ["README.md", "small.txt", "tracked_big.bin"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(in_tree, want);
    assert_eq!(
        repo.git(&["cat-file", "-s", &format!("{id}:tracked_big.bin")])
            .trim(),
        "4096"
    );

    let excluded: BTreeSet<String> = cp["excluded"]
        .as_array()
        .unwrap_or_else(|| panic!("no excluded array: {cp}"))
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_string())
        .collect();
    let want_ex: BTreeSet<String> = [
        ".env",
        "config/.env.local",
        "id_rsa",
        "keys/server.pem",
        "big.dat",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(excluded, want_ex);
    for e in cp["excluded"].as_array().unwrap() {
        let reason = e["reason"].as_str().unwrap_or("");
        assert!(!reason.is_empty(), "no reason for {e}");
    }
    let big_reason = cp["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "big.dat")
        .unwrap()["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(big_reason.contains("maxUntrackedSize"), "{big_reason}");

    // The note carries the same list, for plain git readers.
    let run = cp["run"].as_str().unwrap();
    let note = repo.git(&["notes", &format!("--ref=agent-runs/{run}"), "show", &id]);
    let line: Value = serde_json::from_str(
        note.lines()
            .find(|l| l.contains("\"type\":\"checkpoint\""))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(line["excluded"], cp["excluded"]);
    // None of the secret contents made it into the object database.
    let all = all_objects(&repo);
    assert!(!all.contains("SECRET=1") && !all.contains("SECRET=2"));
    assert!(!all.contains("PRIVATE KEY"));
}

#[test]
fn secret_looking_meta_is_redacted_and_the_redaction_recorded() {
    let repo = Repo::new();
    let token = format!("ghp_{}", "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A");
    assert_eq!(token.len(), 40);
    let pw_url = "https://bob:hunter2secret@example.com/repo.git";
    let cp = repo.json(&[
        "checkpoint",
        "plan",
        "--run",
        "sec",
        "--meta",
        &format!("token={token}"),
        "--meta",
        &format!("note=uses {token} inline"),
        "--meta",
        &format!("remote={pw_url}"),
        "--meta",
        "ticket=ABC-123",
        "-m",
        &format!("pushed with {token}"),
    ]);
    assert_eq!(cp["meta"]["token"], "[REDACTED]", "{cp}");
    assert_eq!(cp["meta"]["note"], "[REDACTED]", "{cp}");
    assert_eq!(cp["meta"]["remote"], "[REDACTED]", "{cp}");
    assert_eq!(cp["meta"]["ticket"], "ABC-123");
    let id = cp["checkpoint"].as_str().unwrap();
    let note = repo.git(&["notes", "--ref=agent-runs/sec", "show", id]);
    let parsed: Vec<Value> = note
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let red = parsed
        .iter()
        .find(|v| v["type"] == "redaction")
        .unwrap_or_else(|| panic!("no redaction line in note:\n{note}"));
    let fields: BTreeSet<&str> = red["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    for f in ["meta.token", "meta.note", "meta.remote", "message"] {
        assert!(fields.contains(f), "{f} not in {fields:?}");
    }
    assert!(!fields.contains("meta.ticket"));
    // The secret is nowhere: not in any object, reflog, or the output.
    let all = all_objects(&repo);
    assert!(!all.contains(&token), "token stored in an object");
    assert!(
        !all.contains("hunter2secret"),
        "password stored in an object"
    );
    let logs = repo.git(&["reflog", "show", "--all", "--format=%gs"]);
    assert!(!logs.contains(&token));
    assert!(!cp.to_string().contains(&token));
    let body = repo.git(&["log", "-1", "--format=%B", id]);
    assert!(!body.contains(&token), "{body}");
}

#[test]
fn every_address_form_resolves_to_the_same_checkpoint() {
    let s = scenario();
    let tip = s.cps.last().unwrap().id().to_string();
    let busy = s.cps[3].id().to_string();
    let cases: Vec<(String, &str)> = vec![
        (RUN.to_string(), &tip),
        (format!("{RUN}/test"), &tip),
        (format!("{RUN}@5"), &tip),
        (tip.clone(), &tip),
        (tip[..8].to_string(), &tip),
        (tip[..8].to_ascii_uppercase(), &tip),
        (format!("{RUN}@3"), &busy),
        (busy.clone(), &busy),
        (busy[..8].to_string(), &busy),
        (format!("{RUN}/plan"), s.cps[2].id()),
        (format!("{RUN}/implement"), s.cps[4].id()),
        (format!("{RUN}@0"), s.cps[0].id()),
    ];
    for (addr, want) in &cases {
        let shown = s.repo.json(&["show", addr]);
        assert_eq!(shown["checkpoint"], *want, "show {addr}");
        assert_eq!(shown["run"], RUN, "show {addr}");
    }
    // `show` lists the same paths plain git sees changing against the first parent.
    let shown = s.repo.json(&["show", &busy]);
    let files: BTreeSet<String> = shown["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect();
    let git_files: BTreeSet<String> = s
        .repo
        .git(&[
            "diff-tree",
            "-r",
            "--no-renames",
            "--name-only",
            &format!("{busy}^1"),
            &busy,
        ])
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(files, git_files);
    // `diff` between two addresses agrees too.
    let d = s
        .repo
        .json(&["diff", &format!("{RUN}@2"), &format!("{RUN}@3")]);
    assert_eq!(d["from"], s.cps[2].id());
    assert_eq!(d["to"], busy.as_str());
    let dfiles: BTreeSet<String> = d["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(dfiles, git_files);
}

#[test]
fn gitattributes_and_unusual_paths_are_kept_as_git_keeps_them() {
    use std::os::unix::ffi::OsStrExt;
    let repo = Repo::new();
    repo.write(".gitattributes", "*.txt text eol=lf\n*.bin binary\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "attrs"]);
    repo.write("crlf.txt", "one\r\ntwo\r\n");
    repo.write("raw.bin", "a\r\nb\0c");
    repo.write("naïve file.md", "unicode name with a space\n");
    let raw_name = std::ffi::OsStr::from_bytes(b"latin1-\xe9.txt");
    std::fs::write(repo.path().join(raw_name), "non-utf8 name\n").unwrap();
    let expected = add_all_tree_in(repo.path());
    let cp = repo.json(&["checkpoint", "attrs"]);
    let id = cp["checkpoint"].as_str().unwrap();
    assert_eq!(
        repo.rev(&format!("{id}^{{tree}}")),
        expected,
        "{}",
        repo.git(&["diff-tree", "-r", &expected, &format!("{id}^{{tree}}")])
    );
    repo.assert_fsck();
}

#[test]
fn survives_git_gc_and_packed_refs() {
    let s = scenario();
    let before = s.repo.json(&["list", RUN]);
    s.repo.git(&["pack-refs", "--all"]);
    s.repo.git(&["gc", "-q", "--prune=now"]);
    assert!(
        !s.repo
            .path()
            .join(format!(".git/refs/agent-runs/{RUN}/HEAD"))
            .exists(),
        "refs were not packed"
    );
    assert_eq!(s.repo.json(&["list", RUN]), before);
    // Appending compares against the packed value and writes on top of it.
    s.repo.write("after-gc.txt", "x\n");
    let cp = s.repo.json(&["checkpoint", "test", "--meta", "after=gc"]);
    assert_eq!(cp["seq"], s.cps.len() as u64);
    let id = cp["checkpoint"].as_str().unwrap();
    assert_eq!(s.repo.rev(&format!("refs/agent-runs/{RUN}/HEAD")), id);
    assert_eq!(s.repo.rev(&format!("refs/agent-runs/{RUN}/test")), id);
    assert_eq!(parents(&s.repo, id)[0], s.cps.last().unwrap().id());
    let note = s
        .repo
        .git(&["notes", &format!("--ref=agent-runs/{RUN}"), "show", id]);
    assert!(note.contains("\"after\":\"gc\""), "{note}");
    // Older notes survived the notes ref moving on from its packed value.
    for cp in &s.cps {
        s.repo
            .git(&["notes", &format!("--ref=agent-runs/{RUN}"), "show", cp.id()]);
    }
    s.repo.assert_fsck();
}

#[test]
fn reflogs_record_every_move_of_our_refs() {
    let s = scenario();
    // No `init` was run: reflogs are written for our refs regardless of core.logAllRefUpdates.
    let moves = lines(&s.repo.git(&[
        "reflog",
        "show",
        "--format=%H",
        &format!("refs/agent-runs/{RUN}/HEAD"),
    ]));
    let ids: Vec<String> = s.cps.iter().rev().map(|c| c.id().to_string()).collect();
    assert_eq!(moves, ids);
    let step_moves = lines(&s.repo.git(&[
        "reflog",
        "show",
        "--format=%H",
        &format!("refs/agent-runs/{RUN}/implement"),
    ]));
    assert_eq!(
        step_moves,
        vec![s.cps[4].id().to_string(), s.cps[3].id().to_string()]
    );
    let notes_moves = lines(&s.repo.git(&[
        "reflog",
        "show",
        "--format=%H",
        &format!("refs/notes/agent-runs/{RUN}"),
    ]));
    assert_eq!(notes_moves.len(), s.cps.len());
}

/// A tracked file replaced by a folder of the same name (and a tracked folder replaced by a
/// file): every snapshot keeps the new content. Status reports these changes in any order,
/// so record many times.
#[test]
fn a_file_turned_folder_and_a_folder_turned_file_are_snapshotted_every_time() {
    let repo = Repo::new();
    repo.write("f2d", "a file\n");
    repo.write("d2f/inner.txt", "inside\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "base"]);
    repo.ok(&["start", "--run", "r1"]);
    std::fs::remove_file(repo.path().join("f2d")).unwrap();
    std::fs::remove_dir_all(repo.path().join("d2f")).unwrap();
    repo.write("d2f", "now a file\n");
    for i in 0..12 {
        repo.write("f2d/child.txt", &format!("round {i}\n"));
        repo.ok(&["checkpoint", "s", "--meta", &format!("i={i}")]);
        let tree = repo.rev("refs/agent-runs/r1/HEAD^{tree}");
        assert_eq!(tree, repo.add_all_tree(), "round {i}");
        let files = repo.git(&["ls-tree", "-r", "--name-only", &tree]);
        assert!(
            files.lines().any(|l| l == "f2d/child.txt"),
            "round {i}: {files}"
        );
        assert!(files.lines().any(|l| l == "d2f"), "round {i}: {files}");
    }
}

#[test]
fn untracked_names_git_refuses_are_left_out_and_listed() {
    // `git~1` is how NTFS may spell `.git`: git refuses it in trees (core.protectNTFS is on
    // by default everywhere), and `git fsck --strict` would flag a tree holding it.
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1"]);
    repo.write("vendor/git~1/config", "looks like a .git folder on NTFS\n");
    repo.write("vendor/ok.txt", "fine\n");

    let cp = repo.json(&["checkpoint", "plan", "--run", "r1"]);
    let id = cp["checkpoint"].as_str().unwrap();
    let in_tree = repo.git(&["ls-tree", "-r", "--name-only", id]);
    assert!(in_tree.contains("vendor/ok.txt"), "{in_tree}");
    assert!(!in_tree.contains("git~1"), "{in_tree}");
    let excluded = cp["excluded"].as_array().expect("excluded list");
    let entry = excluded
        .iter()
        .find(|e| e["path"] == "vendor/git~1/config")
        .unwrap_or_else(|| panic!("not listed as excluded: {cp}"));
    assert!(
        entry["reason"]
            .as_str()
            .unwrap()
            .contains("not a valid name"),
        "{entry}"
    );
    repo.assert_fsck();
}
