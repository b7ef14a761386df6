//! git's environment is honoured as git honours it: `git --git-dir=…
//! --work-tree=… agent-rewind …` (git exports `GIT_DIR`/`GIT_WORK_TREE` to the commands it
//! runs), `GIT_DIR`/`GIT_WORK_TREE` set by hand, `GIT_CEILING_DIRECTORIES`, and an unusable
//! `GIT_COMMON_DIR`. Also the one-line refusal of repository formats we cannot read.

use crate::common;
use crate::common::stderr;

use common::{Repo, bin, git_cmd, refs};
use std::path::Path;
use std::process::{Command, Output};

/// A `git` whose exec path lets it find our binary as `git agent-rewind`.
fn git_with_tool(cwd: &Path) -> Command {
    let tool_dir = bin().parent().unwrap().to_path_buf();
    let exec = {
        let out = git_cmd(cwd).arg("--exec-path").output().unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    // `git agent-rewind` finds `git-agent-rewind` on PATH.
    let path = format!(
        "{}:{}:{}",
        tool_dir.display(),
        exec,
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = git_cmd(cwd);
    c.env("PATH", path)
        .env("NO_COLOR", "1")
        .env_remove("AGENT_RUN")
        .env_remove("AGENT_STEP");
    c
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "failed ({:?}): {}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Everything about a repository a rewind could change: refs, HEAD, index, status, files.
fn state(r: &Repo) -> (Vec<(String, String)>, String, String, String) {
    (
        refs(r.path(), "refs/"),
        r.git(&["symbolic-ref", "-q", "HEAD"]),
        r.git(&["ls-files", "-s"]),
        r.git(&["status", "--porcelain", "--untracked-files=all"]),
    )
}

#[test]
fn git_dir_and_work_tree_given_to_git_work_on_that_repository_not_the_current_one() {
    let a = Repo::new();
    a.write("a-only.txt", "A's uncommitted work\n");
    let before_a = state(&a);

    let b = Repo::new();
    b.ok(&["start", "--run", "rb"]);
    b.write("plan.md", "B's plan\n");
    b.ok(&["checkpoint", "plan", "--run", "rb", "--status", "completed"]);
    b.write("plan.md", "B's plan, changed\n");
    b.write("impl.txt", "B's implementation\n");
    b.ok(&["checkpoint", "implement", "--run", "rb"]);

    let git_dir = b.path().join(".git");
    let gd = format!("--git-dir={}", git_dir.display());
    let wt = format!("--work-tree={}", b.path().display());
    // From inside A: list and rewind B.
    let list = ok(git_with_tool(a.path())
        .args([&gd, &wt, "agent-rewind", "--json", "list"])
        .output()
        .unwrap());
    assert!(list.contains("\"rb\""), "{list}");
    let out = ok(git_with_tool(a.path())
        .args([
            &gd,
            &wt,
            "agent-rewind",
            "--json",
            "rewind",
            "rb",
            "--to",
            "implement",
            "--run",
            "rb2",
        ])
        .output()
        .unwrap());
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["run"], "rb2", "{v:#}");

    // B was rewound: files, branch, run, backup all in B.
    assert_eq!(b.read("plan.md"), "B's plan\n");
    assert!(!b.path().join("impl.txt").exists());
    assert_eq!(
        b.git(&["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/agent-runs/rb2"
    );
    assert_eq!(b.rev("HEAD"), b.rev("main"));
    assert!(!refs(b.path(), "refs/agent-runs/rb2/").is_empty());
    assert!(!refs(b.path(), "refs/agent-rewind/backups").is_empty());
    b.assert_fsck();
    // A untouched.
    assert_eq!(state(&a), before_a);
    assert!(!a.path().join(".git/agent-rewind").exists());

    // The same through the environment, from a subfolder of A, and undo brings B back.
    std::fs::create_dir_all(a.path().join("sub")).unwrap();
    let undo = common::tool_cmd(&a.path().join("sub"))
        .env("GIT_DIR", &git_dir)
        .env("GIT_WORK_TREE", b.path())
        .args(["undo"])
        .output()
        .unwrap();
    ok(undo);
    assert_eq!(b.read("plan.md"), "B's plan, changed\n");
    assert_eq!(b.read("impl.txt"), "B's implementation\n");
    assert_eq!(state(&a), before_a);
}

#[test]
fn ceiling_directories_stop_the_search_as_in_git() {
    let r = Repo::new();
    r.ok(&["start", "--run", "r1"]);
    std::fs::create_dir_all(r.path().join("deep/er")).unwrap();
    let sub = r.path().join("deep/er");
    // git itself says "not a git repository" from there with this ceiling.
    let ceiling = r.path().join("deep");
    let git = git_cmd(&sub)
        .env("GIT_CEILING_DIRECTORIES", &ceiling)
        .args(["rev-parse", "--git-dir"])
        .output()
        .unwrap();
    assert!(!git.status.success());
    let out = common::tool_cmd(&sub)
        .env("GIT_CEILING_DIRECTORIES", &ceiling)
        .args(["list"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not a git repository"),
        "{}",
        stderr(&out)
    );
    // A ceiling above the repository changes nothing.
    let out = common::tool_cmd(&sub)
        .env("GIT_CEILING_DIRECTORIES", r.path().parent().unwrap())
        .args(["list"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_git_common_dir_that_is_not_the_repositorys_is_refused() {
    let r = Repo::new();
    let other = Repo::new();
    let out = common::tool_cmd(r.path())
        .env("GIT_COMMON_DIR", other.path().join(".git"))
        .args(["list"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("GIT_COMMON_DIR"), "{}", stderr(&out));
    // Naming the repository's own common dir is fine.
    let out = common::tool_cmd(r.path())
        .env("GIT_COMMON_DIR", r.path().join(".git"))
        .args(["list"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Every file under `.git` with its size and modification time: "nothing was written".
fn git_dir_state(dir: &Path) -> Vec<(std::path::PathBuf, u64, std::time::SystemTime)> {
    let mut out = vec![];
    let mut stack = vec![dir.join(".git")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                out.push((e.path(), m.len(), m.modified().unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// An object format other than SHA-1 and SHA-256 (none exists yet; a later git's would be
/// named in `extensions.objectFormat`): every command that opens such a repository refuses
/// it up front, in one line naming the format, with a hint that says what to do, `--json`
/// kind `refused`, exit 1, nothing written (not a failure deep inside a read). (SHA-256
/// repositories work: tests/suite/sha256.rs; reftable ones: tests/suite/reftable.rs.)
#[test]
fn an_unknown_object_format_gets_a_one_line_error_naming_the_format() {
    for (format, word, what_to_do) in [(
        "sha512",
        "sha512 object format",
        "supported: SHA-1 (git's default) and SHA-256",
    )] {
        let d = tempfile::tempdir().unwrap();
        ok(git_cmd(d.path()).args(["init", "-q"]).output().unwrap());
        std::fs::write(d.path().join("a.txt"), "a\n").unwrap();
        ok(git_cmd(d.path()).args(["add", "a.txt"]).output().unwrap());
        ok(git_cmd(d.path())
            .args(["-c", "user.name=T", "-c", "user.email=t@example.com"])
            .args(["commit", "-q", "-m", "one"])
            .output()
            .unwrap());
        let config = d.path().join(".git/config");
        let text = std::fs::read_to_string(&config).unwrap();
        let text = text.replace("repositoryformatversion = 0", "repositoryformatversion = 1");
        std::fs::write(
            &config,
            format!("{text}[extensions]\n\tobjectFormat = {format}\n"),
        )
        .unwrap();
        let flag = format;
        let before = git_dir_state(d.path());
        let commands: &[&[&str]] = &[
            &["list"],
            &["list", "r1"],
            &["start", "--run", "r1"],
            &["checkpoint", "s1", "--run", "r1"],
            &["status"],
            &["show", "r1"],
            &["diff", "r1"],
            &["log", "r1"],
            &["rewind", "r1", "--to", "@0"],
            &["undo"],
            &["gc"],
            &["init"],
            &["view", "-o", "page.html"],
        ];
        for args in commands {
            let out = common::tool_cmd(d.path()).args(*args).output().unwrap();
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(1), "{flag} {args:?}: {err}");
            let lines: Vec<&str> = err.lines().collect();
            assert_eq!(
                lines.len(),
                2,
                "{flag} {args:?}: one error line and a hint: {err}"
            );
            assert!(
                lines[0].starts_with("error: ") && lines[0].contains(word),
                "{flag}: {err}"
            );
            assert!(
                lines[1].starts_with("hint: ") && lines[1].contains(what_to_do),
                "{flag}: {err}"
            );
            let out = common::tool_cmd(d.path())
                .arg("--json")
                .args(*args)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(1), "{flag} --json {args:?}");
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(v["error"]["kind"], "refused", "{flag} {args:?}: {v}");
        }
        // The post-commit hook never fails a commit: it says why it recorded nothing.
        let out = common::tool_cmd(d.path())
            .args(["hook", "post-commit"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{flag}: {}", stderr(&out));
        assert!(stderr(&out).contains(word), "{flag}: {}", stderr(&out));
        // Nothing was written.
        assert_eq!(git_dir_state(d.path()), before, "{flag}");
        assert!(!d.path().join("page.html").exists());
    }
}

/// `GIT_DIR` alone (no `GIT_WORK_TREE`, no `core.worktree`): as git, the current directory is
/// the top of the worktree, so a checkpoint from a subfolder records what `git add -A` would
/// stage there; with `core.worktree` set, that folder is the worktree wherever we run.
#[test]
fn git_dir_alone_makes_the_current_directory_the_worktree_as_in_git() {
    let r = Repo::new();
    r.write("top.txt", "top\n");
    r.write("sub/inner.txt", "inner\n");
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "two folders"]);
    let git_dir = r.path().join(".git");
    let sub = r.path().join("sub");
    let with_git_dir = |mut c: Command| {
        c.env("GIT_DIR", &git_dir).env_remove("GIT_WORK_TREE");
        c
    };
    // git's own view: the tree `git add -A` stages from there.
    let index = r.path().join("scratch-index");
    std::fs::copy(git_dir.join("index"), &index).unwrap();
    let git_tree = |args: &[&str]| {
        let mut c = with_git_dir(git_cmd(&sub));
        c.env("GIT_INDEX_FILE", &index).args(args);
        ok(c.output().unwrap())
    };
    git_tree(&["add", "-A"]);
    let want = git_tree(&["write-tree"]).trim().to_string();
    std::fs::remove_file(&index).unwrap();

    let tool = |args: &[&str]| {
        let mut c = with_git_dir(common::tool_cmd(&sub));
        c.args(args);
        ok(c.output().unwrap())
    };
    tool(&["start", "--run", "r1"]);
    tool(&["checkpoint", "s1"]);
    assert_eq!(r.rev("refs/agent-runs/r1/HEAD^{tree}"), want);
    assert_eq!(
        r.git(&["ls-tree", "--name-only", "-r", "refs/agent-runs/r1/HEAD"]),
        "inner.txt\n",
        "only the current directory is the worktree"
    );

    // core.worktree names the worktree: the whole repository again, from anywhere.
    r.git(&["config", "core.worktree", r.path().to_str().unwrap()]);
    tool(&["checkpoint", "s2"]);
    assert_eq!(
        r.git(&["ls-tree", "--name-only", "-r", "refs/agent-runs/r1/HEAD"]),
        "README.md\nsub/inner.txt\ntop.txt\n"
    );
    r.assert_fsck();
}

#[test]
fn git_dash_c_reaches_the_tool_as_it_reaches_git() {
    let r = Repo::new();
    r.git(&["config", "user.name", "Repo User"]);
    let identity = [
        "-c",
        "user.name=O'Brien Smith",
        "-c",
        "user.email=ob@example.com",
        "agent-rewind",
    ];
    ok(git_with_tool(r.path())
        .args(identity)
        .args(["start", "--run", "r1"])
        .output()
        .unwrap());
    r.write("a.txt", "one\n");
    ok(git_with_tool(r.path())
        .args(identity)
        .args(["checkpoint", "work", "--run", "r1"])
        .output()
        .unwrap());
    assert_eq!(
        r.git(&["log", "-1", "--format=%an <%ae>", "refs/agent-runs/r1/HEAD"])
            .trim(),
        "O'Brien Smith <ob@example.com>"
    );
    // Colour: `-c color.diff=always` colours even a piped diff; without it, none.
    let diff = |extra: &[&str]| {
        let mut c = git_with_tool(r.path());
        c.env_remove("NO_COLOR")
            .args(extra)
            .args(["agent-rewind", "diff", "r1"]);
        ok(c.output().unwrap())
    };
    assert!(diff(&["-c", "color.diff=always"]).contains("\x1b["));
    assert!(!diff(&[]).contains("\x1b["));
    // What git passed reaches the diff's own settings: `core.abbrev` sets the length of
    // the ids on the `index` line.
    let index_id_len = |text: String| {
        let line = text
            .lines()
            .find(|l| l.starts_with("index "))
            .unwrap()
            .to_string();
        line["index ".len()..]
            .split("..")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .len()
    };
    assert_eq!(index_id_len(diff(&["-c", "core.abbrev=12"])), 12);
    assert_eq!(index_id_len(diff(&[])), 7);
}
