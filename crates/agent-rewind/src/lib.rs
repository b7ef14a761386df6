//! git agent-rewind: every step of an AI agent's workflow as a durable git checkpoint.
//!
//! This crate is the library that owns the semantics: the note format ([`model`]), reading
//! checkpoints and runs, and one module per user-facing operation under [`ops`]. The binary
//! (the root package's `src/`) only parses arguments and renders results; an orchestrator
//! can call [`ops`] directly instead.
//!
//! Layering, from the bottom (docs/ARCHITECTURE.md). The crate `agent-rewind-core` carries
//! the types every layer shares (errors, ids, time, quoting, the secret rules, the trace
//! and the crash points, private files); `agent-rewind-scan` (the snapshot) and
//! `agent-rewind-store` (re-exported here as [`store`]) are the only crates that depend on
//! gix; the compiler keeps this crate from reaching gix, since it does not depend on it. Inside
//! this crate, checked by `tests/suite/layers.rs`: [`agent`] and [`model`] (pure data);
//! [`catalog`] (reading checkpoints and runs) and [`verify`] (what a note claims, checked
//! against the objects); [`journal`] (appending records, the active run), [`materialize`]
//! (backups and writing a checkpoint into a worktree) and [`remote`] (push, fetch and
//! bundles, and validation of what was fetched) and [`attribution`] (who wrote each line); [`workflow`] (schema, planner, runner);
//! [`ops`] (one module per operation); [`hooks`] (installing git/agent hooks and the
//! handlers they call) and [`view`] (the HTML page and text graphs of runs). Nothing in the
//! library prints to the terminal.

// `print!`/`eprintln!` panic when the stream is a closed pipe; nothing here prints but
// through a write whose error is dropped.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub use agent_rewind_store as store;
pub use agent_rewind_store::snapshot;

pub mod agent;
pub mod attribution;
pub mod catalog;
pub mod hooks;
pub mod journal;
pub mod materialize;
pub mod mcp;
pub mod model;
pub mod ops;
pub mod remote;
pub mod verify;
pub mod view;
pub mod workflow;

pub use agent_rewind_core::error::{Error, Result};
