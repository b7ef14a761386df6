//! Writing the user's files: each one atomically through a temp file beside it (bytes and
//! mode), folders made and emptied ones removed, and an error that lists the paths already
//! changed when a write fails part-way. The checks come before, in `worktree`.

use super::{AsBackedUp, parents_are_folders};
use crate::checksum::digest;
use crate::indexfile::WrittenFile;
use crate::repository::Store;
use agent_rewind_core::error::{Error, IoResultExt, Result};
use agent_rewind_core::platform::links::create_symlink;
use agent_rewind_core::platform::mode::{create_with_bits, set_permission_bits};
use agent_rewind_core::platform::paths::os_bytes;
use agent_rewind_core::quote::{quote_path, rel_path};
use agent_rewind_scan::TreeChange;
use agent_rewind_scan::gixerror::from_gix;
use gix::bstr::{BString, ByteSlice};
use gix::objs::tree::EntryKind;
use std::path::Path;

impl Store {
    /// [`Store::apply_changes`] after its checks: `changed` gets each path as soon as it is
    /// changed on disk, so that a failure can say which ones were.
    pub(super) fn write_all(
        &self,
        root: &Path,
        changes: &[TreeChange],
        backed_up: &AsBackedUp,
        changed: &mut Vec<BString>,
    ) -> Result<Vec<WrittenFile>> {
        let mut checkout = crate::checkoutbytes::CheckoutBytes::new(self)?;
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
                    atomic_replace(&full, &tmp_dir, |tmp| create_symlink(&target, tmp).at(tmp))?;
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
pub(super) fn partial_failure(e: Error, changed: &[BString]) -> Error {
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
    let create = match mode {
        FileMode::Git { exec: true } => 0o777,
        FileMode::Git { exec: false } => 0o666,
        // Never more open than it will be, not even while it is written.
        FileMode::Exactly(bits) => bits,
    };
    let mut f = create_with_bits(
        std::fs::OpenOptions::new().write(true).create_new(true),
        create,
    )
    .open(path)
    .at(path)?;
    if let FileMode::Exactly(bits) = mode {
        // The umask narrowed the bits at creation; the backup recorded them exactly.
        set_permission_bits(&f, bits).at(path)?;
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
                changed.push(BString::from(os_bytes(removed.as_os_str()).into_owned()));
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
