//! What a crash must leave intact: the user's files, HEAD and index, and every run's note.

use super::common::{self, git_in};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// The user's side of a worktree: files (mode and bytes), HEAD, and the index entries.
#[derive(Debug, PartialEq, Eq, Clone)]
pub struct UserState {
    pub files: BTreeMap<String, (u32, Vec<u8>)>,
    pub head: String,
    pub index: String,
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

pub fn user_state(dir: &Path) -> UserState {
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
pub fn copy_tree(src: &Path, dst: &Path) {
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

/// Every run's HEAD has its note.
pub fn assert_runs_have_notes(dir: &Path, ctx: &str) {
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
