//! `init`: one-time, idempotent set-up of a repository: `notes.displayRef` so `git log`
//! shows our notes, `log.excludeDecoration` so our many refs do not clutter `git log`
//! decorations. Reflogs for our refs are forced by every write, so need no config.
//! Config is written through the git binary (which owns config locking), never by hand.

use crate::store::{Store, layout};
use agent_rewind_core::error::Result;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct InitOutcome {
    /// Config entries added (`key=value`); empty when everything was already set.
    pub added: Vec<String>,
    pub git_dir: String,
}

/// The config entries `init` ensures.
fn wanted() -> Vec<(&'static str, String)> {
    vec![
        ("notes.displayRef", layout::NOTES_DISPLAY_GLOB.to_string()),
        ("log.excludeDecoration", layout::RUNS_PREFIX.to_string()),
        (
            "log.excludeDecoration",
            layout::REMOTE_RUNS_PREFIX.to_string(),
        ),
        ("log.excludeDecoration", layout::BACKUPS_REF.to_string()),
    ]
}

pub fn init(store: &Store) -> Result<InitOutcome> {
    let mut added = vec![];
    for (key, value) in wanted() {
        let existing = store.config().strings(key);
        if existing.iter().any(|v| v == &value) {
            continue;
        }
        store.config().add(key, &value)?;
        added.push(format!("{key}={value}"));
    }
    Ok(InitOutcome {
        added,
        git_dir: store.worktree().common_dir().display().to_string(),
    })
}
