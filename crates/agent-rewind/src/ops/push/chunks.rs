//! `push` in chunks of at most N ref updates per `git push`, for hosts
//! that limit how many refs one push may update (GitHub's push policy, a pre-receive hook):
//! `agentRewind.pushRefsPerPush = N`, or N learned from the remote's refusal of a larger
//! push. A dry run (`git push --dry-run`, one advertisement) says which refs would change;
//! only those are pushed, each by its own `src:dst` refspec.
//!
//! Never forced: every ref is a fast-forward of the remote's or the run is rejected. A run
//! whose changed refs fit in a chunk lands whole (one atomic push, with other runs). A run
//! with more changed refs than N is pushed step refs first, then its notes, then its `HEAD`
//! last, so a fetch in between sees the remote run as it was (its `HEAD` and notes), with
//! some step refs ahead (`fetch` skips it with a warning until the rest lands). Every loop
//! here is bounded: a limit only ever shrinks, and a push that failed for another run's
//! ref is tried again alone.

use super::{RunPush, SINGLE_TRIES, rejected, settle};
use crate::journal::backoff;
use crate::remote::{self, RefStatus, Remote};
use crate::store::{Store, layout};
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::RunId;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// The refs of one run that go in one push.
#[derive(Debug, Clone)]
struct Unit {
    run: RunId,
    refs: Vec<String>,
    /// The run's last unit: once it lands, the run is pushed.
    last: bool,
    /// Pushed alone next time (it failed only because another run's ref did).
    alone: bool,
    tries: u32,
}

/// `agentRewind.pushRefsPerPush`: the most ref updates per `git push` (unset: no limit).
pub fn refs_per_push(store: &Store) -> Result<Option<usize>> {
    remote::refs_limit(
        store,
        "agentRewind.pushRefsPerPush",
        "a positive number, like 5 (0 or unset: no limit)",
    )
}

/// What each of `batches` (runs and the refspecs that push them) would change on the
/// remote: the refs to push per run; runs with nothing to push or that would be rejected
/// are settled in `done`.
fn changed_refs(
    store: &Store,
    remote: &Remote,
    batches: &[(Vec<RunId>, Vec<String>)],
    done: &mut BTreeMap<RunId, RunPush>,
) -> Result<Vec<(RunId, Vec<String>)>> {
    let mut out = vec![];
    for (runs, refspecs) in batches {
        let attempt = remote::push_dry_run(store, remote, refspecs)?;
        if attempt.refs.is_empty() && !attempt.success {
            return Err(super::push_failed(remote, &attempt.stderr));
        }
        let mut by_run: BTreeMap<String, Vec<&RefStatus>> = BTreeMap::new();
        for r in &attempt.refs {
            if let Some((run, _)) = remote::run_of_ref(&r.dst) {
                by_run.entry(run).or_default().push(r);
            }
        }
        for run in runs {
            let refs = by_run.remove(run.as_str()).unwrap_or_default();
            if refs.iter().any(|r| r.rejected()) {
                let p = settle(run, &refs, false)
                    .unwrap_or_else(|| rejected(run, "the remote would refuse it".into(), None));
                done.insert(run.clone(), p);
                continue;
            }
            let changed: Vec<String> = refs
                .iter()
                .filter(|r| r.flag == '*' || r.flag == ' ')
                .map(|r| r.dst.clone())
                .collect();
            if changed.is_empty() {
                done.insert(run.clone(), super::settled(run, false));
            } else {
                out.push((run.clone(), changed));
            }
        }
    }
    Ok(out)
}

/// The units of one run for pushes of at most `limit` refs: all of them together when they
/// fit, else step refs first, then the notes ref, then `HEAD`.
fn units(run: &RunId, refs: Vec<String>, limit: usize) -> Vec<Unit> {
    let unit = |refs: Vec<String>, last| Unit {
        run: run.clone(),
        refs,
        last,
        alone: false,
        tries: 0,
    };
    if refs.len() <= limit {
        return vec![unit(refs, true)];
    }
    let (head, notes) = (layout::run_head(run), layout::notes_ref(run));
    let steps: Vec<String> = refs
        .iter()
        .filter(|r| **r != head && **r != notes)
        .cloned()
        .collect();
    let tail: Vec<String> = [notes, head]
        .into_iter()
        .filter(|r| refs.contains(r))
        .collect();
    let mut out: Vec<Unit> = steps
        .chunks(limit)
        .map(|c| unit(c.to_vec(), false))
        .collect();
    if tail.len() <= limit {
        out.push(unit(tail, false));
    } else {
        out.extend(tail.into_iter().map(|r| unit(vec![r], false)));
    }
    out.retain(|u| !u.refs.is_empty());
    if let Some(l) = out.last_mut() {
        l.last = true;
    }
    out
}

/// How far ahead in the queue a push looks for units that fit.
const LOOKAHEAD: usize = 64;

/// Move units from the first [`LOOKAHEAD`] of `queue` into `batch` while they fit in `room`
/// refs, keeping each run's units in order (a unit is taken only when no earlier unit of
/// its run stays behind). Returns the refs added.
fn fill(
    batch: &mut Vec<Unit>,
    queue: &mut VecDeque<Unit>,
    failed: &BTreeSet<RunId>,
    mut room: usize,
) -> usize {
    let mut added = 0;
    let mut left_behind: BTreeSet<RunId> = BTreeSet::new();
    let mut i = 0;
    while i < queue.len() && i < LOOKAHEAD && room > 0 {
        let u = &queue[i];
        let fits = !u.alone && u.refs.len() <= room && !failed.contains(&u.run);
        if fits && !left_behind.contains(&u.run) {
            let u = queue.remove(i).expect("in range");
            room -= u.refs.len();
            added += u.refs.len();
            batch.push(u);
        } else {
            left_behind.insert(u.run.clone());
            i += 1;
        }
    }
    added
}

/// Push `batches` (as `push` would, in one go) in pushes of at most `limit` ref updates
/// each. Settles every run of the batches in `done`; returns the limit it ended with
/// (smaller when the remote refused a push of `limit` refs).
pub(super) fn push_in_chunks(
    store: &Store,
    remote: &Remote,
    batches: &[(Vec<RunId>, Vec<String>)],
    mut limit: usize,
    done: &mut BTreeMap<RunId, RunPush>,
) -> Result<usize> {
    let changed = changed_refs(store, remote, batches, done)?;
    let mut queue: VecDeque<Unit> = changed
        .into_iter()
        .flat_map(|(run, refs)| units(&run, refs, limit))
        .collect();
    let mut failed: BTreeSet<RunId> = BTreeSet::new();
    while let Some(first) = queue.pop_front() {
        if failed.contains(&first.run) {
            continue;
        }
        if first.refs.len() > limit {
            // The limit shrank: this run's refs go in smaller units.
            let run = first.run.clone();
            let mut refs = first.refs;
            while queue.front().is_some_and(|u| u.run == run) {
                refs.extend(queue.pop_front().expect("front").refs);
            }
            for u in units(&run, refs, limit).into_iter().rev() {
                queue.push_front(u);
            }
            continue;
        }
        let mut batch = vec![first];
        let mut n = batch[0].refs.len();
        if !batch[0].alone {
            n += fill(&mut batch, &mut queue, &failed, limit - n);
        }
        let refspecs: Vec<String> = batch
            .iter()
            .flat_map(|u| u.refs.iter().map(|r| format!("{r}:{r}")))
            .collect();
        let attempt = remote::push_atomic(store, remote, &refspecs)?;
        if attempt.success {
            for u in batch.iter().filter(|u| u.last) {
                done.insert(u.run.clone(), super::settled(&u.run, true));
            }
            continue;
        }
        if let Some(found) = remote::refused_for_ref_count(&attempt) {
            limit = found.filter(|f| *f < n).unwrap_or(n / 2).max(1);
            agent_rewind_core::trace::mark(&format!(
                "push: the remote refused {n} refs; now {limit}"
            ));
            for u in batch.into_iter().rev() {
                queue.push_front(u);
            }
            continue;
        }
        if attempt.refs.is_empty() {
            return Err(super::push_failed(remote, &attempt.stderr));
        }
        let mut requeue = vec![];
        for mut u in batch {
            let refs: Vec<&RefStatus> = attempt
                .refs
                .iter()
                .filter(|r| u.refs.contains(&r.dst))
                .collect();
            let own: Vec<&&RefStatus> = refs
                .iter()
                .filter(|r| r.rejected() && !r.collateral())
                .collect();
            if own.is_empty() && u.alone {
                // Pushed alone and still no ref of it refused: git said nothing usable.
                failed.insert(u.run.clone());
                done.insert(
                    u.run.clone(),
                    rejected(
                        &u.run,
                        format!("`git push` failed: {}", attempt.stderr),
                        None,
                    ),
                );
                continue;
            }
            if own.is_empty() || own.iter().all(|r| r.transient()) {
                u.tries += u32::from(!own.is_empty());
                if u.tries >= SINGLE_TRIES {
                    failed.insert(u.run.clone());
                    done.insert(
                        u.run.clone(),
                        rejected(
                            &u.run,
                            "the remote kept refusing the push (busy?)".into(),
                            None,
                        ),
                    );
                    continue;
                }
                if !own.is_empty() {
                    backoff(u.tries + 1);
                }
                u.alone = true;
                requeue.push(u);
                continue;
            }
            let p = settle(&u.run, &refs, false).unwrap_or_else(|| {
                rejected(&u.run, format!("{} {}", own[0].dst, own[0].summary), None)
            });
            failed.insert(u.run.clone());
            done.insert(u.run.clone(), p);
        }
        for u in requeue.into_iter().rev() {
            queue.push_front(u);
        }
    }
    Ok(limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_larger_than_the_limit_pushes_steps_then_notes_then_head() {
        let run = RunId::new("r1".to_string()).unwrap();
        let refs = vec![
            layout::run_head(&run),
            "refs/agent-runs/r1/a".to_string(),
            "refs/agent-runs/r1/b".to_string(),
            "refs/agent-runs/r1/c".to_string(),
            layout::notes_ref(&run),
        ];
        let u = units(&run, refs.clone(), 2);
        let flat: Vec<Vec<String>> = u.iter().map(|u| u.refs.clone()).collect();
        assert_eq!(
            flat,
            vec![
                vec![
                    "refs/agent-runs/r1/a".to_string(),
                    "refs/agent-runs/r1/b".to_string()
                ],
                vec!["refs/agent-runs/r1/c".to_string()],
                vec![layout::notes_ref(&run), layout::run_head(&run)],
            ]
        );
        assert_eq!(u.iter().filter(|u| u.last).count(), 1);
        assert!(u.last().unwrap().last);
        let one = units(&run, refs.clone(), 1);
        assert_eq!(one.len(), 5);
        assert_eq!(one[3].refs, vec![layout::notes_ref(&run)]);
        assert_eq!(one[4].refs, vec![layout::run_head(&run)]);
        assert_eq!(units(&run, refs, 5).len(), 1);
    }
}
