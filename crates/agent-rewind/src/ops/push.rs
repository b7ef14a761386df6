//! `push`: share runs (docs/SHARING.md): the runs' ref folders and notes refs with one
//! `git push --atomic`, never forced, as the user's own git process. Pushing again is a
//! no-op. A run whose remote copy moved on is reported, never overwritten: the atomic push
//! then failed as a whole, so the other runs are pushed again without it and still land.
//! Once `fetch` imported the remote side as a run, such a run is `diverged`: the hint names
//! the way out, and it does not fail `push --all`.
//!
//! With `agentRewind.pushRefsPerPush`, or once the remote refused a push for its number of
//! refs, runs go in chunks (`chunks`). `--all` leaves out runs a tombstone of this repository
//! or of that remote covers, and every push carries the tombstones this repository's `gc`
//! left, never one taken from a remote (`ops::tombstones`), and deletes on the remote the runs
//! those tombstones cover, each only at the value this clone deleted (`retire`).
//!
//! It never pushes anything but the refs of the runs asked for and tombstones (never
//! branches, tags or staged copies), and never fetches or changes local refs. A run in which a secret rule
//! fires is not pushed (`secrets`; and the installed scanners `agentRewind.secretScanner`
//! names, `scanner`), unless each finding's fingerprint is allowed.

use crate::journal::active_run;
use crate::journal::backoff;
use crate::remote::{self, RefStatus, Remote};
use crate::store::{Store, layout};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::RunId;
use serde::Serialize;
use std::collections::BTreeMap;

mod chunks;
pub mod retire;
pub mod scanner;
pub mod secrets;
pub use chunks::refs_per_push;
pub use secrets::SecretFinding;

/// Batches tried before falling back to one push per run.
const BATCH_ROUNDS: u32 = 4;
/// Tries of one run's push when the remote reports a passing failure (a held lock).
const SINGLE_TRIES: u32 = 5;
/// The most `git push` processes that carry one run in one `push` (docs/SHARING.md).
pub const MAX_ATTEMPTS: u32 = BATCH_ROUNDS + SINGLE_TRIES;
/// Runs per `git push` when they are named one by one (bounds the command line).
const RUNS_PER_PUSH: usize = 300;
/// Most runs left out of an `--all` push by negative refspecs before naming runs instead.
const MAX_EXCLUDED: usize = 300;

#[derive(Debug, Clone, Serialize)]
pub struct RunPush {
    pub run: String,
    /// `pushed`, `up to date`, `rejected`, `diverged` (rejected, and the remote side is
    /// already imported as another run).
    pub result: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// The secrets that kept this run from being pushed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<SecretFinding>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PushOutcome {
    pub remote: String,
    /// Every run named; with `--all`, every run that was pushed or rejected.
    pub runs: Vec<RunPush>,
    /// With `--all`: how many runs were already up to date (not listed in `runs`).
    pub up_to_date: usize,
    /// Rules of `agentRewind.secretRules` that did not compile (not used), each with the
    /// parser's reason; `--json` lists their ids.
    #[serde(skip_serializing_if = "Vec::is_empty", serialize_with = "rule_ids")]
    pub skipped_rules: Vec<secrets::SkippedRule>,
    /// The most ref updates one `git push` carried, when pushes were chunked
    /// (`agentRewind.pushRefsPerPush`, or learned from the remote's refusal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refs_per_push: Option<usize>,
    /// The remote refused a push for the number of refs it updated (a host's push policy);
    /// the runs were then pushed in chunks of `refs_per_push`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub limit_detected: bool,
    /// With `--all`: runs not pushed because a tombstone covers them (deleted by `gc` here,
    /// or in a clone that pushed the tombstone to this remote).
    pub deleted_elsewhere: usize,
    /// Tombstones the remote did not have and now has.
    pub tombstones_pushed: usize,
    /// The runs this repository's tombstones cover that the remote held: deleted there, or
    /// kept (a teammate's newer work) with the reason (`retire`).
    pub remote_deleted: Vec<retire::Retired>,
    /// The most `git push` processes one run needed: 1, more when the remote was busy (a
    /// concurrent push held a lock) or the run was only collateral of another's rejection;
    /// at most [`MAX_ATTEMPTS`]. 0 when nothing was sent (or sent in chunks).
    pub attempts: u32,
}

/// `skipped_rules` in `--json`: the rules' ids, as before reasons were kept.
fn rule_ids<S: serde::Serializer>(rules: &[secrets::SkippedRule], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(rules.iter().map(|(id, _)| id))
}

impl PushOutcome {
    /// How many runs had `result` (listed or counted).
    pub fn count(&self, result: &str) -> usize {
        let listed = self.runs.iter().filter(|r| r.result == result).count();
        listed
            + if result == "up to date" {
                self.up_to_date
            } else {
                0
            }
    }
}

/// Every local run, for `--all`: pushed with globs, minus what is left out.
struct AllRuns {
    valid: Vec<RunId>,
    /// Names under refs/agent-runs/ never pushed: not valid run ids, or runs a tombstone
    /// covers.
    invalid: Vec<String>,
}

/// Push `runs` (or every run with `all`; the active run of this worktree when neither). A
/// run holding a secret whose fingerprint is neither in `allowed` nor a value of
/// `agentRewind.allowSecret` is rejected, not pushed.
pub fn push(
    store: &Store,
    remote: &Remote,
    runs: &[RunId],
    all: bool,
    allowed: &[String],
) -> Result<PushOutcome> {
    let (all, deleted_elsewhere) = match all {
        true => {
            let (a, covered) = all_runs(store, remote)?;
            (Some(a), covered)
        }
        false => (None, 0),
    };
    let selected = match &all {
        Some(a) => a.valid.clone(),
        None => select(store, runs)?,
    };
    // With --all, every notes ref in one pass instead of a lookup per run.
    let tips = match &all {
        Some(_) => Some(store.refs().notes_tips()?),
        None => None,
    };
    let mut specs: BTreeMap<RunId, Vec<String>> = BTreeMap::new();
    for run in &selected {
        let [refs, notes] = layout::push_refspecs(run);
        let mut s = vec![refs];
        let has_notes = match &tips {
            Some(t) => t.contains_key(run.as_str()),
            None => store.refs().notes_tip(run)?.is_some(),
        };
        if has_notes {
            s.push(notes);
        }
        specs.insert(run.clone(), s);
    }
    let mut done: BTreeMap<RunId, RunPush> = BTreeMap::new();
    let mut sends: BTreeMap<RunId, u32> = BTreeMap::new();
    let (rules, skipped_rules) = secrets::rules(store)?;
    let configured = store.config().strings("agentRewind.allowSecret");
    // The installed scanners `agentRewind.secretScanner` names: once over every run.
    let scanners = scanner::Scanner::configured(store)?;
    let mut scanned = scanner::scan_runs(store, &selected, &scanners)?;
    let mut pending: Vec<RunId> = vec![];
    for run in &selected {
        let found: Vec<SecretFinding> = secrets::scan_run(store, run, &rules)?
            .into_iter()
            .chain(scanned.remove(run).unwrap_or_default())
            .filter(|f| !allowed.contains(&f.fingerprint) && !configured.contains(&f.fingerprint))
            .collect();
        if found.is_empty() {
            pending.push(run.clone());
        } else {
            done.insert(run.clone(), holds_secrets(run, found));
        }
    }
    let limit = refs_per_push(store)?;
    let mut chunked = None;
    let mut limit_detected = false;
    if let Some(limit) = limit.filter(|_| !pending.is_empty()) {
        let b = batches(&pending, all.as_ref(), &specs);
        chunked = Some(chunks::push_in_chunks(store, remote, &b, limit, &mut done)?);
        pending.clear();
    }
    let mut round = 0;
    while !pending.is_empty() && round < BATCH_ROUNDS {
        round += 1;
        let before = pending.len();
        let mut next = vec![];
        for (runs, refspecs) in batches(&pending, all.as_ref(), &specs) {
            match push_batch(store, remote, &runs, &refspecs, &mut done, &mut sends)? {
                Batch::Pending(p) => next.extend(p),
                // The host refused the push for its number of refs: every run still to
                // push goes in chunks the remote takes.
                Batch::TooMany(found) => {
                    limit_detected = true;
                    let mut rest: Vec<RunId> = pending
                        .iter()
                        .filter(|r| !done.contains_key(*r))
                        .cloned()
                        .collect();
                    rest.sort();
                    rest.dedup();
                    let b = batches(&rest, all.as_ref(), &specs);
                    chunked = Some(chunks::push_in_chunks(store, remote, &b, found, &mut done)?);
                    next.clear();
                    break;
                }
            }
        }
        if limit_detected {
            pending.clear();
            break;
        }
        pending = next;
        if pending.len() == before && !pending.is_empty() {
            backoff(round);
        }
    }
    // Whatever atomic batches could not settle: one run at a time.
    for run in pending {
        let one = std::slice::from_ref(&run);
        let mut settled = false;
        for attempt in 0..SINGLE_TRIES {
            if let Batch::TooMany(found) =
                push_batch(store, remote, one, &specs[&run], &mut done, &mut sends)?
            {
                limit_detected = true;
                let b = batches(one, None, &specs);
                chunked = Some(chunks::push_in_chunks(store, remote, &b, found, &mut done)?);
            }
            if done.contains_key(&run) {
                settled = true;
                break;
            }
            backoff(attempt + 2);
        }
        if !settled {
            done.insert(
                run.clone(),
                rejected(
                    &run,
                    "the remote kept refusing the push (busy?)".into(),
                    None,
                ),
            );
        }
    }
    let mut out = PushOutcome {
        remote: remote.target.clone(),
        runs: vec![],
        up_to_date: 0,
        skipped_rules,
        refs_per_push: chunked,
        limit_detected,
        deleted_elsewhere,
        tombstones_pushed: push_tombstones(store, remote)?,
        // After the tombstones: a clone that fetches in between sees why the run went.
        remote_deleted: retire::retire(store, remote, &retire::RetireOptions::default(), None)?,
        attempts: sends.values().copied().max().unwrap_or(0),
    };
    for mut r in selected.iter().filter_map(|r| done.remove(r)) {
        if r.result == "rejected" && r.reason.as_deref() == Some(MOVED_ON) {
            known_divergence(store, remote, &mut r)?;
        }
        match r.result {
            "up to date" if all.is_some() => out.up_to_date += 1,
            _ => out.runs.push(r),
        }
    }
    Ok(out)
}

/// Every local run for `--all`, and how many a tombstone covers (those stay here, unless
/// named: they are left out of the globs): one of this repository's, or one taken from
/// `remote` (its own copy of the run was deleted), never another remote's.
fn all_runs(store: &Store, remote: &Remote) -> Result<(AllRuns, usize)> {
    let (runs, mut invalid) = store.refs().list_runs()?;
    let tombs = super::tombstones::for_remote(store, &remote.name)?;
    let mut valid: Vec<RunId> = vec![];
    let mut covered = 0;
    for (r, head) in runs {
        if !tombs.is_empty() && tombs.covers(store, r.as_str(), head) {
            covered += 1;
            invalid.push(r.to_string());
        } else {
            valid.push(r);
        }
    }
    valid.sort();
    Ok((AllRuns { valid, invalid }, covered))
}

/// Push the tombstones this repository's `gc` left that the remote lacks (one `git push`,
/// only when there are any; one the remote already has stays as it is): never one taken
/// from a remote, which live in their own folder. Returns how many landed.
pub(crate) fn push_tombstones(store: &Store, remote: &Remote) -> Result<usize> {
    if store
        .refs()
        .refs_under(layout::TOMBSTONES_PREFIX)?
        .is_empty()
    {
        return Ok(0);
    }
    let attempt = remote::push_each(store, remote, &[layout::push_tombstones_refspec()])?;
    Ok(attempt.refs.iter().filter(|r| r.flag == '*').count())
}

fn select(store: &Store, runs: &[RunId]) -> Result<Vec<RunId>> {
    let mut runs = if runs.is_empty() {
        vec![active_run(store)?.ok_or_else(|| {
            Error::usage("which runs? name them, or use --all")
                .with_hint("`git agent-rewind push [REMOTE] RUN…` or `push --all`")
        })?]
    } else {
        runs.to_vec()
    };
    for r in &runs {
        if store.refs().run_head(r)?.is_none() {
            return Err(crate::catalog::unknown_run(r));
        }
    }
    runs.sort();
    runs.dedup();
    Ok(runs)
}

/// The `git push` processes for `pending`: with `--all`, two globs minus the runs already
/// settled; otherwise (or when too many are settled) the runs' own refspecs, in chunks.
fn batches(
    pending: &[RunId],
    all: Option<&AllRuns>,
    specs: &BTreeMap<RunId, Vec<String>>,
) -> Vec<(Vec<RunId>, Vec<String>)> {
    if let Some(all) = all
        && pending.len() > 1
    {
        let keep: std::collections::BTreeSet<&RunId> = pending.iter().collect();
        let excluded: Vec<String> = all
            .valid
            .iter()
            .filter(|r| !keep.contains(r))
            .map(|r| r.to_string())
            .chain(all.invalid.iter().cloned())
            .collect();
        if excluded.len() <= MAX_EXCLUDED {
            return vec![(pending.to_vec(), layout::push_all_refspecs(&excluded))];
        }
    }
    pending
        .chunks(RUNS_PER_PUSH)
        .map(|c| {
            (
                c.to_vec(),
                c.iter().flat_map(|r| specs[r].clone()).collect(),
            )
        })
        .collect()
}

/// What one atomic push left to do.
enum Batch {
    /// The runs still to push (the others are settled).
    Pending(Vec<RunId>),
    /// The remote refused it for the number of refs it updated: push in chunks of this many.
    TooMany(usize),
}

/// The error of a push that failed without a result per ref.
fn push_failed(remote: &Remote, stderr: &str) -> Error {
    Error::other(format!(
        "`git push` to {} failed: {}",
        remote.target,
        if stderr.is_empty() {
            "no output"
        } else {
            stderr
        }
    ))
    .with_hint("check that the remote is reachable and writable (`git push --dry-run`)")
}

/// A run the remote took (`changed`) or already had.
fn settled(run: &RunId, changed: bool) -> RunPush {
    RunPush {
        run: run.to_string(),
        result: if changed { "pushed" } else { "up to date" },
        reason: None,
        hint: None,
        secrets: vec![],
    }
}

/// One atomic push of `refspecs` covering `runs`; settled runs go to `done`.
fn push_batch(
    store: &Store,
    remote: &Remote,
    runs: &[RunId],
    refspecs: &[String],
    done: &mut BTreeMap<RunId, RunPush>,
    sends: &mut BTreeMap<RunId, u32>,
) -> Result<Batch> {
    for run in runs {
        *sends.entry(run.clone()).or_default() += 1;
    }
    let attempt = remote::push_atomic(store, remote, refspecs)?;
    if let Some(found) = remote::refused_for_ref_count(&attempt) {
        let updates = attempt.refs.iter().filter(|r| r.flag != '=').count();
        return Ok(Batch::TooMany(found.unwrap_or(updates / 2).max(1)));
    }
    if attempt.refs.is_empty() && !attempt.success {
        return Err(push_failed(remote, &attempt.stderr));
    }
    let mut by_run: BTreeMap<String, Vec<&RefStatus>> = BTreeMap::new();
    for r in &attempt.refs {
        if let Some((run, _)) = remote::run_of_ref(&r.dst) {
            by_run.entry(run).or_default().push(r);
        }
    }
    let mut pending = vec![];
    for run in runs {
        let refs = by_run.remove(run.as_str()).unwrap_or_default();
        match settle(run, &refs, attempt.success) {
            Some(p) => {
                done.insert(run.clone(), p);
            }
            None => pending.push(run.clone()),
        }
    }
    Ok(Batch::Pending(pending))
}

/// What one run's ref results mean; `None` when it must be pushed again.
fn settle(run: &RunId, refs: &[&RefStatus], success: bool) -> Option<RunPush> {
    let own: Vec<&&RefStatus> = refs
        .iter()
        .filter(|r| r.rejected() && !r.collateral())
        .collect();
    if own.iter().any(|r| r.transient()) {
        return None;
    }
    if own.iter().any(|r| r.moved_on()) {
        let notes_only = own
            .iter()
            .all(|r| remote::run_of_ref(&r.dst).is_some_and(|(_, notes)| notes));
        return Some(if notes_only {
            rejected(
                run,
                "its notes on the remote moved on (a record added on another machine)".into(),
                Some("`git agent-rewind fetch` merges the notes; then push again".into()),
            )
        } else {
            rejected(
                run,
                MOVED_ON.into(),
                Some("`git agent-rewind fetch` first: it fast-forwards this run, or imports the remote continuation as a new run when both moved on".into()),
            )
        });
    }
    if let Some(r) = own.first() {
        return Some(rejected(run, format!("{} {}", r.dst, r.summary), None));
    }
    let changed = refs.iter().any(|r| r.flag != '=');
    if success || (!refs.is_empty() && !changed) {
        return Some(settled(run, changed));
    }
    None // only rejected because another run's ref was: push it again
}

/// Why a run whose remote copy moved on was rejected.
const MOVED_ON: &str = "the remote copy moved on (it has checkpoints this one lacks)";

/// A run rejected because its remote copy moved on, whose remote continuation `fetch`
/// already imported (a run `<run>-<remote>-…` rooted on it): `diverged`, with the way out
/// instead of "fetch first", which fetch would answer with "already imported".
fn known_divergence(store: &Store, remote: &Remote, r: &mut RunPush) -> Result<()> {
    let prefix = format!("{}-{}-", r.run, remote.name);
    let (runs, _) = store.refs().list_runs()?;
    let mut catalog = crate::catalog::Catalog::new(store);
    let mut imported = None;
    for (id, _) in runs
        .iter()
        .filter(|(id, _)| id.as_str().starts_with(&prefix))
    {
        let Some(tip) = catalog.run_tip(id)? else {
            continue;
        };
        let root = catalog.root_of(&tip)?;
        if root.line().event == crate::model::Event::Root
            && root
                .line()
                .forked_from
                .as_ref()
                .is_some_and(|l| l.run == r.run)
        {
            imported = Some(id.clone());
        }
    }
    let Some(fork) = imported else {
        return Ok(());
    };
    let run = &r.run;
    r.result = "diverged";
    r.reason = Some(format!(
        "both sides moved on; `fetch` imported the remote continuation as run {fork}, and this run's own checkpoints stay here"
    ));
    r.hint = Some(format!(
        "to share this run's continuation, give it its own name: `git agent-rewind fork {run} --to {run}/HEAD --no-checkout --run <new-id>`, then `git agent-rewind push <new-id>`; to go on from the remote's, work in {fork}"
    ));
    Ok(())
}

fn rejected(run: &RunId, reason: String, hint: Option<String>) -> RunPush {
    RunPush {
        run: run.to_string(),
        result: "rejected",
        reason: Some(reason),
        hint,
        secrets: vec![],
    }
}

/// A run not pushed because of `found` (each listed with its place, line and fingerprint
/// in `secrets`), and how to go on.
fn holds_secrets(run: &RunId, found: Vec<SecretFinding>) -> RunPush {
    let one = found.len() == 1;
    let places: Vec<String> = found.iter().map(SecretFinding::describe).collect();
    let reason = match one {
        true => format!("it holds a value that looks like a secret: {}", places[0]),
        false => format!(
            "it holds {} values that look like secrets: {}",
            found.len(),
            places.join(", ")
        ),
    };
    let hint = match one {
        true => "if it is not a secret, push again with --allow-secret <its fingerprint>",
        false => "if they are not secrets, push again with --allow-secret <fingerprint> for each",
    };
    RunPush {
        run: run.to_string(),
        result: "rejected",
        reason: Some(reason),
        hint: Some(format!(
            "{hint} (a later checkpoint that deletes a secret does not help: the checkpoint that added it is pushed too)"
        )),
        secrets: found,
    }
}
