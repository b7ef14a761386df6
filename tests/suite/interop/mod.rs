//! Interoperability with plain git: everything `git agent-rewind` writes must be readable,
//! checkable and walkable by the `git` binary itself (docs/ARCHITECTURE.md, docs/FORMAT.md),
//! and recording must never touch the user's index, HEAD or files.

use crate::common;

mod history;
mod left_out;
mod refs;
mod repo_shapes;
mod snapshot;

use common::{Repo, add_all_tree_in, git_cmd, git_in, ok_in};
use serde_json::Value;
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
    repo.write("crates/agent-rewind/src/lib.rs", "pub fn a() {}\n");
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
    repo.write(
        "crates/agent-rewind/src/lib.rs",
        "pub fn a() { /* unstaged */ }\n",
    );
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
    std::os::unix::fs::symlink("crates/agent-rewind/src/lib.rs", repo.path().join("link")).unwrap();
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
