//! What a fetch staged, read back and validated before anything of it reaches a run's own
//! refs: ref names (run ids, step names, nothing nested), that the refs point at checkpoint
//! commits of that run, and that every note that would be imported is valid JSON Lines of a
//! bounded size. Also the local refs of runs, grouped the same way, for the comparison.
//!
//! Every checkpoint of the fetched chain is checked, not only the tip (`validate_chain`,
//! `crate::verify`): run, trailers, strictly increasing `seq`, step names, times (typed
//! parse), `git_commit_sha` against the commit's parents, lineage links.
//!
//! Read-only. A staged run that fails validation is described in one line (the caller
//! warns and skips it); nothing here ever executes or interprets fetched content beyond
//! parsing it.

use crate::model::Note;
use crate::store::ObjectId;
use crate::store::{Store, layout};
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::{RemoteName, RunId, StepName};
use std::collections::{BTreeMap, HashMap};

/// The largest note body accepted from another machine.
pub const MAX_NOTE_BYTES: u64 = 1024 * 1024;
/// The most step refs a fetched run may have.
pub const MAX_STEPS: usize = 1000;

/// A run as staged from a remote. Names are raw: they came from another machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StagedRun {
    pub name: String,
    pub head: Option<ObjectId>,
    pub steps: BTreeMap<String, ObjectId>,
    /// Refs nested deeper than `<run>/<leaf>` (never valid).
    pub stray: Vec<String>,
    pub notes: Option<ObjectId>,
}

/// The refs of a local run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LocalRun {
    pub head: Option<ObjectId>,
    pub steps: BTreeMap<String, ObjectId>,
    pub notes: Option<ObjectId>,
}

impl LocalRun {
    /// The same refs, with the same values, as the staged copy.
    pub fn same_as(&self, s: &StagedRun) -> bool {
        self.head == s.head && self.steps == s.steps && self.notes == s.notes
    }
}

/// A staged run that passed validation.
#[derive(Debug, Clone)]
pub struct ValidRun {
    pub run: RunId,
    pub head: ObjectId,
    pub steps: Vec<(StepName, ObjectId)>,
    pub notes: ObjectId,
}

/// Every run staged for `remote`, by (raw) name.
pub fn staged_runs(store: &Store, remote: &RemoteName) -> Result<BTreeMap<String, StagedRun>> {
    fn slot(out: &mut BTreeMap<String, StagedRun>, run: String) -> &mut StagedRun {
        out.entry(run.clone()).or_insert_with(|| StagedRun {
            name: run,
            ..Default::default()
        })
    }
    let mut out = BTreeMap::new();
    let mut refs = store
        .refs()
        .refs_under(&layout::remote_run_prefix(remote))?;
    refs.extend(
        store
            .refs()
            .refs_under(&layout::remote_notes_prefix(remote))?,
    );
    for (full, id) in refs {
        match layout::parse_staged_ref(remote, &full) {
            Some(layout::StagedRef::Run(run, leaf)) => {
                let e = slot(&mut out, run);
                if leaf.contains('/') {
                    e.stray.push(full);
                } else if leaf == layout::HEAD_LEAF {
                    e.head = Some(id);
                } else {
                    e.steps.insert(leaf, id);
                }
            }
            Some(layout::StagedRef::Notes(run)) => slot(&mut out, run).notes = Some(id),
            None => {}
        }
    }
    Ok(out)
}

/// The staged refs of the runs `runs` (only those runs' refs are read: the staging namespace
/// may hold every run of a remote), by name; a run with no staged ref is absent.
pub fn staged_runs_named(
    store: &Store,
    remote: &RemoteName,
    runs: &[RunId],
) -> Result<BTreeMap<String, StagedRun>> {
    let mut out = BTreeMap::new();
    for run in runs {
        if out.contains_key(run.as_str()) {
            continue;
        }
        let mut refs = store
            .refs()
            .refs_under(&layout::remote_run_refs_prefix(remote, run))?;
        let notes = layout::remote_notes_ref(remote, run);
        if let Some(id) = store.refs().ref_target(&notes)? {
            refs.push((notes, id));
        }
        let mut staged = StagedRun {
            name: run.to_string(),
            ..Default::default()
        };
        for (full, id) in refs {
            match layout::parse_staged_ref(remote, &full) {
                Some(layout::StagedRef::Run(_, leaf)) if leaf.contains('/') => {
                    staged.stray.push(full)
                }
                Some(layout::StagedRef::Run(_, leaf)) if leaf == layout::HEAD_LEAF => {
                    staged.head = Some(id)
                }
                Some(layout::StagedRef::Run(_, leaf)) => {
                    staged.steps.insert(leaf, id);
                }
                Some(layout::StagedRef::Notes(_)) => staged.notes = Some(id),
                None => {}
            }
        }
        if staged
            != (StagedRun {
                name: run.to_string(),
                ..Default::default()
            })
        {
            out.insert(run.to_string(), staged);
        }
    }
    Ok(out)
}

/// Every local run's refs (including runs that only have a notes ref), by name.
pub fn local_runs(store: &Store) -> Result<HashMap<String, LocalRun>> {
    let mut out: HashMap<String, LocalRun> = HashMap::new();
    for (full, id) in store.refs().refs_under(layout::RUNS_PREFIX)? {
        match layout::parse_run_ref(&full) {
            Some(layout::RunRef::Head(run)) => out.entry(run).or_default().head = Some(id),
            Some(layout::RunRef::Step(run, step)) => {
                out.entry(run).or_default().steps.insert(step, id);
            }
            None => {}
        }
    }
    for (full, id) in store.refs().refs_under(layout::NOTES_PREFIX)? {
        if let Some(run) = layout::parse_notes_ref(&full) {
            out.entry(run).or_default().notes = Some(id);
        }
    }
    Ok(out)
}

/// The refs of one local run, read now.
pub fn local_run(store: &Store, run: &RunId) -> Result<LocalRun> {
    Ok(LocalRun {
        head: store.refs().run_head(run)?,
        steps: store
            .refs()
            .step_refs(run)?
            .into_iter()
            .map(|(s, id)| (s.to_string(), id))
            .collect(),
        notes: store.refs().notes_tip(run)?,
    })
}

/// Whether the staged copy of `run` shows a push caught half-way: its `HEAD` is there but
/// its notes ref does not annotate it yet (or does not exist yet: the run's first push), or
/// a step ref is ahead of it. git updates the refs of one atomic push one after the other
/// (`HEAD`, the step refs, then `refs/notes/…`), and reads them one after the other for a
/// ref advertisement, so a fetch that reads while a push lands can see any mix of old and
/// new values; fetching again a moment later sees the push whole. Read-only; an unreadable copy
/// is not caught mid-push (it stays invalid).
pub fn caught_mid_push(store: &Store, remote: &RemoteName, run: &RunId) -> Result<bool> {
    let staged = staged_runs_named(store, remote, std::slice::from_ref(run))?;
    let Some((Some(head), notes)) = staged.get(run.as_str()).map(|s| (s.head, s.notes)) else {
        return Ok(false);
    };
    // A step ref ahead of HEAD: HEAD was read before the push moved it, the step after.
    for step in staged
        .get(run.as_str())
        .map(|s| s.steps.values())
        .into_iter()
        .flatten()
    {
        if *step != head && store.objects().is_ancestor(head, *step).unwrap_or(false) {
            return Ok(true);
        }
    }
    let Some(notes) = notes else {
        return Ok(true);
    };
    let mut reader = match store
        .notes()
        .notes_reader_at(Some(notes), layout::remote_notes_ref(remote, run))
    {
        Ok(r) => r,
        Err(_) => return Ok(false),
    };
    Ok(matches!(reader.body(head), Ok(None)))
}

/// Check a staged run before import. `local` is the local run of the same name (its notes
/// are already trusted, so only notes that differ from it are read). The error is one line
/// saying what is wrong.
pub fn validate(
    store: &Store,
    staged: &StagedRun,
    local: &LocalRun,
) -> std::result::Result<ValidRun, String> {
    let run = RunId::new(staged.name.clone()).map_err(|e| e.message)?;
    if let Some(stray) = staged.stray.first() {
        return Err(format!("unexpected nested ref {stray}"));
    }
    let head = staged.head.ok_or("it has no HEAD ref")?;
    let notes = staged.notes.ok_or(
        "it has no notes ref (the remote may be in the middle of a push of this run: fetch again)",
    )?;
    if staged.steps.len() > MAX_STEPS {
        return Err(format!(
            "it has {} step refs (at most {MAX_STEPS})",
            staged.steps.len()
        ));
    }
    let mut steps = Vec::with_capacity(staged.steps.len());
    for (name, id) in &staged.steps {
        let step = StepName::new(name.clone()).map_err(|e| e.message)?;
        steps.push((step, *id));
    }
    let bad = |what: &str, why: String| format!("{what}: {why}");
    let head_commit = store
        .objects()
        .read_commit(head)
        .map_err(|e| bad("HEAD", e.message))?;
    if head_commit.trailers.run.as_deref() != Some(run.as_str()) {
        return Err(format!(
            "HEAD {} is not a checkpoint of run {run} (its Agent-Run trailer is {:?})",
            short(head),
            head_commit.trailers.run.as_deref().unwrap_or("missing")
        ));
    }
    for (step, id) in &steps {
        let c = store
            .objects()
            .read_commit(*id)
            .map_err(|e| bad(&format!("step {step}"), e.message))?;
        if c.trailers
            .run
            .as_deref()
            .and_then(|r| RunId::new(r).ok())
            .is_none()
        {
            return Err(format!(
                "step {step} points at {}, not a checkpoint",
                short(*id)
            ));
        }
        if !store
            .objects()
            .is_ancestor(*id, head)
            .map_err(|e| e.message)?
        {
            return Err(format!(
                "step {step} points at {}, which is not in the run's chain (the remote may be in the middle of a push of this run: fetch again)",
                short(*id)
            ));
        }
    }
    let notes_of = validate_notes(store, &run, head, notes, local.notes)?;
    validate_chain(store, &run, head, &notes_of, local.head)?;
    Ok(ValidRun {
        run,
        head,
        steps,
        notes,
    })
}

/// The most checkpoints of one fetched chain read back (a longer chain is refused).
pub const MAX_CHAIN: usize = 100_000;

/// Every checkpoint of the fetched chain, from `head` back to the run's first checkpoint (or
/// to `trusted_head`, the local run's tip, below which everything is already here): a
/// commit of `run` with a note whose checkpoint line agrees with the commit
/// ([`crate::verify::checkpoint`]: names, trailers, `git_commit_sha`, lineage link) and
/// whose `seq` is lower than the next one's; the walk must end at a `seq` 0 checkpoint.
fn validate_chain(
    store: &Store,
    run: &RunId,
    head: ObjectId,
    notes_of: &HashMap<ObjectId, ObjectId>,
    trusted_head: Option<ObjectId>,
) -> std::result::Result<(), String> {
    let mut next = Some(head);
    let mut later_seq: Option<u64> = None;
    let mut walked = 0usize;
    while let Some(id) = next.take() {
        if Some(id) == trusted_head {
            return Ok(());
        }
        walked += 1;
        if walked > MAX_CHAIN {
            return Err(format!("its chain is longer than {MAX_CHAIN} checkpoints"));
        }
        let commit = store
            .objects()
            .read_commit(id)
            .map_err(|e| format!("checkpoint {}: {}", short(id), e.message))?;
        if commit.trailers.run.as_deref() != Some(run.as_str()) {
            return Err(format!(
                "its chain reaches {}, not a checkpoint of run {run}, before the run's first checkpoint",
                short(id)
            ));
        }
        let blob = notes_of
            .get(&id)
            .ok_or_else(|| format!("checkpoint {} has no note", short(id)))?;
        let note = read_note(store, *blob).map_err(|e| format!("note of {}: {e}", short(id)))?;
        let line = note
            .checkpoint()
            .ok_or_else(|| format!("the note of {} has no checkpoint line", short(id)))?;
        if line.run != run.as_str() {
            return Err(format!(
                "the note of {} belongs to run {:?}",
                short(id),
                line.run
            ));
        }
        crate::verify::checkpoint(store, &commit, line)?;
        if let Some(later) = later_seq
            && line.seq >= later
        {
            return Err(format!(
                "checkpoint {} has seq {} but the one after it has {later}",
                short(id),
                line.seq
            ));
        }
        later_seq = Some(line.seq);
        if line.seq == 0 {
            return Ok(());
        }
        next = commit.parents.first().copied();
    }
    Err(format!(
        "its chain ends before a first (seq 0) checkpoint of run {run}"
    ))
}

/// Every note of `notes` that is not already in `trusted` must be UTF-8 JSON Lines of at most
/// [`MAX_NOTE_BYTES`], and the HEAD checkpoint's note must be a checkpoint of `run`.
/// Returns the notes (annotated commit → note blob).
fn validate_notes(
    store: &Store,
    run: &RunId,
    head: ObjectId,
    notes: ObjectId,
    trusted: Option<ObjectId>,
) -> std::result::Result<HashMap<ObjectId, ObjectId>, String> {
    let all = store
        .notes()
        .all_notes(notes)
        .map_err(|e| format!("its notes ref is not a notes commit: {}", e.message))?;
    let known = match trusted {
        Some(t) => store.notes().all_notes(t).unwrap_or_default(),
        None => HashMap::new(),
    };
    if !all.contains_key(&head) {
        return Err(format!(
            "HEAD {} has no note (the remote may be in the middle of a push of this run: fetch again)",
            short(head)
        ));
    }
    for (obj, blob) in &all {
        if known.get(obj) == Some(blob) && *obj != head {
            continue;
        }
        let note = read_note(store, *blob).map_err(|e| format!("note of {}: {e}", short(*obj)))?;
        if *obj == head {
            match note.checkpoint() {
                Some(c) if c.run == run.as_str() => {}
                Some(c) => {
                    return Err(format!(
                        "the note of HEAD {} belongs to run {:?}",
                        short(head),
                        c.run
                    ));
                }
                None => {
                    return Err(format!(
                        "the note of HEAD {} has no checkpoint line",
                        short(head)
                    ));
                }
            }
        }
    }
    Ok(all)
}

fn read_note(store: &Store, blob: ObjectId) -> std::result::Result<Note, String> {
    let size = store.objects().object_size(blob).map_err(|e| e.message)?;
    if size > MAX_NOTE_BYTES {
        return Err(format!("{size} bytes (at most {MAX_NOTE_BYTES})"));
    }
    let bytes = store.objects().read_blob(blob).map_err(|e| e.message)?;
    let text = String::from_utf8(bytes).map_err(|_| "not UTF-8".to_string())?;
    Note::parse(&text).map_err(|e| e.to_string())
}

fn short(id: ObjectId) -> String {
    id.to_hex_with_len(12).to_string()
}
