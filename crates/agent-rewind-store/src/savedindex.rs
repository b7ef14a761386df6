//! The user's index file as it was, for backups whose index holds what a tree cannot:
//! intent-to-add, skip-worktree and assume-unchanged entries. A backup keeps the file's
//! bytes and modification time; `undo` puts them back when they still describe exactly the
//! index tree the backup recorded (the proof that they belong to it).
//!
//! Putting the file back with its own modification time keeps git's racy-entry rule working
//! as it did: entries changed at or after that time are still compared by content. Files
//! `undo` wrote since have new stat data, so git looks at them again. Must never install an
//! index whose entries are not the backup's index tree.

use crate::repository::Store;
use agent_rewind_core::error::{IoResultExt, Result};
use gix::ObjectId;
use gix::index::entry::{Flags, Mode};
use gix::objs::tree::EntryKind;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// An index file's bytes and modification time (seconds and nanoseconds since the epoch).
#[derive(Debug, Clone)]
pub struct IndexFile {
    pub bytes: Vec<u8>,
    pub mtime: (i64, u32),
}

/// [`Index::skip_worktree_entries`].
pub(crate) fn skip_worktree_entries(store: &Store) -> Result<Vec<(gix::bstr::BString, ObjectId)>> {
    let index = store.read_user_index()?;
    Ok(index
        .entries()
        .iter()
        .filter(|e| e.flags.contains(Flags::SKIP_WORKTREE) && e.stage_raw() == 0)
        .map(|e| (e.path(&index).to_owned(), e.id))
        .collect())
}

/// [`Index::user_index_file`].
pub(crate) fn user_index_file(store: &Store) -> Result<Option<IndexFile>> {
    let path = store.repo.index_path();
    let md = match std::fs::metadata(&path) {
        Ok(md) => md,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(agent_rewind_core::error::Error::io(&path, e)),
    };
    let bytes = std::fs::read(&path).at(&path)?;
    let mtime = md
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or((0, 0), |d| (d.as_secs() as i64, d.subsec_nanos()));
    Ok(Some(IndexFile { bytes, mtime }))
}

/// [`Index::reinstall_user_index`].
pub(crate) fn reinstall_user_index(
    store: &Store,
    saved: &IndexFile,
    tree: ObjectId,
) -> Result<bool> {
    let stamp = filetime::FileTime::from_unix_time(saved.mtime.0, saved.mtime.1);
    let Ok((state, _)) = gix::index::State::from_bytes(
        &saved.bytes,
        stamp,
        store.objects().object_hash(),
        Default::default(),
    ) else {
        return Ok(false);
    };
    if state.link().is_some() || state.is_sparse() {
        return Ok(false);
    }
    let mut entries = Vec::with_capacity(state.entries().len());
    for e in state.entries() {
        if e.stage_raw() != 0 {
            return Ok(false);
        }
        if e.flags.contains(Flags::INTENT_TO_ADD) {
            continue;
        }
        let kind = match e.mode {
            Mode::FILE => EntryKind::Blob,
            Mode::FILE_EXECUTABLE => EntryKind::BlobExecutable,
            Mode::SYMLINK => EntryKind::Link,
            Mode::COMMIT => EntryKind::Commit,
            _ => return Ok(false),
        };
        entries.push((e.path(&state).to_owned(), e.id, kind));
    }
    let expected: Vec<_> = store
        .objects()
        .tree_entries(tree)?
        .into_iter()
        .map(|(p, id, mode)| (p, id, mode.kind()))
        .collect();
    if entries != expected {
        agent_rewind_core::trace::mark("index: the saved index is not the backup's index tree");
        return Ok(false);
    }
    let mtime =
        UNIX_EPOCH + Duration::new(u64::try_from(saved.mtime.0).unwrap_or(0), saved.mtime.1);
    crate::indexlock::install_index(
        &store.repo.index_path(),
        &store.private().tmp_dir(),
        &saved.bytes,
        Some(mtime.min(SystemTime::now())),
    )?;
    Ok(true)
}
