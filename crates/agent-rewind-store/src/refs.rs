//! Reading our refs: one ref's target, the refs under a prefix (stable against a concurrent
//! `git pack-refs`), and the run, step and notes refs grouped by run.
//!
//! It only reads: every ref write goes through `publish` (compare-and-swap) or the packed
//! writers. Ref names come from `layout`, never spelled here.

use crate::layout;
use crate::packcreate::PackedCreate;
use crate::packdelete::PackedDelete;
use crate::publish::{PublishError, RefChange, check_name};
use crate::repository::Store;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::{RunId, StepName};
use agent_rewind_scan::gixerror::from_gix;
use gix::ObjectId;

/// The store's refs: read and move them, with compare-and-swap.
#[derive(Clone, Copy)]
pub struct Refs<'s> {
    pub(crate) store: &'s Store,
}

/// Every run with its tip, and the names under `refs/agent-runs/` that are not valid run ids.
pub type RunRefs = (Vec<(RunId, ObjectId)>, Vec<String>);

/// A run's HEAD (if seen yet) and step refs while scanning.
type PartialRunRefs = (Option<ObjectId>, Vec<(StepName, ObjectId)>);

/// The refs of one run, as read by [`Store::run_ref_sets`].
#[derive(Debug, Clone)]
pub struct RunRefSet {
    pub run: RunId,
    pub head: ObjectId,
    pub steps: Vec<(StepName, ObjectId)>,
}

impl Store {
    fn try_refs_under(
        &self,
        prefix: &str,
    ) -> std::result::Result<Vec<(String, ObjectId)>, gix::Error> {
        let platform = self.repo.references()?;
        let mut out = Vec::new();
        for r in platform.prefixed(prefix)? {
            let r = r?;
            if let Some(id) = r.target().try_id() {
                out.push((r.name().as_bstr().to_string(), id.to_owned()));
            }
        }
        Ok(out)
    }
}

/// The most reflog entries [`crate::Refs::head_moved_on_only_by_commits`] reads:
/// commits made faster than a background checkpoint is taken are a handful.
pub const REFLOG_COMMITS_MAX: usize = 100;

impl Refs<'_> {
    /// Whether HEAD got from `from` to `to` only through plain `git commit`s on top of each
    /// other: HEAD's reflog, newest first, holds only `commit:` entries (no amend, merge,
    /// reset, checkout or rebase, which rewrite the worktree or history) chaining `to` back
    /// to `from`. `false` without a reflog or past [`REFLOG_COMMITS_MAX`] entries.
    pub fn head_moved_on_only_by_commits(&self, from: ObjectId, to: ObjectId) -> Result<bool> {
        if self.store.reftable() {
            return self
                .store
                .reftable_head_moved_on_only_by_commits(from, to, REFLOG_COMMITS_MAX);
        }
        let head = self.store.repo.head().map_err(from_gix)?;
        let mut platform = head.log_iter();
        let Ok(Some(lines)) = platform.rev() else {
            return Ok(false);
        };
        let mut expected = to;
        for line in lines.take(REFLOG_COMMITS_MAX) {
            if expected == from {
                return Ok(true);
            }
            let Ok(line) = line else {
                return Ok(false);
            };
            if line.new_oid != expected || !line.message.starts_with(b"commit: ") {
                return Ok(false);
            }
            expected = line.previous_oid;
        }
        Ok(expected == from)
    }

    /// The object a ref points at (peeled to its direct target), or `None` when absent.
    pub fn ref_target(&self, name: &str) -> Result<Option<ObjectId>> {
        if self.store.reftable() {
            return self.store.reftable_ref_target(name);
        }
        match self.store.repo.try_find_reference(name).map_err(from_gix)? {
            // A direct ref: its id, without reading the object (our refs never point at tags).
            Some(r) if r.target().try_id().is_some() => {
                Ok(r.target().try_id().map(ToOwned::to_owned))
            }
            Some(mut r) => Ok(Some(r.peel_to_id().map_err(from_gix)?.detach())),
            None => Ok(None),
        }
    }

    pub fn run_head(&self, run: &RunId) -> Result<Option<ObjectId>> {
        self.ref_target(&layout::run_head(run))
    }

    pub fn step_tip(&self, run: &RunId, step: &StepName) -> Result<Option<ObjectId>> {
        self.ref_target(&layout::step_ref(run, step))
    }

    pub fn notes_tip(&self, run: &RunId) -> Result<Option<ObjectId>> {
        self.ref_target(&layout::notes_ref(run))
    }

    /// All refs under `prefix` (which must end in `/`), as (full name, target).
    ///
    /// A concurrent `git pack-refs` (as `git gc` runs it) rewrites `packed-refs` and then
    /// deletes the loose files it packed. A listing that overlaps it can fail on a file that
    /// vanished, or miss a ref (packed-refs read before the rewrite, loose refs listed after
    /// the deletion). Either way `packed-refs` changed during the listing, so it is listed
    /// again until `packed-refs` stayed the same from start to end.
    pub fn refs_under(&self, prefix: &str) -> Result<Vec<(String, ObjectId)>> {
        debug_assert!(prefix.ends_with('/'));
        if self.store.reftable() {
            // One snapshot of the tables: no concurrent rewrite to list again for.
            return self.store.reftable_refs_under(prefix);
        }
        const ATTEMPTS: u32 = 10;
        let packed = self.store.repo.common_dir().join("packed-refs");
        let packed_state = || agent_rewind_scan::StatData::of(&packed);
        let mut attempt = 0;
        loop {
            let before = packed_state();
            let listed = self.store.try_refs_under(prefix);
            let stable = before == packed_state();
            match listed {
                Ok(out) if stable => return Ok(out),
                Err(e) if attempt + 1 == ATTEMPTS => {
                    return Err(Error::other(format!(
                        "could not read refs under {prefix}: {}",
                        agent_rewind_core::error::one_line(&e.to_string())
                    )));
                }
                Ok(out) if attempt + 1 == ATTEMPTS => return Ok(out),
                _ => {
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(2 << attempt.min(6)));
                }
            }
        }
    }

    /// Every run that has a `HEAD` ref, with its tip; names that fail validation are returned
    /// separately so callers can warn instead of failing.
    pub fn list_runs(&self) -> Result<RunRefs> {
        let mut runs = Vec::new();
        let mut invalid = Vec::new();
        for (name, id) in self.refs_under(layout::RUNS_PREFIX)? {
            if let Some(layout::RunRef::Head(run)) = layout::parse_run_ref(&name) {
                match RunId::new(run.clone()) {
                    Ok(r) => runs.push((r, id)),
                    Err(_) => invalid.push(run),
                }
            }
        }
        Ok((runs, invalid))
    }

    /// One pass over `refs/agent-runs/`: every run with a `HEAD`, its tip and its step refs
    /// (sorted), plus the names that are not valid run or step names. Sorted by run.
    pub fn run_ref_sets(&self) -> Result<(Vec<RunRefSet>, Vec<String>)> {
        let mut groups: Vec<(String, PartialRunRefs)> = Vec::new();
        let mut invalid = Vec::new();
        for (name, id) in self.refs_under(layout::RUNS_PREFIX)? {
            let (run, step) = match layout::parse_run_ref(&name) {
                Some(layout::RunRef::Head(run)) => (run, None),
                Some(layout::RunRef::Step(run, step)) => match StepName::new(step) {
                    Ok(step) => (run, Some(step)),
                    Err(_) => {
                        invalid.push(name);
                        continue;
                    }
                },
                None => {
                    invalid.push(name);
                    continue;
                }
            };
            // The refs come sorted by name, so a run's refs (`<run>/…`) are adjacent.
            let group = match groups.last_mut() {
                Some(g) if g.0 == run => g,
                _ => {
                    groups.push((run, Default::default()));
                    groups.last_mut().expect("pushed")
                }
            };
            match step {
                None => group.1.0 = Some(id),
                Some(step) => group.1.1.push((step, id)),
            }
        }
        // Ref order puts `a-b/…` before `a/…`; runs are sorted by id. Nearly sorted input
        // sorts in one pass. Equal neighbours (refs not sorted by name) are merged.
        groups.sort_by(|a, b| a.0.cmp(&b.0));
        groups.dedup_by(|later, earlier| {
            if later.0 != earlier.0 {
                return false;
            }
            earlier.1.0 = earlier.1.0.or(later.1.0);
            earlier.1.1.append(&mut later.1.1);
            true
        });
        let mut out = Vec::with_capacity(groups.len());
        for (run, (head, mut steps)) in groups {
            match (RunId::new(run.clone()), head) {
                (Ok(run), Some(head)) => {
                    steps.sort();
                    out.push(RunRefSet { run, head, steps });
                }
                (Err(_), _) => invalid.push(run),
                (Ok(_), None) => {} // step refs without a HEAD: a partial write or foreign refs
            }
        }
        Ok((out, invalid))
    }

    /// [`Self::notes_tips`] as (run, tip) sorted by run.
    pub fn notes_tips_sorted(&self) -> Result<Vec<(String, ObjectId)>> {
        let mut out: Vec<(String, ObjectId)> = self
            .refs_under(layout::NOTES_PREFIX)?
            .into_iter()
            .filter_map(|(mut name, id)| {
                let run = name.strip_prefix(layout::NOTES_PREFIX)?;
                if run.contains('/') {
                    return None;
                }
                name.drain(..layout::NOTES_PREFIX.len());
                Some((name, id))
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// One pass over `refs/notes/agent-runs/`: the notes tip of every run, by run name.
    pub fn notes_tips(&self) -> Result<std::collections::HashMap<String, ObjectId>> {
        Ok(self
            .refs_under(layout::NOTES_PREFIX)?
            .into_iter()
            .filter_map(|(name, id)| {
                let run = name.strip_prefix(layout::NOTES_PREFIX)?;
                (!run.contains('/')).then(|| (run.to_string(), id))
            })
            .collect())
    }

    /// The step refs of a run (not `HEAD`), sorted by name.
    pub fn step_refs(&self, run: &RunId) -> Result<Vec<(StepName, ObjectId)>> {
        let mut out = Vec::new();
        for (name, id) in self.refs_under(&layout::run_prefix(run))? {
            if let Some(layout::RunRef::Step(_, step)) = layout::parse_run_ref(&name)
                && let Ok(step) = StepName::new(step)
            {
                out.push((step, id));
            }
        }
        out.sort();
        Ok(out)
    }

    /// Create `branch` (a name under `refs/heads/`, which must not exist yet) at `commit`,
    /// with a compare-and-swap; HEAD is not touched.
    pub fn create_branch(&self, branch: &str, commit: gix::ObjectId) -> Result<()> {
        self.publish(
            &[crate::publish::RefChange::set(
                crate::layout::branch_ref(branch).as_str(),
                commit,
                None,
            )],
            "agent-rewind: branch for rewound run",
        )
        .map_err(|e| Error::from(e).context(format!("could not create branch {branch}")))
    }

    /// Pack every ref into `packed-refs` (`git pack-refs --all`).
    /// A `packed-refs.lock` a killed process of ours left is removed first.
    pub fn pack_refs(&self) -> Result<()> {
        let lock = self.store.repo.common_dir().join("packed-refs.lock");
        self.store.ref_files().remove_stale_locks(&[lock]);
        self.store.git(&["pack-refs", "--all"]).map(|_| ())
    }

    /// Drop the reflog entries of `name` that point at commits its current value no longer
    /// reaches (`git reflog expire --expire-unreachable=now`), keeping the others.
    pub fn expire_unreachable_reflog(&self, name: &str) -> Result<()> {
        self.store
            .git(&[
                "reflog",
                "expire",
                "--expire=never",
                "--expire-unreachable=now",
                name,
            ])
            .map(|_| ())
    }

    /// Whether a local branch exists.
    pub fn branch_exists(&self, branch: &str) -> Result<bool> {
        Ok(self
            .ref_target(&crate::layout::branch_ref(branch))?
            .is_some())
    }

    /// Validate a branch name the way git does.
    pub fn check_branch_name(&self, branch: &str) -> Result<()> {
        let out = self.store.git_output_in(
            self.store.repo.git_dir(),
            &["check-ref-format", "--branch", branch],
        )?;
        if !out.status.success() {
            return Err(Error::usage(format!("invalid branch name {branch:?}")));
        }
        Ok(())
    }
}

/// What the user's HEAD is right now.
#[derive(Debug, Clone)]
pub struct UserHead {
    /// The commit HEAD points at; `None` on an unborn branch.
    pub commit: Option<ObjectId>,
    /// `refs/heads/…` HEAD is attached to; `None` when detached.
    pub branch: Option<String>,
}

impl Refs<'_> {
    pub fn user_head(&self) -> Result<UserHead> {
        if self.store.reftable() {
            return self.store.reftable_user_head();
        }
        let head = self.store.repo.head().map_err(from_gix)?;
        let branch = head.referent_name().map(|n| n.as_bstr().to_string());
        // The id HEAD's branch names, read from the ref alone: peeling would read the
        // object, which a concurrent `git gc` may be moving between packs (seen as "object
        // not found" while the repack ran), and a branch names a commit anyway.
        let commit = match head.id() {
            Some(id) => Some(id.detach()),
            None if head.is_unborn() => None,
            None => Some(self.store.repo.head_id().map_err(from_gix)?.detach()),
        };
        Ok(UserHead { commit, branch })
    }

    /// Apply all changes in one transaction, or none of them.
    ///
    /// Refs go through [`crate::looserefs::apply_loose_refs`]: git's protocol, every lock claimed before
    /// it is created, so a kill at any moment leaves only locks the next writer removes;
    /// `packed-refs` is locked only by a transaction that deletes. In a reftable repository,
    /// one `git update-ref --stdin`. A lock file someone else holds fails the call within
    /// about a second with an error naming it; one a killed process of ours left is removed.
    /// Only shared refs are written (never `HEAD` nor a worktree's own refs).
    pub fn publish(&self, changes: &[RefChange], reflog_message: &str) -> Result<(), PublishError> {
        let msg = reflog_message.replace('\n', " ");
        for c in changes {
            check_name(&c.name).map_err(PublishError::Failed)?;
        }
        // Reflog entries are signed like our commits. `repo.committer()` would fail when no
        // identity is configured (docs/FORMAT.md: never fail for that) and resolves the local
        // time zone by walking the zoneinfo database.
        let signature = self.store.config().signature();
        agent_rewind_core::crash_point!("publish:before");
        if self.store.reftable() {
            return self.store.reftable_publish(changes, &msg, &signature);
        }
        let current = |name: &str| self.direct_target(name);
        crate::publish::publish_loose(&self.store.ref_files(), changes, &msg, &signature, &current)
    }

    /// Create each group of `(ref name, value)` (values are commits) in `packed-refs` in
    /// one rewrite; one result per group.
    pub fn create_packed_groups(
        &self,
        groups: &[Vec<(String, ObjectId)>],
    ) -> Result<Vec<PackedCreate>> {
        if self.store.reftable() {
            // No `packed-refs`: every group is left to `publish` (one git transaction).
            return Ok(vec![PackedCreate::Exists; groups.len()]);
        }
        crate::packcreate::create_packed_groups(&self.store.ref_files(), groups)
    }

    /// Delete each group of `(ref name, expected value)` from `packed-refs` in one rewrite;
    /// one result per group. Reflogs of the deleted refs are removed, like git does.
    pub fn delete_packed_groups(
        &self,
        groups: &[Vec<(String, ObjectId)>],
    ) -> Result<Vec<PackedDelete>> {
        if self.store.reftable() {
            // No `packed-refs`: every group goes through `publish` (one git transaction).
            return Ok(vec![PackedDelete::NotPacked; groups.len()]);
        }
        crate::packdelete::delete_packed_groups(&self.store.ref_files(), groups)
    }

    /// Remove the locks a killed process of ours left on the refs directly under `prefix`
    /// (a ref folder ending in `/`) and on `packed-refs`, before a git process writes there:
    /// git cannot tell such a lock is stale and would fail on it. Reads only the claims
    /// folder unless a claim's lock is still there (after a crash). Returns how many locks
    /// were removed.
    pub fn remove_stale_locks_under(&self, prefix: &str) -> usize {
        self.store.ref_files().remove_stale_locks_under(prefix)
    }

    /// Remove every lock a dead process of ours left anywhere under `refs/` and on
    /// `packed-refs`, and the folders that leaves empty: for `gc`, so that a lock on a ref
    /// nothing writes to soon (a step of a run killed while it was being deleted) does not
    /// stay forever. Walks `refs/` only when the claims folder holds a claim whose lock is
    /// still there; cheap otherwise. Returns how many locks were removed.
    pub fn sweep_stale_locks(&self) -> usize {
        self.store.ref_files().sweep_stale_locks()
    }

    /// Refuse, as taking it would, when the lock of ref `name` (`HEAD`: this worktree's; else
    /// a shared ref such as `refs/heads/<branch>`) is held: wait up to [`crate::reffiles::LOCK_WAIT`] for its
    /// holder and remove one a killed process of ours left, then give the error naming the
    /// file and how to remove it. Takes no lock: a command calls this for every ref it will
    /// update after its first file is written, before it writes that file.
    pub fn ensure_unlocked(&self, name: &str) -> Result<()> {
        self.store.ref_files().ensure_unlocked(name)
    }

    /// The id a ref points at directly (`None` when it does not exist); a symbolic ref is an
    /// error (we only ever write direct refs).
    fn direct_target(&self, name: &str) -> Result<Option<ObjectId>> {
        match self.store.repo.try_find_reference(name).map_err(from_gix)? {
            None => Ok(None),
            Some(r) => match r.target().try_id() {
                Some(id) => Ok(Some(id.to_owned())),
                None => Err(Error::corrupt(format!("{name} is a symbolic ref"))),
            },
        }
    }
}
