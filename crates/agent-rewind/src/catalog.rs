//! Reading the store as checkpoints and runs: the note of any checkpoint commit (found through
//! its `Agent-Run:` trailer, so inherited checkpoints of other runs resolve too), a run's
//! summary, its chain, and the resolution of a checkpoint address.
//!
//! Read-only: nothing here writes objects or refs. Readers of notes are cached per run for
//! the lifetime of one `Catalog`.

use crate::model::{CheckpointLine, Note, Status};
use crate::store::ObjectId;
use crate::store::{CommitInfo, NotesReader, Store};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::{CheckpointSpec, RunId, SeqPos, StepName};
use std::collections::HashMap;

mod summary;
pub use summary::{RunSummary, order_steps, workflow_step_order};

/// One checkpoint as read back: its commit and its folded note.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    pub commit: CommitInfo,
    pub note: Note,
}

impl Checkpoint {
    pub fn id(&self) -> ObjectId {
        self.commit.id
    }
    /// The checkpoint line (every checkpoint returned by the catalog has one).
    pub fn line(&self) -> &CheckpointLine {
        self.note
            .checkpoint()
            .expect("catalog only returns checkpoints with a checkpoint line")
    }
    pub fn status(&self) -> Option<Status> {
        self.note.effective_status()
    }
    /// The newest approval record on this checkpoint: (approved, by).
    pub fn decision(&self) -> Option<(bool, String)> {
        self.note.decision()
    }
    /// The JSON shape docs/COMMANDS.md documents: the checkpoint line's fields plus `"checkpoint"`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self.line()).expect("serializable");
        let o = v.as_object_mut().expect("object");
        o.insert("checkpoint".into(), self.id().to_string().into());
        o.insert(
            "status".into(),
            serde_json::to_value(self.status()).expect("serializable"),
        );
        o.insert(
            "parents".into(),
            self.commit.parents.iter().map(|p| p.to_string()).collect(),
        );
        o.insert("tree".into(), self.commit.tree.to_string().into());
        let extra: Vec<serde_json::Value> = self
            .note
            .lines
            .iter()
            .filter(|l| !matches!(l, crate::model::NoteLine::Checkpoint(_)))
            .map(|l| l.to_json())
            .collect();
        if !extra.is_empty() {
            o.insert("records".into(), extra.into());
        }
        v
    }
}

/// The root checkpoint a checkpoint line names (`run_root`; `None`: the checkpoint at `at`
/// is its run's root itself).
fn run_root_id(line: &CheckpointLine, at: ObjectId) -> Result<Option<ObjectId>> {
    line.run_root
        .as_deref()
        .map(|hex| {
            ObjectId::from_hex(hex.as_bytes()).map_err(|_| {
                Error::corrupt(format!("checkpoint {} has an invalid run_root", short(at)))
            })
        })
        .transpose()
}

/// Cached reader over the store.
pub struct Catalog<'s> {
    pub store: &'s Store,
    readers: HashMap<String, NotesReader<'s>>,
    notes_tips: Option<HashMap<String, ObjectId>>,
    /// Run `HEAD` commits read to resolve step names (`diff <run>/<a> <run>/<b>` reads the
    /// same one twice); a commit never changes, so this is never stale.
    heads_read: HashMap<ObjectId, CommitInfo>,
}

impl<'s> Catalog<'s> {
    pub fn new(store: &'s Store) -> Self {
        Catalog {
            store,
            readers: HashMap::new(),
            notes_tips: None,
            heads_read: HashMap::new(),
        }
    }

    /// Use notes tips read in one pass (`Store::notes_tips`) instead of one ref lookup per
    /// run: for reading many runs at once.
    pub fn with_notes_tips(mut self, tips: HashMap<String, ObjectId>) -> Self {
        self.notes_tips = Some(tips);
        self
    }

    fn reader(&mut self, run: &RunId) -> Result<&mut NotesReader<'s>> {
        if !self.readers.contains_key(run.as_str()) {
            let r = match &self.notes_tips {
                Some(tips) => self.store.notes().notes_reader_at(
                    tips.get(run.as_str()).copied(),
                    crate::store::layout::notes_ref(run),
                )?,
                None => self.store.notes().notes_reader(run)?,
            };
            self.readers.insert(run.to_string(), r);
        }
        Ok(self.readers.get_mut(run.as_str()).expect("just inserted"))
    }

    /// Forget cached notes (after this process wrote new ones).
    pub fn refresh(&mut self) {
        self.readers.clear();
        self.notes_tips = None;
    }

    /// The checkpoint at `commit`, or `None` if that commit is not a checkpoint (no
    /// `Agent-Run:` trailer or no note). A malformed note is an error.
    pub fn try_checkpoint(&mut self, commit: ObjectId) -> Result<Option<Checkpoint>> {
        let info = self.store.objects().read_commit(commit)?;
        let Some(run) = info.trailers.run.clone() else {
            return Ok(None);
        };
        let Ok(run) = RunId::new(run) else {
            return Ok(None);
        };
        let note = match self.reader(&run)?.note(commit, Note::parse)? {
            Some(n) => n,
            // Notes are published before the refs that reach their commits, so a commit
            // learned from a ref read after this reader was opened may have a newer note
            // than the reader sees (a writer published meanwhile): read the notes ref again.
            None => {
                let mut fresh = self.store.notes().notes_reader(&run)?;
                let note = fresh.note(commit, Note::parse)?;
                self.readers.insert(run.to_string(), fresh);
                match note {
                    Some(n) => n,
                    None => return Ok(None),
                }
            }
        };
        if note.checkpoint().is_none() {
            return Err(Error::corrupt(format!(
                "the note of checkpoint {} has no checkpoint line",
                short(commit)
            )));
        }
        Ok(Some(Checkpoint { commit: info, note }))
    }

    /// Like [`Self::try_checkpoint`], but a commit without a note is an error.
    pub fn checkpoint(&mut self, commit: ObjectId) -> Result<Checkpoint> {
        self.try_checkpoint(commit)?.ok_or_else(|| {
            Error::not_found(format!(
                "{} is not an agent-rewind checkpoint (no Agent-Run trailer or no note)",
                short(commit)
            ))
        })
    }

    /// The tip checkpoint of a run, `None` if the run does not exist.
    pub fn run_tip(&mut self, run: &RunId) -> Result<Option<Checkpoint>> {
        match self.store.refs().run_head(run)? {
            None => Ok(None),
            Some(id) => self.checkpoint(id).map(Some),
        }
    }

    pub fn require_run_tip(&mut self, run: &RunId) -> Result<Checkpoint> {
        self.run_tip(run)?.ok_or_else(|| unknown_run(run))
    }

    /// The root (seq 0) checkpoint of the run whose tip is `tip`.
    pub fn root_of(&mut self, tip: &Checkpoint) -> Result<Checkpoint> {
        match run_root_id(tip.line(), tip.id())? {
            None => Ok(tip.clone()),
            Some(id) => self.checkpoint(id),
        }
    }

    /// The checkpoints of `run`'s own chain, oldest first (stops where the chain enters the
    /// run it was rewound or forked from).
    pub fn run_chain(&mut self, run: &RunId) -> Result<Vec<Checkpoint>> {
        let tip = self.require_run_tip(run)?;
        let mut out = vec![];
        let mut next = Some(tip);
        while let Some(cp) = next.take() {
            let (seq, parent) = (cp.line().seq, cp.commit.parents.first().copied());
            let own = cp.line().run == run.as_str();
            if !own {
                break;
            }
            out.push(cp);
            if seq == 0 {
                break;
            }
            if let Some(p) = parent {
                next = self.try_checkpoint(p)?;
            }
        }
        out.reverse();
        Ok(out)
    }

    /// The first-parent lineage from a checkpoint back through every run it came from,
    /// newest first, until a commit that is not a checkpoint.
    pub fn lineage_chain(&mut self, from: ObjectId, limit: usize) -> Result<Vec<Checkpoint>> {
        let mut out = vec![];
        let mut next = self.try_checkpoint(from)?;
        while let Some(cp) = next.take() {
            if out.len() >= limit {
                break;
            }
            let parent = cp.commit.parents.first().copied();
            out.push(cp);
            if let Some(p) = parent {
                next = self.try_checkpoint(p)?;
            }
        }
        Ok(out)
    }

    /// Resolve a checkpoint address to a checkpoint. Runs may be named by a unique prefix of
    /// their id. An address without a run (`@-1`) must have been completed with the active
    /// run first (`ops::address::spec`).
    pub fn resolve(&mut self, spec: &CheckpointSpec) -> Result<Checkpoint> {
        match spec {
            CheckpointSpec::RunHead(run) => {
                let run = self.run_named(run)?;
                self.require_run_tip(&run)
            }
            CheckpointSpec::Step(run, step) => {
                let run = self.run_named(run)?;
                let id = self.step_commit(&run, step)?;
                self.checkpoint(id)
            }
            CheckpointSpec::Seq(None, pos) => {
                Err(Error::usage(format!("the address {pos} names no run"))
                    .with_hint(format!("name one: <run>{pos}")))
            }
            CheckpointSpec::Seq(Some(run), pos) => {
                let run = self.run_named(run)?;
                let chain = self.run_chain(&run)?;
                let len = chain.len() as u64;
                let found = match *pos {
                    SeqPos::FromStart(seq) => chain.into_iter().find(|c| c.line().seq == seq),
                    SeqPos::FromEnd(n) if n <= len => chain.into_iter().nth((len - n) as usize),
                    SeqPos::FromEnd(_) => None,
                };
                found.ok_or_else(|| {
                    Error::not_found(format!(
                        "run {run} has no checkpoint {pos} (it has {len}: @0 to @{}, or @-1 to @-{len})",
                        len.saturating_sub(1)
                    ))
                    .with_hint(format!("see `git agent-rewind list {run}`"))
                })
            }
            CheckpointSpec::Commit(hex) => {
                let as_run = RunId::new(hex.clone()).ok();
                if let Some(run) = &as_run
                    && self.store.refs().run_head(run)?.is_some()
                {
                    return self.require_run_tip(run);
                }
                let commit = match self.store.objects().resolve_commit_prefix(hex)? {
                    Some(id) => self.try_checkpoint(id)?.map(|c| (id, c)),
                    None => None,
                };
                let runs = match &as_run {
                    Some(r) => self.runs_with_prefix(r)?,
                    None => vec![],
                };
                match (commit, runs.as_slice()) {
                    (Some((_, cp)), []) => Ok(cp),
                    (None, [run]) => self.require_run_tip(run),
                    (None, []) => {
                        // A commit that is not a checkpoint says so.
                        if let Some(id) = self.store.objects().resolve_commit_prefix(hex)? {
                            return self.checkpoint(id);
                        }
                        match as_run {
                            Some(run) => {
                                Err(self.unknown_run_error(&run, "no run or commit named")?)
                            }
                            None => Err(Error::not_found(format!("no run or commit named {hex}"))
                                .with_hint("see `git agent-rewind list`")),
                        }
                    }
                    (Some((id, _)), runs) => Err(Error::usage(format!(
                        "{hex} is ambiguous: checkpoint {} and run(s) {}",
                        short(id),
                        names(runs)
                    ))
                    .with_hint("give more characters")),
                    (None, runs) => Err(ambiguous_runs(hex, runs)),
                }
            }
        }
    }

    /// The run a user named: an existing run id, else the one run whose id starts with it.
    /// An ambiguous prefix is an error listing the candidates; an unknown name suggests the
    /// closest run ids.
    pub fn run_named(&mut self, name: &RunId) -> Result<RunId> {
        match self.run_matching(name)? {
            Some(run) => Ok(run),
            None => Err(self.unknown_run_error(name, "unknown run")?),
        }
    }

    /// As `run_named`, but `None` when no run has this id or starts with it (a name a new
    /// run may take: `checkpoint --run`, `step begin --run`).
    pub fn run_matching(&mut self, name: &RunId) -> Result<Option<RunId>> {
        if self.store.refs().run_head(name)?.is_some() {
            return Ok(Some(name.clone()));
        }
        let runs = self.runs_with_prefix(name)?;
        match runs.as_slice() {
            [one] => Ok(Some(one.clone())),
            [] => Ok(None),
            many => Err(ambiguous_runs(name.as_str(), many)),
        }
    }

    /// The shortest unique prefix length of `run` among every run of the repository.
    pub fn unique_prefix(&mut self, run: &RunId) -> Result<usize> {
        let (runs, _) = self.store.refs().list_runs()?;
        let ids: Vec<&str> = runs.iter().map(|(r, _)| r.as_str()).collect();
        let lens = agent_rewind_core::ids::shortest_unique_prefixes(&ids);
        Ok(ids
            .iter()
            .position(|r| *r == run.as_str())
            .map(|i| lens[i])
            .unwrap_or(run.as_str().len()))
    }

    /// The runs whose id starts with `prefix`, sorted.
    fn runs_with_prefix(&mut self, prefix: &RunId) -> Result<Vec<RunId>> {
        let (runs, _) = self.store.refs().list_runs()?;
        let mut out: Vec<RunId> = runs
            .into_iter()
            .map(|(r, _)| r)
            .filter(|r| r.as_str().starts_with(prefix.as_str()))
            .collect();
        out.sort();
        Ok(out)
    }

    /// "unknown run X" with the closest run ids as a "did you mean".
    fn unknown_run_error(&mut self, name: &RunId, what: &str) -> Result<Error> {
        let (runs, _) = self.store.refs().list_runs()?;
        let ids: Vec<&str> = runs.iter().map(|(r, _)| r.as_str()).collect();
        let near = agent_rewind_core::ids::closest_names(name.as_str(), &ids, 3);
        let mut msg = format!("{what} {name}");
        if !near.is_empty() {
            msg.push_str(&format!("; did you mean {}?", near.join(", ")));
        }
        Ok(Error::not_found(msg).with_hint("see `git agent-rewind list --all`"))
    }

    pub fn step_commit(&mut self, run: &RunId, step: &StepName) -> Result<ObjectId> {
        let Some(head) = self.store.refs().run_head(run)? else {
            return Err(self.unknown_run_error(run, "unknown run")?);
        };
        let tip = self.store.refs().step_tip(run, step)?;
        let heads_read = &mut self.heads_read;
        let found = step_tip_at(self.store, run, step, tip, head, |id| {
            if let Some(c) = heads_read.get(&id) {
                return Ok(c.clone());
            }
            let c = self.store.objects().read_commit(id)?;
            heads_read.insert(id, c.clone());
            Ok(c)
        })?;
        match found {
            Some(id) => Ok(id),
            None => Err(self.unknown_step_error(run, step.as_str())?),
        }
    }

    /// "run R has no step S; did you mean …" with the run's steps in the hint.
    pub fn unknown_step_error(&mut self, run: &RunId, step: &str) -> Result<Error> {
        // The steps in the order they happened, as `list` shows them (by name when the
        // run's summary cannot be made).
        let steps = match self.summary(run) {
            Ok(summary) => summary.steps,
            Err(_) => self
                .store
                .refs()
                .step_refs(run)?
                .iter()
                .map(|(s, _)| s.to_string())
                .collect(),
        };
        let names: Vec<&str> = steps.iter().map(String::as_str).collect();
        let near = agent_rewind_core::ids::closest_names(step, &names, 3);
        let mut msg = format!("run {run} has no checkpoint for step {step}");
        if !near.is_empty() {
            msg.push_str(&format!("; did you mean {}?", near.join(", ")));
        }
        let hint = if names.is_empty() {
            format!("run {run} has no step checkpoints yet (`git agent-rewind list {run}`)")
        } else {
            format!("the steps of run {run}: {}", names.join(", "))
        };
        Ok(Error::not_found(msg).with_hint(hint))
    }
}

fn names(runs: &[RunId]) -> String {
    const SHOWN: usize = 10;
    let mut s = runs
        .iter()
        .take(SHOWN)
        .map(|r| r.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    if runs.len() > SHOWN {
        s.push_str(&format!(" and {} more", runs.len() - SHOWN));
    }
    s
}

fn ambiguous_runs(prefix: &str, runs: &[RunId]) -> Error {
    Error::usage(format!(
        "run id prefix {prefix} is ambiguous: {}",
        names(runs)
    ))
    .with_hint("give more characters of the run id")
}

pub fn unknown_run(run: &RunId) -> Error {
    Error::not_found(format!("unknown run {run}")).with_hint("see `git agent-rewind list --all`")
}

pub fn short(id: ObjectId) -> String {
    id.to_hex_with_len(12).to_string()
}

/// The newest checkpoint of `step` in `run`: the step's ref, or the run's `HEAD` when a
/// writer killed between the renames of one ref transaction left the step ref behind a
/// `HEAD` that is a checkpoint of the same step (FORMAT.md, "Order inside the
/// transaction"). Every reader of "the step's latest attempt" goes through here, so such a
/// crash never makes a finished step look unfinished.
pub fn step_tip(store: &Store, run: &RunId, step: &StepName) -> Result<Option<ObjectId>> {
    let tip = store.refs().step_tip(run, step)?;
    let Some(head) = store.refs().run_head(run)? else {
        return Ok(tip);
    };
    step_tip_at(store, run, step, tip, head, |id| {
        store.objects().read_commit(id)
    })
}

/// [`step_tip`] with the step's ref (`tip`) and the run's `HEAD` already looked up, and the
/// `HEAD` commit read by `read_head` only when the two differ.
fn step_tip_at(
    store: &Store,
    run: &RunId,
    step: &StepName,
    tip: Option<ObjectId>,
    head: ObjectId,
    read_head: impl FnOnce(ObjectId) -> Result<CommitInfo>,
) -> Result<Option<ObjectId>> {
    if tip == Some(head) {
        return Ok(tip);
    }
    let head_commit = read_head(head)?;
    Ok(if step_ref_lags(store, run, step, &head_commit, tip)? {
        Some(head)
    } else {
        tip
    })
}

/// Whether `step`'s ref (now `step_ref`) was left behind the run's `HEAD` commit `head`:
/// `HEAD` is a checkpoint of `run` and `step` (its trailers), and the ref is missing or an
/// ancestor of it. A write of a step moves its ref in the same transaction as `HEAD`, so only
/// a crash between the two renames leaves this.
pub fn step_ref_lags(
    store: &Store,
    run: &RunId,
    step: &StepName,
    head: &CommitInfo,
    step_ref: Option<ObjectId>,
) -> Result<bool> {
    if step_ref == Some(head.id)
        || head.trailers.run.as_deref() != Some(run.as_str())
        || head.trailers.step.as_deref() != Some(step.as_str())
    {
        return Ok(false);
    }
    match step_ref {
        None => Ok(true),
        Some(t) => store.objects().is_ancestor(t, head.id),
    }
}

/// Every step of `run` with its newest checkpoint: the step refs, corrected as
/// [`step_tip`] corrects one (at most one step, `HEAD`'s, can lag).
pub fn step_tips(store: &Store, run: &RunId) -> Result<Vec<(StepName, ObjectId)>> {
    let mut steps = store.refs().step_refs(run)?;
    let Some(head) = store.refs().run_head(run)? else {
        return Ok(steps);
    };
    if steps.iter().any(|(_, id)| *id == head) {
        return Ok(steps);
    }
    let head_commit = store.objects().read_commit(head)?;
    let Some(step) = head_commit
        .trailers
        .step
        .as_deref()
        .and_then(|s| StepName::new(s).ok())
    else {
        return Ok(steps);
    };
    let at = steps.iter().position(|(s, _)| *s == step);
    if step_ref_lags(store, run, &step, &head_commit, at.map(|i| steps[i].1))? {
        match at {
            Some(i) => steps[i].1 = head,
            None => {
                steps.push((step, head));
                steps.sort();
            }
        }
    }
    Ok(steps)
}
