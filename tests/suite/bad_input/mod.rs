//! Bad input (docs/FORMAT.md "Refs", docs/COMMANDS.md): every invalid name, unknown address,
//! unusable repository or malformed value is refused with one clear `error:` line on stderr
//! (plus a `hint:`), exit 2 for usage errors and 1 for failures — and nothing at all is
//! written.

use crate::common;

mod hints;
mod names;
mod notes;
mod repos;
mod values;

use common::Repo;
use std::path::{Path, PathBuf};
use std::process::Output;

/// Everything a failed command must leave exactly as it was: all refs (with reflogs'
/// existence), every file name under the git dir, and the active-run file.
#[derive(Debug, PartialEq, Eq)]
struct State {
    refs: String,
    files: Vec<String>,
    active_run: Option<String>,
}

fn files_under(root: &Path) -> Vec<String> {
    fn walk(p: &Path, base: &Path, out: &mut Vec<String>) {
        let Ok(rd) = std::fs::read_dir(p) else {
            return;
        };
        for e in rd {
            let e = e.unwrap();
            let path = e.path();
            if e.file_type().unwrap().is_dir() {
                walk(&path, base, out);
            } else {
                out.push(path.strip_prefix(base).unwrap().display().to_string());
            }
        }
    }
    let mut out = vec![];
    walk(root, root, &mut out);
    // `list` keeps a summary cache; it is not state (deleting it changes no result).
    out.retain(|f| !f.starts_with("agent-rewind/cache/"));
    out.sort();
    out
}

fn state_of(git_dir: &Path) -> State {
    State {
        refs: common::git_in(
            git_dir,
            &[
                "for-each-ref",
                "--format=%(refname) %(objectname) %(symref)",
            ],
        ),
        files: files_under(git_dir),
        active_run: std::fs::read_to_string(git_dir.join("agent-rewind/active-run")).ok(),
    }
}

fn state(repo: &Repo) -> State {
    state_of(&repo.path().join(".git"))
}

/// The error contract: exit `code`, nothing on stdout (with `--json`: only the error
/// document, carrying the same message), exactly one `error:` line on stderr, optionally
/// followed by `hint:` lines, nothing else. Returns the error line.
fn assert_error(out: &Output, code: i32, what: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}: exit code (stderr: {stderr})"
    );
    if what.contains("\"--json\"") {
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{what}: stdout is not the JSON error document ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        });
        let message = doc["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(
            stderr.lines().next(),
            Some(format!("error: {message}").as_str()),
            "{what}: {doc:#}"
        );
    } else {
        assert!(
            out.stdout.is_empty(),
            "{what}: unexpected stdout: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(!lines.is_empty(), "{what}: empty stderr");
    assert!(
        lines[0].starts_with("error: ") && lines[0].len() > "error: ".len(),
        "{what}: first stderr line is not an error: {stderr}"
    );
    for l in &lines[1..] {
        assert!(
            l.starts_with("hint: "),
            "{what}: stderr is not one error line plus hints:\n{stderr}"
        );
    }
    lines[0].to_string()
}

/// Run the tool in `repo`, assert the error contract and that nothing changed.
fn refused(repo: &Repo, args: &[&str], code: i32) -> String {
    let before = state(repo);
    let out = repo.run(args);
    let line = assert_error(&out, code, &format!("{args:?}"));
    assert_eq!(state(repo), before, "{args:?} wrote something");
    line
}

/// A repository with one run `r1` (start, plan, implement) and a dirty worktree.
fn repo_with_run() -> Repo {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1"]);
    repo.write("plan.md", "plan\n");
    repo.ok(&["checkpoint", "plan", "--run", "r1"]);
    repo.write("code.rs", "fn main() {}\n");
    repo.ok(&["checkpoint", "implement", "--run", "r1"]);
    repo.write("uncommitted.txt", "the worktree is dirty\n");
    repo
}

/// A directory that is in no repository, with git discovery stopped at its parent.
struct Outside {
    _holder: tempfile::TempDir,
    dir: PathBuf,
}

fn outside() -> Outside {
    let holder = tempfile::tempdir().unwrap();
    let dir = holder.path().join("plain");
    std::fs::create_dir(&dir).unwrap();
    Outside {
        _holder: holder,
        dir,
    }
}

/// `r-good` and `r-bad`; the note of r-bad's tip is overwritten with garbage.
fn repo_with_garbage_note() -> (Repo, String) {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r-good"]);
    repo.ok(&["checkpoint", "plan", "--run", "r-good"]);
    repo.ok(&["start", "--run", "r-bad"]);
    repo.ok(&["checkpoint", "plan", "--run", "r-bad", "--meta", "x=1"]);
    let bad_tip = repo.rev("refs/agent-runs/r-bad/HEAD");
    repo.git(&[
        "notes",
        "--ref=agent-runs/r-bad",
        "add",
        "-f",
        "-m",
        "garbage{",
        &bad_tip,
    ]);
    (repo, bad_tip)
}
