//! What a hook checks in a repository before it records anything, and what it sets up there
//! once: `agentRewind.enabled` (git's precedence: `git -c`, the repository's config, then the
//! user's and the system's), which turns every hook into a quiet no-op when false; and, when
//! a hook starts a run in a repository nobody ran `init` in, the same set-up `init` does
//! (so that a user-level install needs no step per repository).
//!
//! Reads the configuration; the only write is `init`'s, and only after a hook recorded.

use super::{HookAction, HookOutcome};
use crate::store::Store;

/// The configuration key that turns recording off (`false`) in a repository, or everywhere
/// but where it is `true` when set in the user's configuration.
pub const ENABLED_KEY: &str = "agentRewind.enabled";

/// `None` when hooks record here; else the outcome of the hook `hook`: skipped, quietly
/// (with a warning only when the value is not a boolean, as git would refuse it).
pub fn disabled(store: &Store, hook: &str) -> Option<HookOutcome> {
    match store.config().bool(ENABLED_KEY) {
        Ok(Some(false)) => Some(HookOutcome::skipped(
            hook,
            format!("{ENABLED_KEY} is false in this repository"),
        )),
        Ok(_) => None,
        Err(e) => {
            let mut out = HookOutcome::skipped(hook, "nothing recorded");
            out.warnings.push(e.message);
            Some(out)
        }
    }
}

/// Whether `init`'s set-up is in place in the repository (its first entry is the sign).
fn initialized(store: &Store) -> bool {
    store
        .config()
        .strings("notes.displayRef")
        .iter()
        .any(|v| v == crate::store::layout::NOTES_DISPLAY_GLOB)
}

/// After a hook's outcome `out`: when it started a run (`started_run`: the event or the turn
/// began a new one) in a repository without `init`'s set-up, run it. A failure is a warning.
pub fn set_up_after(store: &Store, out: &mut HookOutcome, started_run: bool) {
    let started = out.action == HookAction::Started || (started_run && out.wrote());
    if !started || initialized(store) {
        return;
    }
    if let Err(e) = crate::ops::init::init(store) {
        out.warnings.push(format!(
            "the run was recorded, but setting up the repository as `git agent-rewind init` \
             does failed: {}",
            e.message
        ));
    }
}
