//! What a revert needs from git: the entry `git add` would record for a worktree path right
//! now (clean filters applied, exec bit, symlinks), and a line-by-line three-way merge of
//! three blobs with git's own conflict markers (`git merge-file`). It never decides what to
//! revert, writes no file of the worktree, and never reads behind a symlink on a path's way.

use crate::repository::Store;
use agent_rewind_core::error::{Error, IoResultExt, Result};
use agent_rewind_scan::gixerror::from_gix;
use gix::ObjectId;
use gix::objs::tree::EntryKind;
use std::io::Write;

/// The outcome of a three-way merge of blobs.
#[derive(Debug, Clone)]
pub struct MergedBlob {
    /// The merged content (with conflict markers when `conflicts`), as a blob id.
    pub blob: ObjectId,
    /// The merge left conflicts (marked in `blob`), or could not merge at all (binary
    /// content: then `blob` is `ours` unchanged).
    pub conflicts: bool,
    /// `false` when git could not merge the contents at all (binary).
    pub mergeable: bool,
}

/// [`Worktree::worktree_entries`].
pub(crate) fn worktree_entries(
    store: &Store,
    paths: &[super::BString],
) -> Result<Vec<Option<(ObjectId, EntryKind)>>> {
    use super::ByteSlice;
    let (mut pipeline, index) = store.repo.filter_pipeline(None).map_err(from_gix)?;
    let root = store.worktree().root()?;
    let mut out = Vec::with_capacity(paths.len());
    for p in paths {
        // Read only through the walk writes use: behind a symlink is not the worktree.
        if !super::worktree::parents_are_folders(root, p) {
            out.push(None);
            continue;
        }
        let found = pipeline
            .worktree_file_to_object(p.as_bstr(), &index)
            .map_err(|e| {
                Error::git(format!(
                    "could not read {}: {e}",
                    agent_rewind_core::quote::quote_path(p)
                ))
                .with_source(e)
            })?;
        out.push(found.map(|(id, kind, _)| (id, kind)));
    }
    Ok(out)
}

/// [`Objects::merge_blobs`].
pub(crate) fn merge_blobs(
    store: &Store,
    ours: ObjectId,
    base: ObjectId,
    theirs: ObjectId,
    labels: [&str; 3],
) -> Result<MergedBlob> {
    let tmp_dir = store.private().tmp_dir();
    std::fs::create_dir_all(&tmp_dir).at(&tmp_dir)?;
    let mut files = Vec::with_capacity(3);
    for id in [ours, base, theirs] {
        let mut f = tempfile::Builder::new()
            .prefix("merge-")
            .tempfile_in(&tmp_dir)
            .at(&tmp_dir)?;
        f.write_all(&store.objects().read_blob(id)?).at(f.path())?;
        files.push(f);
    }
    let paths: Vec<String> = files
        .iter()
        .map(|f| f.path().to_string_lossy().into_owned())
        .collect();
    let args = [
        "merge-file",
        "-p",
        "-L",
        labels[0],
        "-L",
        labels[1],
        "-L",
        labels[2],
        &paths[0],
        &paths[1],
        &paths[2],
    ];
    let out = store.git_output_in(&tmp_dir, &args)?;
    // git merge-file exits with the number of conflicts, or a negative value (255 here)
    // when it cannot merge (binary content).
    match out.status.code() {
        Some(0) => Ok(MergedBlob {
            blob: store.objects().write_blob(&out.stdout)?,
            conflicts: false,
            mergeable: true,
        }),
        Some(n) if (1..128).contains(&n) => Ok(MergedBlob {
            blob: store.objects().write_blob(&out.stdout)?,
            conflicts: true,
            mergeable: true,
        }),
        _ => Ok(MergedBlob {
            blob: ours,
            conflicts: true,
            mergeable: false,
        }),
    }
}
