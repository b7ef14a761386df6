//! Rewind, fork, restore and undo against real git in temporary repositories
//! (DESIGN.md §3–§4, "Rewind and fork, precisely"): what they put into the worktree, index
//! and HEAD, the refs and lineage they write, what they refuse, and that a rewind killed at
//! any instant never leaves a half-written file and can always be undone.

mod common;

use common::{Repo, git_cmd, git_in, ok_in, refs, run_in, tool_cmd};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
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

fn same_path(a: &str, b: &Path) -> bool {
    let ca = std::fs::canonicalize(a).unwrap_or_else(|_| PathBuf::from(a));
    let cb = std::fs::canonicalize(b).unwrap_or_else(|_| b.to_path_buf());
    ca == cb
}

/// The runs of `list --json [--all]`, by id.
fn listed(dir: &Path, all: bool) -> BTreeMap<String, Value> {
    let v = if all {
        json_in(dir, &["list", "--all"])
    } else {
        json_in(dir, &["list"])
    };
    v.as_array()
        .unwrap_or_else(|| panic!("list --json is not an array: {v}"))
        .iter()
        .map(|r| (field(r, "run"), r.clone()))
        .collect()
}

/// The checkpoint ids of `list RUN --json`, in order.
fn checkpoints_of(dir: &Path, run: &str) -> Vec<String> {
    json_in(dir, &["list", run])
        .as_array()
        .unwrap()
        .iter()
        .map(|c| field(c, "checkpoint"))
        .collect()
}

// ---------------------------------------------------------------------------------------
// 1. Undo after an in-place rewind restores a dirty worktree exactly; undo is undoable.
// ---------------------------------------------------------------------------------------

#[test]
fn undo_after_rewind_restores_a_dirty_worktree_exactly_and_is_itself_undoable() {
    let repo = Repo::new();
    let d = repo.path();
    put(d, "tracked.txt", "tracked\n", 0o644);
    put(d, "staged.txt", "staged\n", 0o644);
    put(d, "partial.txt", "partial\n", 0o644);
    put(d, "gone.txt", "gone\n", 0o644);
    put(d, "unstaged_rm.txt", "will be git rm'd\n", 0o644);
    put(d, "run.sh", "#!/bin/sh\necho run\n", 0o755);
    put(d, "becomes_exec.sh", "#!/bin/sh\necho later\n", 0o644);
    symlink(d, "link", "tracked.txt");
    symlink(d, "link2file", "tracked.txt");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "base"]);

    start(d, "r1");
    begin(d, "plan", "S-plan");
    put(d, "PLAN.md", "the plan\n", 0o644);
    end(d, "plan", "S-plan");
    begin(d, "implement", "S-impl");
    put(d, "tracked.txt", "implemented\n", 0o644);
    repo.git(&["commit", "-q", "-am", "implement"]);
    end(d, "implement", "S-impl");

    // A dirty worktree with every kind of change.
    put(d, "tracked.txt", "modified, not staged\n", 0o644);
    put(d, "staged.txt", "staged change\n", 0o644);
    repo.git(&["add", "staged.txt"]);
    put(d, "partial.txt", "partial: staged\n", 0o644);
    repo.git(&["add", "partial.txt"]);
    put(
        d,
        "partial.txt",
        "partial: staged, then changed again\n",
        0o644,
    );
    put(d, "new_staged.txt", "a staged new file\n", 0o644);
    repo.git(&["add", "new_staged.txt"]);
    rm(d, "gone.txt");
    repo.git(&["rm", "-q", "unstaged_rm.txt"]);
    put(d, "untracked.txt", "untracked\n", 0o644);
    put(d, "bin.dat", (0u8..=255).rev().collect::<Vec<u8>>(), 0o644);
    put(d, "tool.sh", "#!/bin/sh\nexit 0\n", 0o755);
    chmod(d, "becomes_exec.sh", 0o755);
    chmod(d, "run.sh", 0o644);
    symlink(d, "link", "staged.txt");
    symlink(d, "newlink", "deep/new/dir/file.txt");
    put(d, "deep/new/dir/file.txt", "in a new subdirectory\n", 0o644);
    put(
        d,
        "link2file",
        "a regular file where a symlink was\n",
        0o644,
    );

    let before_view = git_view(d);
    let before_files = worktree_files(d);
    assert_eq!(before_view.head_ref, "refs/heads/main");
    assert!(
        before_view.cached.contains("new_staged.txt") && before_view.diff.contains("partial"),
        "the scenario must have staged and unstaged changes: {before_view:#?}"
    );

    let out = repo.json(&["rewind", "r1", "--to", "implement", "--run", "r2"]);
    let backup = field(&out["backup"], "commit");
    assert_eq!(repo.rev("refs/agent-rewind/backups"), backup);
    let rewound_view = git_view(d);
    let rewound_files = worktree_files(d);
    assert_eq!(rewound_view.head_ref, "refs/heads/agent-runs/r2");
    assert_ne!(rewound_files, before_files, "the rewind changed nothing");
    assert_eq!(repo.read("tracked.txt"), "tracked\n");
    assert!(!d.join("untracked.txt").exists());
    assert!(
        std::fs::symlink_metadata(d.join("link2file"))
            .unwrap()
            .is_symlink()
    );

    // Undo: everything as it was, byte for byte and mode for mode.
    let undone = repo.json(&["undo"]);
    assert_eq!(field(&undone["restored"], "commit"), backup);
    let undo_view = git_view(d);
    assert_eq!(undo_view, before_view, "git's view after undo");
    assert_files_eq(&worktree_files(d), &before_files, "after undo");
    assert_eq!(
        std::fs::read_link(d.join("link")).unwrap(),
        PathBuf::from("staged.txt")
    );
    assert_eq!(
        repo.git(&["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/main"
    );
    let mode = |rel: &str| {
        std::fs::symlink_metadata(d.join(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o111
    };
    assert_ne!(mode("tool.sh"), 0);
    assert_ne!(mode("becomes_exec.sh"), 0);
    assert_eq!(mode("run.sh"), 0);

    // Undo again: back to the rewound state.
    let redo = repo.json(&["undo"]);
    assert_eq!(
        field(&redo["restored"], "commit"),
        field(&undone["backup"], "commit")
    );
    assert_eq!(
        git_view(d),
        rewound_view,
        "git's view after the second undo"
    );
    assert_files_eq(&worktree_files(d), &rewound_files, "after the second undo");
    repo.assert_fsck();
}

// ---------------------------------------------------------------------------------------
// 2. Lineage, refs, archive status, inherited steps.
// ---------------------------------------------------------------------------------------

#[test]
fn rewound_run_continues_the_source_lineage_without_moving_its_refs() {
    let repo = Repo::new();
    let d = repo.path();
    let user_base = repo.rev("HEAD");
    let c_start = start(d, "r1");
    let c_plan_b = begin(d, "plan", "S1");
    put(d, "PLAN.md", "plan\n", 0o644);
    let c_plan_e = end(d, "plan", "S1");
    let c_impl_b = begin(d, "implement", "S2");
    put(d, "code.rs", "fn main() {}\n", 0o644);
    let c_impl_e = end(d, "implement", "S2");
    let c_test_b = begin(d, "test", "S3");
    let c_test_e = end(d, "test", "S3");
    let src_refs = refs(d, "refs/agent-runs/r1/");
    assert_eq!(src_refs.len(), 4, "{src_refs:?}");

    let out = repo.json(&["rewind", "r1", "--to", "implement", "--run", "r2"]);
    assert_eq!(field(&out, "run"), "r2");
    assert_eq!(field(&out, "source_run"), "r1");
    assert_eq!(field(&out, "from_checkpoint"), c_plan_e);
    assert_eq!(field(&out, "from_step"), "implement");
    assert_eq!(out["source_archived"], Value::Bool(true));
    assert_eq!(out["inherited_steps"], serde_json::json!(["plan"]));
    let root = field(&out, "checkpoint");
    assert_eq!(repo.rev(&format!("{root}^1")), c_plan_e);
    assert_eq!(repo.rev("refs/agent-runs/r2/HEAD"), root);

    // More work in the new run (the active run of this worktree now).
    let n_impl_b = begin(d, "implement", "S4");
    put(d, "code.rs", "fn main() { println!(\"again\"); }\n", 0o644);
    let n_impl_e = end(d, "implement", "S4");
    assert_eq!(repo.rev("refs/agent-runs/r2/HEAD"), n_impl_e);
    let r2_tip = "refs/agent-runs/r2/HEAD";

    for c in [&c_start, &c_plan_b, &c_plan_e, &root, &n_impl_b] {
        assert!(is_ancestor(d, c, r2_tip), "{c} should be an ancestor of r2");
    }
    for c in [&c_impl_b, &c_impl_e, &c_test_b, &c_test_e] {
        assert!(
            !is_ancestor(d, c, r2_tip),
            "{c} (after the rewind point) must not be in r2's history"
        );
    }
    let first_parent: Vec<String> = repo
        .git(&["log", "--first-parent", "--format=%H", r2_tip])
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(
        first_parent,
        vec![
            n_impl_e.clone(),
            n_impl_b.clone(),
            root.clone(),
            c_plan_e.clone(),
            c_plan_b.clone(),
            c_start.clone(),
            user_base.clone(),
        ],
        "first-parent history of r2"
    );

    // The source run's refs did not move.
    assert_eq!(refs(d, "refs/agent-runs/r1/"), src_refs);

    // Inherited step refs point at the source's commits; later steps are not inherited.
    assert_eq!(repo.rev("refs/agent-runs/r2/plan"), c_plan_e);
    assert_eq!(
        repo.rev("refs/agent-runs/r2/plan"),
        repo.rev("refs/agent-runs/r1/plan")
    );
    assert_eq!(repo.rev("refs/agent-runs/r2/implement"), n_impl_e);
    assert!(!ref_exists(d, "refs/agent-runs/r2/test"));

    // list hides the archived source; --all shows it archived.
    let active = listed(d, false);
    assert!(
        active.contains_key("r2") && !active.contains_key("r1"),
        "{active:?}"
    );
    let all = listed(d, true);
    assert_eq!(all["r1"]["status"], "archived", "{:#}", all["r1"]);
    assert_ne!(all["r2"]["status"], "archived");
    let r2_root = &json_in(d, &["list", "r2"])[0];
    assert_eq!(r2_root["event"], "root");
    assert_eq!(r2_root["rewound_from"]["run"], "r1");
    assert_eq!(r2_root["rewound_from"]["checkpoint"], c_plan_e.as_str());

    // Fork keeps its source active and does not touch it or the worktree.
    let r2_refs = refs(d, "refs/agent-runs/r2/");
    let r2_notes = repo.rev("refs/notes/agent-runs/r2");
    let view = git_view(d);
    let heads = refs(d, "refs/heads/");
    let f = repo.json(&[
        "fork",
        "r2",
        "--to",
        "implement",
        "--run",
        "r3",
        "--no-checkout",
    ]);
    assert_eq!(f["source_archived"], Value::Bool(false));
    assert_eq!(field(&f, "from_checkpoint"), root);
    assert!(f["backup"].is_null());
    assert_eq!(refs(d, "refs/agent-runs/r2/"), r2_refs);
    assert_eq!(repo.rev("refs/notes/agent-runs/r2"), r2_notes);
    assert_eq!(git_view(d), view);
    assert_eq!(refs(d, "refs/heads/"), heads);
    assert_eq!(repo.rev("refs/agent-runs/r3/plan"), c_plan_e);
    let active = listed(d, false);
    assert!(
        active.contains_key("r2") && active.contains_key("r3"),
        "{active:?}"
    );
    assert_ne!(active["r2"]["status"], "archived");
    let r3_root = &json_in(d, &["list", "r3"])[0];
    assert_eq!(r3_root["forked_from"]["run"], "r2");
    assert!(r3_root["rewound_from"].is_null());

    // `log` walks back through the source run.
    let log_runs: BTreeSet<String> = json_in(d, &["log", "r2"])
        .as_array()
        .unwrap()
        .iter()
        .map(|c| field(c, "run"))
        .collect();
    assert_eq!(log_runs, BTreeSet::from(["r1".into(), "r2".into()]));
    repo.assert_fsck();
}

// ---------------------------------------------------------------------------------------
// More rewind/undo semantics: attempts, unborn and detached HEADs, file/folder swaps, and
// a refusal that comes after the backup was taken.
// ---------------------------------------------------------------------------------------

#[test]
fn to_a_step_means_just_before_its_latest_attempt_and_after_means_its_last_finish() {
    let repo = Repo::new();
    let d = repo.path();
    start(d, "r1");
    begin(d, "plan", "P");
    let plan_e = end(d, "plan", "P");
    // Attempt 1 of implement fails; a manual checkpoint follows; attempt 2 has a
    // checkpoint in the middle and completes.
    let a1_b = begin(d, "implement", "I1");
    put(d, "a.txt", "attempt 1\n", 0o644);
    let a1_e = field(
        &repo.json(&["step", "end", "implement", "--status", "failed"]),
        "checkpoint",
    );
    let after_a1 = field(
        &repo.json(&["checkpoint", "implement", "-m", "notes"]),
        "checkpoint",
    );
    assert_eq!(repo.rev(&format!("{after_a1}^1")), a1_e);
    let a2_b = begin(d, "implement", "I2");
    put(d, "a.txt", "attempt 2\n", 0o644);
    let a2_mid = field(
        &repo.json(&["checkpoint", "implement", "-m", "mid"]),
        "checkpoint",
    );
    let a2_e = end(d, "implement", "I2");
    assert_ne!(a1_b, a2_b);

    let point = |flags: &[&str], id: &str| -> Value {
        let mut args = vec!["fork", "r1", "--no-checkout", "--run", id];
        args.extend_from_slice(flags);
        repo.json(&args)
    };
    let to = point(&["--to", "implement"], "x1");
    assert_eq!(
        field(&to, "from_checkpoint"),
        after_a1,
        "--to implement: {to:#}"
    );
    let after = point(&["--after", "--to", "implement"], "x2");
    assert_eq!(field(&after, "from_checkpoint"), a2_e);
    assert_eq!(field(&after, "sdk_session_id"), "I2");
    let to_plan_after = point(&["--after", "--to", "plan"], "x3");
    assert_eq!(field(&to_plan_after, "from_checkpoint"), plan_e);
    let exact = point(&["--to", "r1@5"], "x4");
    assert_eq!(
        field(&exact, "from_checkpoint"),
        json_in(d, &["list", "r1"])[5]["checkpoint"]
            .as_str()
            .unwrap()
    );
    let by_id = point(&["--to", &a2_mid[..12]], "x5");
    assert_eq!(field(&by_id, "from_checkpoint"), a2_mid);

    // A third attempt begins and never finishes: --after still means the last finish,
    // --to means right before the third attempt.
    let a3_b = begin(d, "implement", "I3");
    let to = point(&["--to", "implement"], "x6");
    assert_eq!(field(&to, "from_checkpoint"), a2_e);
    let after = point(&["--after", "--to", "implement"], "x7");
    assert_eq!(field(&after, "from_checkpoint"), a2_e);
    assert!(!is_ancestor(d, &a3_b, "refs/agent-runs/x7/HEAD"));
    // `rewind --list` lists the run's checkpoints like `list RUN`.
    assert_eq!(
        json_in(d, &["rewind", "r1", "--list"]),
        json_in(d, &["list", "r1"])
    );
}

#[test]
fn rewind_to_a_point_on_an_unborn_branch_and_undo() {
    let repo = Repo::empty();
    let d = repo.path();
    start(d, "r1");
    put(d, "a.txt", "a\n", 0o644);
    begin(d, "plan", "S1");
    let plan_e = end(d, "plan", "S1");
    begin(d, "implement", "S2");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "first"]);
    put(d, "b.txt", "b\n", 0o644);
    end(d, "implement", "S2");
    let before = git_view(d);
    let files = worktree_files(d);
    let out = repo.json(&["rewind", "r1", "--to", "implement", "--run", "r2"]);
    assert_eq!(field(&out, "from_checkpoint"), plan_e);
    assert!(out["git_commit_sha"].is_null(), "{out:#}");
    // An unborn branch, an empty index, the checkpoint's files as untracked files.
    assert_eq!(
        repo.git(&["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/agent-runs/r2"
    );
    assert!(!ref_exists(d, "HEAD"));
    assert_eq!(repo.git(&["ls-files", "-s"]), "");
    assert_eq!(add_all_tree_at(d), repo.rev(&format!("{plan_e}^{{tree}}")));
    repo.json(&["undo"]);
    assert_eq!(git_view(d), before);
    assert_files_eq(&worktree_files(d), &files, "after undo");
}

/// A tracked file replaced by a folder of the same name (`f2d`), and a tracked folder
/// replaced by a file (`d2f`), both uncommitted: the rewind swaps them back, undo swaps
/// them again.
fn file_folder_swap(swap_f2d: bool, swap_d2f: bool) {
    let repo = Repo::new();
    let d = repo.path();
    put(d, "f2d", "a file that becomes a folder\n", 0o644);
    put(d, "d2f/inner.txt", "a folder that becomes a file\n", 0o644);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "base"]);
    start(d, "r1");
    begin(d, "implement", "S");
    put(d, "code.rs", "code\n", 0o644);
    end(d, "implement", "S");
    if swap_f2d {
        rm(d, "f2d");
        put(d, "f2d/child.txt", "now a folder\n", 0o644);
    }
    if swap_d2f {
        std::fs::remove_dir_all(d.join("d2f")).unwrap();
        put(d, "d2f", "now a file\n", 0o644);
    }
    let before = git_view(d);
    let files = worktree_files(d);
    repo.json(&["rewind", "r1", "--to", "implement", "--run", "r2"]);
    assert_eq!(repo.read("f2d"), "a file that becomes a folder\n");
    assert_eq!(repo.read("d2f/inner.txt"), "a folder that becomes a file\n");
    repo.json(&["undo"]);
    assert_eq!(git_view(d), before);
    assert_files_eq(&worktree_files(d), &files, "after undo");
}

#[test]
fn rewind_and_undo_turn_a_folder_back_into_a_file() {
    file_folder_swap(true, false);
}

#[test]
fn rewind_and_undo_turn_a_file_back_into_a_folder() {
    file_folder_swap(false, true);
}

#[test]
fn undo_brings_back_a_detached_head() {
    let repo = Repo::new();
    let d = repo.path();
    start(d, "r1");
    begin(d, "implement", "S");
    put(d, "code.rs", "v1\n", 0o644);
    end(d, "implement", "S");
    repo.git(&["commit", "-q", "--allow-empty", "-m", "later"]);
    repo.git(&["checkout", "-q", "--detach", "HEAD"]);
    put(d, "README.md", "edited while detached\n", 0o644);
    let before = git_view(d);
    let files = worktree_files(d);
    assert_eq!(before.head_ref, "");
    repo.json(&["rewind", "r1", "--to", "implement", "--run", "r2"]);
    assert_eq!(
        repo.git(&["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/agent-runs/r2"
    );
    repo.json(&["undo"]);
    assert_eq!(git_view(d), before);
    assert_files_eq(&worktree_files(d), &files, "after undo");
}

#[test]
fn an_ignored_file_in_the_way_goes_into_the_backup_and_undo_brings_it_back() {
    let repo = Repo::new();
    let d = repo.path();
    start(d, "r1");
    begin(d, "plan", "S1");
    // Not ignored yet: the checkpoint holds it.
    put(d, "build/x", "from plan\n", 0o644);
    end(d, "plan", "S1");
    begin(d, "implement", "S2");
    put(d, ".gitignore", "build/\n", 0o644);
    put(d, "build/x", "precious, ignored now\n", 0o644);
    end(d, "implement", "S2");
    let before = worktree_files(d);

    // The rewind overwrites the ignored build/x: the backup holds it first…
    repo.json(&["rewind", "r1", "--to", "implement", "--run", "r2"]);
    assert_eq!(repo.read("build/x"), "from plan\n");
    // …so `undo` brings it back, byte for byte.
    repo.json(&["undo"]);
    assert_eq!(repo.read("build/x"), "precious, ignored now\n");
    assert_files_eq(&worktree_files(d), &before, "after undo");
    // A path restore over it too.
    repo.json(&["restore", "r1/plan", "--", "build/"]);
    assert_eq!(repo.read("build/x"), "from plan\n");
    repo.json(&["undo"]);
    assert_eq!(repo.read("build/x"), "precious, ignored now\n");
}

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

// ---------------------------------------------------------------------------------------
// 4. The output names the new run, branch, worktree and the session id at that point.
// ---------------------------------------------------------------------------------------

#[test]
fn rewind_and_fork_report_run_branch_worktree_and_the_session_at_the_point() {
    let repo = Repo::new();
    let d = repo.path();
    let c_start = start(d, "r1");
    begin(d, "plan", "S-plan");
    put(d, "PLAN.md", "plan\n", 0o644);
    let plan_e = end(d, "plan", "S-plan");
    let impl_b = begin(d, "implement", "S-impl");
    put(d, "code.rs", "code\n", 0o644);
    let impl_e = end(d, "implement", "S-impl");
    begin(d, "test", "S-test");
    put(d, "results.txt", "ok\n", 0o644);
    let test_e = end(d, "test", "S-test");

    let cases: [(&[&str], &str, Option<&str>); 6] = [
        (&["--to", "plan"], c_start.as_str(), None),
        (&["--to", "implement"], plan_e.as_str(), Some("S-plan")),
        (&["--to", "test"], impl_e.as_str(), Some("S-impl")),
        (
            &["--after", "--to", "test"],
            test_e.as_str(),
            Some("S-test"),
        ),
        (
            &["--after", "--to", "plan"],
            plan_e.as_str(),
            Some("S-plan"),
        ),
        (&["--to", impl_b.as_str()], impl_b.as_str(), Some("S-impl")),
    ];
    let view = git_view(d);
    for (i, (flags, from, session)) in cases.iter().enumerate() {
        let id = format!("f{i}");
        let mut args = vec!["fork", "r1", "--no-checkout", "--run", &id];
        args.extend_from_slice(flags);
        let out = repo.json(&args);
        assert_eq!(field(&out, "run"), id, "{flags:?}");
        assert_eq!(field(&out, "from_checkpoint"), *from, "{flags:?}");
        assert_eq!(
            out["sdk_session_id"].as_str(),
            *session,
            "session for {flags:?}: {out:#}"
        );
        assert!(
            out["branch"].is_null() && out["worktree"].is_null(),
            "{out:#}"
        );
        // The new run's root records it too.
        assert_eq!(
            json_in(d, &["list", &id])[0]["sdk_session_id"].as_str(),
            *session
        );
    }
    // --no-checkout with --branch only creates the branch, at the point's user commit.
    let out = repo.json(&[
        "fork",
        "r1",
        "--to",
        "test",
        "--no-checkout",
        "--branch",
        "nb",
        "--run",
        "f9",
    ]);
    assert_eq!(field(&out, "branch"), "nb");
    assert_eq!(repo.rev("refs/heads/nb"), field(&out, "git_commit_sha"));
    assert!(
        out["worktree"].is_null() && out["backup"].is_null(),
        "{out:#}"
    );
    assert_eq!(git_view(d), view, "--no-checkout touched the worktree");

    // In place, with a generated run id and a chosen branch.
    let out = repo.json(&["rewind", "r1", "--to", "test", "--branch", "try-again"]);
    let new_run = field(&out, "run");
    assert!(!new_run.is_empty() && new_run != "r1");
    assert!(ref_exists(d, &format!("refs/agent-runs/{new_run}/HEAD")));
    assert!(listed(d, false).contains_key(&new_run));
    assert_eq!(field(&out, "branch"), "try-again");
    assert_eq!(
        repo.git(&["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/try-again"
    );
    assert!(same_path(&field(&out, "worktree"), d), "{out:#}");
    assert_eq!(field(&out, "sdk_session_id"), "S-impl");
    assert_eq!(json_in(d, &["status"])["run"], new_run.as_str());

    // Human output says the same.
    let human = repo.ok(&["rewind", "r1", "--to", "implement", "--run", "r9"]);
    assert!(human.contains("r9"), "{human}");
    assert!(human.contains("agent-runs/r9"), "{human}");
    assert!(human.contains("S-plan"), "{human}");
    let canon = std::fs::canonicalize(d).unwrap();
    assert!(
        human.contains(&d.display().to_string()) || human.contains(&canon.display().to_string()),
        "{human}"
    );

    // Into a new linked worktree.
    let tmp = tempfile::tempdir().unwrap();
    let wt = tmp.path().join("wt");
    let wt_s = wt.to_str().unwrap();
    let out = repo.json(&[
        "fork",
        "r1",
        "--after",
        "--to",
        "test",
        "--worktree",
        wt_s,
        "--run",
        "w1",
    ]);
    assert_eq!(field(&out, "run"), "w1");
    assert_eq!(field(&out, "branch"), "agent-runs/w1");
    assert!(same_path(&field(&out, "worktree"), &wt), "{out:#}");
    assert_eq!(field(&out, "sdk_session_id"), "S-test");
    assert_eq!(
        git_in(&wt, &["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/agent-runs/w1"
    );
    let human = repo.ok(&[
        "fork",
        "r1",
        "--to",
        "test",
        "--worktree",
        &format!("{wt_s}2"),
        "--run",
        "w2",
    ]);
    assert!(
        human.contains("w2") && human.contains(&format!("{wt_s}2")) && human.contains("S-impl"),
        "{human}"
    );
}

// ---------------------------------------------------------------------------------------
// 5. A fork into a linked worktree and concurrent work in both.
// ---------------------------------------------------------------------------------------

#[test]
fn fork_into_a_linked_worktree_and_checkpoint_concurrently_in_both() {
    let repo = Repo::new();
    let d = repo.path();
    put(d, "shared.txt", "base\n", 0o644);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "base"]);
    start(d, "r1");
    begin(d, "plan", "S1");
    put(d, "shared.txt", "after plan\n", 0o644);
    let plan_e = end(d, "plan", "S1");
    begin(d, "implement", "S2");
    put(d, "shared.txt", "main implement\n", 0o644);
    put(d, "main-only.txt", "main\n", 0o644);
    end(d, "implement", "S2");

    let main_view = git_view(d);
    let main_files = worktree_files(d);
    let main_status = repo.git(&["status", "--porcelain"]);
    let tmp = tempfile::tempdir().unwrap();
    let wt = tmp.path().join("fork-wt");
    let out = repo.json(&[
        "fork",
        "r1",
        "--to",
        "implement",
        "--worktree",
        wt.to_str().unwrap(),
        "--run",
        "f1",
    ]);
    assert_eq!(field(&out, "from_checkpoint"), plan_e);
    assert!(
        out["backup"].is_null(),
        "a fork into a new worktree needs no backup"
    );
    // The main worktree is untouched.
    assert_eq!(repo.git(&["status", "--porcelain"]), main_status);
    assert_eq!(git_view(d), main_view);
    assert_files_eq(
        &worktree_files(d),
        &main_files,
        "main worktree after the fork",
    );
    // The linked worktree holds the checkpoint.
    assert_eq!(
        std::fs::read_to_string(wt.join("shared.txt")).unwrap(),
        "after plan\n"
    );
    assert!(!wt.join("main-only.txt").exists());
    assert_eq!(
        add_all_tree_at(&wt),
        repo.rev(&format!("{plan_e}^{{tree}}")),
        "the linked worktree holds exactly the checkpoint"
    );
    assert_eq!(
        git_in(&wt, &["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/agent-runs/f1"
    );
    assert_eq!(json_in(&wt, &["status"])["run"], "f1");
    assert_eq!(json_in(d, &["status"])["run"], "r1");

    let r1_before = checkpoints_of(d, "r1");
    let f1_before = checkpoints_of(d, "f1");
    let mut made_main = vec![];
    let mut made_wt = vec![];
    const ROUNDS: usize = 4;
    for round in 0..ROUNDS {
        put(
            d,
            &format!("main-{round}.txt"),
            format!("main {round}\n"),
            0o644,
        );
        put(
            &wt,
            &format!("wt-{round}.txt"),
            format!("wt {round}\n"),
            0o644,
        );
        let main_now = worktree_files(d);
        let wt_now = worktree_files(&wt);
        let main_view_now = git_view(d);
        let wt_view_now = git_view(&wt);
        let spawn = |dir: &Path| {
            tool_cmd(dir)
                .args([
                    "--json",
                    "checkpoint",
                    "work",
                    "-m",
                    &format!("round {round}"),
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let a = spawn(d);
        let b = spawn(&wt);
        for (child, dir, made, run) in [
            (a, d, &mut made_main, "r1"),
            (b, wt.as_path(), &mut made_wt, "f1"),
        ] {
            let o = child.wait_with_output().unwrap();
            assert!(
                o.status.success(),
                "checkpoint in {} failed: {}",
                dir.display(),
                String::from_utf8_lossy(&o.stderr)
            );
            let v: Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(v["run"], run);
            made.push(field(&v, "checkpoint"));
        }
        assert_files_eq(&worktree_files(d), &main_now, "main worktree after a round");
        assert_files_eq(
            &worktree_files(&wt),
            &wt_now,
            "linked worktree after a round",
        );
        assert_eq!(git_view(d), main_view_now);
        assert_eq!(git_view(&wt), wt_view_now);
        // Each checkpoint holds its own worktree's files only.
        let main_cp = made_main.last().unwrap();
        let wt_cp = made_wt.last().unwrap();
        let has = |cp: &str, p: &str| !repo.git(&["ls-tree", cp, p]).trim().is_empty();
        assert!(has(main_cp, &format!("main-{round}.txt")));
        assert!(!has(main_cp, &format!("wt-{round}.txt")));
        assert!(has(wt_cp, &format!("wt-{round}.txt")));
        assert!(!has(wt_cp, &format!("main-{round}.txt")));
    }
    let r1_after = checkpoints_of(d, "r1");
    let f1_after = checkpoints_of(d, "f1");
    assert_eq!(r1_after.len(), r1_before.len() + ROUNDS, "{r1_after:?}");
    assert_eq!(f1_after.len(), f1_before.len() + ROUNDS, "{f1_after:?}");
    assert_eq!(r1_after[r1_before.len()..], made_main[..]);
    assert_eq!(f1_after[f1_before.len()..], made_wt[..]);
    assert_eq!(checkpoints_of(&wt, "f1"), f1_after);
    assert_eq!(json_in(&wt, &["status"])["run"], "f1");
    assert_eq!(json_in(d, &["status"])["run"], "r1");
    assert_eq!(
        git_in(&wt, &["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/agent-runs/f1"
    );
    assert_eq!(
        repo.git(&["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/main"
    );

    // Backups belong to their worktree: a restore in the linked one is undone there, and
    // the main worktree (which never had a backup) has nothing to undo.
    let wt_files = worktree_files(&wt);
    let main_files = worktree_files(d);
    json_in(&wt, &["restore", &plan_e]);
    assert!(!wt.join("wt-0.txt").exists());
    assert_refused(d, &["undo"], &[1], "nothing to undo");
    json_in(&wt, &["undo"]);
    assert_files_eq(
        &worktree_files(&wt),
        &wt_files,
        "linked worktree after undo",
    );
    assert_files_eq(&worktree_files(d), &main_files, "main worktree");
    repo.assert_fsck();
}

// ---------------------------------------------------------------------------------------
// 6. Refusals: a clear error, the right exit code, nothing changed.
// ---------------------------------------------------------------------------------------

/// A repository on `main` with a branch `other` that conflicts with it on README.md, and a
/// run r1: plan and implement completed, test begun and never finished.
fn refusal_repo() -> Repo {
    let repo = Repo::new();
    let d = repo.path();
    repo.git(&["checkout", "-q", "-b", "other"]);
    put(d, "README.md", "changed on other\n", 0o644);
    repo.git(&["commit", "-q", "-am", "other"]);
    repo.git(&["checkout", "-q", "main"]);
    put(d, "README.md", "changed on main\n", 0o644);
    repo.git(&["commit", "-q", "-am", "main"]);
    start(d, "r0");
    start(d, "r1");
    begin(d, "plan", "S1");
    put(d, "PLAN.md", "plan\n", 0o644);
    end(d, "plan", "S1");
    begin(d, "implement", "S2");
    put(d, "code.rs", "code\n", 0o644);
    end(d, "implement", "S2");
    begin(d, "test", "S3");
    put(d, "wip.txt", "wip\n", 0o644);
    repo
}

/// [`refusal_repo`] with its work committed and one backup taken (a path restore), so `undo`
/// has something it could bring back.
fn refusal_repo_with_a_backup() -> Repo {
    let repo = refusal_repo();
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "wip"]);
    repo.json(&["restore", "r1/plan", "--", "PLAN.md"]);
    repo
}

/// Commands that overwrite this worktree, all of which must be refused.
fn assert_overwriting_commands_refused(repo: &Repo, needle: &str) {
    let d = repo.path();
    // (The callers take one backup first, so `undo` has something it could bring back.)
    for args in [
        &["rewind", "r1", "--to", "implement"][..],
        &["rewind", "r1", "--to", "implement", "--run", "n1"][..],
        &["fork", "r1", "--to", "plan", "--run", "n2"][..],
        &["restore", "r1/plan"][..],
        &["restore", "r1/plan", "--", "PLAN.md"][..],
        &["undo"][..],
    ] {
        assert_refused(d, args, &[1], needle);
    }
}

/// A rewind in place whose new run cannot be published (another process holds the lock of
/// its ref) fails after its backup was taken: the backup is taken back by compare-and-swap,
/// so `undo` cannot pick a backup of a rewind that never happened. Both with an earlier
/// backup (the ref moves back to it) and without one (the ref goes).
#[test]
fn a_rewind_whose_run_cannot_be_published_leaves_no_backup() {
    for with_earlier_backup in [true, false] {
        let repo = if with_earlier_backup {
            refusal_repo_with_a_backup()
        } else {
            refusal_repo()
        };
        let d = repo.path();
        let lock = d.join(".git/refs/agent-runs/blocked/HEAD.lock");
        std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
        std::fs::write(&lock, "").unwrap();
        assert_refused(
            d,
            &["rewind", "r1", "--to", "implement", "--run", "blocked"],
            &[1],
            "HEAD.lock",
        );
        std::fs::remove_file(&lock).unwrap();
        repo.assert_fsck();
    }
}

#[test]
fn refuses_during_a_merge_with_conflicts() {
    // One backup to undo to, taken before the conflict.
    let repo = refusal_repo_with_a_backup();
    let d = repo.path();
    let merge = repo.git_output(&["merge", "-q", "other"]);
    assert!(!merge.status.success(), "the merge should conflict");
    assert!(repo.git(&["ls-files", "-u"]).contains("README.md"));
    assert_overwriting_commands_refused(&repo, "merge");
    repo.git(&["merge", "--abort"]);
    // Once the merge is gone, the same command works.
    repo.json(&["rewind", "r1", "--to", "implement", "--run", "n1"]);
    assert!(ref_exists(d, "refs/agent-runs/n1/HEAD"));
}

#[test]
fn refuses_with_unmerged_paths_and_no_operation_in_progress() {
    let repo = refusal_repo_with_a_backup();
    let d = repo.path();
    // A stash that conflicts on apply leaves unmerged entries but no MERGE_HEAD.
    put(d, "README.md", "stashed edit\n", 0o644);
    repo.git(&["stash", "-q"]);
    put(d, "README.md", "committed edit\n", 0o644);
    repo.git(&["commit", "-q", "-am", "conflicting"]);
    let apply = repo.git_output(&["stash", "apply", "-q"]);
    assert!(!apply.status.success(), "the stash apply should conflict");
    assert!(repo.git(&["ls-files", "-u"]).contains("README.md"));
    assert!(!d.join(".git/MERGE_HEAD").exists());
    assert_overwriting_commands_refused(&repo, "conflict");
}

#[test]
fn refuses_during_a_stopped_rebase() {
    let repo = refusal_repo_with_a_backup();
    let d = repo.path();
    let rebase = repo.git_output(&["rebase", "-q", "other"]);
    assert!(!rebase.status.success(), "the rebase should stop");
    assert!(d.join(".git/rebase-merge").exists() || d.join(".git/rebase-apply").exists());
    assert_overwriting_commands_refused(&repo, "rebase");
    repo.git(&["rebase", "--abort"]);
}

#[test]
fn refuses_during_a_stopped_cherry_pick() {
    let repo = refusal_repo_with_a_backup();
    let d = repo.path();
    let pick = repo.git_output(&["cherry-pick", "other"]);
    assert!(!pick.status.success(), "the cherry-pick should conflict");
    assert!(d.join(".git/CHERRY_PICK_HEAD").exists());
    assert_overwriting_commands_refused(&repo, "cherry-pick");
}

#[test]
fn refuses_bad_targets_and_taken_names_without_changing_anything() {
    let repo = refusal_repo();
    let d = repo.path();
    let r0_start = json_in(d, &["list", "r0"])[0]["checkpoint"]
        .as_str()
        .unwrap()
        .to_string();
    for cmd in ["rewind", "fork"] {
        // Unknown step, unknown checkpoints, a step that never finished.
        assert_refused(d, &[cmd, "r1", "--to", "nosuchstep"], &[1], "nosuchstep");
        assert_refused(d, &[cmd, "r1", "--to", "r1@99"], &[1], "@99");
        assert_refused(
            d,
            &[cmd, "r1", "--to", "deadbeefdeadbeef"],
            &[1],
            "deadbeef",
        );
        assert_refused(
            d,
            &[cmd, "r1", "--after", "--to", "test"],
            &[1],
            "never finished",
        );
        assert_refused(
            d,
            &[cmd, "r1", "--after", "--to", "nosuchstep"],
            &[1, 2],
            "nosuchstep",
        );
        // A checkpoint of another run's lineage.
        assert_refused(d, &[cmd, "r1", "--to", &r0_start], &[1], "lineage");
        // Unknown source run.
        assert_refused(d, &[cmd, "nosuchrun", "--to", "plan"], &[1], "nosuchrun");
        // Taken names.
        assert_refused(
            d,
            &[cmd, "r1", "--to", "implement", "--run", "r0"],
            &[1],
            "r0",
        );
        assert_refused(
            d,
            &[cmd, "r1", "--to", "implement", "--run", "r1"],
            &[1],
            "r1",
        );
        assert_refused(
            d,
            &[cmd, "r1", "--to", "implement", "--branch", "other"],
            &[1],
            "other",
        );
        assert_refused(
            d,
            &[
                cmd,
                "r1",
                "--to",
                "implement",
                "--branch",
                "main",
                "--no-checkout",
            ],
            &[1],
            "main",
        );
        // A --worktree path that exists and is not empty.
        let tmp = tempfile::tempdir().unwrap();
        put(tmp.path(), "keep.txt", "mine\n", 0o644);
        let wt = tmp.path().to_str().unwrap();
        assert_refused(
            d,
            &[cmd, "r1", "--to", "implement", "--worktree", wt],
            &[1],
            "not empty",
        );
        assert_eq!(
            worktree_files(tmp.path()).keys().collect::<Vec<_>>(),
            vec!["keep.txt"]
        );
        // Usage errors.
        assert_refused(d, &[cmd, "r1"], &[2], "--to");
        assert_refused(
            d,
            &[cmd, "r1", "--to", "plan", "--run", "bad..id"],
            &[2],
            "bad..id",
        );
        assert_refused(
            d,
            &[cmd, "r1", "--to", "plan", "--branch", "bad..name"],
            &[2],
            "bad..name",
        );
        assert_refused(
            d,
            &[cmd, "r1", "--to", "plan", "--no-checkout", "--worktree", wt],
            &[2],
            "",
        );
    }
    // Nothing to undo yet.
    assert_refused(d, &["undo"], &[1], "nothing to undo");
    assert_refused(d, &["restore", "nosuchrun"], &[1], "nosuchrun");
    assert_refused(
        d,
        &["restore", "r1/plan", "--", "no/such/path"],
        &[1],
        "no/such/path",
    );
    assert!(!ref_exists(d, "refs/agent-rewind/backups"));
}

// ---------------------------------------------------------------------------------------
// 7. restore, whole and by path, with a backup that undo brings back.
// ---------------------------------------------------------------------------------------

#[test]
fn restore_whole_or_selected_paths_takes_a_backup_that_undo_brings_back() {
    let repo = Repo::new();
    let d = repo.path();
    let files = ["path/one", "path/two", "dir/a", "dir/sub/b", "other.txt"];
    for f in files {
        put(d, f, format!("{f} v0\n"), 0o644);
    }
    put(d, "run.sh", "#!/bin/sh\n", 0o755);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "base"]);
    start(d, "r1");
    for f in files {
        put(d, f, format!("{f} v1\n"), 0o644);
    }
    put(d, "dir/u1", "untracked v1\n", 0o644);
    let c1 = field(
        &repo.json(&["checkpoint", "plan", "--status", "completed"]),
        "checkpoint",
    );
    let c1_files = tree_files(d, &c1);
    for f in files {
        put(d, f, format!("{f} v2\n"), 0o644);
    }
    rm(d, "dir/a");
    rm(d, "dir/u1");
    put(d, "dir/new", "new in v2\n", 0o644);
    chmod(d, "run.sh", 0o644);
    repo.json(&["checkpoint", "implement"]);
    put(d, "other.txt", "other v3, never checkpointed\n", 0o644);
    put(d, "path/one", "one v3, never checkpointed\n", 0o644);

    let before_view = git_view(d);
    let before_files = worktree_files(d);
    let before_tree = repo.add_all_tree();

    // Selected paths only.
    let out = repo.json(&["restore", "r1/plan", "--", "path/one", "dir/"]);
    assert_eq!(field(&out, "checkpoint"), c1);
    let backup = field(&out["backup"], "commit");
    assert_eq!(repo.rev("refs/agent-rewind/backups"), backup);
    assert_eq!(repo.rev(&format!("{backup}^{{tree}}")), before_tree);
    let now = worktree_files(d);
    let mut expected = before_files.clone();
    expected.retain(|p, _| !p.starts_with("dir/"));
    for (p, e) in &c1_files {
        if p == "path/one" || p.starts_with("dir/") {
            expected.insert(p.clone(), e.clone());
        }
    }
    assert_files_eq(&now, &expected, "after restore -- path/one dir/");
    assert_eq!(repo.read("path/two"), "path/two v2\n");
    assert_eq!(repo.read("other.txt"), "other v3, never checkpointed\n");
    assert!(!d.join("dir/new").exists());
    let v = git_view(d);
    assert_eq!(
        (v.head_ref, v.head, v.stage),
        (
            before_view.head_ref.clone(),
            before_view.head.clone(),
            before_view.stage.clone()
        ),
        "restore must leave HEAD and the index alone"
    );

    let undone = repo.json(&["undo"]);
    assert_eq!(field(&undone["restored"], "commit"), backup);
    assert_eq!(git_view(d), before_view);
    assert_files_eq(
        &worktree_files(d),
        &before_files,
        "after undoing a path restore",
    );

    // The whole checkpoint.
    let backups_before = repo.rev("refs/agent-rewind/backups");
    let out = repo.json(&["restore", &c1]);
    let backup = field(&out["backup"], "commit");
    assert_ne!(backup, backups_before);
    assert_eq!(repo.rev("refs/agent-rewind/backups"), backup);
    assert_eq!(repo.add_all_tree(), repo.rev(&format!("{c1}^{{tree}}")));
    assert_files_eq(&worktree_files(d), &c1_files, "after a whole restore");
    let v = git_view(d);
    assert_eq!(
        (v.head_ref, v.head, v.stage),
        (
            before_view.head_ref.clone(),
            before_view.head.clone(),
            before_view.stage.clone()
        )
    );
    repo.json(&["undo"]);
    assert_eq!(git_view(d), before_view);
    assert_files_eq(
        &worktree_files(d),
        &before_files,
        "after undoing a whole restore",
    );
    repo.assert_fsck();
}

// ---------------------------------------------------------------------------------------
// 8. Crash safety: a rewind killed with SIGKILL at random moments.
// ---------------------------------------------------------------------------------------

/// A small deterministic pseudo-random sequence (Knuth's MMIX LCG).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

/// Whether any live (not zombie) process is in process group `pgid`.
fn group_alive(pgid: u32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{name}/stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let mut it = stat[close + 1..].split_whitespace();
        let (state, _ppid, pgrp) = (it.next(), it.next(), it.next());
        if pgrp == Some(pgid.to_string().as_str()) && state != Some("Z") && state != Some("X") {
            return true;
        }
    }
    false
}

/// Whether a worktree path is one of the tool's temporary files (`.name.agent-rewind-PID.tmp`).
fn is_tool_tmp(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.starts_with('.') && name.contains(".agent-rewind-") && name.ends_with(".tmp")
}

/// The crash scenario: a few hundred files; the checkpoint `--to implement` goes back to
/// differs from the current (dirty) worktree in most of them.
fn crash_template() -> Repo {
    let repo = Repo::new();
    let d = repo.path();
    let pad = "0123456789abcdef".repeat(96);
    let n = 260;
    let path = |i: usize| format!("d{:02}/f{i:03}.txt", i % 12);
    for i in 0..n {
        let mode = if i % 25 == 0 { 0o755 } else { 0o644 };
        put(d, &path(i), format!("base {i}\n{pad}\n"), mode);
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "base"]);
    start(d, "r1");
    begin(d, "plan", "S1");
    for i in (0..n).filter(|i| i % 7 != 0) {
        put(d, &path(i), format!("A {i}\n{pad}\n"), 0o644);
    }
    for i in 0..20 {
        put(
            d,
            &format!("plan-new/a{i}.txt"),
            format!("plan new {i}\n"),
            0o644,
        );
    }
    end(d, "plan", "S1");
    begin(d, "implement", "S2");
    for i in 0..n {
        put(d, &path(i), format!("B {i}\n{pad}\n"), 0o644);
    }
    for i in (0..n).filter(|i| i % 11 == 0) {
        rm(d, &path(i));
    }
    for i in 0..30 {
        put(
            d,
            &format!("impl/x{i}.txt"),
            format!("impl {i}\n{pad}\n"),
            0o644,
        );
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "implement"]);
    end(d, "implement", "S2");
    // The dirty state the rewind starts from.
    for i in (0..n).filter(|i| i % 3 != 0 && i % 11 != 0) {
        put(d, &path(i), format!("P {i}\n{pad}\n"), 0o644);
    }
    for i in (0..n).filter(|i| i % 13 == 0 && i % 11 != 0) {
        rm(d, &path(i));
    }
    for i in (0..n).filter(|i| i % 17 == 0 && i % 11 != 0 && i % 13 != 0) {
        chmod(d, &path(i), 0o755);
    }
    for i in 0..15 {
        put(
            d,
            &format!("untracked/u{i}.txt"),
            format!("untracked {i}\n"),
            0o644,
        );
    }
    repo.git(&["add", "impl/x0.txt", "impl/x1.txt"]);
    // Fewer files to copy per iteration.
    repo.git(&["repack", "-a", "-d", "-q"]);
    repo.git(&["prune-packed"]);
    repo
}

/// A fresh copy of the template repository.
fn copy_repo(template: &Repo) -> Repo {
    let dir = tempfile::tempdir().unwrap();
    let st = std::process::Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", template.path().display()))
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(st.success(), "cp -a");
    Repo { dir }
}

const REWIND: [&str; 6] = ["rewind", "r1", "--to", "implement", "--run", "r2"];

#[test]
fn rewind_killed_at_random_moments_never_leaves_half_written_files_and_undo_recovers() {
    let template = crash_template();
    let t = template.path();
    let pre_files = worktree_files(t);
    let pre_view = git_view(t);
    let pre_tree = template.add_all_tree();
    let target = template.rev("refs/agent-runs/r1/plan");
    let target_files = tree_files(t, &format!("{target}^{{tree}}"));
    let differing = pre_files
        .keys()
        .chain(target_files.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|p| pre_files.get(*p) != target_files.get(*p))
        .count();
    assert!(
        differing > 200,
        "the target must differ in most files ({differing})"
    );

    // One uninterrupted rewind: the end state, and how long the whole thing takes (only used
    // to spread the kills over the rewind's lifetime; never asserted on).
    let full = copy_repo(&template);
    let t0 = std::time::Instant::now();
    let out = full.json(&REWIND);
    let full_ms = t0.elapsed().as_millis() as u64;
    assert_eq!(field(&out, "from_checkpoint"), target);
    assert_files_eq(
        &worktree_files(full.path()),
        &target_files,
        "uninterrupted rewind",
    );
    full.json(&["undo"]);
    assert_files_eq(&worktree_files(full.path()), &pre_files, "undo of it");
    assert_eq!(git_view(full.path()), pre_view);
    drop(full);

    let max_delay_ms = full_ms.max(40) + 10;
    let mut rng = Lcg(0x5eed_2026);
    let (mut no_backup, mut midway, mut finished, mut left_tmp) = (0, 0, 0, 0);
    for iter in 0..25 {
        let repo = copy_repo(&template);
        let d = repo.path();
        let delay_us = rng.next() % (max_delay_ms * 1000 + 1);
        let mut child = tool_cmd(d)
            .args(REWIND)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id();
        std::thread::sleep(std::time::Duration::from_micros(delay_us));
        let _ = child.kill();
        child.wait().unwrap();
        // Let git processes the tool had started finish (they are not part of the crash).
        let mut waited = 0;
        while group_alive(pgid) {
            std::thread::sleep(std::time::Duration::from_millis(5));
            waited += 1;
            assert!(
                waited < 12_000,
                "processes of the killed rewind never ended"
            );
        }

        let ctx = format!("iteration {iter} (killed after {delay_us} µs)");
        let mut now = worktree_files(d);
        let tmps: Vec<String> = now.keys().filter(|p| is_tool_tmp(p)).cloned().collect();
        for p in &tmps {
            now.remove(p);
        }
        left_tmp += tmps.len();
        let has_backup = ref_exists(d, "refs/agent-rewind/backups");
        if !has_backup {
            // Nothing may have been overwritten before the backup exists.
            assert!(
                tmps.is_empty(),
                "{ctx}: temp files without a backup: {tmps:?}"
            );
            assert_files_eq(&now, &pre_files, &ctx);
            assert_eq!(git_view(d), pre_view, "{ctx}");
            no_backup += 1;
            continue;
        }
        assert_eq!(
            repo.rev("refs/agent-rewind/backups^{tree}"),
            pre_tree,
            "{ctx}: the backup holds the pre-rewind worktree"
        );
        let paths: BTreeSet<&String> = now
            .keys()
            .chain(pre_files.keys())
            .chain(target_files.keys())
            .collect();
        let mut from_target = 0;
        for p in paths {
            let cur = now.get(p);
            let (old, new) = (pre_files.get(p), target_files.get(p));
            assert!(
                cur == old || cur == new,
                "{ctx}: {p} is {}, neither the backup's {} nor the target's {}",
                Entry::describe(cur),
                Entry::describe(old),
                Entry::describe(new)
            );
            if cur != old {
                from_target += 1;
            }
        }
        if now == target_files {
            finished += 1;
        } else if from_target > 0 {
            midway += 1;
        }

        let undo = repo.run(&["undo"]);
        assert!(
            undo.status.success(),
            "{ctx}: undo failed: {}",
            String::from_utf8_lossy(&undo.stderr)
        );
        assert_files_eq(
            &worktree_files(d),
            &pre_files,
            &format!("{ctx}, after undo"),
        );
        assert_eq!(git_view(d), pre_view, "{ctx}, after undo");
    }
    eprintln!(
        "crash test: rewind takes {full_ms} ms uninterrupted; kills: {no_backup} before the backup, \
         {midway} while writing, {finished} after writing the worktree, {} in between; \
         {left_tmp} temporary file(s) left behind (removed by undo)",
        25 - no_backup - midway - finished
    );
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
    std::thread::sleep(std::time::Duration::from_millis(1100));
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
