//! What a rewind writes: exactly the checkpoint's tree in the worktree (index = HEAD =
//! git_commit_sha), and fresh index stat data for what it wrote.

use super::{assert_files_eq, begin, end, field, put, rm, start, symlink, worktree_files};
use crate::common::{Repo, git_in};
use std::path::Path;

// ---------------------------------------------------------------------------------------
// 3. The worktree after a rewind is the checkpoint's tree; index = HEAD = git_commit_sha.
// ---------------------------------------------------------------------------------------

#[test]
fn rewind_in_place_puts_exactly_the_checkpoint_tree_into_the_worktree() {
    let repo = Repo::new();
    let d = repo.path();
    put(d, ".gitignore", "build/\n", 0o644);
    put(d, "old.txt", "old\n", 0o644);
    put(d, "lib.rs", "// v0\n", 0o644);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "base"]);

    start(d, "r1");
    begin(d, "plan", "S1");
    put(d, "lib.rs", "// v1 committed during plan\n", 0o644);
    repo.git(&["commit", "-q", "-am", "plan commit"]);
    let plan_commit = repo.rev("HEAD");
    // Uncommitted work at checkpoint time.
    put(d, "README.md", "hello\nuncommitted edit\n", 0o644);
    put(d, "PLAN.md", "untracked plan\n", 0o644);
    put(d, "scripts/run.sh", "#!/bin/sh\n", 0o755);
    symlink(d, "plan-link", "PLAN.md");
    rm(d, "old.txt");
    let status_then = repo.git(&["status", "--porcelain=v1", "-uall"]);
    let tree_then = repo.add_all_tree();
    let files_then = worktree_files(d);
    let plan_end = end(d, "plan", "S1");
    assert_eq!(repo.rev(&format!("{plan_end}^{{tree}}")), tree_then);

    begin(d, "implement", "S2");
    put(d, "lib.rs", "// v2\n", 0o644);
    put(d, "new_module.rs", "// new\n", 0o644);
    rm(d, "PLAN.md");
    put(d, "scripts/run.sh", "#!/bin/sh\necho changed\n", 0o644);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "implement commit"]);
    put(d, "wip.txt", "untracked wip\n", 0o644);
    end(d, "implement", "S2");
    put(d, "build/out.o", "ignored build output\n", 0o644);

    let out = repo.json(&["rewind", "r1", "--to", "implement", "--run", "r2"]);
    assert_eq!(field(&out, "from_checkpoint"), plan_end);
    let root = field(&out, "checkpoint");
    assert_eq!(field(&out, "git_commit_sha"), plan_commit);

    let wt_tree = repo.add_all_tree();
    assert_eq!(wt_tree, repo.rev(&format!("{root}^{{tree}}")));
    assert_eq!(wt_tree, repo.rev(&format!("{plan_end}^{{tree}}")));
    assert_eq!(
        repo.git(&["ls-tree", "-r", &wt_tree]),
        repo.git(&["ls-tree", "-r", &plan_end])
    );
    assert_files_eq(
        &worktree_files(d)
            .into_iter()
            .filter(|(p, _)| !p.starts_with("build/"))
            .collect(),
        &files_then,
        "worktree after rewind vs at checkpoint time",
    );
    // Ignored files are never touched.
    assert_eq!(repo.read("build/out.o"), "ignored build output\n");

    // HEAD, index.
    assert_eq!(repo.rev("HEAD"), plan_commit);
    assert_eq!(
        repo.git(&["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/agent-runs/r2"
    );
    assert_eq!(repo.rev("refs/heads/agent-runs/r2"), plan_commit);
    assert_eq!(repo.git(&["write-tree"]).trim(), repo.rev("HEAD^{tree}"));
    assert!(
        repo.git_output(&["diff", "--cached", "--quiet", "HEAD"])
            .status
            .success()
    );
    // Uncommitted work at checkpoint time is uncommitted again.
    assert_eq!(
        repo.git(&["status", "--porcelain=v1", "-uall"]),
        status_then
    );
    repo.assert_fsck();
}

/// The index's stat data for `path` as `git ls-files --debug` shows it: (mtime, size, ino).
fn index_stat(dir: &Path, path: &str) -> (String, String, String) {
    let out = git_in(dir, &["ls-files", "--debug", "--", path]);
    let field = |name: &str| {
        out.split(['\n', '\t'])
            .map(str::trim)
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in {out}"))
            .trim()
            .to_string()
    };
    let mtime = field("mtime:");
    (
        mtime.split(':').next().unwrap().to_string(),
        field("size:")
            .split_whitespace()
            .next()
            .unwrap()
            .to_string(),
        field("ino:").to_string(),
    )
}

fn file_stat(dir: &Path, path: &str) -> (String, String, String) {
    use std::os::unix::fs::MetadataExt;
    let md = std::fs::symlink_metadata(dir.join(path)).unwrap();
    (
        md.mtime().to_string(),
        md.size().to_string(),
        (md.ino() as u32).to_string(),
    )
}

#[test]
fn after_a_rewind_the_index_has_fresh_stat_data_for_what_it_wrote() {
    let repo = Repo::new();
    let d = repo.path();
    for i in 0..20 {
        put(d, &format!("src/f{i}.txt"), format!("v1 {i}\n"), 0o644);
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "v1"]);
    start(d, "r1");
    begin(d, "edit", "S1");
    put(d, "src/f3.txt", "v2, longer than before\n", 0o644);
    repo.git(&["commit", "-q", "-am", "v2"]);
    end(d, "edit", "S1");
    crate::common::age_files(repo.path());
    repo.git(&["update-index", "--refresh"]);
    let untouched_before = index_stat(d, "src/f7.txt");

    // Back to before `edit`: f3.txt is written again (v1), HEAD moves back to v1.
    repo.json(&["rewind", "r1", "--to", "edit", "--run", "r2"]);
    assert_eq!(repo.read("src/f3.txt"), "v1 3\n");
    assert_eq!(
        index_stat(d, "src/f3.txt"),
        file_stat(d, "src/f3.txt"),
        "the rewritten file's index entry carries its new stat data"
    );
    assert_eq!(
        index_stat(d, "src/f7.txt"),
        untouched_before,
        "an untouched entry keeps its stat data"
    );
    assert_eq!(index_stat(d, "src/f7.txt"), file_stat(d, "src/f7.txt"));
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}
