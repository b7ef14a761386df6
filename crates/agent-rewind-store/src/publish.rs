//! The publish transaction (docs/FORMAT.md "Writing"): every ref change of one logical write
//! goes into one ref transaction, each with compare-and-swap on the value the writer read,
//! with a forced reflog: git's loose-ref protocol as `looserefs` implements it, each lock
//! claimed before it exists (in a reftable repository, `git update-ref --stdin`). Objects must
//! already be written. It must never move a ref whose value is not the expected one, and never
//! writes `HEAD` or a worktree's own refs.
//!
//! Loose refs are committed one by one, in the order given, so callers order changes so that
//! a crash between two renames is harmless: notes before `HEAD`, `HEAD` before step refs (a
//! step ref may lag behind `HEAD` after a crash, never run ahead of it).

use crate::looserefs::apply_loose_refs;
use crate::reffiles::{RefFiles, is_plain_shared_ref};
use agent_rewind_core::error::{Error, Result};
use gix::ObjectId;
use gix::refs::FullName;

/// One ref change: `new = None` deletes; `expected = None` means "must not exist".
#[derive(Debug, Clone)]
pub struct RefChange {
    pub name: String,
    pub new: Option<ObjectId>,
    pub expected: Option<ObjectId>,
}

impl RefChange {
    pub fn set(name: impl Into<String>, new: ObjectId, expected: Option<ObjectId>) -> Self {
        RefChange {
            name: name.into(),
            new: Some(new),
            expected,
        }
    }
    pub fn delete(name: impl Into<String>, expected: ObjectId) -> Self {
        RefChange {
            name: name.into(),
            new: None,
            expected: Some(expected),
        }
    }
}

/// Why a publish did not happen.
#[derive(Debug)]
pub enum PublishError {
    /// A ref did not have the expected value: another writer was first. Re-read and retry.
    Conflict(String),
    /// Anything else.
    Failed(Error),
}

impl From<PublishError> for Error {
    fn from(e: PublishError) -> Error {
        match e {
            PublishError::Conflict(m) => Error::conflict(m),
            PublishError::Failed(e) => e,
        }
    }
}

/// Shared refs only: each under its own lock, claimed before it exists; `packed-refs` only
/// when something is deleted ([`apply_loose_refs`]). `current` reads a ref's value under its
/// lock.
pub(crate) fn publish_loose(
    files: &RefFiles,
    changes: &[RefChange],
    msg: &str,
    signature: &gix::actor::Signature,
    current: &dyn Fn(&str) -> Result<Option<ObjectId>>,
) -> Result<(), PublishError> {
    let mut tail = Vec::with_capacity(100 + msg.len());
    signature
        .write_to(&mut tail)
        .map_err(|e| PublishError::Failed(Error::other(format!("bad signature: {e}"))))?;
    tail.push(b'\t');
    tail.extend_from_slice(msg.as_bytes());
    tail.push(b'\n');
    let plan: Vec<_> = changes
        .iter()
        .map(|c| (c.name.clone(), c.new, c.expected))
        .collect();
    match apply_loose_refs(files, &plan, &tail, current) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(name)) => Err(PublishError::Conflict(format!(
            "{name} changed while this write was prepared"
        ))),
        Err(e) => Err(PublishError::Failed(e)),
    }
}

/// A full ref name git accepts that names a shared ref.
pub(crate) fn check_name(name: &str) -> Result<()> {
    let _: FullName = name
        .try_into()
        .map_err(|e| Error::usage(format!("invalid ref name {name:?}: {e}")))?;
    if !is_plain_shared_ref(name) {
        return Err(Error::usage(format!(
            "{name} is not a ref shared by all worktrees: this tool never writes it"
        )));
    }
    Ok(())
}
