//! Rewind, fork, restore and undo against real git in temporary repositories (docs/FORMAT.md,
//! and docs/COMMANDS.md "`rewind` and `fork`"): what they put into the worktree, index and
//! HEAD, the refs and lineage they write, what they refuse, and that a rewind killed at any
//! instant never leaves a half-written file and can always be undone.

use crate::common;

mod adversity;
mod case_names;
mod crash;
mod dry_run;
mod exact;
mod fork;
mod index;
mod lineage;
mod long_names;
mod refusals;
mod restore;
mod tree;
mod undo;

use common::{git_cmd, git_in, ok_in, run_in};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// Run the tool with `--json` in `dir` and parse its output.
fn json_in(dir: &Path, args: &[&str]) -> Value {
    let mut a = vec!["--json"];
    a.extend_from_slice(args);
    let out = ok_in(dir, &a);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// A string field of a JSON object.
fn field(v: &Value, k: &str) -> String {
    v[k].as_str()
        .unwrap_or_else(|| panic!("no string {k:?} in {v:#}"))
        .to_string()
}

/// Write a file (creating folders) with an explicit mode.
fn put(root: &Path, rel: &str, data: impl AsRef<[u8]>, mode: u32) {
    let p = root.join(rel);
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).unwrap();
    }
    if std::fs::symlink_metadata(&p).is_ok() {
        std::fs::remove_file(&p).unwrap();
    }
    std::fs::write(&p, data).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn chmod(root: &Path, rel: &str, mode: u32) {
    std::fs::set_permissions(root.join(rel), std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Create (or replace) a symlink `rel` pointing at `target`.
fn symlink(root: &Path, rel: &str, target: &str) {
    let p = root.join(rel);
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).unwrap();
    }
    if std::fs::symlink_metadata(&p).is_ok() {
        std::fs::remove_file(&p).unwrap();
    }
    std::os::unix::fs::symlink(target, &p).unwrap();
}

fn rm(root: &Path, rel: &str) {
    std::fs::remove_file(root.join(rel)).unwrap();
}

/// One path of a worktree as git sees it: a file (content + executable bit) or a symlink.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    File { exec: bool, data: Vec<u8> },
    Link(Vec<u8>),
}

impl Entry {
    fn describe(e: Option<&Entry>) -> String {
        match e {
            None => "absent".into(),
            Some(Entry::Link(t)) => format!("symlink -> {}", String::from_utf8_lossy(t)),
            Some(Entry::File { exec, data }) => {
                let text = String::from_utf8_lossy(data);
                let head: String = text.chars().take(40).collect();
                format!(
                    "file{} ({} bytes) {head:?}",
                    if *exec { " +x" } else { "" },
                    data.len()
                )
            }
        }
    }
}

type Files = BTreeMap<String, Entry>;

/// Every file and symlink of a worktree (not `.git`), by path.
fn worktree_files(root: &Path) -> Files {
    fn walk(root: &Path, dir: &Path, out: &mut Files) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if rel == ".git" {
                continue;
            }
            let md = std::fs::symlink_metadata(&p).unwrap();
            if md.file_type().is_symlink() {
                let t = std::fs::read_link(&p).unwrap();
                out.insert(rel, Entry::Link(t.as_os_str().as_bytes().to_vec()));
            } else if md.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(
                    rel,
                    Entry::File {
                        exec: md.permissions().mode() & 0o100 != 0,
                        data: std::fs::read(&p).unwrap(),
                    },
                );
            }
        }
    }
    let mut out = Files::new();
    walk(root, root, &mut out);
    out
}

/// Panic with the differing paths (not whole file contents) when two file sets differ.
fn assert_files_eq(actual: &Files, expected: &Files, ctx: &str) {
    if actual == expected {
        return;
    }
    let paths: BTreeSet<&String> = actual.keys().chain(expected.keys()).collect();
    let diffs: Vec<String> = paths
        .into_iter()
        .filter(|p| actual.get(*p) != expected.get(*p))
        .take(20)
        .map(|p| {
            format!(
                "  {p}: actual {}, expected {}",
                Entry::describe(actual.get(p)),
                Entry::describe(expected.get(p))
            )
        })
        .collect();
    panic!("{ctx}: worktree files differ:\n{}", diffs.join("\n"));
}

/// The files of a git tree, read with `git ls-tree -r -z` and `git cat-file --batch`.
fn tree_files(dir: &Path, tree: &str) -> Files {
    let ls = git_cmd(dir)
        .args(["ls-tree", "-r", "-z", tree])
        .output()
        .unwrap();
    assert!(ls.status.success(), "ls-tree {tree}");
    let mut entries = vec![];
    for rec in ls.stdout.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let tab = rec.iter().position(|b| *b == b'\t').unwrap();
        let meta = String::from_utf8(rec[..tab].to_vec()).unwrap();
        let path = String::from_utf8(rec[tab + 1..].to_vec()).unwrap();
        let mut it = meta.split(' ');
        let (mode, _kind, oid) = (
            it.next().unwrap().to_string(),
            it.next().unwrap().to_string(),
            it.next().unwrap().to_string(),
        );
        entries.push((mode, oid, path));
    }
    let mut child = git_cmd(dir)
        .args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let ids: String = entries.iter().map(|(_, o, _)| format!("{o}\n")).collect();
    let writer = std::thread::spawn(move || {
        stdin.write_all(ids.as_bytes()).unwrap();
    });
    let mut out = vec![];
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    writer.join().unwrap();
    assert!(child.wait().unwrap().success());
    let mut files = Files::new();
    let mut pos = 0;
    for (mode, _oid, path) in entries {
        let nl = pos + out[pos..].iter().position(|b| *b == b'\n').unwrap();
        let header = String::from_utf8(out[pos..nl].to_vec()).unwrap();
        let size: usize = header.rsplit(' ').next().unwrap().parse().unwrap();
        let data = out[nl + 1..nl + 1 + size].to_vec();
        pos = nl + 1 + size + 1;
        let e = match mode.as_str() {
            "120000" => Entry::Link(data),
            "100755" => Entry::File { exec: true, data },
            "100644" => Entry::File { exec: false, data },
            m => panic!("unexpected mode {m} for {path}"),
        };
        files.insert(path, e);
    }
    files
}

/// Git's view of a worktree: HEAD, status, diffs, the index.
#[derive(Debug, Clone, PartialEq, Eq)]
struct GitView {
    head_ref: String,
    head: String,
    status: String,
    diff: String,
    cached: String,
    stage: String,
}

fn git_view(dir: &Path) -> GitView {
    let out = |args: &[&str]| {
        let o = git_cmd(dir).args(args).output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    GitView {
        head_ref: out(&["symbolic-ref", "-q", "HEAD"]).trim().to_string(),
        head: out(&["rev-parse", "-q", "--verify", "HEAD"])
            .trim()
            .to_string(),
        status: git_in(dir, &["status", "--porcelain=v1", "-uall"]),
        diff: git_in(dir, &["diff"]),
        cached: git_in(dir, &["diff", "--cached"]),
        stage: git_in(dir, &["ls-files", "-s"]),
    }
}

/// The tree `git add -A` would write in `dir` (any worktree), using a throw-away index.
fn add_all_tree_at(dir: &Path) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("index");
    let run = |args: &[&str]| {
        let out = git_cmd(dir)
            .env("GIT_INDEX_FILE", &index)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    run(&["add", "-A"]);
    run(&["write-tree"]).trim().to_string()
}

/// Everything a refused command must leave alone: every ref, HEAD, status (with ignored
/// files), the index, linked worktrees, in-progress operation files, the active run, and
/// every file of the worktree.
fn fingerprint(dir: &Path) -> String {
    let git_dir = PathBuf::from(git_in(dir, &["rev-parse", "--absolute-git-dir"]).trim());
    let mut names: Vec<String> = std::fs::read_dir(&git_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let files: Vec<String> = worktree_files(dir)
        .iter()
        .map(|(p, e)| format!("{p}: {e:?}"))
        .collect();
    let active = json_in(dir, &["status"])["run"].clone();
    format!(
        "view: {:#?}\nrefs:\n{}\nignored:\n{}\nworktrees:\n{}\ngit dir: {names:?}\nactive run: {active}\nfiles:\n{}",
        git_view(dir),
        git_in(dir, &["for-each-ref", "--format=%(refname) %(objectname)"]),
        git_in(dir, &["status", "--porcelain=v1", "-uall", "--ignored"]),
        git_in(dir, &["worktree", "list", "--porcelain"]),
        files.join("\n"),
    )
}

/// Run the tool expecting a refusal: an exit code among `codes`, an `error:` line
/// mentioning `needle`, and nothing changed. Returns what went wrong, if anything.
fn refusal_problem(dir: &Path, args: &[&str], codes: &[i32], needle: &str) -> Option<String> {
    let before = fingerprint(dir);
    let out = run_in(dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !codes.contains(&out.status.code().unwrap_or(-1)) {
        return Some(format!(
            "{args:?}: expected exit code in {codes:?}, got {:?}\nstdout: {}\nstderr: {stderr}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout)
        ));
    }
    if !stderr.starts_with("error: ") {
        return Some(format!(
            "{args:?}: stderr does not start with `error: `: {stderr:?}"
        ));
    }
    if !stderr.to_lowercase().contains(&needle.to_lowercase()) {
        return Some(format!(
            "{args:?}: stderr does not mention {needle:?}: {stderr}"
        ));
    }
    let after = fingerprint(dir);
    if before != after {
        let (b, a): (Vec<&str>, Vec<&str>) = (before.lines().collect(), after.lines().collect());
        let gone: Vec<&&str> = b.iter().filter(|l| !a.contains(l)).collect();
        let new: Vec<&&str> = a.iter().filter(|l| !b.contains(l)).collect();
        return Some(format!(
            "{args:?} was refused ({}) but changed something:\n  before: {gone:?}\n  after:  {new:?}",
            stderr.lines().next().unwrap_or("")
        ));
    }
    None
}

fn assert_refused(dir: &Path, args: &[&str], codes: &[i32], needle: &str) {
    if let Some(p) = refusal_problem(dir, args, codes, needle) {
        panic!("{p}");
    }
}

/// `step begin STEP --kind agent --session-id S` in `dir`; returns the checkpoint id.
fn begin(dir: &Path, step: &str, session: &str) -> String {
    field(
        &json_in(
            dir,
            &[
                "step",
                "begin",
                step,
                "--kind",
                "agent",
                "--session-id",
                session,
            ],
        ),
        "checkpoint",
    )
}

/// `step end STEP --status completed --session-id S` in `dir`; returns the checkpoint id.
fn end(dir: &Path, step: &str, session: &str) -> String {
    field(
        &json_in(
            dir,
            &[
                "step",
                "end",
                step,
                "--status",
                "completed",
                "--session-id",
                session,
            ],
        ),
        "checkpoint",
    )
}

fn start(dir: &Path, run: &str) -> String {
    field(&json_in(dir, &["start", "--run", run]), "checkpoint")
}

fn is_ancestor(dir: &Path, a: &str, b: &str) -> bool {
    let out = git_cmd(dir)
        .args(["merge-base", "--is-ancestor", a, b])
        .output()
        .unwrap();
    match out.status.code() {
        Some(0) => true,
        Some(1) => false,
        c => panic!(
            "merge-base --is-ancestor {a} {b}: {c:?} {}",
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

fn ref_exists(dir: &Path, name: &str) -> bool {
    git_cmd(dir)
        .args(["rev-parse", "-q", "--verify", name])
        .output()
        .unwrap()
        .status
        .success()
}
