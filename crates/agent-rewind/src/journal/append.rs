//! The publish loop of docs/FORMAT.md "Writing": snapshot, write the commit and the new notes
//! commit, publish notes + `HEAD` + step ref in one compare-and-swap transaction, and on
//! conflict re-read, re-parent onto the new tip and retry with jittered backoff. Also
//! appending later facts (a run status, an approval) to an existing checkpoint's note, under
//! the same rules.
//!
//! Every record (start, checkpoint, step begin/end, the root of a rewind, a hook's turn)
//! goes through [`append`]. It never touches the user's index, HEAD or files, does no
//! maintenance and starts no process: the command that recorded asks afterwards what is due
//! (the operations' `maintenance` module, docs/design/maintenance.md).

use super::line::{self, Captured};
use super::{artifacts, context};
use crate::catalog::short;
use crate::journal::{Record, Recorded, TreeSource};
use crate::model::{Note, NoteLine};
use crate::snapshot::{Policy, snapshot_for_checkpoint};
use crate::store::{ObjectId, PublishError, RefChange, Store, layout};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::RunId;
use std::time::Duration;

/// The message of the notes commit a checkpoint writes. Nothing reads it (the note and
/// the checkpoint's own subject say what was recorded), so it is empty: every byte of it
/// is kept once per checkpoint (docs/FORMAT.md, "Notes").
const NOTES_COMMIT_MESSAGE: &str = "";

/// How many times a writer re-reads and retries after losing a compare-and-swap.
const MAX_ATTEMPTS: u32 = 50;

/// Append one checkpoint to `rec.run`.
pub fn append(store: &Store, rec: Record) -> Result<Recorded> {
    // A bare repository has no worktree to snapshot (a given tree needs none: a fetch
    // importing a diverged run).
    if store.worktree().is_bare() && matches!(rec.tree, TreeSource::Worktree) {
        store.worktree().root()?;
    }
    artifacts::check(store, &rec.facts.artifacts)?;
    // A post-commit checkpoint still being recorded in the background comes first.
    drop(store.locks().wait_for_post_commit());
    // New objects stay in memory and are written as one pack right before the refs move.
    let staged = store.handle_for_staged_writes();
    let (tree, excluded) = tree_of(store, &staged, &rec)?;
    agent_rewind_core::trace::mark("checkpoint: snapshot taken");
    let user_head = match &rec.facts.user_head {
        Some(h) => h.clone(),
        None => store.refs().user_head()?,
    };
    // The HEAD to expect is the real one, even when the line records another commit
    // (a background checkpoint of a commit HEAD has since moved on from by commits).
    let actual_head = match &rec.facts.user_head {
        Some(_) if rec.facts.expect_user_head.is_some() => store.refs().user_head()?.commit,
        _ => user_head.commit,
    };
    if let Some(expected) = rec.facts.expect_user_head
        && actual_head != Some(expected)
    {
        return Err(Error::conflict(format!(
            "HEAD moved on from {} while its checkpoint was taken",
            short(expected)
        )));
    }
    let artifacts = artifacts::resolve(&staged, tree, &rec.facts.artifacts)?;
    let fields = line::redact_fields(&rec);
    let writer = store
        .config()
        .identity()
        .unwrap_or_else(agent_rewind_core::time::writer_id);

    let _lock = store.locks().writer_lock(rec.run.as_str())?;
    for attempt in 0..MAX_ATTEMPTS {
        let ctx = context::read(store, &rec)?;
        if let Some(expected) = rec.facts.expect_step_tip
            && ctx.step_tip != Some(expected)
        {
            return Err(Error::conflict(format!(
                "step {} of run {} moved on while this was recorded",
                rec.step.as_ref().map(|s| s.as_str()).unwrap_or("-"),
                rec.run
            )));
        }
        let now = rec
            .at
            .unwrap_or_else(agent_rewind_core::time::Timestamp::now);
        let line = line::checkpoint_line(
            &rec,
            &ctx,
            &Captured {
                excluded: &excluded,
                artifacts: &artifacts,
                user_head: &user_head,
                fields: &fields,
                now,
                writer: &writer,
            },
        );
        if line::repeats_tip(&rec, &ctx, tree, &line) {
            let p = ctx.prev.expect("repeats the tip it has");
            return Ok(Recorded {
                checkpoint: p.id(),
                line: p.line().clone(),
                unchanged: true,
                redacted: vec![],
            });
        }

        let mut lines = vec![NoteLine::Checkpoint(Box::new(line.clone()))];
        lines.extend(rec.facts.extra_lines.iter().cloned());
        if !fields.redacted.is_empty() {
            lines.push(NoteLine::Redaction {
                fields: fields.redacted.clone(),
                ts: now,
            });
        }
        let body = Note { lines }.to_body();
        let parents = line::parents(&rec, &ctx, &user_head);
        let commit = staged
            .objects()
            .write_commit(tree, &parents, &line::commit_message(&line))?;
        let notes_commit = staged.notes().write_notes_commit(
            ctx.notes_tip,
            &[(commit, body.into_bytes())],
            NOTES_COMMIT_MESSAGE,
        )?;

        staged.objects().persist_staged()?;
        agent_rewind_core::crash_point!("journal:objects-written");
        agent_rewind_core::trace::mark("checkpoint: commit and note written");
        let changes = ref_changes(&rec, &ctx, commit, notes_commit);
        match store.refs().publish(
            &changes,
            &format!("agent-rewind: {}", line::describe(&line)),
        ) {
            Ok(()) => {
                agent_rewind_core::trace::mark("checkpoint: refs published");
                return Ok(Recorded {
                    checkpoint: commit,
                    line,
                    unchanged: false,
                    redacted: fields.redacted,
                });
            }
            Err(PublishError::Conflict(why)) => {
                if attempt + 1 == MAX_ATTEMPTS {
                    return Err(Error::conflict(format!(
                        "could not append to run {} after {MAX_ATTEMPTS} attempts: {why}",
                        rec.run
                    )));
                }
                backoff(attempt);
            }
            Err(PublishError::Failed(e)) => return Err(e),
        }
    }
    unreachable!("the loop returns")
}

/// The tree to record: the worktree's snapshot (from the run's last checkpoint where the
/// scanner can), or the tree the record gives, with what was left out.
fn tree_of(
    store: &Store,
    staged: &Store,
    rec: &Record,
) -> Result<(ObjectId, Vec<crate::model::Excluded>)> {
    Ok(match &rec.tree {
        TreeSource::Worktree => {
            let last = match store.refs().run_head(&rec.run)? {
                Some(head) => Some(store.objects().commit_tree(head)?),
                None => None,
            };
            let snap = snapshot_for_checkpoint(staged, &Policy::from_config(store)?, last)?;
            (snap.tree, snap.excluded)
        }
        TreeSource::Given { tree, excluded } => (*tree, excluded.clone()),
    })
}

/// The ref moves that publish `commit` and its notes commit, each a compare-and-swap on
/// what `ctx` read. Order matters for crash safety: notes, then HEAD, then step refs
/// (store::publish); a step ref left behind by a crash catches up, and a new run gets the
/// refs of the steps it inherits.
fn ref_changes(
    rec: &Record,
    ctx: &context::Context,
    commit: ObjectId,
    notes_commit: ObjectId,
) -> Vec<RefChange> {
    let mut changes = vec![
        RefChange::set(layout::notes_ref(&rec.run), notes_commit, ctx.notes_tip),
        RefChange::set(layout::run_head(&rec.run), commit, ctx.head),
    ];
    if let Some(s) = &rec.step {
        changes.push(RefChange::set(
            layout::step_ref(&rec.run, s),
            commit,
            ctx.step_ref,
        ));
    }
    if let (Some((s, at)), Some(head)) = (&ctx.lagging, ctx.head) {
        changes.push(RefChange::set(layout::step_ref(&rec.run, s), head, *at));
    }
    if ctx.prev.is_none()
        && let Some(o) = &rec.origin
    {
        for (s, id) in &o.inherited_steps {
            if rec.step.as_ref() != Some(s) {
                changes.push(RefChange::set(layout::step_ref(&rec.run, s), *id, None));
            }
        }
    }
    changes
}

/// Sleep before retrying after a lost compare-and-swap: exponential with jitter.
pub fn backoff(attempt: u32) {
    let mut b = [0u8; 2];
    agent_rewind_core::ids::fill_random(&mut b);
    let base = 2u64.saturating_pow(attempt.min(6));
    let jitter = u16::from_le_bytes(b) as u64 % (base * 1000);
    std::thread::sleep(Duration::from_micros(base * 500 + jitter));
}

/// Append lines to the note of `commit` in `run`'s notes ref (a later fact about that
/// checkpoint: a run status, an approval…). Compare-and-swap on the notes ref, with retry.
pub fn append_note_lines(
    store: &Store,
    run: &RunId,
    commit: ObjectId,
    lines: &[NoteLine],
) -> Result<()> {
    let _lock = store.locks().writer_lock(run.as_str())?;
    for attempt in 0..MAX_ATTEMPTS {
        let notes_tip = store.refs().notes_tip(run)?;
        let mut body = store
            .notes()
            .notes_reader(run)?
            .body(commit)?
            .ok_or_else(|| {
                Error::not_found(format!(
                    "checkpoint {} has no note in run {run}",
                    short(commit)
                ))
            })?;
        if !body.is_empty() && !body.ends_with(b"\n") {
            body.push(b'\n');
        }
        for l in lines {
            body.extend_from_slice(l.to_line().as_bytes());
            body.push(b'\n');
        }
        let notes_commit = store.notes().write_notes_commit(
            notes_tip,
            &[(commit, body)],
            &format!("agent-rewind: record on {}", short(commit)),
        )?;
        match store.refs().publish(
            &[RefChange::set(
                layout::notes_ref(run),
                notes_commit,
                notes_tip,
            )],
            "agent-rewind: append record",
        ) {
            Ok(()) => return Ok(()),
            Err(PublishError::Conflict(why)) if attempt + 1 == MAX_ATTEMPTS => {
                return Err(Error::conflict(format!(
                    "could not update the notes of run {run}: {why}"
                )));
            }
            Err(PublishError::Conflict(_)) => backoff(attempt),
            Err(PublishError::Failed(e)) => return Err(e),
        }
    }
    unreachable!("the loop returns")
}

/// Repair what a crash between the renames of one ref transaction leaves: the run's `HEAD`
/// moved to a checkpoint of `step` while the step's ref stayed behind it (FORMAT.md,
/// "Order inside the transaction"). Moves the step ref to `HEAD` (compare-and-swap) when it
/// is an ancestor of it. Returns whether it moved.
pub fn catch_up_step_ref(
    store: &Store,
    run: &RunId,
    step: &agent_rewind_core::ids::StepName,
) -> Result<bool> {
    // No run, nothing to repair: and no writer lock file made for a run that does not exist.
    if store.refs().run_head(run)?.is_none() {
        return Ok(false);
    }
    let _lock = store.locks().writer_lock(run.as_str())?;
    let Some(head) = store.refs().run_head(run)? else {
        return Ok(false);
    };
    let tip = store.refs().step_tip(run, step)?;
    if !crate::catalog::step_ref_lags(store, run, step, &store.objects().read_commit(head)?, tip)? {
        return Ok(false);
    }
    match store.refs().publish(
        &[RefChange::set(layout::step_ref(run, step), head, tip)],
        &format!("agent-rewind: {run} {step} caught up with HEAD"),
    ) {
        Ok(()) => Ok(true),
        Err(PublishError::Conflict(_)) => Ok(false),
        Err(PublishError::Failed(e)) => Err(e),
    }
}
