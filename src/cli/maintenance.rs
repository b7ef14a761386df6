//! Maintenance after a command recorded something: the library says what is due
//! (`ops::maintenance::due`); this module decides how it runs. git's own maintenance starts
//! detached; the retention policy runs in this program started again in the background
//! (`gc --auto`), so the command that recorded returns at once.
//!
//! It never applies the policy in the foreground of a command, and never fails one: what
//! cannot be started is left for the next write.

use agent_rewind::ops::maintenance;
use agent_rewind::store::Store;
use agent_rewind_core::process::{Purpose, command};
use std::process::Stdio;

/// Start what is due after the command recorded one or more checkpoints in `store`.
pub fn after_recording(store: &Store) {
    let due = maintenance::due(store);
    if let Some(git) = due.git {
        maintenance::start_git_maintenance(store, git);
    }
    if due.retention {
        start_retention(store);
    }
}

/// This program again as `gc --auto`, in a process group of its own (a ^C at the prompt
/// must not stop it), with nothing to read and nowhere to print.
fn start_retention(store: &Store) -> bool {
    let (Ok(dir), Ok(exe)) = (store.worktree().root(), std::env::current_exe()) else {
        return false;
    };
    let mut child = command(Purpose::Retention, exe);
    child
        .args(["gc", "--auto"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    agent_rewind_core::platform::process::own_process_group(&mut child);
    child.spawn().is_ok()
}
