//! Deleting many packed refs at once (`gc` of 90,000 runs): one rewrite of `packed-refs`
//! under `packed-refs.lock`, git's own protocol for that file, instead of a transaction that
//! locks every ref's loose file (which costs a lock file, and a folder, per ref: minutes at
//! 100,000 runs, for git's `update-ref --stdin` too).
//!
//! Only refs that exist solely in `packed-refs` are deleted this way, in groups (a run's
//! refs) that go together or not at all, each ref compare-and-swap against the value the
//! caller read. A group with a loose file or a held `<ref>.lock` is left to the caller (who
//! uses [`crate::Refs::publish`]); one whose value changed is reported as changed. A loose file
//! that appears for a deleted ref while the new file is written (a writer that read the old
//! packed value) wins: the group is then reported as changed, never as deleted.
//!
//! Must never write `packed-refs` except by renaming its lock, never leave the lock behind,
//! and never delete a ref whose value is not the expected one.

use crate::packedrefs::{
    PackedRefsEdit, loose_or_locked, packed_values, remove_reflog, without_refs,
};
use crate::reffiles::RefFiles;
use agent_rewind_core::error::Result;
use gix::ObjectId;
use std::collections::HashSet;

/// What happened to one group of [`crate::Refs::delete_packed_groups`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackedDelete {
    Deleted,
    /// Some ref of the group is loose (or being written): delete it another way.
    NotPacked,
    /// Some ref of the group does not have the expected value (or moved meanwhile).
    Changed,
}

/// [`Refs::delete_packed_groups`].
pub(crate) fn delete_packed_groups(
    files: &RefFiles,
    groups: &[Vec<(String, ObjectId)>],
) -> Result<Vec<PackedDelete>> {
    let mut edit = PackedRefsEdit::begin(files)?;
    let text = std::mem::take(&mut edit.text);
    let has_loose = |name: &str| edit.has_loose(name);
    let values = packed_values(&text);
    let mut out: Vec<PackedDelete> = groups
        .iter()
        .map(|g| {
            if g.iter().any(|(n, _)| has_loose(n)) {
                PackedDelete::NotPacked
            } else if g.iter().all(|(n, id)| values.get(n.as_bytes()) == Some(id)) {
                PackedDelete::Deleted
            } else {
                PackedDelete::Changed
            }
        })
        .collect();
    let gone: HashSet<&[u8]> = groups
        .iter()
        .zip(&out)
        .filter(|(_, r)| **r == PackedDelete::Deleted)
        .flat_map(|(g, _)| g.iter().map(|(n, _)| n.as_bytes()))
        .collect();
    if gone.is_empty() {
        return Ok(out);
    }
    let body = without_refs(&text, &gone);
    let common = edit.commit(&body, || {})?;
    // A writer that read the old packed value may have written a loose file meanwhile:
    // its value stands, and the group was not deleted.
    for (g, r) in groups.iter().zip(out.iter_mut()) {
        if *r == PackedDelete::Deleted && g.iter().any(|(n, _)| loose_or_locked(&common, n)) {
            *r = PackedDelete::Changed;
        }
    }
    for (g, _) in groups
        .iter()
        .zip(&out)
        .filter(|(_, r)| **r == PackedDelete::Deleted)
    {
        for (name, _) in g {
            remove_reflog(&common, name);
        }
    }
    Ok(out)
}
