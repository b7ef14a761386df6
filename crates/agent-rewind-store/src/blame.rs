//! The git command lines of attribution: `git blame -w -M -C --porcelain` of one file (where
//! every line came from, as git finds it: moves and copies followed, whitespace ignored)
//! and `git rev-list` of a range. Each is a named method; what git printed is parsed by the
//! caller (`agent_rewind::attribution`). It must never decide who wrote a line.

use crate::repository::Store;
use agent_rewind_core::error::{Error, IoResultExt, Result};
use agent_rewind_scan::gixerror::from_gix;
use gix::ObjectId;
use std::ffi::OsStr;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Stdio};
use std::thread::JoinHandle;

/// A revision or range as the user typed it, refused when git would read it as an option.
fn checked_rev(rev: &str) -> Result<&str> {
    if rev.is_empty() || rev.starts_with('-') {
        return Err(
            Error::usage(format!("{rev:?} is not a revision")).with_hint(
                "name a commit (HEAD, a branch, a commit id) or a range such as main..HEAD",
            ),
        );
    }
    Ok(rev)
}

/// A `git blame` still running; its output is read as it comes (on threads of their own, so
/// git never waits on a full pipe).
pub struct RunningBlame {
    /// The scratch index of a file git does not know yet (see
    /// [`Objects::blame_porcelain_start`]), removed when the blame is done.
    _scratch: Option<tempfile::TempDir>,
    child: Child,
    stdout: JoinHandle<std::io::Result<Vec<u8>>>,
    stderr: JoinHandle<std::io::Result<Vec<u8>>>,
}

impl RunningBlame {
    /// Wait for git; its stdout, or its failure as a usage error (a file git does not know
    /// there, a bad range or revision).
    pub fn finish(mut self) -> Result<Vec<u8>> {
        let status = self.child.wait().map_err(could_not_run)?;
        let joined = |h: JoinHandle<std::io::Result<Vec<u8>>>| {
            h.join()
                .map_err(|_| Error::git("reading git blame's output failed"))?
                .map_err(could_not_run)
        };
        let out = joined(self.stdout)?;
        let err = joined(self.stderr)?;
        if !status.success() {
            let why = agent_rewind_core::error::one_line(&String::from_utf8_lossy(&err));
            let why = why.strip_prefix("fatal: ").unwrap_or(&why).to_string();
            return Err(Error::usage(format!("git blame: {why}")).with_hint(
                "name a file git knows at that revision (paths are relative to the current folder)",
            ));
        }
        Ok(out)
    }
}

fn could_not_run(e: std::io::Error) -> Error {
    Error::git(format!("could not run git: {e}")).with_source(e)
}

/// `git rev-list`'s line after each commit: its author.
const FORMAT: &str = "--format=%an <%ae>";

/// [`Objects::blame_porcelain`].
pub(crate) fn blame_porcelain(
    store: &Store,
    cwd: &Path,
    rev: Option<&str>,
    path: &OsStr,
    ranges: &[String],
) -> Result<Vec<u8>> {
    store
        .objects()
        .blame_porcelain_start(cwd, rev, path, ranges)?
        .finish()
}

/// [`Objects::blame_porcelain_start`].
pub(crate) fn blame_porcelain_start(
    store: &Store,
    cwd: &Path,
    rev: Option<&str>,
    path: &OsStr,
    ranges: &[String],
) -> Result<RunningBlame> {
    let mut args: Vec<std::ffi::OsString> = ["blame", "-w", "-M", "-C", "--porcelain"]
        .iter()
        .map(Into::into)
        .collect();
    for r in ranges {
        if r.is_empty() {
            return Err(
                Error::usage("-L needs a range").with_hint("e.g. -L 10,20 or -L /fn main/,+5")
            );
        }
        args.push(format!("-L{r}").into());
    }
    if let Some(rev) = rev {
        args.push(checked_rev(rev)?.into());
    }
    args.push("--".into());
    args.push(path.into());
    let scratch = match rev {
        None if !known_to_git(store, cwd, path)? => Some(intent_to_add(store, cwd, path)?),
        _ => None,
    };
    let mut command = store.git_command(cwd, &[]);
    if let Some(dir) = &scratch {
        command.env("GIT_INDEX_FILE", dir.path().join("index"));
    }
    let mut child = command
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(could_not_run)?;
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = vec![];
            if let Some(mut r) = r {
                r.read_to_end(&mut buf)?;
            }
            Ok(buf)
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    Ok(RunningBlame {
        _scratch: scratch,
        child,
        stdout,
        stderr,
    })
}

/// Whether `git blame` of the worktree's file finds `path` (relative to `cwd`): in HEAD's
/// tree or in the index. A path outside the worktree counts as known (git says why not).
fn known_to_git(store: &Store, cwd: &Path, path: &OsStr) -> Result<bool> {
    let Some(rel) = store.repo.workdir().and_then(|w| {
        let (w, file) = (w.canonicalize().ok()?, cwd.join(path));
        let dir = file.parent()?.canonicalize().ok()?;
        Some(dir.strip_prefix(&w).ok()?.join(file.file_name()?))
    }) else {
        return Ok(true);
    };
    let in_head = match store.repo.head_tree() {
        Ok(tree) => tree
            .lookup_entry_by_path(&rel)
            .map_err(|e| Error::git(format!("reading HEAD's tree: {e}")))?
            .is_some(),
        Err(_) => false,
    };
    if in_head {
        return Ok(true);
    }
    let index = store
        .repo
        .index_or_empty()
        .map_err(|e| Error::git(format!("reading the index: {e}")))?;
    let Some(rel) = rel.to_str() else {
        return Ok(true);
    };
    Ok(index.entry_by_path(gix::bstr::BStr::new(rel)).is_some())
}

/// A scratch index (a new folder in the store's temporary folder, never named after the
/// file) holding only `path` marked intent-to-add (`git add -N -f`), so that `git blame`
/// of a file git does not know yet blames every line as not committed, as it does for a
/// file added with `-N`. The user's index is never touched.
fn intent_to_add(store: &Store, cwd: &Path, path: &OsStr) -> Result<tempfile::TempDir> {
    let tmp = store.private().tmp_dir();
    std::fs::create_dir_all(&tmp).at(&tmp)?;
    let dir = tempfile::Builder::new()
        .prefix("blame-")
        .tempdir_in(&tmp)
        .at(&tmp)?;
    let out = store
        .git_command(cwd, &["add", "-N", "-f", "--"])
        .arg(path)
        .env("GIT_INDEX_FILE", dir.path().join("index"))
        .output()
        .map_err(could_not_run)?;
    if !out.status.success() {
        let why = agent_rewind_core::error::one_line(&String::from_utf8_lossy(&out.stderr));
        let why = why.strip_prefix("fatal: ").unwrap_or(&why).to_string();
        return Err(Error::usage(format!("git blame: {why}"))
            .with_hint("name a file in the worktree, relative to the current folder"));
    }
    Ok(dir)
}

/// [`Objects::blob_line_keys`].
pub(crate) fn blob_line_keys(store: &Store, id: ObjectId, max: usize) -> Result<Option<Vec<u64>>> {
    let blob = store.repo.find_blob(id).map_err(from_gix)?;
    if blob.data.len() > max {
        return Ok(None);
    }
    Ok(Some(crate::linemap::keys(&blob.data)))
}

/// [`Objects::resolve_commit`].
pub(crate) fn resolve_commit(store: &Store, spec: &str) -> Result<ObjectId> {
    let spec = checked_rev(spec)?;
    let not_one = |e: String| {
        Error::usage(format!("{spec}: not a commit ({e})"))
            .with_hint("name a commit: HEAD, a branch, a tag or a commit id")
    };
    let id = store
        .repo
        .rev_parse_single(spec)
        .map_err(|e| not_one(agent_rewind_core::error::one_line(&e.to_string())))?;
    let object = id
        .object()
        .map_err(|e| not_one(agent_rewind_core::error::one_line(&e.to_string())))?;
    let commit = object
        .peel_to_kind(gix::object::Kind::Commit)
        .map_err(|e| not_one(agent_rewind_core::error::one_line(&e.to_string())))?;
    Ok(commit.id)
}

/// [`Objects::rev_list`].
pub(crate) fn rev_list(store: &Store, range: &str) -> Result<Vec<(ObjectId, String)>> {
    let range = checked_rev(range)?;
    let single = !range.contains("..") && !range.contains('^');
    let spec = if single {
        format!("{range}^!")
    } else {
        range.to_string()
    };
    let dir = store.git_run_dir();
    let out = store
        .git_command(dir, &["rev-list", "--no-merges", FORMAT, &spec, "--"])
        .output()
        .map_err(|e| Error::git(format!("could not run git: {e}")).with_source(e))?;
    let out = if !out.status.success() && single {
        // A root commit has no parent for `^!`: the commit alone.
        store
            .git_command(
                dir,
                &["rev-list", "--no-merges", FORMAT, "-n1", range, "--"],
            )
            .output()
            .map_err(|e| Error::git(format!("could not run git: {e}")).with_source(e))?
    } else {
        out
    };
    if !out.status.success() {
        let why = agent_rewind_core::error::one_line(&String::from_utf8_lossy(&out.stderr));
        return Err(
            Error::usage(format!("{range}: not a revision or range ({why})"))
                .with_hint("name a commit, a branch or a range such as main..HEAD"),
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let mut commits = vec![];
    while let Some(l) = lines.next() {
        let id = l
            .strip_prefix("commit ")
            .and_then(|h| ObjectId::from_hex(h.trim().as_bytes()).ok())
            .ok_or_else(|| Error::git(format!("git rev-list printed {l:?}")))?;
        commits.push((id, lines.next().unwrap_or_default().to_string()));
    }
    Ok(commits)
}
