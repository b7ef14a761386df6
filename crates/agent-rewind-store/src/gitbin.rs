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

/// Above this many written files, `reset_user_index` refreshes the whole index instead of
/// naming them (measured on 30k entries: 100 named paths cost about one full refresh).
const REFRESH_PATHS_LIMIT: usize = 64;

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
    fn git_in(&self, dir: &Path, args: &[&str]) -> Result<String> {
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

    /// Whether background maintenance may run: `agentRewind.autoGc` is not false as git
    /// reads a boolean (`off`, `False`, `no`, `0` …). A value that is no boolean leaves it on:
    /// maintenance starts after a checkpoint was written, where nothing can be refused.
    pub(super) fn auto_gc_allowed(&self) -> bool {
        !matches!(self.config_bool("agentRewind.autoGc"), Ok(Some(false)))
    }

    /// Start `git <args>` in the background unless one we started is still running: the
    /// child gets the maintenance flock as its stdin, so the lock lives exactly as long as
    /// the child (and the git processes it starts, which inherit it) keeps it open; the
    /// kernel drops it when the last of them exits, however it ends. So checkpoints in a
    /// tight loop start one fold at a time, not one each competing for the CPU.
    fn spawn_maintenance(&self, args: &[&str]) {
        if !self.auto_gc_allowed() {
            return;
        }
        let lock = match super::lock::try_lock_file(&self.private().maintenance_lock()) {
            Ok(Some(lock)) => lock,
            Ok(None) => {
                agent_rewind_core::trace::mark("maintenance: one is running, none started");
                return;
            }
            Err(_) => return,
        };
        let dir = self.repo.workdir().unwrap_or(self.repo.git_dir());
        let started = self
            .git_command(dir, args)
            .stdin(std::process::Stdio::from(lock))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if started.is_ok() {
            agent_rewind_core::trace::mark(&format!("maintenance: started git {}", args.join(" ")));
        }
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

impl crate::facade::Refs<'_> {
    /// Create `branch` (a name under `refs/heads/`, which must not exist yet) at `commit`,
    /// with a compare-and-swap; HEAD is not touched.
    pub fn create_branch(&self, branch: &str, commit: gix::ObjectId) -> Result<()> {
        self.publish(
            &[super::RefChange::set(
                super::layout::branch_ref(branch).as_str(),
                commit,
                None,
            )],
            "agent-rewind: branch for rewound run",
        )
        .map_err(|e| Error::from(e).context(format!("could not create branch {branch}")))
    }

    /// Pack every ref into `packed-refs` (`git pack-refs --all`).
    /// A `packed-refs.lock` a killed process of ours left is removed first.
    pub fn pack_refs(&self) -> Result<()> {
        let lock = self.store.common_dir().join("packed-refs.lock");
        self.store.remove_stale_locks(&[lock]);
        self.store.git(&["pack-refs", "--all"]).map(|_| ())
    }

    /// Drop the reflog entries of `name` that point at commits its current value no longer
    /// reaches (`git reflog expire --expire-unreachable=now`), keeping the others.
    pub fn expire_unreachable_reflog(&self, name: &str) -> Result<()> {
        self.store
            .git(&[
                "reflog",
                "expire",
                "--expire=never",
                "--expire-unreachable=now",
                name,
            ])
            .map(|_| ())
    }

    /// Whether a local branch exists.
    pub fn branch_exists(&self, branch: &str) -> Result<bool> {
        Ok(self
            .ref_target(&super::layout::branch_ref(branch))?
            .is_some())
    }

    /// Validate a branch name the way git does.
    pub fn check_branch_name(&self, branch: &str) -> Result<()> {
        let out = self.store.git_output_in(
            self.store.repo.git_dir(),
            &["check-ref-format", "--branch", branch],
        )?;
        if !out.status.success() {
            return Err(Error::usage(format!("invalid branch name {branch:?}")));
        }
        Ok(())
    }
}

impl crate::facade::Worktree<'_> {
    /// Attach the user's HEAD to the existing branch `full_ref` (`refs/heads/…`) without
    /// touching index or files; HEAD's reflog gets `message`.
    pub fn attach_user_head(&self, full_ref: &str, message: &str) -> Result<()> {
        if !full_ref.starts_with(super::layout::BRANCHES_PREFIX) {
            return Err(Error::corrupt(format!(
                "{full_ref:?} is not a branch (refs/heads/…)"
            )));
        }
        self.store
            .git(&["symbolic-ref", "-m", message, "HEAD", full_ref])
            .map(|_| ())
    }

    /// Point the user's HEAD at `branch` (creating the branch at `commit`, which must not
    /// exist yet), or detach it at `commit`. `commit = None` leaves an unborn branch.
    pub fn move_user_head(
        &self,
        branch: Option<&str>,
        commit: Option<gix::ObjectId>,
    ) -> Result<()> {
        agent_rewind_core::fail_point!("head:move");
        match (branch, commit) {
            (Some(b), Some(c)) => {
                // The branch in-process (compare-and-swap: it must not exist), HEAD through git
                // so HEAD's reflog says where it went.
                self.store.refs().create_branch(b, c)?;
                self.attach_user_head(&super::layout::branch_ref(b), "agent-rewind: checkout")?;
            }
            (Some(b), None) => {
                self.attach_user_head(&super::layout::branch_ref(b), "agent-rewind: checkout")?;
            }
            (None, Some(c)) => {
                self.store.git(&[
                    "update-ref",
                    "--no-deref",
                    "-m",
                    "agent-rewind: checkout",
                    "HEAD",
                    &c.to_string(),
                ])?;
            }
            (None, None) => return Err(Error::usage("cannot detach HEAD without a commit")),
        }
        Ok(())
    }

    /// `git worktree add` a new linked worktree at `path` on a new `branch` at `commit`
    /// (or detached when `branch` is None).
    pub fn add_linked_worktree(
        &self,
        path: &Path,
        branch: Option<&str>,
        commit: Option<gix::ObjectId>,
    ) -> Result<()> {
        let p = path.to_string_lossy().to_string();
        let c = commit.map(|c| c.to_string());
        let mut args = vec!["worktree", "add", "--quiet"];
        match (branch, &c) {
            (Some(b), Some(c)) => args.extend(["-b", b, p.as_str(), c.as_str()]),
            (None, Some(c)) => args.extend(["--detach", p.as_str(), c.as_str()]),
            (Some(b), None) => args.extend(["--orphan", "-b", b, p.as_str()]),
            (None, None) => {
                return Err(Error::refused(
                    "the checkpoint has no commit to check out detached",
                ));
            }
        }
        let existed = branch
            .map(|b| self.store.refs().branch_exists(b))
            .transpose()?;
        self.store
            .git_in(self.store.common_dir(), &args)
            .map(|_| ())
            .inspect_err(|_| {
                // git makes the branch before the folder, and leaves it when the folder cannot
                // be made (its own worktree record it removes).
                if let (Some(b), Some(false)) = (branch, existed)
                    && self.store.refs().branch_exists(b).unwrap_or(false)
                {
                    let _ = self
                        .store
                        .git_in(self.store.common_dir(), &["branch", "-D", b]);
                }
            })
    }

    /// Take back a linked worktree `add_linked_worktree` just made (its folder, git's record
    /// of it, and the branch it created), when the operation that needed it failed.
    pub fn remove_linked_worktree(&self, path: &Path, branch: Option<&str>) -> Result<()> {
        let p = path.to_string_lossy().to_string();
        self.store.git_in(
            self.store.common_dir(),
            &["worktree", "remove", "--force", p.as_str()],
        )?;
        if let Some(b) = branch {
            self.store
                .git_in(self.store.common_dir(), &["branch", "-D", b])?;
        }
        Ok(())
    }
}

impl crate::facade::Maintenance<'_> {
    /// Start `git gc --auto` in the background, the way git's own porcelain does after it
    /// writes objects (gix never does): it packs loose objects and refs only past git's own
    /// thresholds (`gc.auto`, `gc.autoPackLimit`). It runs in the foreground of its own
    /// process (`gc.autoDetach=false`) so that the maintenance lock covers all of it.
    /// Off with `agentRewind.autoGc = false`. Never waits, never fails.
    pub fn spawn_auto_gc(&self) {
        self.store
            .spawn_maintenance(&["-c", "gc.autoDetach=false", "gc", "--auto", "--quiet"]);
    }

    /// Fold the small packs checkpoints write into one, in the background, without touching
    /// the big packs (`git repack --geometric=2`: its cost follows the small packs, unlike
    /// the full repack `git gc --auto` does once there are too many packs).
    pub fn spawn_small_pack_repack(&self) {
        self.store
            .spawn_maintenance(&["repack", "-d", "-l", "-q", "--geometric=2"]);
    }
}

impl crate::facade::Index<'_> {
    /// Make the user's index hold `tree` (emptied for `None`), as `git read-tree --reset`
    /// does: entries that did not change keep their stat data. Only `refresh` (files just
    /// written whose content is what `tree` holds) get fresh stat data (`git add --refresh`),
    /// instead of git's refresh of every entry (a full `lstat` pass); a changed file left
    /// out is only re-hashed by git's next status.
    pub fn reset_user_index(&self, tree: Option<gix::ObjectId>, refresh: &[&[u8]]) -> Result<()> {
        let Some(tree) = tree else {
            self.store.git(&["read-tree", "--empty"])?;
            return Ok(());
        };
        self.store
            .git(&["read-tree", "--reset", &tree.to_string()])?;
        if refresh.is_empty() {
            return Ok(());
        }
        // git matches every entry against every pathspec: past a few dozen paths one full
        // refresh (an lstat per entry) is cheaper.
        if refresh.len() > REFRESH_PATHS_LIMIT {
            // `--refresh` exits non-zero when files differ from the index: that is expected.
            let _ = self
                .store
                .git_output_in(self.store.workdir()?, &["update-index", "-q", "--refresh"])?;
            return Ok(());
        }
        let mut paths = Vec::new();
        for p in refresh {
            paths.extend_from_slice(p);
            paths.push(0);
        }
        // Literal: a path is a name, never a glob or `:(magic)`.
        let args = [
            "--literal-pathspecs",
            "add",
            "--refresh",
            "--pathspec-from-file=-",
            "--pathspec-file-nul",
        ];
        // Best effort: the index is already right; without fresh stat data git only
        // re-hashes those files on its next status (a file removed meanwhile fails this).
        let _ = self
            .store
            .git_with_input(self.store.workdir()?, &args, &paths);
        Ok(())
    }
}
