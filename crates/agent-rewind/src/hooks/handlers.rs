//! The git hook handlers: `hook post-commit` records a `commit` checkpoint in the worktree's
//! active run; `hook post-rewrite` records the old → new mapping of a rebase or amend.
//!
//! Their cost must not grow with the repository's history: they read the active-run file,
//! the run's tip and step refs, and snapshot the worktree — never a walk over all runs or a
//! whole chain (the rewrite mapping's look-up of old commits is bounded). They must never
//! prompt, and never record while a rebase, merge or cherry-pick is half-way (the rebase is
//! recorded once, at its end, by post-rewrite).

use super::{HookAction, HookOutcome, background};
use crate::catalog::{Catalog, short};
use crate::journal::active_run;
use crate::journal::{StepFacts, append_note_lines};
use crate::model::{Event, NoteLine};
use crate::ops::checkpoint::{CheckpointOptions, checkpoint};
use crate::store::ObjectId;
use crate::store::{Operation, Store, Trailers, UserHead};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::{RunId, StepName};
use serde_json::json;
use std::collections::BTreeMap;

/// Step of a commit checkpoint when nothing else names one.
pub const DEFAULT_COMMIT_STEP: &str = "commit";
/// How many checkpoints back post-rewrite looks for the checkpoints of the old commits.
const REWRITE_LOOKBACK: usize = 2_000;
/// Most mapping lines one post-rewrite records.
const MAX_MAPPING: usize = 100_000;

/// Where the step of a hook checkpoint came from (kept in `meta.step_from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepSource {
    Env,
    Trailer,
    /// The step of the run's newest checkpoint.
    Newest,
    Default,
}

impl StepSource {
    /// The source [`StepSource::as_str`] names.
    pub fn parse(s: &str) -> Option<StepSource> {
        if s == "begun" {
            // The name of the rule before a commit went to the step of the run's newest
            // checkpoint (a background job of an older binary may still hand it over).
            return Some(Self::Newest);
        }
        [Self::Env, Self::Trailer, Self::Newest, Self::Default]
            .into_iter()
            .find(|v| v.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            StepSource::Env => "env",
            StepSource::Trailer => "trailer",
            StepSource::Newest => "newest",
            StepSource::Default => "default",
        }
    }
}

/// The git operation half-way in this worktree that a hook must not record in the middle of
/// (a bisect is not one: commits made while bisecting are ordinary commits).
pub fn operation_in_progress(store: &Store) -> Option<Operation> {
    store
        .worktree()
        .operation_in_progress()
        .filter(|op| *op != Operation::Bisect)
}

/// The run a hook records into: `AGENT_RUN`, else the worktree's active run when it still
/// exists. `Err(reason)` says why there is none.
pub fn hook_run(store: &Store) -> Result<std::result::Result<RunId, String>> {
    let from_env = std::env::var("AGENT_RUN").is_ok_and(|v| !v.is_empty());
    match active_run(store)? {
        None => Ok(Err("no active run in this worktree".into())),
        // An orchestrator naming a new run in AGENT_RUN starts it implicitly.
        Some(run) if from_env => Ok(Ok(run)),
        Some(run) if store.refs().run_head(&run)?.is_some() => Ok(Ok(run)),
        Some(run) => Ok(Err(format!(
            "the active run {run} no longer exists (deleted?)"
        ))),
    }
}

/// The step a hook checkpoint belongs to: `AGENT_STEP`, else an `Agent-Step:` trailer of the
/// user's HEAD commit, else the step of `run`'s newest checkpoint, else `fallback`.
pub fn hook_step(
    store: &Store,
    run: &RunId,
    head: Option<ObjectId>,
    fallback: &str,
) -> Result<(StepName, StepSource)> {
    if let Ok(env) = std::env::var("AGENT_STEP")
        && !env.is_empty()
    {
        return Ok((
            StepName::new(env).map_err(|e| e.context("AGENT_STEP"))?,
            StepSource::Env,
        ));
    }
    if let Some(h) = head
        && let Some(step) = Trailers::parse(&store.objects().read_commit(h)?.message).step
    {
        return Ok((
            StepName::new(step)
                .map_err(|e| e.context(format!("Agent-Step trailer of commit {}", short(h))))?,
            StepSource::Trailer,
        ));
    }
    if let Some(step) = newest_step(store, run)? {
        return Ok((step, StepSource::Newest));
    }
    Ok((StepName::new(fallback)?, StepSource::Default))
}

/// The step of the run's newest checkpoint (its `HEAD`), whatever recorded it: a manual
/// checkpoint of another step after a step ended moves the work there.
/// `None` when the newest checkpoint has no step (`start`, a fork's root). One read,
/// however long the run.
pub fn newest_step(store: &Store, run: &RunId) -> Result<Option<StepName>> {
    let Some(head) = store.refs().run_head(run)? else {
        return Ok(None);
    };
    let Some(cp) = Catalog::new(store).try_checkpoint(head)? else {
        return Ok(None);
    };
    Ok(cp
        .line()
        .step
        .as_deref()
        .and_then(|s| StepName::new(s).ok()))
}

/// First line of a commit message.
fn subject(store: &Store, commit: Option<ObjectId>) -> Option<String> {
    let c = store.objects().read_commit(commit?).ok()?;
    let s = c.message.lines().next()?.trim().to_string();
    (!s.is_empty()).then(|| format!("commit {}: {s}", short(c.id)))
}

/// The run a hook records into, or why it records nothing: a bare repository, a git
/// operation half-way (when `wait_for_operation`), no active run.
fn run_to_record_into(
    store: &Store,
    hook: &str,
    wait_for_operation: bool,
) -> Result<std::result::Result<RunId, HookOutcome>> {
    if store.worktree().is_bare() {
        return Ok(Err(HookOutcome::skipped(hook, "bare repository")));
    }
    if wait_for_operation && let Some(op) = operation_in_progress(store) {
        return Ok(Err(HookOutcome::skipped(
            hook,
            format!("{op} is in progress; it is recorded when it ends"),
        )));
    }
    Ok(hook_run(store)?.map_err(|why| HookOutcome::skipped(hook, why)))
}

/// `hook post-commit`: a `commit` checkpoint in the active run, or nothing. Recorded in the
/// background by `start_child` when the worktree calls for it ([`background::reason`]);
/// without one, or when it cannot start, recorded now.
pub fn post_commit(
    store: &Store,
    start_child: Option<background::StartInBackground>,
) -> Result<HookOutcome> {
    const HOOK: &str = "post-commit";
    let run = match run_to_record_into(store, HOOK, true)? {
        Ok(r) => r,
        Err(skipped) => return Ok(skipped),
    };
    let head = store.refs().user_head()?;
    let (step, source) = hook_step(store, &run, head.commit, DEFAULT_COMMIT_STEP)?;
    if let Some(commit) = head.commit
        && let Some(start_child) = start_child
        && let Some(why) = background::reason(store)?
        && let Some(started) = background::start(
            store,
            background::Job {
                commit,
                run: run.clone(),
                step: step.clone(),
                source,
            },
            why,
            start_child,
        )?
    {
        return Ok(started);
    }
    record(store, HOOK, &head, HookRecord::new(run, step, source))
}

/// What a git hook's `commit` checkpoint records besides the worktree.
pub(super) struct HookRecord {
    pub run: RunId,
    pub step: StepName,
    pub source: StepSource,
    /// More note lines in the same commit (post-rewrite's mapping).
    pub extra_lines: Vec<NoteLine>,
    /// Record only while the user's HEAD is still this commit after the snapshot.
    pub expect_user_head: Option<ObjectId>,
    /// Record `head` as the user's HEAD, not the HEAD at the time of writing.
    pub record_head: bool,
}

impl HookRecord {
    pub(super) fn new(run: RunId, step: StepName, source: StepSource) -> Self {
        HookRecord {
            run,
            step,
            source,
            extra_lines: vec![],
            expect_user_head: None,
            record_head: false,
        }
    }
}

/// Record a hook's `commit` checkpoint of the worktree, whose HEAD is `head`.
pub(super) fn record(
    store: &Store,
    hook: &str,
    head: &UserHead,
    what: HookRecord,
) -> Result<HookOutcome> {
    let mut meta = BTreeMap::new();
    meta.insert("step_from".to_string(), what.source.as_str().to_string());
    let out = checkpoint(
        store,
        &what.step,
        CheckpointOptions {
            run: Some(what.run),
            event: Some(Event::Commit),
            facts: StepFacts {
                message: subject(store, head.commit),
                meta,
                extra_lines: what.extra_lines,
                expect_user_head: what.expect_user_head,
                user_head: what.record_head.then(|| head.clone()),
                ..Default::default()
            },
            ..Default::default()
        },
    )?;
    Ok(HookOutcome::recorded(hook, &out))
}

/// Parse git's post-rewrite input: `<old> <new> [<extra>]` per line.
pub fn parse_mapping(input: &[u8]) -> (Vec<(ObjectId, ObjectId)>, Vec<String>) {
    let mut pairs = vec![];
    let mut bad = vec![];
    for line in String::from_utf8_lossy(input).lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        let ids = (words.next(), words.next());
        match ids {
            (Some(o), Some(n)) => match (
                ObjectId::from_hex(o.as_bytes()),
                ObjectId::from_hex(n.as_bytes()),
            ) {
                (Ok(o), Ok(n)) if pairs.len() < MAX_MAPPING => pairs.push((o, n)),
                _ => bad.push(line.chars().take(100).collect()),
            },
            _ => bad.push(line.chars().take(100).collect()),
        }
    }
    (pairs, bad)
}

/// The checkpoint of `run` (newest first, a bounded walk back from the tip) that recorded each
/// of `commits` as the user's HEAD.
fn checkpoints_of(
    store: &Store,
    run: &RunId,
    commits: &[ObjectId],
) -> Result<BTreeMap<ObjectId, ObjectId>> {
    let mut found = BTreeMap::new();
    let mut catalog = Catalog::new(store);
    let mut next = store.refs().run_head(run)?;
    let mut seen = 0;
    while let Some(id) = next.take() {
        if found.len() == commits.len() || seen >= REWRITE_LOOKBACK {
            break;
        }
        seen += 1;
        let Some(cp) = catalog.try_checkpoint(id)? else {
            break;
        };
        let line = cp.line();
        if let Some(sha) = line.git_commit_sha.as_deref()
            && let Ok(c) = ObjectId::from_hex(sha.as_bytes())
            && commits.contains(&c)
        {
            found.entry(c).or_insert(id);
        }
        if line.seq == 0 {
            break;
        }
        next = cp.commit.parents.first().copied();
    }
    Ok(found)
}

/// `hook post-rewrite <amend|rebase>`: a `rewrite` record (the old → new mapping, with the
/// checkpoint that recorded each old commit) on the checkpoint of the new HEAD — the tip when
/// it already recorded that commit (an amend's post-commit did), else a new `commit`
/// checkpoint (after a rebase, whose picks were not recorded one by one).
pub fn post_rewrite(store: &Store, kind: &str, input: &[u8]) -> Result<HookOutcome> {
    const HOOK: &str = "post-rewrite";
    if kind.is_empty()
        || kind.len() > 32
        || !kind.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
    {
        return Err(Error::usage(format!(
            "post-rewrite needs the rewrite kind (amend or rebase) as its argument, got {kind:?}"
        )));
    }
    // An amend in the middle of a rebase is part of the rebase's own mapping at its end; the
    // rebase's own post-rewrite runs after the rebase state is gone.
    let run = match run_to_record_into(store, HOOK, kind != "rebase")? {
        Ok(r) => r,
        Err(skipped) => return Ok(skipped),
    };
    let (pairs, bad) = parse_mapping(input);
    let mut warnings: Vec<String> = bad
        .iter()
        .map(|l| format!("ignored a malformed post-rewrite line: {l:?}"))
        .collect();
    if pairs.is_empty() {
        let mut out = HookOutcome::skipped(HOOK, "no old → new mapping on standard input");
        out.warnings = warnings;
        return Ok(out);
    }
    let olds: Vec<ObjectId> = pairs.iter().map(|(o, _)| *o).collect();
    let origin = checkpoints_of(store, &run, &olds)?;
    let mapping: Vec<serde_json::Value> = pairs
        .iter()
        .map(|(o, n)| {
            let mut m = json!({"old": o.to_string(), "new": n.to_string()});
            if let Some(cp) = origin.get(o) {
                m["checkpoint"] = cp.to_string().into();
            }
            m
        })
        .collect();
    let line = NoteLine::Other(json!({
        "type": "rewrite",
        "kind": kind,
        "mapping": mapping,
        "ts": agent_rewind_core::time::Timestamp::now(),
    }));

    let head = store.refs().user_head()?;
    let mut catalog = Catalog::new(store);
    if let Some(tip) = catalog.run_tip(&run)?
        && tip.line().run == run.as_str()
        && head.commit.is_some()
        && tip.line().git_commit_sha == head.commit.map(|c| c.to_string())
    {
        append_note_lines(store, &run, tip.id(), &[line])?;
        let mut out = HookOutcome::new(HOOK, HookAction::Appended);
        out.run = Some(run.to_string());
        out.step = tip.line().step.clone();
        out.checkpoint = Some(tip.id().to_string());
        out.warnings = warnings;
        return Ok(out);
    }
    let (step, source) = hook_step(store, &run, head.commit, DEFAULT_COMMIT_STEP)?;
    let what = HookRecord {
        extra_lines: vec![line],
        ..HookRecord::new(run, step, source)
    };
    let mut out = record(store, HOOK, &head, what)?;
    warnings.append(&mut out.warnings);
    out.warnings = warnings;
    Ok(out)
}
