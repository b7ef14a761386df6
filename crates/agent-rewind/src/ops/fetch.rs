//! `fetch`: bring runs from a remote (docs/SHARING.md). `git fetch` stages them under
//! `refs/agent-runs-remote/<remote>/…`; each staged run is then validated and imported:
//!
//! | local run | result |
//! |---|---|
//! | absent | created with the remote's refs and notes (`new`) |
//! | same HEAD | nothing (`up to date`), notes merged if they differ |
//! | remote descends from local | HEAD and step refs fast-forwarded, notes merged |
//! | local descends from remote | nothing for the refs (`local is ahead`), notes merged |
//! | diverged | local refs untouched; the remote continuation becomes a new run forked from the last common checkpoint |
//!
//! Notes that diverged are merged by the sorted union of their lines (`store::union_lines`)
//! into a commit with both sides as parents. A run that fails validation is skipped with a
//! warning; the others are still imported. Refs only ever move forward, every change of a
//! run is one compare-and-swap transaction taken under the run's writer lock, and nothing
//! fetched is ever executed. When fetching everything, the runs that do not exist here at
//! all are created together, in one rewrite of `packed-refs` that creates each run's refs
//! only if none of them exists (`store::packcreate`).

use super::delete;
use crate::journal::backoff;
use crate::remote::staged::{self, LocalRun, StagedRun, ValidRun};
use crate::remote::{self, Remote};
use crate::store::ObjectId;
use crate::store::{PublishError, RefChange, Store, layout};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::{RemoteName, RunId};
use serde::Serialize;

mod chunked;
mod fork;
mod midpush;
mod signed;
use chunked::fetch_in_chunks;
pub use chunked::refs_per_fetch;
pub use fork::fork_name;
use fork::import_fork;
pub use midpush::REFETCHES;
use signed::refuse_unsigned;
pub use signed::require_signed_config;

const MAX_ATTEMPTS: u32 = 20;

/// What happened to one run.
#[derive(Debug, Clone, Serialize)]
pub struct ImportReport {
    pub run: String,
    /// `new`, `up to date`, `fast-forwarded`, `local is ahead`, `diverged`, `skipped`
    /// (invalid: not imported), `refused` (not signed as `--require-signed` requires: not
    /// imported), `failed` (could not be imported here), `not on remote`, `deleted here`.
    pub result: &'static str,
    /// For `diverged`: the new run holding the remote continuation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imported_as: Option<String>,
    /// `merged` / `fast-forwarded` when the run's notes changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl ImportReport {
    fn new(run: &str, result: &'static str) -> Self {
        ImportReport {
            run: run.to_string(),
            result,
            imported_as: None,
            notes: None,
            detail: None,
        }
    }
    fn detail(mut self, d: impl Into<String>) -> Self {
        self.detail = Some(d.into());
        self
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct FetchOutcome {
    pub remote: String,
    /// Every run named, and every other run whose import did something or needs attention.
    pub runs: Vec<ImportReport>,
    /// Runs not named and not listed in `runs`: already up to date / deleted here (with a
    /// remote of 10,000 runs, a line each would drown the ones that changed).
    pub up_to_date: usize,
    pub deleted_here: usize,
    /// Runs not imported because a tombstone covers them (deleted by `gc` in a clone).
    pub deleted_elsewhere: usize,
    /// One line per skipped run (invalid name, refs or notes) and per failed import.
    pub warnings: Vec<String>,
    /// Times runs caught in the middle of a push were fetched again (at most [`REFETCHES`]).
    pub refetches: u32,
}

impl FetchOutcome {
    /// How many runs had `result` (listed or counted).
    pub fn count(&self, result: &str) -> usize {
        let listed = self.runs.iter().filter(|r| r.result == result).count();
        listed
            + match result {
                "up to date" => self.up_to_date,
                "deleted here" => self.deleted_here,
                "deleted elsewhere" => self.deleted_elsewhere,
                _ => 0,
            }
    }

    fn add(&mut self, report: ImportReport, named: bool) {
        match report.result {
            "up to date" if !named && report.notes.is_none() => self.up_to_date += 1,
            "deleted here" if !named => self.deleted_here += 1,
            _ => self.runs.push(report),
        }
    }
}

/// Fetch `runs` (all runs when empty) from `remote` and import them. With
/// `require_signed` (or `agentRewind.requireSigned`), a run to import that holds a new
/// checkpoint or notes commit git does not accept as signed is refused (`refused`, with
/// why); the others are imported.
pub fn fetch(
    store: &Store,
    remote: &Remote,
    runs: &[RunId],
    require_signed: bool,
) -> Result<FetchOutcome> {
    let require_signed = require_signed || require_signed_config(store)?;
    let per_fetch = refs_per_fetch(store)?;
    if let (true, Some(limit)) = (runs.is_empty(), per_fetch) {
        return fetch_in_chunks(store, remote, limit, require_signed);
    }
    let only = (!runs.is_empty()).then_some(runs);
    remote::fetch_into_staging(store, remote, only)?;
    agent_rewind_core::trace::mark("fetch: git fetch done");
    agent_rewind_core::crash_point!("import:objects-fetched");
    // A fetch of everything brings the remote's tombstones too (fetch_into_staging).
    let skipped = match only {
        None => super::tombstones::take_staged(store, &remote.name, require_signed)?,
        Some(_) => vec![],
    };
    let mut out = import_staged(store, &remote.name, Select::from(only), require_signed)?;
    out.remote = remote.target.clone();
    out.warnings.extend(skipped);
    midpush::refetch_caught_mid_push(store, remote, &mut out, require_signed)?;
    Ok(out)
}

/// Which staged runs an import reads.
#[derive(Clone, Copy)]
pub enum Select<'a> {
    /// Every staged run.
    All,
    /// The runs named on the command line (reported one by one; a run deleted here comes
    /// back).
    Named(&'a [RunId]),
    /// Every run of the remote, as listed by `git ls-remote` for a fetch in chunks
    /// (reported as a fetch of everything).
    Listed(&'a [RunId]),
}

impl<'a> Select<'a> {
    fn from(only: Option<&'a [RunId]>) -> Self {
        only.map_or(Select::All, Select::Named)
    }
}

/// Import what is staged for `staging` (all staged runs, or only those `select` names).
pub fn import_staged(
    store: &Store,
    staging: &RemoteName,
    select: Select,
    require_signed: bool,
) -> Result<FetchOutcome> {
    // A run deleted here stays deleted, and runs are counted, unless named.
    let (only, everything) = match select {
        Select::All => (None, true),
        Select::Named(r) => (Some(r), false),
        Select::Listed(r) => (Some(r), true),
    };
    // Named runs: only their refs are read (either side may hold 100,000 runs).
    let (staged_all, locals) = match only {
        None => (
            staged::staged_runs(store, staging)?,
            staged::local_runs(store)?,
        ),
        Some(runs) => {
            let mut locals = std::collections::HashMap::new();
            for r in runs {
                locals.insert(r.to_string(), staged::local_run(store, r)?);
            }
            (staged::staged_runs_named(store, staging, runs)?, locals)
        }
    };
    agent_rewind_core::trace::mark("fetch: staged and local refs read");
    let deleted = delete::deleted_runs(store)?;
    let mut out = FetchOutcome {
        remote: staging.to_string(),
        runs: vec![],
        up_to_date: 0,
        deleted_here: 0,
        deleted_elsewhere: 0,
        warnings: vec![],
        refetches: 0,
    };
    let none = LocalRun::default();
    let mut selected: Vec<&StagedRun> = vec![];
    match only {
        None => selected.extend(staged_all.values()),
        Some(runs) => {
            let mut seen = std::collections::HashSet::new();
            for r in runs.iter().filter(|r| seen.insert(*r)) {
                match staged_all.get(r.as_str()) {
                    Some(s) => selected.push(s),
                    None => out.runs.push(
                        ImportReport::new(r.as_str(), "not on remote")
                            .detail(format!("remote {staging} has no run {r}")),
                    ),
                }
            }
        }
    }
    // A run a tombstone covers stays out (fetching everything; naming it brings it): one of
    // this repository's, or one taken from this remote, never another remote's.
    if everything {
        let tombs = super::tombstones::for_remote(store, staging)?;
        if !tombs.is_empty() {
            selected.retain(|s| {
                let covered = s.head.is_some_and(|h| tombs.covers(store, &s.name, h));
                out.deleted_elsewhere += usize::from(covered);
                !covered
            });
        }
    }
    // Runs not signed as required are refused one by one; the others are still taken.
    if require_signed {
        for report in refuse_unsigned(store, staging, &mut selected, &locals)? {
            out.warnings.push(format!(
                "run {:?} from {staging} refused: {}",
                report.run,
                report.detail.as_deref().unwrap_or("not signed as required")
            ));
            out.runs.push(report);
        }
    }
    // Fetching everything: the runs new here are created together in one rewrite of
    // `packed-refs`; the others (and any the batch could not create) one by one.
    let mut batched = if everything {
        import_new_runs(store, staging, &selected, &locals, &deleted)?
    } else {
        std::collections::HashMap::new()
    };
    let mut progress = crate::remote::progress::Progress::new(
        format!("Importing runs from {staging}"),
        selected.len(),
    );
    for (i, s) in selected.into_iter().enumerate() {
        progress.tick(i);
        if let Some(report) = batched.remove(s.name.as_str()) {
            if report.result == "skipped" {
                out.warnings.push(format!(
                    "run {:?} from {staging} skipped: {}",
                    s.name,
                    report.detail.as_deref().unwrap_or("invalid")
                ));
            }
            out.add(report, false);
            continue;
        }
        let local = locals.get(&s.name).unwrap_or(&none);
        if local.head.is_none()
            && everything
            && let (Some(tip), Some(head)) = (deleted.get(&s.name), s.head)
            && store.objects().is_ancestor(head, *tip).unwrap_or(false)
        {
            let report = ImportReport::new(&s.name, "deleted here").detail(format!(
                "deleted in this repository; `fetch {staging} {}` brings it back",
                s.name
            ));
            out.add(report, false);
            continue;
        }
        // One run's failure (say, unreadable local notes) does not stop the others.
        let report = import_one(store, staging, s, local, deleted.contains_key(&s.name))
            .unwrap_or_else(|e| ImportReport::new(&s.name, "failed").detail(e.message));
        if matches!(report.result, "skipped" | "failed") {
            out.warnings.push(format!(
                "run {:?} from {staging} {}: {}",
                s.name,
                report.result,
                report.detail.as_deref().unwrap_or("invalid")
            ));
        }
        out.add(report, !everything);
    }
    progress.finish();
    Ok(out)
}

/// Create the valid runs of `selected` that do not exist here at all (and were not deleted
/// here) in one rewrite of `packed-refs` ([`Store::create_packed_groups`]). Returns the
/// report of each run settled that way (created, or skipped as invalid); the others are
/// left to [`import_one`].
fn import_new_runs<'a>(
    store: &Store,
    staging: &RemoteName,
    selected: &[&'a StagedRun],
    locals: &std::collections::HashMap<String, LocalRun>,
    deleted: &std::collections::BTreeMap<String, ObjectId>,
) -> Result<std::collections::HashMap<&'a str, ImportReport>> {
    let mut progress = crate::remote::progress::Progress::new(
        format!("Checking new runs from {staging}"),
        selected.len(),
    );
    let mut settled = std::collections::HashMap::new();
    let mut names: Vec<&'a str> = vec![];
    let mut groups: Vec<Vec<(String, ObjectId)>> = vec![];
    for (i, s) in selected.iter().enumerate() {
        progress.tick(i);
        if locals.contains_key(&s.name) || deleted.contains_key(&s.name) {
            continue;
        }
        match staged::validate(store, s, &LocalRun::default()) {
            Ok(v) => {
                let mut g = vec![
                    (layout::notes_ref(&v.run), v.notes),
                    (layout::run_head(&v.run), v.head),
                ];
                g.extend(
                    v.steps
                        .iter()
                        .map(|(step, id)| (layout::step_ref(&v.run, step), *id)),
                );
                names.push(s.name.as_str());
                groups.push(g);
            }
            Err(why) => {
                settled.insert(
                    s.name.as_str(),
                    ImportReport::new(&s.name, "skipped").detail(why),
                );
            }
        }
    }
    progress.finish();
    if groups.is_empty() {
        return Ok(settled);
    }
    let results = store.refs().create_packed_groups(&groups)?;
    for (name, r) in names.into_iter().zip(results) {
        if r == crate::store::PackedCreate::Created {
            settled.insert(name, ImportReport::new(name, "new"));
        }
    }
    Ok(settled)
}

fn import_one(
    store: &Store,
    staging: &RemoteName,
    staged: &StagedRun,
    listed: &LocalRun,
    was_deleted: bool,
) -> Result<ImportReport> {
    if listed.same_as(staged) {
        return Ok(ImportReport::new(&staged.name, "up to date"));
    }
    let valid = match staged::validate(store, staged, listed) {
        Ok(v) => v,
        Err(why) => return Ok(ImportReport::new(&staged.name, "skipped").detail(why)),
    };
    let lock = store.locks().writer_lock(valid.run.as_str())?;
    for attempt in 0..MAX_ATTEMPTS {
        let local = staged::local_run(store, &valid.run)?;
        match apply(store, staging, &valid, &local) {
            Ok(Applied::Done(report)) => {
                if was_deleted {
                    delete::forget_deleted(store, &valid.run)?;
                }
                return Ok(report);
            }
            Ok(Applied::Diverged(mut report, local_head)) => {
                drop(lock);
                let (fork, earlier) = import_fork(store, staging, &valid, local_head)?;
                report.imported_as = Some(fork.to_string());
                if earlier {
                    report.detail = Some(format!("already imported as {fork}"));
                }
                return Ok(report);
            }
            Err(PublishError::Conflict(_)) if attempt + 1 < MAX_ATTEMPTS => backoff(attempt),
            Err(e) => return Err(Error::from(e).context(format!("import of run {}", valid.run))),
        }
    }
    unreachable!("the loop returns")
}

enum Applied {
    Done(ImportReport),
    /// Notes are merged; the remote continuation still has to become its own run.
    Diverged(ImportReport, ObjectId),
}

/// One attempt: decide from the local refs read now, publish in one transaction.
fn apply(
    store: &Store,
    staging: &RemoteName,
    v: &ValidRun,
    local: &LocalRun,
) -> Result<Applied, PublishError> {
    let f = PublishError::Failed;
    let (result, move_refs) = match local.head {
        None => ("new", true),
        Some(h) if h == v.head => ("up to date", true),
        Some(h) if store.objects().is_ancestor(h, v.head).map_err(f)? => ("fast-forwarded", true),
        Some(h) if store.objects().is_ancestor(v.head, h).map_err(f)? => ("local is ahead", false),
        Some(_) => ("diverged", false),
    };
    let mut report = ImportReport::new(v.run.as_str(), result);
    let mut changes = vec![];
    // Notes first, then HEAD, then steps (the crash-safe order of store::publish).
    if let Some((new, how)) = notes_target(store, staging, v, local.notes).map_err(f)? {
        changes.push(RefChange::set(layout::notes_ref(&v.run), new, local.notes));
        if local.notes.is_some() {
            report.notes = Some(how);
        }
    }
    if move_refs {
        if local.head != Some(v.head) {
            changes.push(RefChange::set(layout::run_head(&v.run), v.head, local.head));
        }
        for (step, id) in &v.steps {
            let name = layout::step_ref(&v.run, step);
            match local.steps.get(step.as_str()) {
                None => changes.push(RefChange::set(name, *id, None)),
                Some(l) if l == id => {}
                Some(l) if store.objects().is_ancestor(*l, *id).map_err(f)? => {
                    changes.push(RefChange::set(name, *id, Some(*l)))
                }
                Some(_) => {} // the local step is newer (or went elsewhere): keep it
            }
        }
    }
    if !changes.is_empty() {
        store.refs().publish(
            &changes,
            &format!("agent-rewind: fetch {} from {staging} ({result})", v.run),
        )?;
        agent_rewind_core::crash_point!("import:published");
    }
    match (result, local.head) {
        ("diverged", Some(h)) => Ok(Applied::Diverged(report, h)),
        _ => Ok(Applied::Done(report)),
    }
}

/// The notes commit the local notes ref should move to, if any, and how it was obtained.
fn notes_target(
    store: &Store,
    staging: &RemoteName,
    v: &ValidRun,
    local: Option<ObjectId>,
) -> Result<Option<(ObjectId, &'static str)>> {
    Ok(match local {
        None => Some((v.notes, "new")),
        Some(l) if l == v.notes => None,
        Some(l) if store.objects().is_ancestor(l, v.notes)? => Some((v.notes, "fast-forwarded")),
        Some(l) if store.objects().is_ancestor(v.notes, l)? => None,
        Some(l) => Some((
            store.notes().merge_notes_commits(
                l,
                v.notes,
                &format!("agent-rewind: merge notes of {} from {staging}", v.run),
            )?,
            "merged",
        )),
    })
}
