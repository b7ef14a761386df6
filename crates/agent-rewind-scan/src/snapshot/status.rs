//! The two status comparisons a snapshot builds on, through gix: HEAD's tree against the
//! index (what is staged) and the index against the worktree (entries already marked
//! `UPTODATE` are skipped). Read-only: it never writes the index or a file.

use agent_rewind_core::error::{Error, Result};
use gix::ObjectId;
use gix::bstr::BStr;

/// Index entries that differ from HEAD's tree (what is staged).
pub(super) fn staged_changes(
    repo: &gix::Repository,
    head_tree: ObjectId,
    index: &gix::index::State,
) -> Result<Vec<gix::diff::index::Change>> {
    let mut out = Vec::new();
    repo.tree_index_status(
        &head_tree,
        index,
        None,
        gix::status::tree_index::TrackRenames::Disabled,
        |change, _, _| {
            out.push(change.into_owned());
            Ok(gix::diff::index::Action::Continue(()))
        },
    )
    .map_err(|e| status_failed(&e))?;
    Ok(out)
}

type WorktreeStatus = gix::status::plumbing::index_as_worktree::EntryStatus<(), ()>;

/// Index entries that differ from the worktree, by gix's per-entry logic (entries already
/// marked `UPTODATE` are skipped). Called directly rather than through `Repository::status`,
/// which also loads the repository's own copy of the index to look for `.gitmodules`.
pub(super) fn worktree_changes(
    repo: &gix::Repository,
    index: &gix::index::State,
    threads: Option<usize>,
) -> Result<Vec<(gix::bstr::BString, WorktreeStatus)>> {
    struct Collect(Vec<(gix::bstr::BString, WorktreeStatus)>);
    impl<'index> gix::status::plumbing::index_as_worktree_with_renames::VisitEntry<'index> for Collect {
        type ContentChange = ();
        type SubmoduleStatus = ();
        fn visit_entry(
            &mut self,
            entry: gix::status::plumbing::index_as_worktree_with_renames::Entry<'index, (), ()>,
        ) {
            if let gix::status::plumbing::index_as_worktree_with_renames::Entry::Modification {
                rela_path,
                status,
                ..
            } = entry
            {
                self.0.push((rela_path.to_owned(), status));
            }
        }
    }
    /// Submodules are recorded by their commit in the index: their worktree is not looked at.
    #[derive(Clone)]
    struct IgnoreSubmodules;
    impl gix::status::plumbing::index_as_worktree::traits::SubmoduleStatus for IgnoreSubmodules {
        type Output = ();
        fn status(
            &mut self,
            _entry: &gix::index::Entry,
            _rela_path: &BStr,
        ) -> std::result::Result<Option<()>, gix::Error> {
            Ok(None)
        }
    }

    let mut collect = Collect(Vec::new());
    repo.index_worktree_status(
        index,
        Vec::<gix::bstr::BString>::new(),
        &mut collect,
        gix::status::plumbing::index_as_worktree::traits::FastEq,
        IgnoreSubmodules,
        &mut gix::progress::Discard,
        &std::sync::atomic::AtomicBool::new(false),
        gix::status::index_worktree::Options {
            thread_limit: threads,
            ..Default::default()
        },
    )
    .map_err(|e| status_failed(&e))?;
    Ok(collect.0)
}

fn status_failed(e: &dyn std::fmt::Display) -> Error {
    Error::other(format!(
        "status failed: {}",
        agent_rewind_core::error::one_line(&e.to_string())
    ))
}
/// A copy of `index` holding only the entries not marked `UPTODATE` (in order, with the
/// index's timestamp, which decides what is racily clean), when `proven` entries are most of
/// the index; `None` otherwise (a sparse index is always looked at whole). Each entry's
/// status depends on that entry alone (and on the other stages of a conflicted path, which
/// are never proven), so gix finds the same changes in it.
pub(super) fn unproven_only(index: &gix::index::State, proven: usize) -> Option<gix::index::State> {
    let total = index.entries().len();
    if proven == 0 || proven < total / 2 || index.is_sparse() {
        return None;
    }
    let mut rest = gix::index::State::new(index.object_hash());
    rest.set_timestamp(index.timestamp());
    for e in index.entries() {
        if !e.flags.contains(gix::index::entry::Flags::UPTODATE) {
            rest.dangerously_push_entry(e.stat, e.id, e.flags, e.mode, e.path(index));
        }
    }
    Some(rest)
}
