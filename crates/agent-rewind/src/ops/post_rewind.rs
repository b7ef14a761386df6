//! The user's `post-agent-rewind` hook: after `rewind`, `fork`, `restore`, `revert`, `pick`
//! and `undo` changed files, the executable `post-agent-rewind` of the hooks folder git uses
//! (`core.hooksPath` honoured) runs in the worktree's top folder, as git runs `post-checkout`,
//! with four arguments: the operation, the source checkpoint, the target checkpoint and the
//! backup taken before the files changed (a null id where there is none).
//!
//! An explicit step the caller takes after the operation returned, never part of the
//! operation: the hook's failure is reported and undoes nothing. It must never run a hook
//! git itself would not run (a missing or non-executable file), and never let the hook's
//! output reach standard output, which belongs to the command (`--json`).

use crate::store::Store;
use agent_rewind_core::error::Result;
use agent_rewind_core::process::{Purpose, command};
/// The name of the hook in git's hooks folder.
pub const HOOK: &str = "post-agent-rewind";

/// What an operation did, as the hook is told.
#[derive(Debug, Clone)]
pub struct RewindEvent<'a> {
    /// `rewind`, `fork`, `restore`, `revert`, `pick` or `undo`.
    pub operation: &'a str,
    /// The checkpoint the files came from (for `undo`, the backup brought back).
    pub source: Option<&'a str>,
    /// The checkpoint the operation recorded or went to (a rewind's new run's root, the
    /// state a revert's changes left, the checkpoint a pick recorded), if any.
    pub target: Option<&'a str>,
    /// The backup taken before the files changed, if any.
    pub backup: Option<&'a str>,
}

/// Run the hook for `event` when there is one. `None`: it ran and exited 0, or there is none;
/// `Some(message)`: it could not be found, started or failed, in words for a warning (the
/// operation is done whatever the hook does).
pub fn run_hook(store: &Store, event: &RewindEvent) -> Option<String> {
    match try_run_hook(store, event) {
        Ok(warning) => warning,
        Err(e) => Some(format!(
            "the {HOOK} hook was not run ({}); the {} is done and stays done",
            agent_rewind_core::error::one_line(&e.to_string()),
            event.operation
        )),
    }
}

fn try_run_hook(store: &Store, event: &RewindEvent) -> Result<Option<String>> {
    let hook = store.config().hooks_dir()?.join(HOOK);
    if !is_executable(&hook) {
        return Ok(None);
    }
    let null = "0".repeat(store.objects().object_hash().len_in_hex());
    let arg = |v: Option<&str>| v.map_or_else(|| null.clone(), str::to_string);
    let root = store.worktree().root()?;
    // The hook's standard output goes where its errors go, as git does for most hooks:
    // ours is the command's own (its `--json`).
    let out = std::process::Stdio::from(std::io::stderr());
    let status = command(Purpose::UserHook, &hook)
        .args([
            event.operation.to_string(),
            arg(event.source),
            arg(event.target),
            arg(event.backup),
        ])
        .current_dir(root)
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .status();
    Ok(match status {
        Ok(s) if s.success() => None,
        Ok(s) => Some(format!(
            "the {HOOK} hook {}; the {} is done and stays done",
            match s.code() {
                Some(code) => format!("exited {code}"),
                None => "was killed".to_string(),
            },
            event.operation
        )),
        Err(e) => Some(format!(
            "the {HOOK} hook could not be started ({e}); the {} is done and stays done",
            event.operation
        )),
    })
}

/// Whether `path` is a file git would run as a hook: present and executable.
fn is_executable(path: &std::path::Path) -> bool {
    std::fs::metadata(path)
        .is_ok_and(|m| m.is_file() && agent_rewind_core::platform::mode::any_executable_bit(&m))
}
