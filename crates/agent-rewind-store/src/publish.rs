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
    /// The lock files a gix transaction over `changes` may take.
    fn transaction_locks(&self, changes: &[RefChange]) -> Vec<std::path::PathBuf> {
        let mut locks: Vec<_> = changes
            .iter()
            .map(|c| super::reflock::lock_path(&self.ref_file(&c.name)))
            .collect();
        locks.push(super::reflock::lock_path(
            &self.common_dir().join("packed-refs"),
        ));
        locks
    }

    /// Where the loose file of ref `name` lives.
    fn ref_file(&self, name: &str) -> std::path::PathBuf {
        if Self::is_plain_shared_ref(name) {
            self.common_dir().join(name)
        } else {
            self.git_dir().join(name)
        }
    }

    /// One gix transaction; each lock it takes is claimed (store::reflock) between
    /// prepare and commit, so a kill in between leaves locks the next writer recognises.
    fn gix_transaction(
        &self,
        edits: Vec<RefEdit>,
        changes: &[RefChange],
        committer: Option<gix::actor::SignatureRef<'_>>,
    ) -> std::result::Result<(), gix::Error> {
        let fail = gix::lock::acquire::Fail::AfterDurationWithBackoff(super::reflock::LOCK_WAIT);
        let prepared = self.repo.refs.transaction().prepare(edits, fail, fail)?;
        let _claims: Vec<_> = self
            .transaction_locks(changes)
            .iter()
            .filter_map(|l| self.claim_existing_lock(l))
            .collect();
        crate::crash_point!("publish:locked");
        prepared.commit(committer)?;
        Ok(())
    }

    /// Creations and updates only: loose refs under their own locks, never `packed-refs`.
    fn publish_loose(
        &self,
        changes: &[RefChange],
        msg: &str,
        signature: &gix::actor::Signature,
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
            .map(|c| (c.name.clone(), c.new.expect("updates only"), c.expected))
            .collect();
        match self.update_loose_refs(&plan, &tail) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(name)) => Err(PublishError::Conflict(format!(
                "{name} changed while this write was prepared"
            ))),
            Err(e) => Err(PublishError::Failed(e)),
        }
    }
}

impl crate::facade::Refs<'_> {
    /// Apply all changes in one transaction, or none of them.
    ///
    /// Creations and updates of shared refs go through [`Store::update_loose_refs`] (git's
    /// protocol: `packed-refs` is never locked); a transaction with a deletion (which must
    /// edit `packed-refs`) goes through gix. A lock file someone else holds fails the call
    /// within about a second with an error naming it; one a killed process of ours left is
    /// removed.
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
        crate::crash_point!("publish:before");
        if self.reftable() {
            return self.reftable_publish(changes, &msg, &signature);
        }
        if changes
            .iter()
            .all(|c| c.new.is_some() && Store::is_plain_shared_ref(&c.name))
        {
            return self.publish_loose(changes, &msg, &signature);
        }
        let mut time = gix::date::parse::TimeBuf::default();
        let committer = Some(signature.to_ref(&mut time));
        // A failure that is neither a conflict nor a held lock (e.g. `git pack-refs` replacing
        // packed-refs while the transaction read it) is tried again, but only when every ref
        // still has its expected value: a transaction that failed half-way is reported.
        let mut attempt = 0;
        let mut swept = false;
        loop {
            match self.gix_transaction(edits.clone(), changes, committer) {
                Ok(()) => return Ok(()),
                Err(e) if e.is_conflict() => {
                    return Err(PublishError::Conflict(crate::error::one_line(
                        &e.to_string(),
                    )));
                }
                Err(e) if e.is_retryable() => {
                    // A lock is held. One a killed process of ours left is removed and the
                    // transaction tried once more; anyone else's is reported by name.
                    let locks = self.transaction_locks(changes);
                    if !swept && self.remove_stale_locks(&locks) > 0 {
                        swept = true;
                        continue;
                    }
                    return Err(PublishError::Failed(
                        match locks.iter().find(|l| l.exists()) {
                            Some(l) => super::reflock::lock_held(l),
                            None => e.into(),
                        },
                    ));
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
        changes.iter().all(|c| {
            self.refs()
                .ref_target(&c.name)
                .is_ok_and(|now| now == c.expected)
        })
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
