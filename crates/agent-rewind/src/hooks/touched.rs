//! The pending list of paths an agent edited since its last turn: one private file per run
//! in the worktree's git dir (`<git-dir>/agent-rewind/touched/<run>`, `-` while no run is
//! active), a log in the private envelope (`TOUCHED`: a header, then one path per line with
//! its checksum). A file-edit hook appends whole lines (`O_APPEND`, one write), which is
//! cheap and safe with concurrent hooks; the next turn checkpoint takes the list and carries
//! it as `touched`. A list from before the envelope (bare lines) is read; a damaged one is
//! refused, naming it.
//!
//! Taking renames the file aside first, so an edit noted while the turn is being recorded
//! lands in a fresh list for the next turn. It never snapshots anything and never touches
//! refs.

use crate::store::Store;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::private::envelope::TOUCHED;
use std::collections::BTreeSet;
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
    TOUCHED.append(&pending_path(store, key), paths)
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
    // A damaged list is refused before anything is taken: nothing changes.
    for key in keys {
        let list = pending_path(store, key);
        if let Some(bytes) = agent_rewind_core::private::read_if_exists(&list)? {
            TOUCHED.records(&list, &bytes)?;
        }
    }
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
        let lines = match TOUCHED.records(&list, &bytes[..whole]) {
            Ok(lines) => lines,
            Err(e) => {
                // Damaged since it was checked: everything taken goes back.
                taken.files.push((aside, list, 0));
                taken.put_back();
                return Err(e);
            }
        };
        all.extend(lines.into_iter().filter(|l| !l.is_empty()));
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

/// Append the lines `aside` holds beyond its first `skip` bytes to `list`, then remove
/// `aside`. A line still being written when the list was read is given back once whole.
fn give_back(aside: &Path, list: &Path, skip: usize) {
    if let Ok(bytes) = std::fs::read(aside)
        && bytes.len() > skip
        && let Ok(lines) = TOUCHED.records(list, &bytes[skip..])
    {
        let _ = TOUCHED.append(list, &lines);
    }
    let _ = std::fs::remove_file(aside);
}
