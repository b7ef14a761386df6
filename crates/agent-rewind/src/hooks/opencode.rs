//! OpenCode has no JSON hook configuration: a plugin file in the project's plugin folder
//! (`.opencode/plugins/git-agent-rewind.js`, the template in `hooks/opencode-plugin.js`)
//! subscribes to its bus events and calls `git agent-rewind hook opencode`.
//!
//! The whole file is ours, recognised by its first line. Installing writes it (or refreshes
//! an older copy of ours); uninstalling deletes it. A file of that name that is not ours is
//! refused and left untouched. Nothing else in `.opencode/` is ever touched: what OpenCode
//! itself writes there ([`OPENCODE_OWN`]) is named by uninstall and left in place.

use super::Agent;
use super::ownedfile::OwnedFile;
use crate::store::Store;
use agent_rewind_core::error::Result;

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
/// included (checked with 1.18.33 and 1.19.5): it runs `npm install @opencode-ai/plugin` there and
/// ignores the results in a `.gitignore`.
pub const OPENCODE_OWN: [&str; 5] = [
    ".gitignore",
    "package.json",
    "package-lock.json",
    "bun.lock",
    "node_modules",
];

/// The plugin file, ours as a whole.
pub const FILE: OwnedFile = OwnedFile {
    agent: Agent::Opencode,
    path: PLUGIN_PATH,
    text: || PLUGIN,
    first_line: "// git-agent-rewind OpenCode plugin",
    events: &EVENTS,
};

/// After an uninstall: OpenCode's own files still in `.opencode/`, said so (never removed:
/// they are OpenCode's, and it writes them again whenever it loads the folder).
pub fn left_behind(store: &Store) -> Result<Option<String>> {
    own_files_left(store, ".opencode", "OpenCode")
}

/// The files of [`OPENCODE_OWN`] in the worktree's `folder`, named as `cli`'s own (OpenCode,
/// or a fork that writes the same ones), or nothing when there are none.
pub fn own_files_left(store: &Store, folder: &str, cli: &str) -> Result<Option<String>> {
    let dir = store.worktree().root()?.join(folder);
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
            "{} still holds {cli}'s own files ({}): {cli} writes them into every \
             configuration folder it loads; they were left in place",
            dir.display(),
            own.join(", ")
        )
    }))
}
