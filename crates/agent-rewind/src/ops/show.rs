//! `show`: one checkpoint's metadata, the files changed against its predecessor (first
//! parent), its artifacts, and what its tokens cost at the configured prices.

use crate::catalog::{Catalog, Checkpoint};
use crate::store::ChangeKind;
use crate::store::ObjectId;
use crate::store::Store;
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::CheckpointSpec;
use agent_rewind_core::quote::PathBytes;
use serde::Serialize;

/// A changed path between two trees: `A`dded, `M`odified, `D`eleted, `T`ype change.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct FileChange {
    pub path: PathBytes,
    pub change: ChangeKind,
}

#[derive(Debug, Clone)]
pub struct Shown {
    pub checkpoint: Checkpoint,
    pub parent: Option<ObjectId>,
    pub files: Vec<FileChange>,
    /// Who signed the checkpoint commit, as git checks it; `None` when it is not signed
    /// (then no process is started to find out).
    pub signature: Option<super::signatures::Signed>,
    /// Its `usage` per model, priced with the configured prices (`None`: no usage).
    pub usage: Option<super::usage::Priced>,
}

impl Shown {
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = self.checkpoint.to_json();
        let o = v.as_object_mut().expect("object");
        o.insert(
            "files".into(),
            serde_json::to_value(&self.files).expect("serializable"),
        );
        o.insert(
            "signature".into(),
            serde_json::to_value(&self.signature).expect("serializable"),
        );
        if let Some(cost) = self.usage.as_ref().and_then(|u| u.total.cost.as_ref()) {
            o.insert(
                "cost".into(),
                serde_json::to_value(cost).expect("serializable"),
            );
        }
        v
    }
}

pub fn show(store: &Store, spec: &CheckpointSpec) -> Result<Shown> {
    let mut catalog = Catalog::new(store);
    let checkpoint = catalog.resolve(spec)?;
    agent_rewind_core::trace::mark("show: checkpoint resolved");
    let parent = checkpoint.commit.parents.first().copied();
    let from = match parent {
        Some(p) => store.objects().commit_tree(p)?,
        None => store.objects().empty_tree(),
    };
    let files = changed_files(store, from, checkpoint.commit.tree)?;
    agent_rewind_core::trace::mark("show: files compared");
    let signature = match store.objects().is_signed(checkpoint.id())? {
        true => super::signatures::describe(store, checkpoint.id())?,
        false => None,
    };
    let used = &checkpoint.line().usage;
    let usage = match used.is_empty() {
        true => None,
        false => Some(super::usage::Priced::of(
            "turn",
            used,
            &super::usage::prices_of(store, used)?,
        )),
    };
    Ok(Shown {
        checkpoint,
        parent,
        files,
        signature,
        usage,
    })
}

/// The paths that differ between two trees, sorted.
pub fn changed_files(store: &Store, from: ObjectId, to: ObjectId) -> Result<Vec<FileChange>> {
    Ok(store
        .objects()
        .diff_trees(from, to)?
        .into_iter()
        .map(|c| FileChange {
            path: PathBytes(c.path.into()),
            change: c.change,
        })
        .collect())
}
