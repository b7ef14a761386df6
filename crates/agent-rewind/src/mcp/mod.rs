//! What an agent may do through the MCP server (`git agent-rewind mcp`): who the caller is,
//! what `agentRewind.mcpAllow` widens, the guard of its writes ([`guard`]: only what the
//! caller's own turns wrote, in the active run), and the plan ids that make a write apply
//! exactly what its dry run showed.
//!
//! Owns those rules; never speaks the protocol (the CLI's `mcp` command does) and never
//! writes a file or a ref (the operations it guards do).

mod guard;

pub use guard::{RevertReach, check_restore, check_restore_source, check_revert};

use crate::agent::Agent;
use crate::store::Store;
use agent_rewind_core::error::{Error, Result};
use serde::Serialize;
use sha2::{Digest, Sha256};

/// What `agentRewind.mcpAllow` can list: writes that reach past the caller's own work.
pub const ALLOWABLE: [&str; 2] = ["other-runs", "other-agents"];

/// Who calls: the agent the MCP client names, and its session as the hooks recorded it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Caller {
    /// The client's name from its `initialize` (`claude-code`, `codex-mcp-client` …).
    pub client: String,
    pub agent: Option<String>,
    pub session: Option<String>,
}

impl Caller {
    /// The caller named `client`: the agent whose name the client's contains, and that
    /// agent's newest session in the active run.
    pub fn identify(store: &Store, client: &str) -> Caller {
        let lower = client.to_ascii_lowercase();
        // Pi has no MCP client, and its short name is inside many other names.
        let agent = Agent::ALL
            .into_iter()
            .filter(|a| *a != Agent::Pi)
            .find(|a| lower.contains(a.name()));
        let session = agent.and_then(|a| newest_session(store, a).ok().flatten());
        Caller {
            client: client.to_string(),
            agent: agent.map(|a| a.name().to_string()),
            session,
        }
    }

    /// How records name it: `claude session 1b2c… (MCP)`.
    pub fn by(&self) -> String {
        match (&self.agent, &self.session) {
            (Some(a), Some(s)) => format!("{a} session {s} (MCP)"),
            (Some(a), None) => format!("{a} (MCP)"),
            _ => format!("MCP client {}", self.client),
        }
    }
}

/// The session of `agent`'s newest checkpoint in the active run.
fn newest_session(store: &Store, agent: Agent) -> Result<Option<String>> {
    let Some(run) = crate::journal::active_run(store)? else {
        return Ok(None);
    };
    let cps = crate::ops::list::list_checkpoints(store, &run)?;
    Ok(cps
        .iter()
        .rev()
        .map(|c| c.line())
        .find(|l| l.agent.as_deref() == Some(agent.name()))
        .and_then(|l| l.sdk_session_id.clone()))
}

/// What `agentRewind.mcpAllow` lists (multi-valued, or comma-separated).
pub fn allowed(store: &Store) -> Vec<String> {
    store
        .config()
        .strings("agentRewind.mcpAllow")
        .iter()
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().to_ascii_lowercase())
        .filter(|v| !v.is_empty())
        .collect()
}

/// The id of a plan: a digest of what the tool was asked, the plan it made, and the bytes
/// now on disk at each path the plan touches, so that applying it refuses once anything it
/// rests on has changed.
pub fn plan_id(
    store: &Store,
    request: &serde_json::Value,
    plan: &serde_json::Value,
) -> Result<String> {
    let mut h = Sha256::new();
    h.update(request.to_string().as_bytes());
    h.update([0]);
    h.update(plan.to_string().as_bytes());
    let root = store.worktree().root()?;
    for path in plan_paths(plan) {
        h.update([0]);
        h.update(path.as_bytes());
        match std::fs::symlink_metadata(root.join(&path)) {
            Ok(m) if m.file_type().is_symlink() => {
                h.update(b"link:");
                if let Ok(t) = std::fs::read_link(root.join(&path)) {
                    h.update(t.to_string_lossy().as_bytes());
                }
            }
            Ok(m) if m.is_file() => {
                h.update(b"file:");
                let bytes = std::fs::read(root.join(&path))
                    .map_err(|e| Error::other(format!("could not read {path}: {e}")))?;
                h.update(Sha256::digest(&bytes));
            }
            Ok(_) => h.update(b"other"),
            Err(_) => h.update(b"absent"),
        }
    }
    let digest = h.finalize();
    Ok(digest[..10].iter().map(|b| format!("{b:02x}")).collect())
}

/// The paths a plan names (`files[].path`).
fn plan_paths(plan: &serde_json::Value) -> Vec<String> {
    plan["files"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["path"].as_str().map(str::to_string))
        .collect()
}

/// Refuse to apply when `given` is not the id of the plan made now.
pub fn check_plan(given: &str, now: &str) -> Result<()> {
    if given.trim() == now {
        return Ok(());
    }
    if given.trim().is_empty() {
        return Err(
            Error::refused("plan_id is empty: nothing was written".to_string())
                .with_hint("ask without plan_id for the plan and its id"),
        );
    }
    Err(Error::refused(format!(
        "plan {given} is not the plan for the worktree as it is now ({now}): something changed \
         since it was shown; nothing was written"
    ))
    .with_hint("ask again without plan_id for the current plan"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_paths_are_the_files_it_names() {
        let plan = serde_json::json!({"files": [{"path": "a.txt"}, {"path": "b/c"}, {"x": 1}]});
        assert_eq!(plan_paths(&plan), ["a.txt", "b/c"]);
        assert!(check_plan("abc", "abc").is_ok());
        assert!(check_plan("abc", "abd").is_err());
        let empty = check_plan(" ", "abc").unwrap_err().to_string();
        assert!(empty.contains("plan_id is empty"), "{empty}");
    }
}
