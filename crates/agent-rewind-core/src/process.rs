//! The one place where a layer above the store starts a process. Every reason to start one
//! is a variant of [`Purpose`], so a new one is a deliberate change to this file, and
//! `tests/suite/layers.rs` fails until it is listed there too. (The store starts its own
//! processes, git and the filesystem monitor, in `gitprocess` and `fsmonitor`.)
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
    /// git's pager (`GIT_PAGER`, `pager.<cmd>`, `core.pager`, `PAGER`, `less`) for the
    /// output of `diff`, `show` and `log` on a terminal, as git starts it.
    Pager,
    /// The agent CLI continuing its conversation after `rewind`/`fork --agent-resume`, the
    /// command the tool printed (the agent's own program, from the user's `PATH`).
    AgentResume,
    /// This program again, applying the retention policy (`gc --auto`) in the background
    /// once a day.
    Retention,
    /// The secret scanner `agentRewind.secretScanner` names (gitleaks or trufflehog, from
    /// the user's `PATH`), over a private folder holding what a `push` would share.
    SecretScanner,
    /// `man`, showing this program's manual page for `<command> --help`, as `git help`
    /// does.
    Manual,
    /// The user's own `post-agent-rewind` hook, from the hooks folder git uses, after an
    /// operation rewrote files of the worktree, as git runs `post-checkout`.
    UserHook,
    /// The command a person asked `wrap` to run (`wrap -- <command> …`), from their `PATH`,
    /// on their terminal.
    WrappedCommand,
}

impl Purpose {
    /// Every purpose, for the test that lists the callers.
    pub const ALL: &[Purpose] = &[
        Purpose::WorkflowStep,
        Purpose::BackgroundCheckpoint,
        Purpose::Browser,
        Purpose::Pager,
        Purpose::AgentResume,
        Purpose::Retention,
        Purpose::SecretScanner,
        Purpose::Manual,
        Purpose::UserHook,
        Purpose::WrappedCommand,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::WorkflowStep => "workflow step",
            Purpose::BackgroundCheckpoint => "background checkpoint",
            Purpose::Browser => "browser",
            Purpose::Pager => "pager",
            Purpose::AgentResume => "agent resume",
            Purpose::Retention => "retention",
            Purpose::SecretScanner => "secret scanner",
            Purpose::Manual => "manual",
            Purpose::UserHook => "user hook",
            Purpose::WrappedCommand => "wrapped command",
        }
    }
}

/// A command for `program`, started for `purpose` (named in the trace).
// The one place outside the store allowed to make a command (clippy.toml forbids it elsewhere).
#[allow(clippy::disallowed_methods)]
pub fn command(purpose: Purpose, program: impl AsRef<OsStr>) -> Command {
    crate::trace::mark(purpose.as_str());
    Command::new(program)
}

/// The pager command `pager` (a shell command line, as git's `core.pager`), started as git
/// starts it: through `sh -c`, with `LESS=FRX` and `LV=-c` unless already set, its standard
/// input to be written by the caller.
pub fn pager(pager: &str) -> Command {
    let mut c = command(Purpose::Pager, "sh");
    c.arg("-c").arg(pager).stdin(std::process::Stdio::piped());
    if std::env::var_os("LESS").is_none() {
        c.env("LESS", "FRX");
    }
    if std::env::var_os("LV").is_none() {
        c.env("LV", "-c");
    }
    c
}

/// Ctrl-C while a workflow runs: SIGINT is noted in a flag instead of ending the runner, so
/// it can record the step it was running as `interrupted` and exit 130 as a shell does.
/// The step's own process gets the signal from the terminal as well (same process group)
/// and ends as it chooses.
pub mod interrupt {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    static FLAG: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();

    /// From now on, SIGINT sets the flag [`caught`] reads (once per process; later calls do
    /// nothing). Where signals cannot be caught, Ctrl-C ends the process as before.
    pub fn catch() {
        let flag = FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)));
        #[cfg(unix)]
        {
            static REGISTERED: std::sync::Once = std::sync::Once::new();
            REGISTERED.call_once(|| {
                // Failing to register leaves the default (the runner ends): nothing to report.
                let _ = signal_hook::flag::register(signal_hook::consts::SIGINT, flag.clone());
            });
        }
        #[cfg(not(unix))]
        let _ = flag;
    }

    /// Whether SIGINT came since [`catch`].
    pub fn caught() -> bool {
        FLAG.get().is_some_and(|f| f.load(Ordering::SeqCst))
    }
}
