//! Writing a snapshot's tree: HEAD's tree (or the last checkpoint's) with edits, through
//! gix's plumbing tree editor. It writes only tree objects.

use crate::gixerror::from_gix;
use agent_rewind_core::error::{Error, Result};
use gix::ObjectId;
use gix::bstr::{BStr, ByteSlice};

/// Run an object write again when it fails. gix creates an object's fan-out folder and then
/// renames the object into it; a `git gc` running meanwhile may remove the still empty
/// folder in between (git's own writer retries for the same reason). Objects are
/// content-addressed, so writing one again is harmless; an error that stays is returned.
pub fn retry_object_write<T, E>(
    mut write: impl FnMut() -> std::result::Result<T, E>,
) -> std::result::Result<T, E> {
    let mut attempt = 0;
    loop {
        match write() {
            Err(_) if attempt < 4 => {
                attempt += 1;
                std::thread::sleep(std::time::Duration::from_millis(1 << attempt));
            }
            done => return done,
        }
    }
}

/// `base` with `edits` applied (`None` removes the path): the tree's id.
pub fn edit_tree(
    repo: &gix::Repository,
    base: ObjectId,
    edits: &[(
        gix::bstr::BString,
        Option<(ObjectId, gix::objs::tree::EntryKind)>,
    )],
) -> Result<ObjectId> {
    if edits.is_empty() {
        return Ok(base);
    }
    let mut editor = TreeEdits::new(repo, base)?;
    for (path, entry) in edits {
        match entry {
            Some((id, kind)) => editor.upsert(path.as_bstr(), *kind, *id)?,
            None => editor.remove(path.as_bstr())?,
        }
    }
    editor.write()
}

/// HEAD's tree with edits. Written with the plumbing editor: gix's own editor checks that
/// every entry of every tree it writes exists (a `stat` per entry, hundreds per snapshot),
/// while every id here comes from HEAD, the index, or was just written.
pub(crate) struct TreeEdits<'r> {
    inner: gix::objs::tree::Editor<'r>,
    repo: &'r gix::Repository,
}

impl<'r> TreeEdits<'r> {
    pub(crate) fn new(repo: &'r gix::Repository, tree: ObjectId) -> Result<Self> {
        Ok(TreeEdits {
            inner: repo.edit_tree(tree).map_err(from_gix)?.detach(),
            repo,
        })
    }

    pub(crate) fn upsert(
        &mut self,
        path: &BStr,
        kind: gix::objs::tree::EntryKind,
        id: ObjectId,
    ) -> Result<()> {
        self.inner
            .upsert(path.split_str("/"), kind, id)
            .map_err(|e| edit_failed(path, &e))?;
        Ok(())
    }

    pub(crate) fn remove(&mut self, path: &BStr) -> Result<()> {
        self.inner
            .remove(path.split_str("/"))
            .map_err(|e| edit_failed(path, &e))?;
        Ok(())
    }

    pub(crate) fn write(&mut self) -> Result<ObjectId> {
        let repo = self.repo;
        self.inner
            .write(|tree| retry_object_write(|| repo.write_object(tree)).map(|id| id.detach()))
            .map_err(from_gix)
    }
}

fn edit_failed(path: &BStr, e: &dyn std::fmt::Display) -> Error {
    Error::other(format!(
        "cannot put {path} into the snapshot tree: {}",
        agent_rewind_core::error::one_line(&e.to_string())
    ))
}
