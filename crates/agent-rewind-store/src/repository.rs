//! `Store`: an open repository, the one way to open it per purpose (see the crate's header),
//! and the handles to the same repository that threads, staged writes and bulk reads use.
//! Hands out the facades ([`crate::facade`]); owns no operation of its own.

use agent_rewind_core::error::{Error, Result};
use std::path::Path;

use crate::{configenv, open};

/// What a command opens its repository for ([`Store::discover`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenFor {
    /// Any work: writing, packing, or a store that lives on (`mcp`, `watch`).
    Work,
    /// A command that only reads and exits within milliseconds (`diff`, `show`, `list`,
    /// `log`, `status`): room for fewer pack indexes to appear while it runs (128 slots, or
    /// twice the indexes past 64), which is fewer allocations at open. Never for a store
    /// that lives on or writes packs.
    BriefRead,
}

/// An open repository.
pub struct Store {
    /// gix's handle; the crate's own modules reach it directly, nothing outside the crate.
    pub(crate) repo: gix::Repository,
}

/// The pack index slots a repository is opened with (at least; twice its packs when more).
const PACK_SLOTS: u16 = 512;

/// The pack index slots of a repository opened by a read-only command that exits within
/// milliseconds ([`Store::discover`] with [`OpenFor::BriefRead`]): each slot is an allocation at open, and 512 of
/// them were a sixth of a small `diff`'s allocations. Twice the indexes of a repository that
/// gc folds at `gc.autoPackLimit` (50), with room for as many again to appear meanwhile.
const BRIEF_PACK_SLOTS: u16 = 128;

/// gix's discovery as git finds a repository (see [`Store::discover`]), with `slots`.
fn discover_with_slots(dir: &Path, slots: gix::odb::store::init::Slots) -> Result<gix::Repository> {
    // `git -c key=value agent-rewind …`: the values git passes on, as git's own commands
    // see them (gix does not read GIT_CONFIG_PARAMETERS).
    let overrides = configenv::git_config_parameters()?;
    let mut trust = gix::sec::trust::Mapping::<gix::open::Options>::default();
    trust.full = trust
        .full
        .object_store_slots(slots)
        .cli_overrides(overrides.clone());
    trust.reduced = trust
        .reduced
        .object_store_slots(slots)
        .cli_overrides(overrides);
    // git ignores ceiling directories that are not above `dir`; so do we.
    let options = gix::discover::upwards::Options {
        match_ceiling_dir_or_error: false,
        ..Default::default()
    };
    gix::ThreadSafeRepository::discover_with_environment_overrides_opts(dir, options, trust)
        .map(gix::Repository::from)
        .map_err(|e| {
            if let Some(format) = open::unsupported_format_near(dir) {
                return open::unsupported(&format);
            }
            Error::refused(format!(
                "not a git repository: {} ({})",
                dir.display(),
                agent_rewind_core::error::one_line(&e.to_string())
            ))
            .with_hint("run this inside a git repository, or `git init` one first")
        })
}

impl Store {
    /// Open the repository containing `dir` the way git finds it: `GIT_DIR` (with
    /// `GIT_WORK_TREE`, `GIT_INDEX_FILE`) when set — git exports them to the commands it runs,
    /// so `git --git-dir=… --work-tree=… agent-rewind` works on that repository — else walking
    /// up from `dir`, stopping at `GIT_CEILING_DIRECTORIES`. `GIT_COMMON_DIR` is accepted when
    /// it names the common directory the git dir itself records. Repositories in a format
    /// we cannot read or write (an object format other than SHA-1 and SHA-256, a compatibility
    /// object format, a ref storage other than files and reftable) are refused in one line.
    /// `purpose` sizes what is set up at open ([`OpenFor`]).
    pub fn discover(dir: &Path, purpose: OpenFor) -> Result<Store> {
        match purpose {
            OpenFor::Work => Self::discover_with_room(dir, PACK_SLOTS),
            OpenFor::BriefRead => Self::discover_with_room(dir, BRIEF_PACK_SLOTS),
        }
    }

    /// Open with `slots` pack index slots, or twice the indexes (at least [`PACK_SLOTS`])
    /// when the pack folder names more than half as many.
    fn discover_with_room(dir: &Path, slots: u16) -> Result<Store> {
        // Room for the indexes of many small packs (a checkpoint writes one, and packs
        // other processes add after we opened still need a slot): gix's default is at least
        // 32 and fails past that. Counting them is gix stating every file of `objects/pack`
        // at open (and again at the first object read); a repository whose pack folder
        // names few enough indexes gets `slots` without that (`open::few_packs`).
        let repo = discover_with_slots(dir, gix::odb::store::init::Slots::Given(slots))?;
        let repo = if open::few_packs(&repo, usize::from(slots) / 2) {
            repo
        } else {
            agent_rewind_core::trace::mark(
                "open: many pack indexes (or alternates): slots counted",
            );
            discover_with_slots(
                dir,
                gix::odb::store::init::Slots::AsNeededByDiskState {
                    multiplier: 2.0,
                    minimum: usize::from(PACK_SLOTS),
                },
            )?
        };
        if let Some(format) = open::unsupported_format(&repo) {
            return Err(open::unsupported(&format));
        }
        open::check_common_dir_env(&repo)?;
        let mut repo = repo;
        open::worktree_from_git_dir_env(&mut repo, dir)?;
        agent_rewind_core::trace::mark("repository opened");
        Ok(Store { repo })
    }

    /// Open the linked worktree at `dir` (just created by [`Store::add_linked_worktree`])
    /// itself, whatever `GIT_DIR`/`GIT_WORK_TREE`/`GIT_INDEX_FILE` say: those name the
    /// repository this process was started on, not the new worktree.
    pub fn open_linked_worktree(dir: &Path) -> Result<Store> {
        let mut perms = gix::open::Permissions::default();
        perms.env.git_prefix = gix::sec::Permission::Deny;
        let repo = gix::open::Options::default()
            .cli_overrides(configenv::git_config_parameters()?)
            .permissions(perms)
            .open(dir)
            .map(gix::Repository::from)
            .map_err(|e| {
                Error::git(format!(
                    "cannot open the worktree {}: {}",
                    dir.display(),
                    agent_rewind_core::error::one_line(&e.to_string())
                ))
            })?;
        let store = Store { repo };
        store.worktree().root()?;
        Ok(store)
    }

    /// A handle on the same repository whose object writes stay in memory until
    /// [`Objects::persist_staged`] writes them all as one pack (reads see them at
    /// once). For a checkpoint's ~30 objects this replaces ~30 loose files with two.
    ///
    /// Only while git's automatic gc folds small packs together: with `gc.auto=0` or
    /// `gc.autoPackLimit=0`, or when it has fallen far behind, objects are written loose
    /// right away, as by any other handle.
    pub fn handle_for_staged_writes(&self) -> Store {
        let mut repo = self.repo.clone();
        if self.maintenance().small_packs_welcome() {
            repo.objects.enable_object_memory();
        }
        Store { repo }
    }

    /// Another handle on the same repository, for a worker thread (a `Store` is not
    /// `Sync`): it shares the object database and has its own caches.
    pub fn handle_for_thread(&self) -> Store {
        Store {
            repo: self.repo.clone(),
        }
    }

    /// A handle on the same repository with an object database of its own: its packs are
    /// mapped anew when first read and unmapped when the last clone of the handle is dropped.
    /// For reading many objects once (the first `list` of 100,000 runs): pages of the packs
    /// touched through it leave the process's memory with it, where a handle sharing the
    /// repository's database keeps every page read until the process ends.
    pub fn handle_for_bulk_read(&self) -> Result<Store> {
        let shared = self.repo.objects.store_ref();
        let mut replacements = shared.replacements();
        let odb = gix::odb::Store::at_opts(
            shared.path().to_path_buf(),
            shared.object_hash(),
            &mut replacements,
            gix::odb::store::init::Options {
                slots: gix::odb::store::init::Slots::AsNeededByDiskState {
                    multiplier: 2.0,
                    minimum: 512,
                },
                use_multi_pack_index: shared.use_multi_pack_index(),
                ..Default::default()
            },
        )
        .map_err(|e| Error::io(shared.path(), e))?;
        let mut objects: gix::OdbHandle =
            gix::odb::Cache::from(std::sync::Arc::new(odb).to_handle_arc()).into();
        // The pack cache gix gives every handle (`max-performance`): delta bases.
        objects
            .set_pack_cache(|| Box::<gix::odb::pack::cache::lru::StaticLinkedList<64>>::default());
        let mut repo = self.repo.clone();
        repo.objects = objects;
        Ok(Store { repo })
    }

    /// The underlying repository, for the modules of the store (and the scanner's context);
    /// gix is reachable from no crate above.
    pub(crate) fn repo(&self) -> &gix::Repository {
        &self.repo
    }

    /// The user's index as it is on disk ([`agent_rewind_scan::read_user_index`]).
    pub(crate) fn read_user_index(&self) -> Result<gix::index::File> {
        agent_rewind_scan::read_user_index(&self.repo)
    }
}
