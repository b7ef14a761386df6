//! OpenCode has no JSON hook configuration: a plugin file in the project's plugin folder
//! (`.opencode/plugins/git-agent-rewind.js`, the template in `hooks/opencode-plugin.js`)
//! subscribes to its bus events and calls `git agent-rewind hook opencode`.
//!
//! The whole file is ours, recognised by its first line. Installing writes it (or refreshes
//! an older copy of ours); uninstalling deletes it. A file of that name that is not ours is
//! refused and left untouched. Nothing else in `.opencode/` is ever touched: what OpenCode
//! itself writes there ([`OPENCODE_OWN`]) is named by uninstall and left in place.

use super::Agent;
use super::install::{FileAction, write_atomic};
use super::settings::SettingsChange;
use crate::store::Store;
use agent_rewind_core::error::{Error, Result};
use std::path::PathBuf;

/// The plugin, as installed.
pub const PLUGIN: &str = include_str!("../../../../hooks/opencode-plugin.js");
/// Where it goes, relative to the worktree root.
pub const PLUGIN_PATH: &str = ".opencode/plugins/git-agent-rewind.js";
/// The events the plugin forwards (and the compaction hook it adds context to).
pub const EVENTS: [&str; 5] = [
    "session.created",
    "session.idle",
    "file.edited",
    "message.updated",
    "experimental.session.compacting",
];
/// What OpenCode itself writes into every configuration folder it loads, `.opencode/`
/// included (checked with 1.18.33): it runs `npm install @opencode-ai/plugin` there and
/// ignores the results in a `.gitignore`.
pub const OPENCODE_OWN: [&str; 5] = [
    ".gitignore",
    "package.json",
    "package-lock.json",
    "bun.lock",
    "node_modules",
];

fn path(store: &Store) -> Result<PathBuf> {
    Ok(store.worktree().root()?.join(PLUGIN_PATH))
}

/// Whether `text` is a plugin file we wrote (any version).
fn is_ours(text: &str) -> bool {
    text.lines()
        .next()
        .is_some_and(|l| l.starts_with("// git-agent-rewind OpenCode plugin"))
}

fn change(path: &std::path::Path, action: FileAction, events: bool) -> SettingsChange {
    SettingsChange {
        agent: Agent::Opencode,
        path: path.display().to_string(),
        action,
        events: if events {
            EVENTS.iter().map(|e| e.to_string()).collect()
        } else {
            vec![]
        },
    }
}

/// What installing would do, or why it is refused (nothing written).
pub fn check(store: &Store) -> Result<FileAction> {
    let path = path(store)?;
    Ok(match std::fs::read(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => FileAction::Created,
        Err(e) => {
            return Err(Error::other(format!(
                "could not read {}: {e}",
                path.display()
            )));
        }
        Ok(bytes) if bytes == PLUGIN.as_bytes() => FileAction::Unchanged,
        Ok(bytes) if is_ours(&String::from_utf8_lossy(&bytes)) => FileAction::Updated,
        Ok(_) => {
            return Err(Error::refused(format!(
                "{} exists and is not ours; left it untouched",
                path.display()
            ))
            .with_hint(
                "move it aside, then run `git agent-rewind hooks install --agent opencode` again",
            ));
        }
    })
}

/// Write the plugin file.
pub fn install(store: &Store) -> Result<SettingsChange> {
    let path = path(store)?;
    let action = check(store)?;
    if action != FileAction::Unchanged {
        let dir = path.parent().expect("has a parent");
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::other(format!("could not create {}: {e}", dir.display())))?;
        write_atomic(&path, PLUGIN, 0o644)?;
    }
    Ok(change(&path, action, action != FileAction::Unchanged))
}

/// Delete the plugin file (only when it is ours).
pub fn uninstall(store: &Store) -> Result<SettingsChange> {
    let path = path(store)?;
    match std::fs::read(&path) {
        Ok(bytes) if is_ours(&String::from_utf8_lossy(&bytes)) => {
            std::fs::remove_file(&path)
                .map_err(|e| Error::other(format!("could not remove {}: {e}", path.display())))?;
            super::settings::remove_empty_dirs(&path, 2);
            Ok(change(&path, FileAction::Deleted, true))
        }
        _ => Ok(change(&path, FileAction::Absent, false)),
    }
}

/// After an uninstall: OpenCode's own files still in `.opencode/`, said so (never removed:
/// they are OpenCode's, and it writes them again whenever it loads the folder).
pub fn left_behind(store: &Store) -> Result<Option<String>> {
    let dir = store.worktree().root()?.join(".opencode");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(None);
    };
    let mut own: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| OPENCODE_OWN.contains(&n.as_str()))
        .collect();
    own.sort();
    Ok((!own.is_empty()).then(|| {
        format!(
            "{} still holds OpenCode's own files ({}): OpenCode writes them into every \
             configuration folder it loads; they were left in place",
            dir.display(),
            own.join(", ")
        )
    }))
}
