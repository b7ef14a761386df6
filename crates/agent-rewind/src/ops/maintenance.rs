//! Maintenance after a write: what is due once a command recorded checkpoints (folding the
//! small packs each checkpoint writes, git's own `gc --auto`, the retention policy once a
//! day), and the entry points that do each now. The write path (`journal::append`) does
//! none of it: a command that recorded something asks [`due`] afterwards, and whoever runs
//! the command decides where the work runs. The CLI starts itself again in the background
//! to apply the policy; a program embedding the library may call [`apply_retention`] on a
//! thread of its own (docs/design/maintenance.md).
//!
//! Owns the decision of what is due. It never names a command of the CLI and never starts
//! this program again; git's own maintenance is started by the store, detached, as git's
//! porcelain starts it after a write.

use super::gc::{GcOptions, GcOutcome, gc};
use super::retention::{self, DeletedRun};
use crate::store::Store;
use agent_rewind_core::error::Result;

/// git's own maintenance a write may call for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitMaintenance {
    /// Each checkpoint adds a small pack: past a few dozen, fold the small ones together
    /// (`git repack --geometric=2`).
    FoldSmallPacks,
    /// `git gc --auto`, which packs loose objects and refs only past git's own thresholds.
    AutoGc,
}

/// What is due after a command recorded something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Due {
    /// git's maintenance to start, if any.
    pub git: Option<GitMaintenance>,
    /// The retention policy is to be applied ([`apply_retention`]). Its daily clock has
    /// already restarted: the caller that is told runs it, and no other does today.
    pub retention: bool,
}

/// What is due after a command recorded one or more checkpoints. Cheap: a look at the pack
/// folder, one random byte, a config read and a small file's. About one write in 64 lets
/// `git gc --auto` look at its thresholds; folding small packs comes first when due.
pub fn due(store: &Store) -> Due {
    let git = if store.maintenance().many_small_packs() {
        Some(GitMaintenance::FoldSmallPacks)
    } else {
        let mut draw = [0u8];
        agent_rewind_core::ids::fill_random(&mut draw);
        (draw[0] < 4).then_some(GitMaintenance::AutoGc)
    };
    Due {
        git,
        retention: retention::take_due(store),
    }
}

/// Start `what` now, detached, unless maintenance we started is still running or
/// `agentRewind.autoGc` is off. Never waits, never fails.
pub fn start_git_maintenance(store: &Store, what: GitMaintenance) {
    match what {
        GitMaintenance::FoldSmallPacks => store.maintenance().spawn_small_pack_repack(),
        GitMaintenance::AutoGc => store.maintenance().spawn_auto_gc(),
    }
}

/// Apply the retention policy now, in this thread: delete the runs past its limits (never
/// one in use) and keep what was deleted for the next command a person runs. `None`: the
/// policy is `never`.
pub fn apply_retention(store: &Store) -> Result<Option<GcOutcome>> {
    let Some(policy) = retention::policy(store)? else {
        return Ok(None);
    };
    let out = gc(
        store,
        &GcOptions {
            policy: Some(policy.clone()),
            ..GcOptions::default()
        },
    )?;
    retention::report(
        store,
        &policy,
        out.deleted.iter().map(|d| DeletedRun {
            run: &d.run,
            last_activity: d.last_activity,
            label: d.label.as_deref(),
        }),
    )?;
    Ok(Some(out))
}
