//! The publish transaction (DESIGN.md §3.4): every ref change of one logical write goes into
//! one gix ref transaction, each with compare-and-swap on the value the writer read, with a
//! forced reflog. Objects must already be written.
//!
//! gix commits loose refs one by one, in the order given, so callers order changes so that a
//! crash between two renames is harmless: notes before `HEAD`, `HEAD` before step refs (a
//! step ref may lag behind `HEAD` after a crash, never run ahead of it).

use super::Store;
use crate::error::{Error, Result};
use gix::ObjectId;
use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
use gix::refs::{FullName, Target};

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

impl Store {
    /// Apply all changes in one transaction, or none of them.
    pub fn publish(&self, changes: &[RefChange], reflog_message: &str) -> Result<(), PublishError> {
        let msg = reflog_message.replace('\n', " ");
        let edits = changes
            .iter()
            .map(|c| to_edit(c, &msg))
            .collect::<Result<Vec<_>>>()
            .map_err(PublishError::Failed)?;
        // Reflog entries are signed like our commits. `edit_references` would ask
        // `repo.committer()`, which fails when no identity is configured (DESIGN §3.2: never
        // fail for that) and resolves the local time zone by walking the zoneinfo database.
        let signature = self.signature();
        let mut time = gix::date::parse::TimeBuf::default();
        let committer = Some(signature.to_ref(&mut time));
        // A failure that is neither a conflict nor a held lock (e.g. `git pack-refs` replacing
        // packed-refs while the transaction read it) is tried again, but only when every ref
        // still has its expected value: a transaction that failed half-way is reported.
        let mut attempt = 0;
        loop {
            match self.repo.edit_references_as(edits.clone(), committer) {
                Ok(_) => return Ok(()),
                Err(e) if e.is_conflict() => {
                    return Err(PublishError::Conflict(crate::error::one_line(
                        &e.to_string(),
                    )));
                }
                Err(e) if e.is_retryable() => {
                    // A ref lock is held. Under our writer lock that can only be a killed
                    // writer's leftover: remove those and try once more.
                    let names: Vec<String> = changes.iter().map(|c| c.name.clone()).collect();
                    if self.remove_stale_ref_locks(&names) == 0 {
                        return Err(PublishError::Conflict(crate::error::one_line(
                            &e.to_string(),
                        )));
                    }
                    return match self.repo.edit_references_as(edits, committer) {
                        Ok(_) => Ok(()),
                        Err(e) if e.is_conflict() || e.is_retryable() => Err(
                            PublishError::Conflict(crate::error::one_line(&e.to_string())),
                        ),
                        Err(e) => Err(PublishError::Failed(e.into())),
                    };
                }
                Err(_) if attempt < 3 && self.refs_as_expected(changes) => {
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(5 << attempt));
                }
                Err(e) => return Err(PublishError::Failed(e.into())),
            }
        }
    }
}

impl Store {
    /// Whether every ref of `changes` still has the value the change expects.
    fn refs_as_expected(&self, changes: &[RefChange]) -> bool {
        changes
            .iter()
            .all(|c| self.ref_target(&c.name).is_ok_and(|now| now == c.expected))
    }
}

fn to_edit(c: &RefChange, msg: &str) -> Result<RefEdit> {
    let name: FullName = c
        .name
        .as_str()
        .try_into()
        .map_err(|e| Error::usage(format!("invalid ref name {:?}: {e}", c.name)))?;
    let expected = match c.expected {
        Some(id) => PreviousValue::MustExistAndMatch(Target::Object(id)),
        None => PreviousValue::MustNotExist,
    };
    Ok(match c.new {
        Some(new) => RefEdit {
            change: Change::Update {
                log: LogChange {
                    mode: RefLog::AndReference,
                    force_create_reflog: true,
                    message: msg.into(),
                },
                expected,
                new: Target::Object(new),
            },
            name,
            deref: false,
        },
        None => RefEdit {
            change: Change::Delete {
                expected,
                log: RefLog::AndReference,
            },
            name,
            deref: false,
        },
    })
}
