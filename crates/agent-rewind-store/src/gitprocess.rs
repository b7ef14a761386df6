//! Running git: the one place the store starts a `git` process, for what gix 0.90 cannot do
//! (moving the user's HEAD, linked worktrees, config writes, push, fetch, bundles …). Each
//! is a separate process with the repository made explicit in its environment; a failure
//! becomes a one-line error naming the command. It only runs what a facade asks: the
//! command lines are spelled by the facades' methods, and no crate above the store reaches
//! this module.

use crate::repository::Store;
use agent_rewind_core::error::{Error, Result};
use std::path::Path;
use std::process::{Command, Output};

/// The stdout of a finished `git args`, or its failure as a one-line error.
pub(crate) fn stdout_of(args: &[&str], out: Output) -> Result<String> {
    Ok(String::from_utf8_lossy(&stdout_bytes_of(args, out)?).into_owned())
}

/// [`stdout_of`], the bytes as git wrote them.
pub(crate) fn stdout_bytes_of(args: &[&str], out: Output) -> Result<Vec<u8>> {
    if !out.status.success() {
        return Err(Error::git(format!(
            "`git {}` failed: {}",
            args.join(" "),
            agent_rewind_core::error::one_line(&String::from_utf8_lossy(&out.stderr))
        )));
    }
    Ok(out.stdout)
}

pub(crate) fn could_not_run(e: std::io::Error) -> Error {
    Error::git(format!("could not run git: {e}")).with_source(e)
}

/// A path made absolute against the current directory (as gix resolved it when opening).
pub(crate) fn absolute(p: &Path) -> std::path::PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

impl Store {
    /// `git args` in `dir`, on this repository whatever the environment says: `GIT_DIR`,
    /// `GIT_COMMON_DIR` and `GIT_WORK_TREE` name the repository we opened (absolute, so
    /// the child's working directory does not matter), and never a `GIT_INDEX_FILE`
    /// inherited from a hook's environment: every git we start works on the repository's
    /// own index.
    pub(super) fn git_command(&self, dir: &Path, args: &[&str]) -> Command {
        let mut c = Command::new("git");
        c.current_dir(dir)
            .args(args)
            .env_remove("GIT_INDEX_FILE")
            .env("GIT_DIR", absolute(self.repo.git_dir()))
            .env("GIT_COMMON_DIR", absolute(self.repo.common_dir()));
        match self.repo.workdir() {
            Some(w) => c.env("GIT_WORK_TREE", absolute(w)),
            None => c.env_remove("GIT_WORK_TREE"),
        };
        c
    }

    pub(super) fn git_output_in(&self, dir: &Path, args: &[&str]) -> Result<Output> {
        self.git_command(dir, args).output().map_err(could_not_run)
    }

    /// Run git in `dir` with `args`; return stdout on success.
    pub(crate) fn git_in(&self, dir: &Path, args: &[&str]) -> Result<String> {
        stdout_of(args, self.git_output_in(dir, args)?)
    }

    /// Run git in `dir` with `input` on stdin; return stdout on success.
    pub(super) fn git_with_input(&self, dir: &Path, args: &[&str], input: &[u8]) -> Result<String> {
        use std::io::Write;
        let mut child = self
            .git_command(dir, args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(could_not_run)?;
        let mut stdin = child.stdin.take().expect("piped stdin");
        let written = stdin.write_all(input);
        drop(stdin);
        let out = stdout_of(args, child.wait_with_output().map_err(could_not_run)?)?;
        written.map_err(could_not_run)?;
        Ok(out)
    }
}

impl Store {
    /// The folder git runs in for this repository: the worktree's top, or the git dir of a
    /// bare repository (a relative remote path, for one, resolves from there).
    pub(crate) fn git_run_dir(&self) -> &Path {
        self.repo.workdir().unwrap_or(self.repo.git_dir())
    }

    /// Run git inside this repository's worktree (or git dir when bare).
    pub(super) fn git(&self, args: &[&str]) -> Result<String> {
        let dir = self.git_run_dir();
        self.git_in(dir, args)
    }

    /// Run git inside this repository and return its whole output, whatever its exit
    /// status (for commands whose failures are parsed: push, fetch, bundle).
    pub(super) fn git_unchecked(&self, args: &[&str]) -> Result<Output> {
        let dir = self.git_run_dir();
        self.git_output_in(dir, args)
    }
}
