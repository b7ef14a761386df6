//! Writing files of a tree into a worktree, one file at a time and atomically (a temp file in
//! the same folder, then a rename), so a process killed at any instant leaves every file
//! either as it was or as it should be — never half written. Blobs go through the
//! repository's filters (`.gitattributes`, eol) the way a checkout would, except those a
//! backup holds as the bytes that were on disk (written back as they are).
//!
//! Never writes the index or HEAD; callers take a backup before calling anything here. Never
//! derives a temporary name from a user's file name (the process id and a counter; a name
//! near the 255-byte limit must still be writable), and a write that fails part-way says
//! which paths it had already changed.

use crate::indexfile::WrittenFile;
use crate::repository::Store;
use agent_rewind_core::error::{Error, IoResultExt, Result};
use agent_rewind_core::quote::{quote_path, rel_path};
use agent_rewind_scan::TreeChange;
use agent_rewind_scan::gixerror::from_gix;
use gix::ObjectId;
use gix::bstr::{BString, ByteSlice};
use gix::objs::tree::EntryKind;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

mod casefold;
mod write;
use write::partial_failure;

/// The store's the user's worktree and HEAD: checked, written, linked worktrees.
#[derive(Clone, Copy)]
pub struct Worktree<'s> {
    pub(crate) store: &'s Store,
}

/// What an undo writes back as a backup held it: the paths whose blobs are the exact bytes
/// that were on disk (no filter applied), and the permission bits each file had then, which
/// no git mode can hold (a file of mode 600 must not come back as 644).
#[derive(Debug, Clone, Default)]
pub struct AsBackedUp {
    pub raw: HashSet<BString>,
    pub modes: BTreeMap<BString, u32>,
}

/// Whether the folders on the way to worktree path `rel` under `root` are real folders (or
/// missing): none is a symlink or a file. The one walk every read a decision rests on and
/// every removal goes through, as the writes' [`make_dirs`] does: a symlink on the way could
/// lead out of the repository (or into `.git`), so what lies behind it is never read,
/// written or removed as the path's content — the path counts as absent.
pub(crate) fn parents_are_folders(root: &Path, rel: &[u8]) -> bool {
    let mut cur = root.to_path_buf();
    let parts: Vec<&[u8]> = rel.split_str("/").collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        cur.push(rel_path(part));
        match std::fs::symlink_metadata(&cur) {
            Ok(md) if md.is_dir() => {}
            Ok(_) => return false,
            Err(_) => return true,
        }
    }
    true
}

/// The longest file name (one path component, in bytes) the filesystems we write to accept.
const NAME_MAX: usize = 255;

impl Store {
    /// The path protections git applies to paths it writes (`core.protectNTFS`,
    /// `core.protectHFS`), with git's defaults.
    pub(crate) fn protect_options(&self) -> gix::validate::path::component::Options {
        let config = self.repo.config_snapshot();
        gix::validate::path::component::Options {
            protect_windows: cfg!(windows),
            protect_hfs: config
                .boolean("core.protectHFS")
                .unwrap_or(cfg!(target_os = "macos")),
            protect_ntfs: config.boolean("core.protectNTFS").unwrap_or(true),
        }
    }
}

impl<'s> Worktree<'s> {
    /// The worktree's top folder; an error for a bare repository.
    pub fn root(&self) -> Result<&'s Path> {
        let repo = &self.store.repo;
        repo.workdir().ok_or_else(|| {
            Error::refused(format!(
                "{} is a bare repository; this command needs a worktree",
                repo.git_dir().display()
            ))
            .with_hint("run it in a clone with a worktree, or add one with `git worktree add`")
        })
    }

    /// Whether the repository has no worktree.
    pub fn is_bare(&self) -> bool {
        self.store.repo.workdir().is_none()
    }

    /// This worktree's private git dir (`.git`, or `.git/worktrees/<name>` for a linked one).
    pub fn git_dir(&self) -> &'s Path {
        self.store.repo.git_dir()
    }

    /// The git dir shared by all worktrees.
    pub fn common_dir(&self) -> &'s Path {
        self.store.repo.common_dir()
    }

    /// Every worktree of the repository: its HEAD and its active-run file. A linked
    /// worktree whose folder is gone still counts (git keeps it until `git worktree prune`).
    pub fn uses(&self) -> Result<Vec<crate::usage::WorktreeUse>> {
        crate::usage::worktree_uses(self.store)
    }
}

impl Worktree<'_> {
    /// The file `rel` (a worktree-relative path given by a user) may be written by us: every
    /// component is one git would check out (no `.git` in any spelling, no `..`), and
    /// neither the file nor any folder on the way is a symlink (which could lead into `.git`
    /// or outside the repository). Returns the absolute path.
    pub fn check_user_write_path(&self, rel: &str) -> Result<std::path::PathBuf> {
        use gix::bstr::ByteSlice;
        let refuse = |why: String| {
            Err(Error::refused(format!("refusing to write {rel:?}: {why}"))
                .with_hint("give a path to a regular file of the worktree, outside .git"))
        };
        let root = self.root()?;
        let protect = self.store.protect_options();
        let mut full = root.to_path_buf();
        let parts: Vec<&str> = rel.split('/').collect();
        for (i, part) in parts.iter().enumerate() {
            if let Err(e) = gix::validate::path::component(part.as_bytes().as_bstr(), None, protect)
            {
                return refuse(format!("{e}"));
            }
            full.push(part);
            match std::fs::symlink_metadata(&full) {
                Ok(md) if md.file_type().is_symlink() => {
                    return refuse(format!("{} is a symbolic link", parts[..=i].join("/")));
                }
                Ok(md) if i + 1 < parts.len() && !md.is_dir() => {
                    return refuse(format!("{} is not a folder", parts[..=i].join("/")));
                }
                Ok(md) if i + 1 == parts.len() && md.is_dir() => {
                    return refuse("it is a folder".into());
                }
                _ => {}
            }
        }
        Ok(full)
    }

    /// Refuse changes that would write or delete a path git refuses to check out: a `.git`
    /// folder (in any spelling a filesystem folds to it), `..`, an empty name. Trees fetched
    /// from a remote are not trusted: a checkpoint holding `.git/hooks/…` must not write there.
    /// On a file system that folds case, two names one file would hold are refused too
    /// ([`Self::check_case_collisions`]).
    pub fn check_checkout_paths(&self, changes: &[TreeChange]) -> Result<()> {
        for c in changes {
            let Some((_, kind)) = c.new.or(c.old) else {
                continue;
            };
            self.check_checkout_path(&c.path, kind == EntryKind::Link)?;
        }
        self.check_case_collisions(changes)
    }

    /// Refuse one path git would refuse to check out (see [`Self::check_checkout_paths`]);
    /// `symlink`: the path is a symlink (checked as git checks those).
    pub fn check_checkout_path(&self, path: &[u8], symlink: bool) -> Result<()> {
        use gix::validate::path::component::Mode;
        let protect = self.store.protect_options();
        let parts: Vec<&[u8]> = path.split_str("/").collect();
        let last = parts.len() - 1;
        if let Some(long) = parts.iter().find(|p| p.len() > NAME_MAX) {
            return Err(Error::refused(format!(
                "the target holds a name of {} bytes, longer than the {NAME_MAX} a file \
                 name can have: {}",
                long.len(),
                quote_path(path)
            ))
            .with_hint("nothing was changed; no checkout can write such a tree"));
        }
        for (i, part) in parts.iter().enumerate() {
            let mode = (i == last && symlink).then_some(Mode::Symlink);
            if let Err(e) = gix::validate::path::component(part.as_bstr(), mode, protect) {
                return Err(Error::refused(format!(
                    "the target holds a path git refuses to check out: {} ({e})",
                    quote_path(path)
                ))
                .with_hint(
                    "no checkout makes such a tree, so it was crafted; do not check it \
                     out (inspect it with `git ls-tree -r`)",
                ));
            }
        }
        Ok(())
    }

    /// Make `root` (a worktree directory) go from the state described by `changes`' `old`
    /// side to their `new` side: delete removed paths, write added and modified ones.
    /// Returns the files and symlinks written, with a digest of what was put on disk. Blobs
    /// at the paths in `backed_up.raw` hold the exact bytes to put on disk: no filter is
    /// applied; a file in `backed_up.modes` gets exactly those permission bits.
    pub fn apply_changes(
        &self,
        root: &Path,
        changes: &[TreeChange],
        backed_up: &AsBackedUp,
    ) -> Result<Vec<WrittenFile>> {
        self.check_checkout_paths(changes)?;
        let mut changed = Vec::new();
        self.store
            .write_all(root, changes, backed_up, &mut changed)
            .map_err(|e| partial_failure(e, &changed))
    }
}

/// What a backup finds on disk at a worktree path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDisk {
    Missing,
    Dir,
    /// A file bigger than the limit given (its size).
    TooBig(u64),
    /// A file or symlink, stored as a blob of its bytes as they are (no filter).
    Entry(ObjectId, EntryKind),
}

impl Worktree<'_> {
    /// Store what is at `rel` in the worktree as a blob of its bytes as they are on disk (no
    /// clean filter, no line-ending conversion), or a symlink's target; files bigger than
    /// `max_size` are not read.
    pub fn raw_entry(&self, rel: &[u8], max_size: u64) -> Result<OnDisk> {
        let root = self.root()?;
        if !parents_are_folders(root, rel) {
            return Ok(OnDisk::Missing);
        }
        let full = root.join(rel_path(rel));
        let md = match std::fs::symlink_metadata(&full) {
            Ok(md) => md,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                return Ok(OnDisk::Missing);
            }
            Err(e) => return Err(Error::io(&full, e)),
        };
        if md.is_dir() {
            return Ok(OnDisk::Dir);
        }
        if md.file_type().is_symlink() {
            let target = std::fs::read_link(&full).at(&full)?;
            let bytes = gix::path::os_str_into_bstr(target.as_os_str())
                .map_err(from_gix)?
                .to_vec();
            return Ok(OnDisk::Entry(
                self.store.objects().write_blob(&bytes)?,
                EntryKind::Link,
            ));
        }
        if !md.is_file() {
            return Ok(OnDisk::Missing);
        }
        if md.len() > max_size {
            return Ok(OnDisk::TooBig(md.len()));
        }
        let bytes = std::fs::read(&full).at(&full)?;
        let exec = agent_rewind_core::platform::mode::any_executable_bit(&md)
            && self
                .store
                .repo
                .filesystem_options()
                .map_err(from_gix)?
                .executable_bit;
        let kind = if exec {
            EntryKind::BlobExecutable
        } else {
            EntryKind::Blob
        };
        Ok(OnDisk::Entry(
            self.store.objects().write_blob(&bytes)?,
            kind,
        ))
    }

    /// The permission bits (`st_mode & 0o777`) of each of `paths` that is a regular file on
    /// disk, reached through real folders only: what a backup records so that undo gives
    /// them back exactly.
    pub fn file_modes(&self, paths: &[BString]) -> Result<BTreeMap<BString, u32>> {
        let root = self.root()?;
        let mut modes = BTreeMap::new();
        for rel in paths {
            if !parents_are_folders(root, rel) {
                continue;
            }
            let full = root.join(rel_path(rel));
            match std::fs::symlink_metadata(&full) {
                Ok(md) if md.is_file() => {
                    modes.insert(
                        rel.clone(),
                        agent_rewind_core::platform::mode::permission_bits(&md) & 0o777,
                    );
                }
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                    ) => {}
                Err(e) => return Err(Error::io(&full, e)),
            }
        }
        Ok(modes)
    }

    /// The blob of the file at `rel` as its bytes are on disk, when that is not `id` (what
    /// git's clean filter made of it): `None` when they are the same or it is not a file.
    pub fn raw_blob_if_different(&self, rel: &[u8], id: ObjectId) -> Result<Option<ObjectId>> {
        let root = self.root()?;
        if !parents_are_folders(root, rel) {
            return Ok(None);
        }
        let full = root.join(rel_path(rel));
        match std::fs::symlink_metadata(&full) {
            Ok(md) if md.is_file() => {}
            _ => return Ok(None),
        }
        let bytes = std::fs::read(&full).at(&full)?;
        if self.store.objects().blob_id(&bytes)? == id {
            return Ok(None);
        }
        Ok(Some(self.store.objects().write_blob(&bytes)?))
    }
}

/// A git operation in progress in a worktree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Merge,
    CherryPick,
    Revert,
    Rebase,
    Am,
    Bisect,
    /// A multi-commit cherry-pick or revert between picks.
    Sequencer,
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Operation::Merge => "a merge",
            Operation::CherryPick => "a cherry-pick",
            Operation::Revert => "a revert",
            Operation::Rebase => "a rebase",
            Operation::Am => "an am",
            Operation::Bisect => "a bisect",
            Operation::Sequencer => "a cherry-pick or revert",
        })
    }
}

impl Worktree<'_> {
    /// The git operation in progress in this worktree (merge, rebase, cherry-pick, revert,
    /// am, bisect), if any: rewinding over it would lose its state. gix's `state()` reads
    /// the same files as git's `wt_status_get_state`; a multi-commit cherry-pick or revert
    /// between picks (only `sequencer/` left, no `*_HEAD`) is added, as git's status does.
    pub fn operation_in_progress(&self) -> Option<Operation> {
        use gix::state::InProgress as P;
        match self.store.repo.state() {
            Some(P::Merge) => Some(Operation::Merge),
            Some(P::CherryPick | P::CherryPickSequence) => Some(Operation::CherryPick),
            Some(P::Revert | P::RevertSequence) => Some(Operation::Revert),
            Some(P::Rebase | P::RebaseInteractive | P::ApplyMailboxRebase) => {
                Some(Operation::Rebase)
            }
            Some(P::ApplyMailbox) => Some(Operation::Am),
            Some(P::Bisect) => Some(Operation::Bisect),
            None if self.store.repo.git_dir().join("sequencer").is_dir() => {
                Some(Operation::Sequencer)
            }
            None => None,
        }
    }

    /// Whether `core.fsmonitor` names a monitor a snapshot asks (`scan::fsmonitor`).
    pub fn has_fsmonitor(&self) -> bool {
        agent_rewind_scan::has_fsmonitor(&self.store.repo)
    }

    /// Attach the user's HEAD to the existing branch `full_ref` (`refs/heads/…`) without
    /// touching index or files; HEAD's reflog gets `message`.
    pub fn attach_user_head(&self, full_ref: &str, message: &str) -> Result<()> {
        if !full_ref.starts_with(crate::layout::BRANCHES_PREFIX) {
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
                self.attach_user_head(&crate::layout::branch_ref(b), "agent-rewind: checkout")?;
            }
            (Some(b), None) => {
                self.attach_user_head(&crate::layout::branch_ref(b), "agent-rewind: checkout")?;
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
            .git_in(self.store.repo.common_dir(), &args)
            .map(|_| ())
            .inspect_err(|_| {
                // git makes the branch before the folder, and leaves it when the folder cannot
                // be made (its own worktree record it removes).
                if let (Some(b), Some(false)) = (branch, existed)
                    && self.store.refs().branch_exists(b).unwrap_or(false)
                {
                    let _ = self
                        .store
                        .git_in(self.store.repo.common_dir(), &["branch", "-D", b]);
                }
            })
    }

    /// Take back a linked worktree `add_linked_worktree` just made (its folder, git's record
    /// of it, and the branch it created), when the operation that needed it failed.
    pub fn remove_linked_worktree(&self, path: &Path, branch: Option<&str>) -> Result<()> {
        let p = path.to_string_lossy().to_string();
        self.store.git_in(
            self.store.repo.common_dir(),
            &["worktree", "remove", "--force", p.as_str()],
        )?;
        if let Some(b) = branch {
            self.store
                .git_in(self.store.repo.common_dir(), &["branch", "-D", b])?;
        }
        Ok(())
    }

    /// For each path, what `git add` would record for it now: its blob id and kind, or
    /// `None` when nothing trackable is there. The blobs are written to this handle's object
    /// store (a staged handle keeps them in memory: nothing lands on disk).
    pub fn worktree_entries(
        &self,
        paths: &[gix::bstr::BString],
    ) -> Result<Vec<Option<(ObjectId, EntryKind)>>> {
        let (mut pipeline, index) = self.store.repo.filter_pipeline(None).map_err(from_gix)?;
        let root = self.root()?;
        let mut out = Vec::with_capacity(paths.len());
        for p in paths {
            // Read only through the walk writes use: behind a symlink is not the worktree.
            if !parents_are_folders(root, p) {
                out.push(None);
                continue;
            }
            let found = pipeline
                .worktree_file_to_object(p.as_bstr(), &index)
                .map_err(|e| {
                    Error::git(format!(
                        "could not read {}: {e}",
                        agent_rewind_core::quote::quote_path(p)
                    ))
                    .with_source(e)
                })?;
            out.push(found.map(|(id, kind, _)| (id, kind)));
        }
        Ok(out)
    }
}
