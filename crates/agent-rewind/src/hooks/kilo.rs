//! Kilo (`@kilocode/cli`, an OpenCode fork; checked with 7.7.9) has OpenCode's plugins and no
//! JSON hooks: a plugin file in the project's plugin folder
//! (`.kilo/plugins/git-agent-rewind.js`) subscribes to its bus events and calls `git
//! agent-rewind hook kilo`, whose payloads are OpenCode's (read by [`super::payload`]). It is
//! OpenCode's plugin (`hooks/opencode-plugin.js`) with Kilo's name in place of OpenCode's, so
//! the two never drift apart.
//!
//! The whole file is ours, recognised by its first line. Installing writes it (or refreshes
//! an older copy of ours); uninstalling deletes it, with the folders it leaves empty. A file of
//! that name that is not ours is refused and left untouched, and nothing else in `.kilo/` is
//! ever touched.

use super::Agent;
use super::ownedfile::OwnedFile;
use crate::store::Store;
use agent_rewind_core::error::Result;
use std::path::{Path, PathBuf};

/// The plugin, as installed.
pub fn plugin() -> &'static str {
    static TEXT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        super::opencode::PLUGIN
            .replace("// git-agent-rewind OpenCode plugin", FIRST_LINE)
            .replace("--agent opencode", "--agent kilo")
            .replace(r#""hook", "opencode""#, r#""hook", "kilo""#)
    });
    TEXT.as_str()
}
/// How the plugin's first line starts.
const FIRST_LINE: &str = "// git-agent-rewind Kilo plugin";
/// Where it goes, relative to the worktree root (Kilo loads `{plugin,plugins}/*.{ts,js}` of
/// each of its configuration folders, `.kilo/` of the project among them).
pub const PLUGIN_PATH: &str = ".kilo/plugins/git-agent-rewind.js";
/// Where Kilo reads a project's MCP servers (`mcp`, as OpenCode's `opencode.json`).
pub const MCP_FILE: &str = "kilo.json";

/// The plugin file, ours as a whole.
pub const FILE: OwnedFile = OwnedFile {
    agent: Agent::Kilo,
    path: PLUGIN_PATH,
    text: plugin,
    first_line: FIRST_LINE,
    events: &super::opencode::EVENTS,
};

/// After an uninstall: Kilo's own files still in `.kilo/` (it writes OpenCode's: a
/// `.gitignore` at least; checked with 7.7.9), said so and left in place.
pub fn left_behind(store: &Store) -> Result<Option<String>> {
    super::opencode::own_files_left(store, ".kilo", "Kilo")
}

/// The plugin file of the worktree at `root` and the events it forwards (none when it is not
/// there or not ours).
pub fn installed(root: &Path) -> (PathBuf, Vec<String>) {
    let p = root.join(PLUGIN_PATH);
    let ours = std::fs::read_to_string(&p).is_ok_and(|t| FILE.is_ours(&t));
    let events = match ours {
        true => FILE.events.iter().map(|e| e.to_string()).collect(),
        false => vec![],
    };
    (p, events)
}

/// Whether Kilo will load the plugin: always, unless it is told to skip the project's
/// configuration or plugins.
pub fn runs() -> (&'static str, String) {
    if std::env::var_os("KILO_DISABLE_PROJECT_CONFIG").is_some_and(|v| !v.is_empty()) {
        return (
            "no",
            "KILO_DISABLE_PROJECT_CONFIG is set: Kilo skips the project's configuration, \
             plugins included"
                .into(),
        );
    }
    (
        "yes",
        "Kilo loads the project's plugin folder at startup (no trust step; `kilo --pure` \
         skips plugins for one run)"
            .into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugin_is_opencodes_calling_hook_kilo_tokens_included() {
        let kilo = plugin();
        assert!(FILE.is_ours(kilo), "{}", kilo.lines().next().unwrap_or(""));
        assert!(kilo.contains(r#"["agent-rewind", "hook", "kilo"]"#));
        assert!(!kilo.contains(r#""hook", "opencode""#));
        assert!(kilo.contains("usage"), "the turn's tokens are sent too");
        assert_eq!(
            kilo.lines().count(),
            super::super::opencode::PLUGIN.lines().count()
        );
    }
}
