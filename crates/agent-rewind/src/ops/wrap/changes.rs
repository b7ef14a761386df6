//! How `wrap` hears that the worktree changed while the command runs: through the
//! filesystem monitor git uses when `core.fsmonitor` names one (a snapshot, which asks the
//! monitor what changed, compared with the last one), otherwise through the operating
//! system's file events (the `notify` crate: inotify, FSEvents, kqueue, ReadDirectoryChanges).
//!
//! It only tells "something may have changed, now": whether a checkpoint records anything
//! is the snapshot's decision (ignored files, or a change undone, record nothing). Events
//! under a `.git` folder are dropped here, so the checkpoints the wrapper writes itself never
//! wake it. It never writes anything.

use crate::snapshot::{Policy, snapshot_worktree};
use crate::store::{ObjectId, Store};
use agent_rewind_core::error::Result;
use std::path::{Component, Path};
use std::sync::mpsc::Sender;

/// What the wrapper's loop hears.
#[derive(Debug)]
pub enum Heard {
    /// A file in the worktree may have changed.
    Changed,
    /// The command ended.
    Exited(std::process::ExitStatus),
    /// Waiting for the command failed (the wrapper can no longer tell when it ends).
    WaitFailed(String),
}

/// Where changes come from.
pub enum Source {
    /// The operating system's file events, sent as [`Heard::Changed`] by the watcher's
    /// own thread for as long as the value lives.
    Events {
        _watcher: notify::RecommendedWatcher,
    },
    /// The filesystem monitor, asked by a snapshot on every look ([`Source::look`]); the
    /// tree the last look saw.
    Monitor(Option<ObjectId>),
}

impl Source {
    /// The source for the worktree at `root`: the filesystem monitor when one is
    /// configured, else file events sent to `tx`. `Err` with why when neither can be used.
    pub fn start(store: &Store, root: &Path, tx: Sender<Heard>) -> Result<Source> {
        if store.worktree().has_fsmonitor() {
            agent_rewind_core::trace::mark("wrap: watching through the filesystem monitor");
            return Ok(Source::Monitor(None));
        }
        agent_rewind_core::trace::mark("wrap: watching through file events");
        let root_owned = root.to_path_buf();
        let mut watcher = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
            let wakes = match ev {
                Ok(ev) => counts(&ev, &root_owned),
                // An overflowed queue or a lost watch: something may have changed.
                Err(_) => true,
            };
            if wakes {
                let _ = tx.send(Heard::Changed);
            }
        })
        .map_err(|e| watch_error(root, e))?;
        use notify::Watcher;
        watcher
            .watch(root, notify::RecursiveMode::Recursive)
            .map_err(|e| watch_error(root, e))?;
        Ok(Source::Events { _watcher: watcher })
    }

    /// Whether the source is the filesystem monitor, looked at on a timer.
    pub fn polls(&self) -> bool {
        matches!(self, Source::Monitor(_))
    }

    /// For the monitor: whether the worktree's snapshot differs from the last look's (the
    /// first look only remembers it). File events are heard without looking: `false`.
    pub fn look(&mut self, store: &Store, policy: &Policy) -> Result<bool> {
        let Source::Monitor(last) = self else {
            return Ok(false);
        };
        // A handle whose objects stay in memory: a look writes nothing to the repository.
        let tree = snapshot_worktree(&store.handle_for_staged_writes(), policy)?.tree;
        let changed = last.is_some_and(|t| t != tree);
        *last = Some(tree);
        Ok(changed)
    }

    /// After a checkpoint recorded `tree`, the monitor's next look compares with it.
    pub fn recorded(&mut self, tree: ObjectId) {
        if let Source::Monitor(last) = self {
            *last = Some(tree);
        }
    }
}

fn watch_error(root: &Path, e: notify::Error) -> agent_rewind_core::error::Error {
    agent_rewind_core::error::Error::other(format!(
        "cannot watch {} for changes: {e}",
        root.display()
    ))
    .with_hint("raise the limit of file watches (fs.inotify.max_user_watches on Linux), or set core.fsmonitor")
}

/// Whether a file event may change what a checkpoint records: not a mere read, and about
/// a path outside every `.git` folder (an event without paths counts).
fn counts(ev: &notify::Event, root: &Path) -> bool {
    if matches!(ev.kind, notify::EventKind::Access(_)) {
        return false;
    }
    ev.paths.is_empty() || ev.paths.iter().any(|p| !in_git_dir(p, root))
}

/// `path` is in (or is) a `.git` folder or file under `root`.
fn in_git_dir(path: &Path, root: &Path) -> bool {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components()
        .any(|c| matches!(c, Component::Normal(n) if n == ".git"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_folders_do_not_count() {
        let root = Path::new("/w");
        assert!(in_git_dir(Path::new("/w/.git/index"), root));
        assert!(in_git_dir(Path::new("/w/.git"), root));
        assert!(in_git_dir(Path::new("/w/sub/.git/HEAD"), root));
        assert!(!in_git_dir(Path::new("/w/src/a.rs"), root));
        assert!(!in_git_dir(Path::new("/w/.github/x.yml"), root));
    }
}
