//! The pending list of paths an agent edited since its last turn: one private file per run
//! in the worktree's git dir (`<git-dir>/agent-rewind/touched/<run>`, `-` while no run is
//! active), one path per line. A file-edit hook appends whole lines (`O_APPEND`, one write),
//! which is cheap and safe with concurrent hooks; the next turn checkpoint takes the list
//! and carries it as `touched`.
//!
//! Taking renames the file aside first, so an edit noted while the turn is being recorded
//! lands in a fresh list for the next turn. It never snapshots anything and never touches
//! refs.

use crate::error::{Error, IoResultExt, Result};
use crate::store::Store;
use crate::store::create_parent;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The list's name when no run is active.
pub const NO_RUN: &str = "-";
/// Most paths one turn carries (the rest are dropped, with a warning).
pub const MAX_TOUCHED: usize = 10_000;

/// The pending list of `key` (a run id or [`NO_RUN`]).
pub fn pending_path(store: &Store, key: &str) -> PathBuf {
    store.private().touched(key)
}

/// Append `paths` (relative to the worktree root, `/`-separated) to the list of `key`.
pub fn note(store: &Store, key: &str, paths: &[String]) -> Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    let path = pending_path(store, key);
    let mut buf = String::new();
    for p in paths {
        buf.push_str(p);
        buf.push('\n');
    }
    let open = || {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
    };
    let mut f = match open() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            create_parent(&path)?;
            open()
        }
        other => other,
    }
    .at(&path)?;
    f.write_all(buf.as_bytes()).at(&path)
}

/// Lists taken for one turn: put them back if the turn is not recorded.
#[derive(Debug, Default)]
pub struct Taken {
    /// (the renamed-aside file, its list, how many bytes were read).
    files: Vec<(PathBuf, PathBuf, usize)>,
    /// The paths, sorted and without duplicates.
    pub paths: Vec<String>,
    /// How many were dropped beyond [`MAX_TOUCHED`].
    pub dropped: usize,
}

/// Take the lists of `keys` (renamed aside; an absent list is empty).
pub fn take(store: &Store, keys: &[&str]) -> Result<Taken> {
    let mut taken = Taken::default();
    let mut all = BTreeSet::new();
    for key in keys {
        let list = pending_path(store, key);
        let aside = list.with_file_name(format!("{key}.taking-{}", std::process::id()));
        match std::fs::rename(&list, &aside) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io(&list, e)),
        }
        let bytes = std::fs::read(&aside).unwrap_or_default();
        // Only whole lines: a line still being written stays for the next turn.
        let whole = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        for line in String::from_utf8_lossy(&bytes[..whole]).lines() {
            if !line.is_empty() {
                all.insert(line.to_string());
            }
        }
        taken.files.push((aside, list, whole));
    }
    taken.dropped = all.len().saturating_sub(MAX_TOUCHED);
    taken.paths = all.into_iter().take(MAX_TOUCHED).collect();
    Ok(taken)
}

impl Taken {
    /// The turn was recorded: forget the taken lines (anything appended after they were
    /// read goes back to the list, for the next turn).
    pub fn done(self) {
        for (aside, list, read) in &self.files {
            give_back(aside, list, *read);
        }
    }

    /// The turn was not recorded: every taken line goes back to its list.
    pub fn put_back(self) {
        for (aside, list, _) in &self.files {
            give_back(aside, list, 0);
        }
    }
}

/// Append what `aside` holds beyond its first `skip` bytes to `list`, then remove `aside`.
fn give_back(aside: &Path, list: &Path, skip: usize) {
    if let Ok(bytes) = std::fs::read(aside)
        && bytes.len() > skip
        && let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(list)
    {
        let _ = f.write_all(&bytes[skip..]);
    }
    let _ = std::fs::remove_file(aside);
}
