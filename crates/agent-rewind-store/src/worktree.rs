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

use super::Store;
use super::objects::digest;
use super::userindex::WrittenFile;
use agent_rewind_core::error::{Error, IoResultExt, Result};
use agent_rewind_core::quote::{quote_path, rel_path};
use agent_rewind_scan::TreeChange;
use agent_rewind_scan::gixerror::from_gix;
use gix::ObjectId;
use gix::bstr::{BString, ByteSlice};
use gix::objs::tree::EntryKind;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

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

    /// [`Store::apply_changes`] after its checks: `changed` gets each path as soon as it is
    /// changed on disk, so that a failure can say which ones were.
    fn write_all(
        &self,
        root: &Path,
        changes: &[TreeChange],
        backed_up: &AsBackedUp,
        changed: &mut Vec<BString>,
    ) -> Result<Vec<WrittenFile>> {
        let mut checkout = super::checkoutbytes::CheckoutBytes::new(self)?;
        // Temp files live in our private folder, so a crash never leaves one in the worktree.
        let tmp_dir = self.private().tmp_dir();
        std::fs::create_dir_all(&tmp_dir).at(&tmp_dir)?;
        // Deletions first, so a file can replace a directory and the other way round.
        for c in changes.iter().filter(|c| c.new.is_none()) {
            let full = root.join(rel_path(&c.path));
            // Never removed through a symlink: what it leads to is not the worktree's.
            if parents_are_folders(root, &c.path) && remove_path(&full)? {
                changed.push(c.path.clone());
            }
            prune_empty_parents(root, &full);
        }
        // Folders already made or checked in this call (changes come sorted by path).
        let mut known_dirs = std::collections::HashSet::new();
        let mut written = Vec::new();
        let hash = self.objects().object_hash();
        for c in changes {
            let Some((id, kind)) = c.new else { continue };
            let full = root.join(rel_path(&c.path));
            if let Some(parent) = full.parent()
                && !known_dirs.contains(parent)
            {
                make_dirs(root, parent, changed)?;
                known_dirs.insert(parent.to_path_buf());
            }
            match kind {
                EntryKind::Commit => {
                    // A submodule: git leaves an empty directory for it.
                    if !full.exists() {
                        std::fs::create_dir_all(&full).at(&full)?;
                    }
                }
                EntryKind::Tree => {}
                EntryKind::Link => {
                    let blob = self.objects().read_blob(id)?;
                    let target = gix::path::from_byte_slice(&blob)
                        .map_err(from_gix)?
                        .to_path_buf();
                    agent_rewind_core::fail_point!("worktree:write");
                    note_folder_in_the_way(&full, &c.path, changed);
                    atomic_replace(&full, &tmp_dir, |tmp| {
                        std::os::unix::fs::symlink(&target, tmp).at(tmp)
                    })?;
                    if changed.last() != Some(&c.path) {
                        changed.push(c.path.clone());
                    }
                    written.push(WrittenFile {
                        path: c.path.clone(),
                        id,
                        digest: digest(hash, &blob)?,
                        symlink: true,
                    });
                }
                EntryKind::Blob | EntryKind::BlobExecutable => {
                    let data = self.objects().read_blob(id)?;
                    let bytes = if backed_up.raw.contains(&c.path) {
                        data
                    } else {
                        checkout.for_worktree(id, &data, c.path.as_bstr())?
                    };
                    let mode = match backed_up.modes.get(&c.path) {
                        Some(bits) => FileMode::Exactly(*bits),
                        None => FileMode::Git {
                            exec: kind == EntryKind::BlobExecutable,
                        },
                    };
                    agent_rewind_core::fail_point!("worktree:write");
                    note_folder_in_the_way(&full, &c.path, changed);
                    atomic_replace(&full, &tmp_dir, |tmp| write_file(tmp, &bytes, mode))?;
                    if changed.last() != Some(&c.path) {
                        changed.push(c.path.clone());
                    }
                    agent_rewind_core::crash_point!("worktree:file-written");
                    written.push(WrittenFile {
                        path: c.path.clone(),
                        id,
                        digest: digest(hash, &bytes)?,
                        symlink: false,
                    });
                }
            }
        }
        Ok(written)
    }
}

impl crate::facade::Worktree<'_> {
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
        let root = self.store.workdir()?;
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
    pub fn check_checkout_paths(&self, changes: &[TreeChange]) -> Result<()> {
        for c in changes {
            let Some((_, kind)) = c.new.or(c.old) else {
                continue;
            };
            self.check_checkout_path(&c.path, kind == EntryKind::Link)?;
        }
        Ok(())
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

/// A folder at `full` is about to be replaced by a file (its content is in the caller's
/// backup): count it as changed now, since the replace may fail after removing it.
fn note_folder_in_the_way(full: &Path, rel: &BString, changed: &mut Vec<BString>) {
    if std::fs::symlink_metadata(full).is_ok_and(|md| md.is_dir()) {
        changed.push(rel.clone());
    }
}

/// The most paths a partial failure lists by name (the rest are counted).
const MAX_LISTED: usize = 200;

/// `e`, saying which paths were changed before it happened (nothing when none was).
fn partial_failure(e: Error, changed: &[BString]) -> Error {
    let mut e = e;
    if changed.is_empty() {
        e.message = format!("{} (nothing in the worktree was changed)", e.message);
        return e;
    }
    let mut list: Vec<String> = changed
        .iter()
        .take(MAX_LISTED)
        .map(|p| quote_path(p).to_string())
        .collect();
    if changed.len() > MAX_LISTED {
        list.push(format!("and {} more", changed.len() - MAX_LISTED));
    }
    let n = changed.len();
    let files = if n == 1 { "file" } else { "files" };
    e.message = format!(
        "{}; before that, {n} {files} of the worktree had been changed: {}",
        e.message,
        list.join(", ")
    );
    e
}

/// The permission bits a written file gets.
#[derive(Debug, Clone, Copy)]
enum FileMode {
    /// git's: 0o666 or 0o777 (executable) less the umask.
    Git { exec: bool },
    /// These bits, whatever the umask: a file a backup recorded.
    Exactly(u32),
}

/// Create `path` (which must not exist) with `bytes` and `mode`.
fn write_file(path: &Path, bytes: &[u8], mode: FileMode) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let create = match mode {
        FileMode::Git { exec: true } => 0o777,
        FileMode::Git { exec: false } => 0o666,
        // Never more open than it will be, not even while it is written.
        FileMode::Exactly(bits) => bits,
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(create)
        .open(path)
        .at(path)?;
    if let FileMode::Exactly(bits) = mode {
        // The umask narrowed the bits at creation; the backup recorded them exactly.
        f.set_permissions(std::fs::Permissions::from_mode(bits))
            .at(path)?;
    }
    f.write_all(bytes).at(path)
}

/// Create the new content with `create` in `tmp_dir` (our private folder, normally on the
/// same filesystem), then rename it over `path`; when the rename crosses filesystems, a temp
/// file next to `path` is used instead. A folder in the way is removed first (the caller
/// checked that the backup holds everything in it).
fn atomic_replace(path: &Path, tmp_dir: &Path, create: impl Fn(&Path) -> Result<()>) -> Result<()> {
    // Never derived from the file's own name (a name near the 255-byte limit would make the
    // temp name too long): the process id and a counter are unique among our own writes.
    let unique = format!("{}-{}", std::process::id(), next_temp_number());
    let tmp = tmp_dir.join(format!("w{unique}"));
    let result = replace_through(path, &tmp, &create);
    // Nothing is left behind in our folder, whatever failed (a no-op after the rename).
    let _ = std::fs::remove_file(&tmp);
    match result {
        Err(e) if e.source_io_kind() == Some(std::io::ErrorKind::CrossesDevices) => {
            let sibling = path.with_file_name(format!(".agent-rewind-{unique}.tmp"));
            let result = replace_through(path, &sibling, &create);
            if result.is_err() {
                let _ = std::fs::remove_file(&sibling);
            }
            result
        }
        other => other,
    }
}

/// Create the new content at `tmp` with `create` and rename it over `path`, removing a
/// folder in the way when the first rename fails because of it.
fn replace_through(path: &Path, tmp: &Path, create: &impl Fn(&Path) -> Result<()>) -> Result<()> {
    let _ = std::fs::remove_file(tmp);
    create(tmp).map_err(|e| e.context(format!("could not write {}", path.display())))?;
    let mut renamed = std::fs::rename(tmp, path);
    if renamed.is_err()
        && let Ok(md) = std::fs::symlink_metadata(path)
        && md.is_dir()
    {
        std::fs::remove_dir_all(path).at(path)?;
        renamed = std::fs::rename(tmp, path);
    }
    renamed.at(path)
}

/// A number no other temp file of this process has had.
fn next_temp_number() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Remove a file or symlink the target no longer has (`true` when one was removed). A folder
/// found there instead (the worktree changed since it was captured) is left alone: its
/// content is not in the backup.
fn remove_path(path: &Path) -> Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(md) if md.is_dir() => Ok(false),
        Ok(_) => {
            agent_rewind_core::fail_point!("worktree:remove");
            std::fs::remove_file(path).at(path)?;
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Create `dir` and its parents under `root`; a file in the way is removed (it is in the
/// caller's backup, and the target tree needs a directory there).
fn make_dirs(root: &Path, dir: &Path, changed: &mut Vec<BString>) -> Result<()> {
    let rel = dir.strip_prefix(root).unwrap_or(dir);
    let mut cur = root.to_path_buf();
    for comp in rel.components() {
        cur.push(comp);
        match std::fs::symlink_metadata(&cur) {
            Ok(md) if md.is_dir() => {}
            Ok(_) => {
                std::fs::remove_file(&cur).at(&cur)?;
                let removed = cur.strip_prefix(root).unwrap_or(&cur);
                changed.push(BString::from(std::os::unix::ffi::OsStrExt::as_bytes(
                    removed.as_os_str(),
                )));
                std::fs::create_dir(&cur).at(&cur)?;
            }
            Err(_) => std::fs::create_dir(&cur).at(&cur)?,
        }
    }
    Ok(())
}

/// Remove now-empty folders between `path` and `root`, like git does.
fn prune_empty_parents(root: &Path, path: &Path) {
    let mut cur = path.parent();
    while let Some(dir) = cur {
        if dir == root || !dir.starts_with(root) || std::fs::remove_dir(dir).is_err() {
            break;
        }
        cur = dir.parent();
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

impl crate::facade::Worktree<'_> {
    /// Store what is at `rel` in the worktree as a blob of its bytes as they are on disk (no
    /// clean filter, no line-ending conversion), or a symlink's target; files bigger than
    /// `max_size` are not read.
    pub fn raw_entry(&self, rel: &[u8], max_size: u64) -> Result<OnDisk> {
        let root = self.store.workdir()?;
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
        use std::os::unix::fs::PermissionsExt;
        let exec = md.permissions().mode() & 0o111 != 0
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
        use std::os::unix::fs::PermissionsExt;
        let root = self.store.workdir()?;
        let mut modes = BTreeMap::new();
        for rel in paths {
            if !parents_are_folders(root, rel) {
                continue;
            }
            let full = root.join(rel_path(rel));
            match std::fs::symlink_metadata(&full) {
                Ok(md) if md.is_file() => {
                    modes.insert(rel.clone(), md.permissions().mode() & 0o777);
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
        let root = self.store.workdir()?;
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
