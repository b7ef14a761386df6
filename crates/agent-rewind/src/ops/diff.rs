//! `diff`: a unified diff of the files, and of the metadata, between two checkpoints
//! (default: a checkpoint against its predecessor).

use crate::catalog::{Catalog, Checkpoint};
use crate::store::ChangeKind;
use crate::store::Store;
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::CheckpointSpec;
use agent_rewind_core::quote::{PathBytes, quote_prefixed};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct FileDiff {
    pub path: PathBytes,
    pub change: ChangeKind,
    /// Unified diff text; `None` for binary content, and with `--stat`.
    pub patch: Option<String>,
    pub binary: bool,
    /// With `--stat`: the lines added and removed, as `git diff --numstat` counts them
    /// (`None` for binary content).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub insertions: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletions: Option<u64>,
}

/// `files` as `--stat` reports them: each patch replaced by its count of lines added and
/// removed (binary files have none).
pub fn keep_only_stat(files: &mut [FileDiff]) {
    for f in files {
        let Some(patch) = f.patch.take() else {
            continue;
        };
        let (mut added, mut removed) = (0, 0);
        let mut in_hunk = false;
        for line in patch.lines() {
            if line.starts_with("@@") {
                in_hunk = true;
            } else if in_hunk && line.starts_with('+') {
                added += 1;
            } else if in_hunk && line.starts_with('-') {
                removed += 1;
            }
        }
        f.insertions = Some(added);
        f.deletions = Some(removed);
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct MetaDiff {
    pub field: String,
    pub from: serde_json::Value,
    pub to: serde_json::Value,
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckpointDiff {
    pub from: String,
    pub to: String,
    /// The trees compared (for `git diff`'s own rendering).
    pub from_tree: String,
    pub to_tree: String,
    /// Empty unless asked for (see [`diff`]).
    pub files: Vec<FileDiff>,
    pub metadata: Vec<MetaDiff>,
}

/// Diff `to` against `from`; with `from = None`, against `to`'s first parent. `files`:
/// also each changed file with its patch (for `--json`; the human output has git print
/// them, so computing them there would only cost time).
pub fn diff(
    store: &Store,
    from: Option<&CheckpointSpec>,
    to: &CheckpointSpec,
    files: bool,
) -> Result<CheckpointDiff> {
    let mut catalog = Catalog::new(store);
    let to_cp = catalog.resolve(to)?;
    let (from_id, from_tree, from_cp): (String, _, Option<Checkpoint>) = match from {
        Some(spec) => {
            let c = catalog.resolve(spec)?;
            (c.id().to_string(), c.commit.tree, Some(c))
        }
        None => match to_cp.commit.parents.first() {
            Some(p) => (
                p.to_string(),
                store.objects().commit_tree(*p)?,
                catalog.try_checkpoint(*p)?,
            ),
            None => ("(empty)".into(), store.objects().empty_tree(), None),
        },
    };
    agent_rewind_core::trace::mark("diff: checkpoints resolved");
    let files = if files {
        file_diffs(store, from_tree, to_cp.commit.tree)?
    } else {
        vec![]
    };
    let metadata = match &from_cp {
        Some(f) => meta_diff(&f.to_json(), &to_cp.to_json()),
        None => vec![],
    };
    Ok(CheckpointDiff {
        from: from_id,
        to: to_cp.id().to_string(),
        from_tree: from_tree.to_string(),
        to_tree: to_cp.commit.tree.to_string(),
        files,
        metadata,
    })
}

/// The files changed from tree `from` to tree `to`, each with its unified diff (3 lines of
/// context; `None` for binary content).
pub fn file_diffs(
    store: &Store,
    from: crate::store::ObjectId,
    to: crate::store::ObjectId,
) -> Result<Vec<FileDiff>> {
    let mut files = vec![];
    for c in store.objects().diff_trees(from, to)? {
        let old = side_text(store, c.old)?;
        let new = side_text(store, c.new)?;
        let binary = old.contains(&0)
            || new.contains(&0)
            || std::str::from_utf8(&old).is_err()
            || std::str::from_utf8(&new).is_err();
        let patch = (!binary).then(|| {
            let a = if c.old.is_some() {
                quote_prefixed("a/", &c.path)
            } else {
                "/dev/null".into()
            };
            let b = if c.new.is_some() {
                quote_prefixed("b/", &c.path)
            } else {
                "/dev/null".into()
            };
            // The bytes are UTF-8 (checked above): the patch is too.
            String::from_utf8_lossy(&crate::store::text_patch(&a, &b, &old, &new)).into_owned()
        });
        files.push(FileDiff {
            path: PathBytes(c.path.into()),
            change: c.change,
            patch,
            binary,
            insertions: None,
            deletions: None,
        });
    }
    Ok(files)
}

/// One side of a file's change as `git diff` shows it: a blob's or a link's bytes, and for a
/// submodule or nested repository (a gitlink, whose commit is not in this repository) the
/// line `Subproject commit <id>`.
fn side_text(
    store: &Store,
    side: Option<(crate::store::ObjectId, crate::store::EntryKind)>,
) -> Result<Vec<u8>> {
    Ok(match side {
        Some((id, crate::store::EntryKind::Commit)) => format!("Subproject commit {id}\n").into(),
        Some((id, _)) => store.objects().read_blob(id)?,
        None => vec![],
    })
}

fn meta_diff(a: &serde_json::Value, b: &serde_json::Value) -> Vec<MetaDiff> {
    const SKIP: &[&str] = &[
        "checkpoint",
        "parents",
        "tree",
        "ts",
        "started_at",
        "finished_at",
        "seq",
    ];
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return vec![];
    };
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| !SKIP.contains(&k.as_str()))
        .filter_map(|k| {
            let (x, y) = (
                a.get(k).cloned().unwrap_or_default(),
                b.get(k).cloned().unwrap_or_default(),
            );
            (x != y).then(|| MetaDiff {
                field: k.clone(),
                from: x,
                to: y,
            })
        })
        .collect()
}
