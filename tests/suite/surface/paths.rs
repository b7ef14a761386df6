//! Paths are the user's paths: every path argument is resolved against
//! the folder the command was started in (after `-C`), as git resolves them; pathspecs
//! outside the worktree are refused; a fork that fails part-way leaves nothing behind.

use crate::common;

use common::{git_in, run_in, tool_cmd};
use std::path::{Path, PathBuf};
use std::process::Output;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A repository at `<outer>/repo` (so `../x` from its root is inside `outer`), with
/// `src/file` committed and a run `r1` with checkpoints `s1` (file v1) and `s2` (file v2).
struct Nested {
    outer: tempfile::TempDir,
}

impl Nested {
    fn new() -> Nested {
        let outer = tempfile::tempdir().unwrap();
        let n = Nested { outer };
        std::fs::create_dir(n.repo()).unwrap();
        let g = |args: &[&str]| git_in(&n.repo(), args);
        g(&["init", "-q", "-b", "main"]);
        g(&["config", "user.name", "Test User"]);
        g(&["config", "user.email", "test@example.com"]);
        n.write("src/file", "v1\n");
        n.write("README.md", "hello\n");
        g(&["add", "-A"]);
        g(&["commit", "-q", "-m", "initial"]);
        n.ok(".", &["checkpoint", "s1", "--run", "r1"]);
        n.write("src/file", "v2\n");
        n.ok(".", &["checkpoint", "s2", "--run", "r1"]);
        n
    }
    fn repo(&self) -> PathBuf {
        self.outer.path().join("repo")
    }
    fn write(&self, rel: &str, content: &str) {
        let p = self.repo().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.repo().join(rel)).unwrap()
    }
    /// The tool started in `repo/<sub>`.
    fn run(&self, sub: &str, args: &[&str]) -> Output {
        run_in(&self.repo().join(sub), args)
    }
    fn ok(&self, sub: &str, args: &[&str]) -> String {
        let out = self.run(sub, args);
        assert!(
            out.status.success(),
            "{args:?} in {sub} failed: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    }
    /// Everything a failed command must leave as it was: refs, worktrees, branches, the
    /// files of the outer folder and of the repository (outside .git), the active run.
    fn state(&self) -> String {
        let g = |args: &[&str]| git_in(&self.repo(), args);
        let mut files = vec![];
        walk(self.outer.path(), self.outer.path(), &mut files);
        let records: Vec<String> = std::fs::read_dir(self.repo().join(".git/worktrees"))
            .map(|d| {
                d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        files.extend(records);
        format!(
            "{}\n{}\n{}\n{:?}\n{}",
            g(&["for-each-ref", "--format=%(refname) %(objectname)"]),
            g(&["worktree", "list", "--porcelain"]),
            g(&["status", "--porcelain", "--ignored"]),
            files,
            text(&self.run(".", &["--json", "status"]).stdout)
        )
    }
}

/// Files and folders under `p` (relative), skipping `.git` folders.
fn walk(p: &Path, base: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(p).unwrap().map(|e| e.unwrap()).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        if e.file_name() == ".git" {
            continue;
        }
        out.push(e.path().strip_prefix(base).unwrap().display().to_string());
        if e.file_type().unwrap().is_dir() {
            walk(&e.path(), base, out);
        }
    }
}

#[test]
fn fork_worktree_is_relative_to_where_the_command_started() {
    let n = Nested::new();
    let status = git_in(&n.repo(), &["status", "--porcelain", "--ignored"]);
    // The README's own example, from the root and from a subfolder (and through -C).
    n.ok(".", &["fork", "r1", "--to", "s1", "--worktree", "../try-b"]);
    let b = n.outer.path().join("try-b");
    assert_eq!(std::fs::read_to_string(b.join("src/file")).unwrap(), "v1\n");
    n.ok(
        "src",
        &["fork", "r1", "--to", "s1", "--worktree", "../../try-c"],
    );
    assert!(n.outer.path().join("try-c/src/file").is_file());
    let out = tool_cmd(n.outer.path())
        .args([
            "-C",
            "repo/src",
            "fork",
            "r1",
            "--to",
            "s1",
            "--worktree",
            "../../try-d",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(n.outer.path().join("try-d/src/file").is_file());
    // Nothing was made inside the repository.
    assert_eq!(
        git_in(&n.repo(), &["status", "--porcelain", "--ignored"]),
        status
    );
    assert_eq!(n.read("src/file"), "v2\n");
}

#[test]
fn a_fork_that_fails_part_way_leaves_nothing_behind() {
    let n = Nested::new();
    std::fs::write(n.outer.path().join("a-file"), "x").unwrap();
    let before = n.state();
    // A path that cannot be created (under a file).
    let out = n.run(
        ".",
        &["fork", "r1", "--to", "s1", "--worktree", "../a-file/sub"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).starts_with("error: "),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(n.state(), before);
    // A branch that exists, in place and into a linked worktree.
    for args in [
        &["fork", "r1", "--to", "s1", "--branch", "main"][..],
        &["rewind", "r1", "--to", "s1", "--branch", "main"][..],
        &[
            "fork",
            "r1",
            "--to",
            "s1",
            "--branch",
            "main",
            "--worktree",
            "../w",
        ][..],
    ] {
        let out = n.run(".", args);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert_eq!(n.state(), before, "{args:?}");
    }
    // Undo has nothing to pick.
    assert_ne!(n.run(".", &["undo"]).status.code(), Some(0));
}

#[test]
fn restore_pathspecs_are_relative_to_the_current_folder() {
    let n = Nested::new();
    n.write("src/other", "mine\n");
    let out = n.ok("src", &["restore", "r1@1", "--", "file"]);
    assert!(out.contains("restored 1 path"), "{out}");
    assert_eq!(n.read("src/file"), "v1\n");
    assert_eq!(n.read("src/other"), "mine\n");
    // `.` from a subfolder is that subfolder only.
    n.write("README.md", "changed\n");
    n.ok("src", &["restore", "r1@2", "--", "."]);
    assert_eq!(n.read("src/file"), "v2\n");
    assert_eq!(n.read("README.md"), "changed\n");

    let before = n.state();
    for spec in ["../../etc/passwd", "/etc", "../..", "", "../.git/config"] {
        let out = n.run("src", &["restore", "r1@1", "--", spec]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{spec:?}: {}",
            text(&out.stdout)
        );
        let err = text(&out.stderr);
        assert!(err.starts_with("error: "), "{spec:?}: {err}");
        assert!(
            err.contains("outside the worktree") || err.contains("empty string"),
            "{spec:?}: {err}"
        );
        assert_eq!(n.state(), before, "{spec:?}");
    }
}

#[test]
fn file_arguments_are_relative_to_the_current_folder() {
    let n = Nested::new();
    // export -o from a subfolder writes there, and the hint works from there.
    let out = n.ok("src", &["export", "r1", "-o", "x.bundle"]);
    assert!(n.repo().join("src/x.bundle").is_file());
    assert!(!n.repo().join("x.bundle").exists());
    assert!(out.contains("`git agent-rewind import x.bundle`"), "{out}");
    let out = n.ok("src", &["import", "x.bundle"]);
    assert!(out.contains("imported x.bundle"), "{out}");
    std::fs::remove_file(n.repo().join("src/x.bundle")).unwrap();

    // run FILE and start --workflow FILE.
    n.write(
        "wf/flow.toml",
        "[workflow]\nname = \"flow\"\n\n[[steps]]\nname = \"build\"\nkind = \"deterministic\"\nrun = \"true\"\n",
    );
    let out = n.ok("src", &["--json", "run", "../wf/flow.toml", "--run", "w1"]);
    assert!(out.contains("\"outcome\": \"completed\""), "{out}");
    n.ok("wf", &["start", "--run", "w2", "--workflow", "flow.toml"]);

    // steer --edit PATH=FILE: both relative to the current folder.
    std::fs::write(n.outer.path().join("new-content"), "steered\n").unwrap();
    let out = n.ok(
        "src",
        &[
            "--json",
            "steer",
            "w1",
            "--edit",
            "file=../../new-content",
            "--yes",
        ],
    );
    assert!(out.contains("src/file"), "{out}");
    assert_eq!(n.read("src/file"), "steered\n");
}

/// `--artifact PATH` is relative to the current folder like every other path argument; a
/// URI is kept as given; a path outside the worktree is refused with nothing written.
#[test]
fn artifact_paths_are_relative_to_the_current_folder() {
    let n = Nested::new();
    n.write("src/report.md", "report\n");
    let out = n.ok(
        "src",
        &[
            "--json",
            "checkpoint",
            "s3",
            "--run",
            "r1",
            "--artifact",
            "report.md",
            "--artifact",
            "s3://bucket/log#sha256=ab12",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let paths: Vec<String> = v["artifacts"]
        .as_array()
        .unwrap_or_else(|| panic!("no artifacts in {v:#}"))
        .iter()
        .map(|a| {
            a["path"]
                .as_str()
                .or(a["uri"].as_str())
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert!(paths.contains(&"src/report.md".to_string()), "{v:#}");
    assert!(
        paths.iter().any(|p| p.starts_with("s3://bucket/log")),
        "{v:#}"
    );

    let before = n.state();
    let out = n.run(
        "src",
        &["checkpoint", "s4", "--run", "r1", "--artifact", "../../x"],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        text(&out.stderr).contains("outside the worktree"),
        "{out:?}"
    );
    assert_eq!(n.state(), before, "a refused checkpoint changed something");
}
