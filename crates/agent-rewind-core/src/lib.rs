//! The words every layer of git agent-rewind shares: the error type ([`error`]), run and
//! step ids ([`ids`]), timestamps ([`time`]), path quoting ([`quote`]), the trace
//! ([`trace`]) and the crash points ([`crash`]), the one way a layer starts a process
//! ([`process`]), the secret rules ([`redact`]), what differs between unix and Windows ([`platform`]), and our private files under the git dir
//! ([`private`]: their paths, envelope and digests).
//!
//! It must never depend on gix or on another crate of ours, open a repository, or decide
//! what a note or a run means (docs/ARCHITECTURE.md).

// `print!`/`eprintln!` panic when the stream is a closed pipe; nothing here prints but
// through a write whose error is dropped.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod crash;
pub mod error;
pub mod ids;
pub mod pickaxe;
pub mod platform;
pub mod private;
pub mod process;
pub mod quote;
pub mod redact;
pub mod time;
pub mod trace;
pub mod words;

pub use private::{
    PrivatePaths, create_parent, read_if_exists, remove_if_exists, write_atomic, write_atomic_with,
};
