//! Writing a snapshot's tree: HEAD's tree (or the last checkpoint's) with edits, through
//! gix's plumbing tree editor. It writes only tree objects.

use crate::Store;
use crate::gixerror::from_gix;
use crate::objects::retry_object_write;
use agent_rewind_core::error::{Error, Result};
use gix::ObjectId;
use gix::bstr::{BStr, ByteSlice};

/// `base` with `edits` applied (`None` removes the path): the tree's id.
pub(crate) fn edit_tree(
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

impl Store {
    /// `base` with `edits` applied (`None` removes the path): the new tree's id.
    pub fn edit_tree(
        &self,
        base: ObjectId,
        edits: &[(
            gix::bstr::BString,
            Option<(ObjectId, gix::objs::tree::EntryKind)>,
        )],
    ) -> Result<ObjectId> {
        edit_tree(self.repo(), base, edits)
    }
}
