//! The one place where a layer above the store starts a process. Every reason to start one
//! is a variant of [`Purpose`], so a new one is a deliberate change to this file, and
//! `tests/suite/layers.rs` fails until it is listed there too. (The store starts its own
//! processes, git and the filesystem monitor, in `gitbin` and `fsmonitor`.)
//!
//! It owns only the start: callers pass the program and its arguments and wait as they
//! need. It must never choose what runs; what a person did not choose (a fetched workflow,
//! a restored file) must be refused by the caller before it gets here.

use std::ffi::OsStr;
use std::process::Command;

/// Why a process is started on behalf of a layer above the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A workflow step's `run` command, through `sh -c`, from a workflow the user trusted.
    WorkflowStep,
    /// This program again, recording the post-commit checkpoint after the hook returned.
    BackgroundCheckpoint,
    /// The user's browser (`$BROWSER` or the platform's opener) on a page `view` wrote.
    Browser,
    /// The agent CLI continuing its conversation after `rewind`/`fork --agent-resume`, the
    /// command the tool printed (the agent's own program, from the user's `PATH`).
    AgentResume,
}

impl Purpose {
    /// Every purpose, for the test that lists the callers.
    pub const ALL: &[Purpose] = &[
        Purpose::WorkflowStep,
        Purpose::BackgroundCheckpoint,
        Purpose::Browser,
        Purpose::AgentResume,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::WorkflowStep => "workflow step",
            Purpose::BackgroundCheckpoint => "background checkpoint",
            Purpose::Browser => "browser",
            Purpose::AgentResume => "agent resume",
        }
    }
}

/// A command for `program`, started for `purpose` (named in the trace).
pub fn command(purpose: Purpose, program: impl AsRef<OsStr>) -> Command {
    crate::trace::mark(purpose.as_str());
    Command::new(program)
}
