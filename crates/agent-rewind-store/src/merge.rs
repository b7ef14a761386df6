//! A line-by-line three-way merge of three blobs with git's own conflict markers (`git
//! merge-file`), for a revert. It never decides what to revert and writes no file of the
//! worktree.

use crate::repository::Store;
use agent_rewind_core::error::{IoResultExt, Result};
use gix::ObjectId;
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
