//! Our private files under the git dir: the one module that spells their paths
//! ([`PrivatePaths`]), encodes them ([`envelope`]: a header naming the format and its
//! version, and a checksum; every format is listed there) and digests what they store
//! ([`digest`]), and the way to replace a file atomically (from bytes, or as it is written).
//! Nothing outside this module writes a header or a checksum of a private file, and nothing
//! here decides what a file's body means.
//!
//! ```text
//! <git dir>/agent-rewind/active-run          the worktree's active run (per worktree)
//! <git dir>/agent-rewind/cache/dirwalk       the untracked-walk cache (per worktree)
//! <git dir>/agent-rewind/cache/fsmonitor     our fsmonitor token and proofs (per worktree)
//! <git dir>/agent-rewind/cache/watchman-sock Watchman's socket path, as its CLI resolved it
//! <git dir>/agent-rewind/cache/monitored     where the last monitored snapshot ended
//! <git dir>/agent-rewind/tmp/                temp files of checkouts and index writes
//! <git dir>/agent-rewind/touched/<run>       paths an agent edited since its last turn
//! <git dir>/agent-rewind/post-commit.lock    held while a post-commit checkpoint is recorded in the background
//! <git dir>/agent-rewind/post-commit.report  what the last background one could not do
//! <git dir>/agent-rewind/post-commit.pending the commit the background one is recording
//! <common dir>/agent-rewind/cache/runs.lines the `list` summary cache
//! <common dir>/agent-rewind/deleted-runs     tombstones of deleted runs
//! <common dir>/agent-rewind/trusted-workflows  digests of stored workflows that may run here
//! <common dir>/agent-rewind/locks/<name>.lock   writer flocks (a run, `backups`, …)
//! <common dir>/agent-rewind/maintenance.lock     held by the background git maintenance we start
//! <common dir>/agent-rewind/runners/<run>.lock  runner flocks
//! <common dir>/agent-rewind/lock-claims/<pid>@<host>#<n>  hard links to git lock files we hold
//! ```
//!
//! `<git dir>` is the worktree's own (`.git/worktrees/<name>` for a linked one), `<common
//! dir>` the one all worktrees share. Every file with data is in the [`envelope`] of its
//! [`envelope::Format`] (docs/FORMAT.md lists them); the locks are empty flocks (the runner
//! lock's content aside). Nothing here decides what goes into these files.

pub mod digest;
pub mod envelope;

use crate::error::{Error, IoResultExt, Result};
use crate::ids::RunId;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The folder of ours inside a git dir.
const DIR: &str = "agent-rewind";

/// The paths of our private files in one worktree of one repository.
pub struct PrivatePaths<'a> {
    git_dir: &'a Path,
    common_dir: &'a Path,
}

impl<'a> PrivatePaths<'a> {
    /// The private paths of another worktree of the same repository (its own git dir).
    pub fn of(git_dir: &'a Path, common_dir: &'a Path) -> PrivatePaths<'a> {
        PrivatePaths {
            git_dir,
            common_dir,
        }
    }

    /// A new empty folder in our temporary folder (`tmp/`, inside the git dir, never the
    /// worktree), readable by the user only, removed with what it holds when dropped: for
    /// handing texts to another program, a secret scanner.
    pub fn scratch_dir(&self, prefix: &str) -> Result<tempfile::TempDir> {
        let tmp = self.tmp_dir();
        std::fs::create_dir_all(&tmp).at(&tmp)?;
        tempfile::Builder::new()
            .prefix(prefix)
            .tempdir_in(&tmp)
            .at(&tmp)
    }

    fn worktree(&self) -> PathBuf {
        self.git_dir.join(DIR)
    }
    fn shared(&self) -> PathBuf {
        self.common_dir.join(DIR)
    }
    /// The worktree's active run.
    pub fn active_run(&self) -> PathBuf {
        self.worktree().join("active-run")
    }
    /// The untracked-walk cache of this worktree.
    pub fn dirwalk_cache(&self) -> PathBuf {
        self.worktree().join("cache").join("dirwalk")
    }
    /// Our fsmonitor token with the digests of the index entries it proves (scan::fsmonitor).
    pub fn fsmonitor_token(&self) -> PathBuf {
        self.worktree().join("cache").join("fsmonitor")
    }
    /// Where the last monitored snapshot ended: its token and tree (scan::snapshot::monitored).
    pub fn monitored_snapshot(&self) -> PathBuf {
        self.worktree().join("cache").join("monitored")
    }
    /// Watchman's socket path as `watchman get-sockname` gave it (scan::fsmonitor).
    pub fn watchman_sockname(&self) -> PathBuf {
        self.worktree().join("cache").join("watchman-sock")
    }
    /// Temp files of checkouts and index writes (never in the worktree itself).
    pub fn tmp_dir(&self) -> PathBuf {
        self.worktree().join("tmp")
    }
    /// The pending list of paths an agent edited since its last turn, of run `key` (a run
    /// id, or `-` while no run is active).
    pub fn touched(&self, key: &str) -> PathBuf {
        self.worktree().join("touched").join(key)
    }
    /// The flock a post-commit checkpoint recorded in the background holds until it is
    /// written (`hooks::background`); later commands wait for it.
    pub fn post_commit_lock(&self) -> PathBuf {
        self.worktree().join("post-commit.lock")
    }
    /// Why the last background post-commit checkpoint recorded nothing, for the next command
    /// to tell (`hooks::background`).
    pub fn post_commit_report(&self) -> PathBuf {
        self.worktree().join("post-commit.report")
    }
    /// The commit whose post-commit checkpoint is being recorded in the background, removed
    /// when its process is done: left behind, it says the process died.
    pub fn post_commit_pending(&self) -> PathBuf {
        self.worktree().join("post-commit.pending")
    }
    /// The summary cache of `list`.
    pub fn runs_cache(&self) -> PathBuf {
        self.shared().join("cache").join("runs.lines")
    }
    /// The summary cache of `list` before version 3 (removed when the new one is written).
    pub fn legacy_runs_cache(&self) -> PathBuf {
        self.shared().join("cache").join("runs.json")
    }
    /// The page `view` writes when no output file is given.
    pub fn view_page(&self) -> PathBuf {
        self.shared().join("view.html")
    }
    /// Tombstones of runs deleted here.
    pub fn deleted_runs(&self) -> PathBuf {
        self.shared().join("deleted-runs")
    }
    /// Digests of the stored workflows this repository may execute (`workflow::trust`).
    pub fn trusted_workflows(&self) -> PathBuf {
        self.shared().join("trusted-workflows")
    }
    /// The writer flock named `name` (a run id, or a fixed name such as `backups`).
    pub fn writer_lock(&self, name: &str) -> PathBuf {
        self.shared().join("locks").join(format!("{name}.lock"))
    }
    /// Hard links to the git lock files (`<ref>.lock`, `packed-refs.lock`) this host's
    /// processes hold, named `<pid>@<host>#<n>`: how a lock left by a killed process of ours
    /// is told apart from one another program holds (store::reffiles).
    pub fn lock_claims(&self) -> PathBuf {
        self.shared().join("lock-claims")
    }
    /// The flock the background maintenance we start holds (store::gitprocess): one at a time.
    pub fn maintenance_lock(&self) -> PathBuf {
        self.shared().join("maintenance.lock")
    }
    /// When the retention policy was last applied.
    pub fn retention_state(&self) -> PathBuf {
        self.shared().join("retention.state")
    }
    /// The runs the retention policy deleted, not yet told.
    pub fn retention_report(&self) -> PathBuf {
        self.shared().join("retention.report")
    }
    /// The runner flock of `run`.
    pub fn runner_lock(&self, run: &RunId) -> PathBuf {
        self.shared().join("runners").join(format!("{run}.lock"))
    }
}

/// Read a file that may not exist yet.
pub fn read_if_exists(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Create the folder that holds `path`. A concurrent `git pack-refs` (or `git gc`) prunes
/// ref folders it emptied: when one of ours is made and removed under us (`create_dir_all`
/// then fails with "File exists" or "not found"), make it again, as git's
/// `raceproof_create_file` does.
pub fn create_parent(path: &Path) -> Result<&Path> {
    let dir = path
        .parent()
        .ok_or_else(|| Error::other(format!("{} has no parent folder", path.display())))?;
    let mut tries = 0;
    loop {
        match std::fs::create_dir_all(dir) {
            Ok(()) => return Ok(dir),
            Err(e)
                if tries < 8
                    && matches!(
                        e.kind(),
                        std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::NotFound
                    ) =>
            {
                tries += 1;
            }
            Err(e) => return Err(Error::io(dir, e)),
        }
    }
}

/// A temp file (`.agent-rewind-*.tmp`) in the folder of `path` (created if missing), removed
/// when dropped unless persisted.
fn temp_file_beside(path: &Path) -> Result<tempfile::NamedTempFile> {
    let dir = create_parent(path)?;
    tempfile::Builder::new()
        .prefix(".agent-rewind-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .at(dir)
}

/// Replace `path` with `bytes` atomically: a temp file beside it (`.agent-rewind-*.tmp`,
/// removed on failure), then a rename. Readers see the old content or the new, never a
/// part. `mode` sets the new file's permissions ([`crate::platform::mode`]), else the temp file's default.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: Option<u32>) -> Result<()> {
    let mut tmp = temp_file_beside(path)?;
    tmp.write_all(bytes).at(tmp.path())?;
    if let Some(mode) = mode {
        crate::platform::mode::set_permission_bits(tmp.as_file(), mode).at(tmp.path())?;
    }
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

/// Replace `path` atomically with what `write` writes into a temp file beside it (buffered),
/// without holding the bytes in memory: a big file (the `list` cache) is written as it is
/// made. Nothing replaces `path` unless `write` and the flush succeed. Returns the file
/// written, open for reading and writing: what it holds is what `write` wrote, even if
/// another process replaces `path` afterwards.
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<&mut std::fs::File>) -> std::io::Result<()>,
) -> Result<std::fs::File> {
    let mut tmp = temp_file_beside(path)?;
    let tmp_path = tmp.path().to_path_buf();
    {
        let mut w = std::io::BufWriter::with_capacity(1 << 16, tmp.as_file_mut());
        write(&mut w).at(&tmp_path)?;
        w.flush().at(&tmp_path)?;
    }
    tmp.persist(path).map_err(|e| Error::io(path, e.error))
}

/// Remove a file that may already be gone.
pub fn remove_if_exists(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(path, e)),
        _ => Ok(()),
    }
}
