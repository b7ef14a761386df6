//! The journal: appending records to runs. Every writer (operations, the workflow runner,
//! the hooks) stands on this layer; it stands on the store and the catalog.
//!
//! It owns three steps of an append, kept apart so each can be read and tested alone:
//! - `context`: reading what the new checkpoint continues (the run's tip, the step's last
//!   attempt, the user's HEAD) into a `Context`;
//! - `line`: a pure function from a [`Record`] and its context to the checkpoint line and
//!   the commit message;
//! - [`append`]: the publish loop (objects first, one compare-and-swap ref transaction,
//!   re-read and retry on conflict), and appending later facts to a checkpoint's note.
//!
//! It also owns the worktree's active run ([`active`]). It never prints, never touches the
//! user's index, HEAD or files, and never spells a ref name or a private path itself.

pub mod active;
mod append;
mod artifacts;
mod context;
mod line;
mod record;
pub mod runstatus;

pub use active::{
    active_run, active_run_in, clear_active_run, set_active_run, worktree_active_run,
};
pub use append::{append, append_note_lines, backoff, catch_up_step_ref};
pub use record::{Origin, Record, Recorded, StepFacts, TreeSource};
