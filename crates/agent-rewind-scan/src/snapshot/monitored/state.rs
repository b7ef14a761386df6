//! Where the last monitored snapshot of a checkpoint ended (`cache/monitored`, FORMAT.md):
//! the saved state, reading and writing it, and the key of everything outside the worktree
//! and the index it holds only under. Writes nothing but that file.

use super::Policy;
use crate::ScanContext;
use crate::dirwalk::{global_files, source_stamp};
use crate::snapshot::Excluded;
use agent_rewind_core::private::digest::digest128;
use agent_rewind_core::private::envelope::MONITORED_SNAPSHOT;
use gix::ObjectId;
use serde::{Deserialize, Serialize};

/// Where the last monitored snapshot ended.
#[derive(Serialize, Deserialize)]
pub(super) struct Saved {
    pub key: String,
    pub token: String,
    pub head_tree: String,
    pub index: [u64; 2],
    /// The index's tree when its cache-tree had it ([`crate::rawindex::RawIndex::tree`]):
    /// what lets the next checkpoint follow a change of the index.
    #[serde(default)]
    pub index_tree: Option<String>,
    pub tree: String,
    pub excluded: Vec<Excluded>,
}

/// The id a saved hex string names, if it is one.
pub(super) fn hex_id(hex: &str) -> Option<ObjectId> {
    ObjectId::from_hex(hex.as_bytes()).ok()
}

pub(super) fn load(ctx: &ScanContext) -> Option<Saved> {
    let body = MONITORED_SNAPSHOT.read_cache(&ctx.private().monitored_snapshot())?;
    serde_json::from_slice(&body).ok()
}

/// No saved state: the next checkpoint takes the full pass.
pub(super) fn forget(ctx: &ScanContext) {
    let _ = agent_rewind_core::private::remove_if_exists(&ctx.private().monitored_snapshot());
}

/// Best effort: a state that cannot be saved only means a full pass next time.
pub(super) fn save(ctx: &ScanContext, saved: &Saved) {
    let path = ctx.private().monitored_snapshot();
    let Ok(out) = serde_json::to_vec(saved) else {
        return;
    };
    if MONITORED_SNAPSHOT.write(&path, &out).is_err() {
        forget(ctx);
    }
}

/// Everything outside the worktree and the index that decides the tree: this program, the
/// worktree's place, the whole configuration (the monitor, filters, line endings, stat
/// options; not what gix derives from environment variables), the policy, and the ignore and
/// attribute files outside the worktree.
pub(super) fn state_key(ctx: &ScanContext, policy: &Policy) -> String {
    let repo = ctx.repo();
    let config = repo.config_snapshot();
    let mut text = format!(
        "{} {:?} {:?}\n",
        env!("CARGO_PKG_VERSION"),
        repo.workdir(),
        (
            policy.max_untracked_size,
            &policy.exclude,
            policy.scan_content
        ),
    );
    // Every section but the ones gix makes of environment variables (`GIT_AUTHOR_DATE`,
    // `GIT_INDEX_FILE`, `TERM`, proxies, …): git sets some of them for its hooks, the author
    // date anew for each commit, and none decides a tree (the index is known by its digest).
    // `gitoxide.parsePrecious` (`[gitoxide]` itself) changes how ignore files read: kept.
    // `-c` and `GIT_CONFIG_COUNT` settings are configuration, and stay in.
    let mut sections = Vec::new();
    for section in config.plumbing().sections() {
        let header = section.header();
        let environment = section.meta().source == gix::config::Source::EnvOverride;
        if !environment || (header.name() == "gitoxide" && header.subsection_name().is_none()) {
            let _ = section.write_to(&mut sections);
        }
    }
    text.push_str(&String::from_utf8_lossy(&sections));
    text.push('\n');
    let info = ctx.common_dir().join("info");
    let mut sources = vec![info.join("exclude"), info.join("attributes")];
    sources.extend(global_files(ctx, "core.excludesFile", "ignore"));
    sources.extend(global_files(ctx, "core.attributesFile", "attributes"));
    for source in sources {
        text.push_str(&format!(
            "{}: {}\n",
            source.display(),
            source_stamp(&source)
        ));
    }
    let d = digest128(text.as_bytes());
    format!("{:016x}{:016x}", d[0], d[1])
}
