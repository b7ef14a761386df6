//! git agent-rewind: every step of an AI agent's workflow as a durable git checkpoint.
//!
//! This crate is the library that owns the semantics: the storage format (refs, checkpoint
//! commits, JSON Lines notes), the snapshot of a worktree, and one module per user-facing
//! operation under [`ops`]. The binary in `src/main.rs` and `src/cli/` only parses arguments
//! and renders results; an orchestrator can call [`ops`] directly instead.
//!
//! Layering, from the bottom (docs/DECISIONS.md "Layers", checked by `tests/layers.rs`):
//! [`ids`], [`model`], [`time`], [`redact`] and [`quote`] (pure data and functions); [`store`] (the
//! only module that uses gix or runs git; `store::layout` spells every ref name and
//! `store::private` every private file; it includes [`snapshot`], worktree → tree);
//! [`catalog`] (reading checkpoints and runs) and [`verify`] (what a note claims, checked
//! against the objects); [`journal`] (appending records, the active
//! run), [`materialize`] (backups and writing a checkpoint into a worktree) and [`remote`]
//! (push, fetch and bundles, and validation of what was fetched); [`workflow`] (schema,
//! planner, runner); [`ops`] (one module per operation); [`hooks`] (installing git/agent
//! hooks and the handlers they call) and [`view`] (the HTML page and text graphs of runs). Nothing in the library prints to the terminal.

pub mod agent;
pub mod catalog;
pub mod crash;
pub mod error;
pub mod hooks;
pub mod ids;
pub mod journal;
pub mod materialize;
pub mod model;
pub mod ops;
pub mod quote;
pub mod redact;
pub mod remote;
pub mod store;
pub mod time;
pub mod trace;
pub mod verify;
pub mod view;
pub mod workflow;

pub use error::{Error, Result};
pub use store::snapshot;
