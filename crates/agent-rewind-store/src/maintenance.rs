//! The `Maintenance` facade: git's own maintenance we start in the background (`git gc
//! --auto`, a geometric repack of small packs), and whether it is due. Its methods are all
//! here; it decides nothing about runs or retention.

use crate::repository::Store;

/// The store's git's maintenance we start in the background.
#[derive(Clone, Copy)]
pub struct Maintenance<'s> {
    pub(crate) store: &'s Store,
}

impl Maintenance<'_> {
    /// Whether background maintenance may run: `agentRewind.autoGc` is not false as git
    /// reads a boolean (`off`, `False`, `no`, `0` …). A value that is no boolean leaves it on:
    /// maintenance starts after a checkpoint was written, where nothing can be refused.
    pub(crate) fn auto_gc_allowed(&self) -> bool {
        !matches!(
            self.store.config().bool("agentRewind.autoGc"),
            Ok(Some(false))
        )
    }

    /// Start `git <args>` in the background unless one we started is still running: the
    /// child gets the maintenance flock as its stdin, so the lock lives exactly as long as
    /// the child (and the git processes it starts, which inherit it) keeps it open; the
    /// kernel drops it when the last of them exits, however it ends. So checkpoints in a
    /// tight loop start one fold at a time, not one each competing for the CPU.
    fn spawn_maintenance(&self, args: &[&str]) {
        if !self.auto_gc_allowed() {
            return;
        }
        let lock = match crate::locks::try_lock_file(&self.store.private().maintenance_lock()) {
            Ok(Some(lock)) => lock,
            Ok(None) => {
                agent_rewind_core::trace::mark("maintenance: one is running, none started");
                return;
            }
            Err(_) => return,
        };
        let dir = self.store.git_run_dir();
        let started = self
            .store
            .git_command(dir, args)
            .stdin(std::process::Stdio::from(lock))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if started.is_ok() {
            agent_rewind_core::trace::mark(&format!("maintenance: started git {}", args.join(" ")));
        }
    }

    /// Start `git gc --auto` in the background, the way git's own porcelain does after it
    /// writes objects (gix never does): it packs loose objects and refs only past git's own
    /// thresholds (`gc.auto`, `gc.autoPackLimit`). It runs in the foreground of its own
    /// process (`gc.autoDetach=false`) so that the maintenance lock covers all of it.
    /// Off with `agentRewind.autoGc = false`. Never waits, never fails.
    pub fn spawn_auto_gc(&self) {
        self.spawn_maintenance(&["-c", "gc.autoDetach=false", "gc", "--auto", "--quiet"]);
    }

    /// Fold the small packs checkpoints write into one, in the background, without touching
    /// the big packs (`git repack --geometric=2`: its cost follows the small packs, unlike
    /// the full repack `git gc --auto` does once there are too many packs).
    pub fn spawn_small_pack_repack(&self) {
        self.spawn_maintenance(&["repack", "-d", "-l", "-q", "--geometric=2"]);
    }

    /// More packs than half git's `gc.autoPackLimit` (50 by default; 0 turns it off): time
    /// to fold the small ones, before `git gc --auto` would repack everything.
    pub fn many_small_packs(&self) -> bool {
        let limit = self.auto_pack_limit();
        limit > 0 && 2 * self.pack_count() as i64 > limit
    }

    /// Whether a new small pack will be folded by `git gc --auto`: automatic gc is on and
    /// has not fallen behind (twice its pack limit).
    pub(crate) fn small_packs_welcome(&self) -> bool {
        let limit = self.auto_pack_limit();
        self.auto_gc_threshold() > 0
            && limit > 0
            && (self.pack_count() as i64) < 2 * limit
            && self.auto_gc_allowed()
    }

    /// git's `gc.autoPackLimit` (50 by default; 0 or less: no limit).
    pub(crate) fn auto_pack_limit(&self) -> i64 {
        self.store
            .config()
            .integer("gc.autoPackLimit")
            .unwrap_or(50)
    }

    /// git's `gc.auto`, loose objects before `git gc --auto` packs them (6700 by default; 0
    /// or less: automatic gc is off).
    pub(crate) fn auto_gc_threshold(&self) -> i64 {
        self.store.config().integer("gc.auto").unwrap_or(6700)
    }

    /// How many pack indexes the object database holds.
    pub(crate) fn pack_count(&self) -> usize {
        let dir = self.store.repo.objects.store_ref().path().join("pack");
        std::fs::read_dir(dir).map_or(0, |d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().as_encoded_bytes().ends_with(b".idx"))
                .count()
        })
    }
}
