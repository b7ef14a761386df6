//! Notes: reading a run's JSON Lines notes, building new notes commits (the tree is laid out
//! exactly as `git notes` lays it out, via gix-note), and merging two diverged notes commits
//! by the sorted union of their lines (git's `cat_sort_uniq`). Writing a notes commit does
//! not publish it; `publish` moves the notes ref together with the run's refs.

use crate::layout;
use crate::repository::Store;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::RunId;
use agent_rewind_scan::gixerror::from_gix;
use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::note::plumbing::State;
use std::collections::{BTreeSet, HashMap};

/// The store's the runs' notes: read, written and merged.
#[derive(Clone, Copy)]
pub struct Notes<'s> {
    pub(crate) store: &'s Store,
}

/// Reads notes of one notes commit, caching the opened notes tree across lookups.
pub struct NotesReader<'s> {
    store: &'s Store,
    state: Option<State>,
    /// Where the notes came from, for error messages.
    origin: String,
}

impl<'s> NotesReader<'s> {
    /// The raw note body for `commit`, if any.
    pub fn body(&mut self, commit: ObjectId) -> Result<Option<Vec<u8>>> {
        match self.blob(commit)? {
            Some(b) => Ok(Some(self.store.objects().read_blob(b)?)),
            None => Ok(None),
        }
    }

    /// The blob of the note for `commit`, if any (not read: its size can be checked first).
    pub fn blob(&mut self, commit: ObjectId) -> Result<Option<ObjectId>> {
        let Some(state) = self.state.as_mut() else {
            return Ok(None);
        };
        state.get(&commit, self.store.repo()).map_err(|e| {
            Error::corrupt(format!(
                "could not read notes in {}: {}",
                self.origin,
                agent_rewind_core::error::one_line(&e.to_string())
            ))
            .with_hint(CORRUPT_HINT)
        })
    }

    /// The note for `commit` parsed by `parse` (the note format is the library's), if any.
    /// A note that is not UTF-8 or that `parse` refuses is an error naming the ref.
    pub fn note<T, E: std::fmt::Display>(
        &mut self,
        commit: ObjectId,
        parse: impl FnOnce(&str) -> std::result::Result<T, E>,
    ) -> Result<Option<T>> {
        match self.body(commit)? {
            None => Ok(None),
            Some(bytes) => {
                let text = String::from_utf8(bytes).map_err(|_| {
                    Error::corrupt(format!("note for {commit} in {} is not UTF-8", self.origin))
                        .with_hint(CORRUPT_HINT)
                })?;
                parse(&text).map(Some).map_err(|e| {
                    Error::corrupt(format!(
                        "malformed note for {} in {}: {e}",
                        short(commit),
                        self.origin
                    ))
                    .with_hint(CORRUPT_HINT)
                })
            }
        }
    }
}

/// What to do about a note that cannot be read.
const CORRUPT_HINT: &str = "inspect it with `git notes --ref=<ref without refs/notes/> show <commit>`; \
    other runs are unaffected, and `git reflog <ref>` shows its earlier versions";

pub(crate) fn short(id: ObjectId) -> String {
    id.to_hex_with_len(12).to_string()
}

impl<'s> Notes<'s> {
    /// A reader over the current notes of `run`.
    pub fn notes_reader(&self, run: &RunId) -> Result<NotesReader<'s>> {
        let origin = layout::notes_ref(run);
        let tip = self.store.refs().notes_tip(run)?;
        self.notes_reader_at(tip, origin)
    }

    /// A reader over the notes commit `tip` (None: no notes at all).
    pub fn notes_reader_at(
        &self,
        tip: Option<ObjectId>,
        origin: String,
    ) -> Result<NotesReader<'s>> {
        let state = match tip {
            None => None,
            Some(commit) => {
                let tree = self.store.objects().commit_tree(commit).map_err(|e| {
                    Error::corrupt(format!(
                        "{origin} does not point at a notes commit: {}",
                        e.message
                    ))
                    .with_hint(CORRUPT_HINT)
                })?;
                Some(State::new(tree, self.store.repo()).map_err(|e| {
                    Error::corrupt(format!(
                        "{origin} holds an unreadable notes tree: {}",
                        agent_rewind_core::error::one_line(&e.to_string())
                    ))
                    .with_hint(CORRUPT_HINT)
                })?)
            }
        };
        Ok(NotesReader {
            store: self.store,
            state,
            origin,
        })
    }

    /// Build (but do not publish) a notes commit on top of `parent` that sets the notes of
    /// the given commits to the given bodies.
    pub fn write_notes_commit(
        &self,
        parent: Option<ObjectId>,
        notes: &[(ObjectId, Vec<u8>)],
        message: &str,
    ) -> Result<ObjectId> {
        let base_tree = match parent {
            Some(p) => self.store.objects().read_commit(p)?.tree,
            None => self.store.objects().empty_tree(),
        };
        let mut state = State::new(base_tree, self.store.repo()).map_err(from_gix)?;
        for (annotated, body) in notes {
            let blob = self.store.objects().write_blob(body)?;
            state
                .edit(*annotated, Some(blob), self.store.repo())
                .map_err(from_gix)?;
        }
        let tree = state
            .write(&crate::objects::RetryingWrites(self.store.repo()))
            .map_err(from_gix)?;
        let parents: Vec<ObjectId> = parent.into_iter().collect();
        self.store.objects().write_commit(tree, &parents, message)
    }

    /// All notes of a notes commit as (annotated object, blob) — for merges and validation.
    pub fn all_notes(&self, notes_commit: ObjectId) -> Result<HashMap<ObjectId, ObjectId>> {
        let tree = self.store.objects().read_commit(notes_commit)?.tree;
        let mut out = HashMap::new();
        for (path, blob, mode) in self.store.objects().tree_entries(tree)? {
            if !mode.is_blob() {
                continue;
            }
            let hex: String = path.chars().filter(|c| *c != '/').collect();
            if let Ok(id) = ObjectId::from_hex(hex.as_bytes()) {
                out.insert(id, blob);
            }
        }
        Ok(out)
    }

    /// A notes commit that holds every note of `ours` and of `theirs`, with both as parents
    /// (so a later push of it is a fast-forward of either). A note present on both sides
    /// with different bodies becomes the sorted union of their lines; nothing is lost.
    pub fn merge_notes_commits(
        &self,
        ours: ObjectId,
        theirs: ObjectId,
        message: &str,
    ) -> Result<ObjectId> {
        let mine = self.all_notes(ours)?;
        let other = self.all_notes(theirs)?;
        let mut state = State::new(
            self.store.objects().read_commit(ours)?.tree,
            self.store.repo(),
        )
        .map_err(from_gix)?;
        let mut annotated: Vec<ObjectId> = other.keys().copied().collect();
        annotated.sort();
        for obj in annotated {
            let their_blob = other[&obj];
            let blob = match mine.get(&obj) {
                Some(b) if *b == their_blob => continue,
                None => their_blob,
                Some(b) => {
                    let merged = union_lines(
                        &self.store.objects().read_blob(*b)?,
                        &self.store.objects().read_blob(their_blob)?,
                    );
                    self.store.objects().write_blob(&merged)?
                }
            };
            state
                .edit(obj, Some(blob), self.store.repo())
                .map_err(from_gix)?;
        }
        let tree = state
            .write(&crate::objects::RetryingWrites(self.store.repo()))
            .map_err(from_gix)?;
        self.store
            .objects()
            .write_commit(tree, &[ours, theirs], message)
    }
}

/// The sorted, de-duplicated union of the non-empty lines of two note bodies (git's
/// `cat_sort_uniq`), each line ending in a newline. Commutative, so two machines merging the
/// same notes get the same body.
pub fn union_lines(a: &[u8], b: &[u8]) -> Vec<u8> {
    let lines: BTreeSet<&[u8]> = a
        .split(|c| *c == b'\n')
        .chain(b.split(|c| *c == b'\n'))
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .collect();
    let mut out = Vec::with_capacity(a.len() + b.len());
    for l in lines {
        out.extend_from_slice(l);
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::union_lines;

    #[test]
    fn union_is_sorted_deduplicated_and_commutative() {
        let a = b"{\"type\":\"checkpoint\"}\n{\"type\":\"approval\",\"by\":\"a\"}\n";
        let b = b"{\"type\":\"checkpoint\"}\n{\"type\":\"approval\",\"by\":\"b\"}\n\n";
        let m = union_lines(a, b);
        assert_eq!(m, union_lines(b, a));
        let text = String::from_utf8(m).unwrap();
        assert_eq!(text.lines().count(), 3);
        assert!(text.ends_with('\n'));
        assert!(text.contains("\"by\":\"a\"") && text.contains("\"by\":\"b\""));
    }
}
