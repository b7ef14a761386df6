//! What must go through the git binary (gix 0.90 has no equivalent): moving the user's
//! HEAD, resetting the user's index to a commit, linked worktrees with git's own
//! bookkeeping, config writes, packing refs, and where git looks for hooks (push, fetch and
//! bundles are in `transport`). Every call is a named method here: no module outside the
//! store builds a git command line. Each is a separate `git` process with the repository
//! made explicit; failures become one-line errors naming the command.

use super::Store;
use agent_rewind_core::error::{Error, Result};
use std::path::Path;
use std::process::{Command, Output};

/// The stdout of a finished `git args`, or its failure as a one-line error.
fn stdout_of(args: &[&str], out: Output) -> Result<String> {
    Ok(String::from_utf8_lossy(&stdout_bytes_of(args, out)?).into_owned())
}

/// [`stdout_of`], the bytes as git wrote them.
fn stdout_bytes_of(args: &[&str], out: Output) -> Result<Vec<u8>> {
    if !out.status.success() {
        return Err(Error::git(format!(
            "`git {}` failed: {}",
            args.join(" "),
            agent_rewind_core::error::one_line(&String::from_utf8_lossy(&out.stderr))
        )));
    }
    Ok(out.stdout)
}

fn could_not_run(e: std::io::Error) -> Error {
    Error::git(format!("could not run git: {e}")).with_source(e)
}

/// A path made absolute against the current directory (as gix resolved it when opening).
fn absolute(p: &Path) -> std::path::PathBuf {
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
            .env("GIT_DIR", absolute(self.git_dir()))
            .env("GIT_COMMON_DIR", absolute(self.common_dir()));
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
    /// What `git checkout` writes at `path` for the blob `id`: git's own conversions
    /// (`ident`, `working-tree-encoding`, eol, smudge filters), by `git cat-file --filters`.
    pub(crate) fn git_checkout_bytes(
        &self,
        id: gix::ObjectId,
        path: &gix::bstr::BStr,
    ) -> Result<Vec<u8>> {
        let dir = self.repo.workdir().unwrap_or(self.repo.git_dir());
        let args = ["cat-file", "--filters"];
        let mut path_arg = std::ffi::OsString::from("--path=");
        path_arg.push(agent_rewind_core::quote::rel_path(path));
        let out = self
            .git_command(dir, &args)
            .arg(path_arg)
            .arg(id.to_string())
            .output()
            .map_err(could_not_run)?;
        stdout_bytes_of(&args, out)
    }

    /// Run git inside this repository's worktree (or git dir when bare).
    pub(super) fn git(&self, args: &[&str]) -> Result<String> {
        let dir = self.repo.workdir().unwrap_or(self.repo.git_dir());
        self.git_in(dir, args)
    }

    /// Run git inside this repository and return its whole output, whatever its exit
    /// status (for commands whose failures are parsed: push, fetch, bundle).
    pub(super) fn git_unchecked(&self, args: &[&str]) -> Result<Output> {
        let dir = self.repo.workdir().unwrap_or(self.repo.git_dir());
        self.git_output_in(dir, args)
    }

    /// Add `trailers` (`Key: value` lines) to the commit message in `file`, as `git
    /// interpret-trailers --in-place` places them (after the message, before git's comment
    /// lines), each only when the message does not already end with it.
    pub fn add_trailers(&self, file: &Path, trailers: &[String]) -> Result<()> {
        let dir = self.repo.workdir().unwrap_or(self.repo.git_dir());
        let mut args = vec![
            "interpret-trailers",
            "--in-place",
            "--if-exists",
            "addIfDifferent",
        ];
        for t in trailers {
            args.push("--trailer");
            args.push(t);
        }
        let out = self
            .git_command(dir, &args)
            .arg("--")
            .arg(absolute(file))
            .output()
            .map_err(could_not_run)?;
        stdout_of(&args, out).map(|_| ())
    }

    /// Add `key = value` to the repository's own config (`git config --local --add`; git
    /// owns config locking). Never touches the user's global config.
    pub fn config_add(&self, key: &str, value: &str) -> Result<()> {
        let dir = self.common_dir().to_string_lossy().into_owned();
        self.git_in(
            self.common_dir(),
            &["--git-dir", &dir, "config", "--local", "--add", key, value],
        )
        .map(|_| ())
    }

    /// The hooks directory git actually uses for this repository: `core.hooksPath` when set
    /// (relative values resolved the way git resolves them), else the common `hooks` folder
    /// that linked worktrees share. The folder may not exist yet.
    pub fn hooks_dir(&self) -> Result<std::path::PathBuf> {
        let dir = self.repo.workdir().unwrap_or(self.repo.git_dir());
        let out = self.git_in(dir, &["rev-parse", "--git-path", "hooks"])?;
        let p = Path::new(out.trim_end_matches(['\n', '\r']));
        if p.as_os_str().is_empty() {
            return Err(Error::other(
                "`git rev-parse --git-path hooks` printed nothing",
            ));
        }
        Ok(if p.is_absolute() {
            p.to_path_buf()
        } else {
            dir.join(p)
        })
    }

    /// `git diff` between two trees as git prints it (`diff --git a/… b/…`, index and mode
    /// lines, the user's diff drivers), or its `--stat`, as `how` asks.
    pub fn diff_text(&self, from: &str, to: &str, how: &DiffText<'_>) -> Result<Vec<u8>> {
        let mut args = vec![
            "diff",
            "--no-ext-diff",
            if how.color {
                "--color=always"
            } else {
                "--no-color"
            },
        ];
        if how.as_user_in.is_none() {
            args.extend(["--src-prefix=a/", "--dst-prefix=b/"]);
        }
        if how.stat {
            args.push("--stat");
        }
        args.extend([from, to, "--"]);
        // Paths are the worktree's (from its top) whatever folder git runs in, and never
        // patterns.
        let paths: Vec<String> = how
            .paths
            .iter()
            .map(|p| match p.as_str() {
                "." | "" => ":(top)".to_string(),
                p => format!(":(top,literal){p}"),
            })
            .collect();
        args.extend(paths.iter().map(String::as_str));
        let top = self.repo.workdir().unwrap_or(self.repo.git_dir());
        // In the user's folder, git applies `diff.relative` itself, as their `git diff` would.
        let dir = match how.as_user_in {
            Some(d) if d.starts_with(top) => d,
            _ => top,
        };
        stdout_bytes_of(&args, self.git_output_in(dir, &args)?)
    }
}

/// What [`Store::diff_text`] prints.
#[derive(Debug, Clone, Copy, Default)]
pub struct DiffText<'a> {
    /// git's `--stat` instead of the patch.
    pub stat: bool,
    /// git's colour codes.
    pub color: bool,
    /// Only these paths (files or folders, relative to the worktree's top).
    pub paths: &'a [String],
    /// Print what the user's own `git diff` prints when run in this folder: their prefix
    /// settings (`diff.noprefix`, `diff.srcPrefix`, `diff.dstPrefix`) and `diff.relative`
    /// apply. `None`: `a/` and `b/` and paths from the top whatever the configuration, for a
    /// program that reads the patch.
    pub as_user_in: Option<&'a Path>,
}
