//! Notes: reading a run's JSON Lines notes and building new notes commits (the tree is
//! laid out exactly as `git notes` lays it out, via gix-note). Writing a notes commit does
//! not publish it; `publish` moves the notes ref together with the run's refs.

use super::{Store, layout};
use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::model::Note;
use gix::ObjectId;
use gix::note::plumbing::State;
use std::collections::HashMap;

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
        let Some(state) = self.state.as_mut() else {
            return Ok(None);
        };
        let blob = state.get(&commit, self.store.repo()).map_err(|e| {
            Error::corrupt(format!(
                "could not read notes in {}: {}",
                self.origin,
                crate::error::one_line(&e.to_string())
            ))
        })?;
        match blob {
            Some(b) => Ok(Some(self.store.read_blob(b)?)),
            None => Ok(None),
        }
    }

    /// The parsed note for `commit`, if any. A malformed note is an error naming the ref.
    pub fn note(&mut self, commit: ObjectId) -> Result<Option<Note>> {
        match self.body(commit)? {
            None => Ok(None),
            Some(bytes) => {
                let text = String::from_utf8(bytes).map_err(|_| {
                    Error::corrupt(format!("note for {commit} in {} is not UTF-8", self.origin))
                })?;
                Note::parse(&text).map(Some).map_err(|e| {
                    Error::corrupt(format!(
                        "malformed note for {} in {}: {e}",
                        short(commit),
                        self.origin
                    ))
                })
            }
        }
    }
}

pub(crate) fn short(id: ObjectId) -> String {
    id.to_hex_with_len(12).to_string()
}

impl Store {
    /// A reader over the current notes of `run`.
    pub fn notes_reader(&self, run: &RunId) -> Result<NotesReader<'_>> {
        let origin = layout::notes_ref(run);
        let tip = self.notes_tip(run)?;
        self.notes_reader_at(tip, origin)
    }

    /// A reader over the notes commit `tip` (None: no notes at all).
    pub fn notes_reader_at(
        &self,
        tip: Option<ObjectId>,
        origin: String,
    ) -> Result<NotesReader<'_>> {
        let state = match tip {
            None => None,
            Some(commit) => {
                let tree = self
                    .read_commit(commit)
                    .map_err(|e| {
                        Error::corrupt(format!(
                            "{origin} does not point at a notes commit: {}",
                            e.message
                        ))
                    })?
                    .tree;
                Some(State::new(tree, self.repo()).map_err(|e| {
                    Error::corrupt(format!(
                        "{origin} holds an unreadable notes tree: {}",
                        crate::error::one_line(&e.to_string())
                    ))
                })?)
            }
        };
        Ok(NotesReader {
            store: self,
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
            Some(p) => self.read_commit(p)?.tree,
            None => self.empty_tree(),
        };
        let mut state = State::new(base_tree, self.repo())?;
        for (annotated, body) in notes {
            let blob = self.write_blob(body)?;
            state.edit(*annotated, Some(blob), self.repo())?;
        }
        let tree = state.write(self.repo())?;
        let parents: Vec<ObjectId> = parent.into_iter().collect();
        self.write_commit(tree, &parents, message)
    }

    /// All notes of a notes commit as (annotated object, blob) — for merges and validation.
    pub fn all_notes(&self, notes_commit: ObjectId) -> Result<HashMap<ObjectId, ObjectId>> {
        let tree = self.read_commit(notes_commit)?.tree;
        let mut out = HashMap::new();
        for (path, blob, mode) in self.tree_entries(tree)? {
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
}
