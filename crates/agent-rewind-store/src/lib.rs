//! The git-native store on gix: opening the repository and handing out one facade per
//! thing it touches. `Store` itself only opens and hands out; callers find a method by what
//! it touches: [`Store::refs`], [`Store::objects`], [`Store::notes`], [`Store::index`],
//! [`Store::worktree`] (also the repository's paths), [`Store::remote`],
//! [`Store::maintenance`], [`Store::locks`], [`Store::config`], [`Store::diff`] and
//! [`Store::private`] ([`facade`]).
//!
//! One way to open a repository per purpose:
//! - [`Store::discover`]: the repository a command runs in, found as git finds it, opened
//!   for any work ([`OpenFor::Work`]) or for a brief read ([`OpenFor::BriefRead`]);
//! - [`Store::open_linked_worktree`]: a linked worktree just created, whatever the
//!   environment names;
//! - [`Store::handle_for_thread`]: the same repository for a worker thread;
//! - [`Store::handle_for_staged_writes`]: the same repository whose object writes stay in
//!   memory until [`Objects::persist_staged`] writes them as one pack;
//! - [`Store::handle_for_bulk_read`]: the same repository with an object database of its
//!   own, for reading many objects once.
//!
//! This is the only crate that depends on gix or starts a process (`layout` is the only
//! module that spells ref names, `gitprocess` the only one that runs git). It knows the
//! format but not the operations: it never decides *what* to record or restore, touches the
//! user's index, HEAD or files only when an operation asks it to (after that operation's
//! backup: `worktree`, `index`, `gitprocess`), and never prints.

// `print!`/`eprintln!` panic when the stream is a closed pipe; nothing here prints but
// through a write whose error is dropped.
#![deny(clippy::print_stdout, clippy::print_stderr)]
// The store is the one crate that starts processes (clippy.toml forbids it elsewhere).
#![allow(clippy::disallowed_methods)]

mod blame;
pub use blame::RunningBlame;
mod checkoutbytes;
mod checksum;
mod config;
mod configenv;
mod diff;
mod diffattr;
mod diffstat;
pub mod facade;
mod gitprocess;
mod index;
mod indexfile;
mod indexlock;
pub mod layout;
pub mod linemap;
mod localcopy;
mod lockfile;
mod locks;
mod looserefs;
mod maintenance;
mod merge;
mod notes;
mod objects;
mod open;
mod packcreate;
mod packdelete;
mod packedrefs;
mod packwrite;
mod patch;
mod publish;
mod reffiles;
mod refs;
mod reftable;
mod repository;
mod savedindex;
mod scan;
mod sign;
/// The snapshot of the worktree: the scanner's types, and taking one of this store.
pub mod snapshot {
    pub use crate::scan::{snapshot_for_checkpoint, snapshot_worktree};
    pub use agent_rewind_scan::{DEFAULT_MAX_UNTRACKED, Excluded, Policy, Snapshot};
}
mod remote;
mod unified;
mod usage;
pub use unified::text_patch;
pub use usage::WorktreeUse;
mod worktree;

pub use agent_rewind_scan::{ChangeKind, TreeChange, glob_match};
pub use config::Config;
pub use diff::{Diff, DiffText};
pub use gix::objs::tree::EntryKind;
pub use index::Index;
pub use indexfile::WrittenFile;
pub use localcopy::{LocalRemote, NotesCopy};
pub use locks::Locks;
pub use locks::{PostCommitWait, RunLock, hold_post_commit_lock, open_lock_file, set_writer_wait};
pub use maintenance::Maintenance;
pub use merge::MergedBlob;
pub use notes::Notes;
pub use notes::{NotesReader, union_lines};
pub use objects::Objects;
pub use objects::{CommitInfo, Trailers};
pub use packcreate::PackedCreate;
pub use packdelete::PackedDelete;
pub use publish::{PublishError, RefChange};
pub use refs::Refs;
pub use refs::UserHead;
pub use refs::{RunRefSet, RunRefs};
pub use remote::GitOutput;
pub use remote::Remote;
pub use savedindex::IndexFile;
pub use sign::{SignFormat, SignatureCheck, Signer};
pub use worktree::Worktree;
pub use worktree::{AsBackedUp, OnDisk, Operation};

pub use gix::ObjectId;
/// Byte strings (paths are bytes), for the layers above.
pub use gix::bstr::{BStr, BString, ByteSlice};
pub use repository::{OpenFor, Store};
