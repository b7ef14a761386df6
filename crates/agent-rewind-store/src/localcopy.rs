//! Copying one run's notes history from a remote that is a repository on this machine, in
//! this process, instead of a second `git fetch` (docs/design/fetch.md). Like `git clone --local`, it bypasses the transport: the remote is opened
//! read-only with gix, `refs/notes/agent-runs/<run>` is resolved there, its commits, trees
//! and blobs are read (each checked against its id), the ones this repository lacks are
//! written as one pack (`Objects::write_as_pack`), and then the staging ref is set (or pruned)
//! with compare-and-swap, exactly as the `git fetch` it replaces would have left it.
//!
//! It is taken only when nothing git's upload-pack would do differently can apply: the
//! remote must be owned by the current user (git's `safe.directory` rule without the list)
//! and must have no hidden refs, alternates, shallow file, namespace, replace refs in use or
//! repository extension gix reads differently; otherwise (or on anything unexpected) the
//! caller falls back to `git fetch`. It never writes to the remote, never writes anything
//! here but one pack and the one staging ref, and never reads an unbounded history.

use crate::packwrite::PackEntry;
use crate::publish::RefChange;
use crate::repository::Store;
use agent_rewind_core::error::{Error, Result};
use gix::ObjectId;
use gix::objs::Kind;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The most objects one run's notes history may have to be copied here; past it, `git
/// fetch` does it (a notes history is a commit, a tree or two and a blob per checkpoint).
const MAX_OBJECTS: usize = 100_000;
/// The most bytes (uncompressed) one run's notes history may have to be copied here.
const MAX_BYTES: usize = 64 << 20;

/// A remote repository on this machine, opened read-only for [`Store::copy_notes_from`].
pub struct LocalRemote {
    repo: gix::Repository,
    /// Its git directory, for messages.
    git_dir: PathBuf,
}

/// What [`Store::copy_notes_from`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotesCopy {
    /// The staging ref now points at the remote's notes tip; `objects` were new here.
    Staged { objects: usize },
    /// The remote has no such notes ref; a staging ref of that name was removed (as `git
    /// fetch --prune` would) if there was one.
    Absent,
    /// Not copied here (the reason, for the trace): `git fetch` must do it.
    Fallback(String),
}

impl Store {
    /// Every object of the notes history at `tip` in `remote` that this repository lacks,
    /// read whole. The walk goes through objects present here too (their children are read
    /// from the remote), so whatever the ref will reach is complete afterwards. `Ok(Err)`:
    /// not for this path (too large, or the tip is not a commit).
    fn missing_history(
        &self,
        remote: &LocalRemote,
        source_ref: &str,
        tip: ObjectId,
    ) -> Result<std::result::Result<Vec<PackEntry>, String>> {
        let damaged = |id: ObjectId, what: String| {
            Error::corrupt(format!(
                "{source_ref} in {} is damaged: object {id} {what}",
                remote.git_dir.display()
            ))
            .with_hint(format!(
                "nothing was imported; `git fsck` in {} names what is wrong",
                remote.git_dir.display()
            ))
        };
        let hash = self.repo.object_hash();
        let mut seen: HashSet<ObjectId> = HashSet::new();
        let mut todo: Vec<(ObjectId, Kind)> = vec![(tip, Kind::Commit)];
        let mut out: Vec<PackEntry> = vec![];
        let mut bytes = 0usize;
        while let Some((id, expected)) = todo.pop() {
            if !seen.insert(id) {
                continue;
            }
            if seen.len() > MAX_OBJECTS || bytes > MAX_BYTES {
                return Ok(Err(format!(
                    "{source_ref} has more than {MAX_OBJECTS} objects or {MAX_BYTES} bytes"
                )));
            }
            let object = match remote.repo.try_find_object(id) {
                Ok(Some(o)) => o.detach(),
                Ok(None) => return Err(damaged(id, "is missing".into())),
                Err(e) => return Err(damaged(id, format!("cannot be read ({e})"))),
            };
            match gix::objs::compute_hash(hash, object.kind, &object.data) {
                Ok(actual) if actual == id => {}
                _ => return Err(damaged(id, "does not match its id".into())),
            }
            if object.kind != expected {
                if id == tip {
                    return Ok(Err(format!("{source_ref} points at a {}", object.kind)));
                }
                return Err(damaged(
                    id,
                    format!("is a {}, not a {expected}", object.kind),
                ));
            }
            let bad = |e: &dyn std::fmt::Display| damaged(id, format!("cannot be parsed ({e})"));
            match object.kind {
                Kind::Commit => {
                    let commit = gix::objs::CommitRef::from_bytes(&object.data, hash)
                        .map_err(|e| bad(&e))?;
                    todo.push((commit.tree(), Kind::Tree));
                    todo.extend(commit.parents().map(|p| (p, Kind::Commit)));
                }
                Kind::Tree => {
                    let tree =
                        gix::objs::TreeRef::from_bytes(&object.data, hash).map_err(|e| bad(&e))?;
                    for entry in tree.entries {
                        if entry.mode.is_tree() {
                            todo.push((entry.oid.to_owned(), Kind::Tree));
                        } else if entry.mode.is_blob_or_symlink() {
                            todo.push((entry.oid.to_owned(), Kind::Blob));
                        }
                        // Submodule commits are not part of the history (git does not
                        // fetch them either).
                    }
                }
                Kind::Blob | Kind::Tag => {}
            }
            // Present physically (gix's `has_object` counts the empty tree as present always),
            // in the packs known when this process first looked: each miss would otherwise
            // list the pack directory again and stat every pack. A pack that came since (a
            // concurrent fetch) only makes this write an object twice, which git allows.
            if !self.repo.objects.exists_without_refresh(&id) {
                bytes += object.data.len();
                out.push((id, object.kind, object.data));
            }
        }
        Ok(Ok(out))
    }
}

/// [`Remote::open_local_remote`].
pub(crate) fn open_local_remote(
    store: &Store,
    name: &str,
) -> std::result::Result<LocalRemote, String> {
    for var in [
        "GIT_NAMESPACE",
        "GIT_ALLOW_PROTOCOL",
        "GIT_PROTOCOL_FROM_USER",
    ] {
        if std::env::var_os(var).is_some() {
            return Err(format!("{var} is set"));
        }
    }
    let config = store.repo.config_snapshot();
    for key in [
        format!("remote.{name}.uploadpack"),
        format!("remote.{name}.vcs"),
        "protocol.allow".to_string(),
        "protocol.file.allow".to_string(),
    ] {
        if config.string(&key).is_some() {
            return Err(format!("{key} is set"));
        }
    }
    let remote = store
        .repo
        .find_remote(name)
        .map_err(|e| format!("remote {name}: {e}"))?;
    let url = remote
        .url(gix::remote::Direction::Fetch)
        .ok_or("no fetch URL")?;
    if url.scheme != gix::url::Scheme::File || url.host.is_some() || url.user.is_some() {
        return Err(format!("not a local path: {}", url.to_bstring()));
    }
    let path = gix::path::from_bstr(gix::bstr::ByteSlice::as_bstr(url.path.as_slice()))
        .map_err(|_| "the path is not valid on this system".to_string())?;
    if path.as_os_str().is_empty() || path.starts_with("~") {
        return Err(format!("path {} is not resolved here", path.display()));
    }
    // git runs in the top of the worktree (or the git dir of a bare repository), and
    // resolves a relative remote path from there.
    let base = store.git_run_dir();
    let path = base.join(path);
    let (git_dir, worktree) = locate_git_dir(&path)
        .ok_or_else(|| format!("{} is not a repository git reads as is", path.display()))?;
    for p in std::iter::once(&git_dir).chain(worktree.as_ref()) {
        match gix::sec::identity::is_path_owned_by_current_user(p) {
            Ok(true) => {}
            _ => return Err(format!("{} is not owned by the current user", p.display())),
        }
    }
    for (file, what) in [
        ("shallow", "shallow"),
        ("commondir", "a linked worktree"),
        ("objects/info/alternates", "borrowing objects (alternates)"),
    ] {
        if git_dir.join(file).exists() {
            return Err(format!("{} is {what}", git_dir.display()));
        }
    }
    agent_rewind_core::trace::mark("fetch: local remote checked");
    let mut permissions = gix::open::Permissions::default();
    permissions.env.git_prefix = gix::sec::Permission::Deny;
    let repo = gix::open::Options::default()
        .permissions(permissions)
        .open_path_as_is(true)
        .bail_if_untrusted(true)
        .config_overrides(["core.useReplaceRefs=false"])
        .open(&git_dir)
        .map(gix::Repository::from)
        .map_err(|e| format!("cannot open {}: {e}", git_dir.display()))?;
    if repo.object_hash() != store.repo.object_hash() {
        return Err("another object format".into());
    }
    let config = repo.config_snapshot();
    for key in ["uploadpack.hideRefs", "transfer.hideRefs"] {
        if config.plumbing().string(key).is_some() {
            return Err(format!("{key} is set there"));
        }
    }
    // Ours and the remote's object format, checked equal above (`sha1`, `sha256`).
    let format = store.repo.object_hash().to_string();
    if let Some(sections) = config.plumbing().sections_by_name("extensions") {
        for section in sections {
            for key in section.value_names() {
                let key = key.to_string().to_ascii_lowercase();
                let value = section
                    .value(&key)
                    .map(|v| v.to_string().to_ascii_lowercase());
                let known = match key.as_str() {
                    "objectformat" => value.as_deref() == Some(format.as_str()),
                    "refstorage" => value.as_deref() == Some("files"),
                    "worktreeconfig" | "preciousobjects" | "noop" => true,
                    _ => false,
                };
                if !known {
                    return Err(format!("extensions.{key} is set there"));
                }
            }
        }
    }
    agent_rewind_core::trace::mark("fetch: local remote opened");
    Ok(LocalRemote { repo, git_dir })
}

/// [`Remote::copy_notes_from`].
pub(crate) fn copy_notes_from(
    store: &Store,
    remote: &LocalRemote,
    source_ref: &str,
    staging_ref: &str,
) -> Result<NotesCopy> {
    let found = match remote.repo.try_find_reference(source_ref) {
        Ok(found) => found,
        Err(e) => return Ok(NotesCopy::Fallback(format!("{source_ref}: {e}"))),
    };
    let Some(found) = found else {
        if let Some(old) = store.refs().ref_target(staging_ref)? {
            store.refs().publish(
                &[RefChange::delete(staging_ref, old)],
                "agent-rewind fetch: pruned",
            )?;
        }
        return Ok(NotesCopy::Absent);
    };
    agent_rewind_core::trace::mark("fetch: local remote's notes ref read");
    let Some(tip) = found.target().try_id().map(ToOwned::to_owned) else {
        return Ok(NotesCopy::Fallback(format!("{source_ref} is symbolic")));
    };
    let objects = match store.missing_history(remote, source_ref, tip)? {
        Ok(objects) => objects,
        Err(why) => return Ok(NotesCopy::Fallback(why)),
    };
    agent_rewind_core::trace::mark("fetch: local remote's notes history read");
    let count = objects.len();
    store.objects().write_as_pack(objects)?;
    agent_rewind_core::crash_point!("fetch:notes-packed");
    let old = store.refs().ref_target(staging_ref)?;
    if old != Some(tip) {
        store.refs().publish(
            &[RefChange::set(staging_ref, tip, old)],
            &format!("agent-rewind fetch: {source_ref} copied"),
        )?;
    }
    Ok(NotesCopy::Staged { objects: count })
}

/// The git directory git's upload-pack would use for `path` (it tries `path/.git`, then
/// `path`), and the worktree when it is `path/.git`; `None` for anything else (a bundle
/// file, a gitfile, a name git completes with `.git`): `git fetch` handles those.
fn locate_git_dir(path: &Path) -> Option<(PathBuf, Option<PathBuf>)> {
    let dot_git = path.join(".git");
    if dot_git.is_dir() {
        return is_git_dir(&dot_git).then(|| (dot_git, Some(path.to_path_buf())));
    }
    if dot_git.exists() {
        return None;
    }
    is_git_dir(path).then(|| (path.to_path_buf(), None))
}

/// What git checks before calling a directory a repository: `HEAD`, `objects/`, `refs/`.
fn is_git_dir(dir: &Path) -> bool {
    dir.join("HEAD").is_file() && dir.join("objects").is_dir() && dir.join("refs").is_dir()
}
