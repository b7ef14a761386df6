//! What the read commands show a person: colour by git's configuration, the state of each
//! run apart from this worktree's active run, steps in the order they happened, and the
//! tree of every run.

mod colour;
mod runs;

use crate::common::{Repo, path_with_tool};
use std::process::Command;

/// A run recorded by hand, `r1`, with steps `zeta`, `alpha`, `mid` recorded in that order
/// (not the order of their names); the active run of the worktree.
pub fn hand_recorded_run() -> Repo {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1", "--label", "first"]);
    for (step, file) in [("zeta", "z.txt"), ("alpha", "a.txt"), ("mid", "m.txt")] {
        repo.ok(&["step", "begin", step]);
        repo.write(file, &format!("{step}\n"));
        repo.ok(&["step", "end", step, "--status", "completed"]);
    }
    repo
}

/// `git <git_args> agent-rewind <args>` as a person types it (git passes `-c` on), the
/// tool first on PATH; stdout. NO_COLOR is not set.
pub fn through_git(repo: &Repo, git_args: &[&str], args: &[&str]) -> String {
    let out = crate::common::git_cmd(repo.path())
        .env("PATH", path_with_tool())
        .env_remove("NO_COLOR")
        .args(git_args)
        .arg("agent-rewind")
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {git_args:?} agent-rewind {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// [`through_git`] on a terminal (util-linux's `script` gives the command a pseudo
/// terminal); what the terminal received.
pub fn on_terminal(repo: &Repo, git_args: &[&str], args: &[&str]) -> String {
    let line = std::iter::once("git")
        .chain(git_args.iter().copied())
        .chain(["agent-rewind", "--no-pager"])
        .chain(args.iter().copied())
        .map(|a| format!("'{a}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let out = Command::new("script")
        .current_dir(repo.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("PATH", path_with_tool())
        .env("TERM", "xterm")
        .env_remove("NO_COLOR")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script (util-linux)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{line}: {text}");
    text
}
