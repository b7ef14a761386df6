//! git agent-rewind: every step of an AI agent's workflow as a durable git checkpoint.
//!
//! This crate is the library that owns the semantics: the storage format (refs, checkpoint
//! commits, JSON Lines notes), the snapshot of a worktree, and one module per user-facing
//! operation under [`ops`]. The binary in `src/main.rs` and `src/cli/` only parses arguments
//! and renders results; an orchestrator can call [`ops`] directly instead.
//!
//! Layering, from the bottom: [`ids`], [`model`], [`time`] and [`redact`] (pure data and
//! functions); [`store`] (the only module that talks to gix, the only one that spells ref
//! names; it includes [`snapshot`], worktree → tree); [`catalog`] (reading checkpoints and
//! runs); [`materialize`] (backups and writing a checkpoint into a worktree); [`remote`]
//! (push, fetch and bundles through the git binary, and validation of what was fetched);
//! [`ops`] (one module per operation); [`workflow`] (schema, planner, runner); [`hooks`]
//! (installing git/agent hooks and the handlers they call). Nothing in the library prints to
//! the terminal.

pub mod catalog;
pub mod error;
pub mod hooks;
pub mod ids;
pub mod journal;
pub mod materialize;
pub mod model;
pub mod ops;
pub mod redact;
pub mod remote;
pub mod store;
pub mod time;
pub mod trace;
pub mod workflow;

pub use error::{Error, Result};
pub use store::snapshot;
