//! What a checkpoint records, as git would: the tree of `git add -A`, the user's index,
//! status and HEAD untouched, nothing new for an identical checkpoint, file/folder swaps,
//! gitattributes and unusual paths.

use super::{RUN, scenario};
use crate::common::{Repo, add_all_tree_in};
use std::path::Path;

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
        "crates/agent-rewind/src/lib.rs"
    );
    assert_eq!(
        s.repo
            .git(&["cat-file", "-p", &format!("{busy}:docs/guide.md")]),
        "# Guide\nstaged\nthen unstaged\n"
    );
    assert_eq!(
        s.repo.git(&[
            "cat-file",
            "-p",
            &format!("{busy}:crates/agent-rewind/src/lib.rs")
        ]),
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
        " M crates/agent-rewind/src/lib.rs",
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
