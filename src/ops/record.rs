//! Appending a checkpoint to a run (DESIGN.md §3.4): snapshot, build the commit and the new
//! notes commit, publish notes + `HEAD` + step ref in one compare-and-swap transaction, and
//! on conflict re-parent onto the new tip and retry with jittered backoff.
//!
//! Every writing operation (start, checkpoint, step begin/end, the root of a rewind) goes
//! through [`append`]. It never touches the user's index, HEAD or files.

use crate::catalog::{Catalog, short};
use crate::error::{Error, Result};
use crate::ids::{RunId, StepName};
use crate::model::{
    Artifact, CHECKPOINT_SCHEMA, CheckpointLine, Event, Excluded, LineageLink, Note, NoteLine,
    Status, StepKind, TRAILER_SCHEMA,
};
use crate::redact;
use crate::snapshot::{Policy, snapshot_worktree};
use crate::store::ObjectId;
use crate::store::{PublishError, RefChange, Store, Trailers, UserHead, layout};
use std::collections::BTreeMap;
use std::time::Duration;

/// How many times a writer re-reads and retries after losing a compare-and-swap.
const MAX_ATTEMPTS: u32 = 50;

/// Where the checkpoint's tree comes from.
#[derive(Debug, Clone)]
pub enum TreeSource {
    /// Snapshot the current worktree.
    Worktree,
    /// A tree given by the caller (e.g. the checkpoint a rewind starts from).
    Given {
        tree: ObjectId,
        excluded: Vec<Excluded>,
    },
}

/// The run a new run starts from (rewind/fork).
#[derive(Debug, Clone)]
pub struct Origin {
    pub link: LineageLink,
    pub rewound: bool,
    /// The checkpoint commit the new run's root has as first parent.
    pub checkpoint: ObjectId,
    /// Step refs the new run inherits (created in the same transaction).
    pub inherited_steps: Vec<(StepName, ObjectId)>,
}

/// What to record.
#[derive(Debug, Clone)]
pub struct Record {
    pub run: RunId,
    pub step: Option<StepName>,
    pub event: Event,
    pub kind: Option<StepKind>,
    pub status: Option<Status>,
    pub session_id: Option<String>,
    /// Paths (inside the snapshot) or URIs (`scheme://…`).
    pub artifacts: Vec<String>,
    pub meta: BTreeMap<String, String>,
    pub message: Option<String>,
    pub label: Option<String>,
    pub workflow_digest: Option<String>,
    pub inputs_hash: Option<String>,
    pub idempotency_key: Option<String>,
    pub next_action: Option<String>,
    pub exit_code: Option<i32>,
    pub started_at: Option<String>,
    pub tree: TreeSource,
    pub origin: Option<Origin>,
    /// The run must not exist yet (start, rewind, fork).
    pub new_run: bool,
    /// Write even when identical to the tip.
    pub force: bool,
    /// The user's HEAD to record instead of the current one (a rewind's root records the
    /// commit the new run's branch starts at).
    pub user_head: Option<UserHead>,
    /// More note lines written with the checkpoint line, in the same commit (e.g. the
    /// `rewrite` record of the post-rewrite hook). A record with any is never `unchanged`.
    pub extra_lines: Vec<NoteLine>,
}

impl Record {
    pub fn new(run: RunId, event: Event) -> Self {
        Record {
            run,
            step: None,
            event,
            kind: None,
            status: None,
            session_id: None,
            artifacts: vec![],
            meta: BTreeMap::new(),
            message: None,
            label: None,
            workflow_digest: None,
            inputs_hash: None,
            idempotency_key: None,
            next_action: None,
            exit_code: None,
            started_at: None,
            tree: TreeSource::Worktree,
            origin: None,
            new_run: false,
            force: false,
            user_head: None,
            extra_lines: vec![],
        }
    }
}

/// What was recorded.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub checkpoint: ObjectId,
    pub line: CheckpointLine,
    /// True when the tip already recorded exactly this and nothing was written.
    pub unchanged: bool,
    /// Fields whose values were redacted.
    pub redacted: Vec<String>,
}

impl Recorded {
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(&self.line).expect("serializable");
        let o = v.as_object_mut().expect("object");
        o.insert("checkpoint".into(), self.checkpoint.to_string().into());
        o.insert("unchanged".into(), self.unchanged.into());
        if !self.redacted.is_empty() {
            o.insert("redacted".into(), self.redacted.clone().into());
        }
        v
    }
}

/// Append one checkpoint to `rec.run`.
pub fn append(store: &Store, rec: Record) -> Result<Recorded> {
    // A bare repository has no worktree to snapshot (a given tree needs none: a fetch
    // importing a diverged run).
    if store.is_bare() && matches!(rec.tree, TreeSource::Worktree) {
        store.workdir()?;
    }
    check_artifacts(store, &rec.artifacts)?;
    // New objects stay in memory and are written as one pack right before the refs move.
    let staged = store.with_staged_objects();
    let (tree, excluded) = match &rec.tree {
        TreeSource::Worktree => {
            let snap = snapshot_worktree(&staged, &Policy::from_config(store)?)?;
            (snap.tree, snap.excluded)
        }
        TreeSource::Given { tree, excluded } => (*tree, excluded.clone()),
    };
    crate::trace::mark("checkpoint: snapshot taken");
    let user_head = match &rec.user_head {
        Some(h) => h.clone(),
        None => store.user_head()?,
    };
    let artifacts = resolve_artifacts(&staged, tree, &rec.artifacts)?;
    let (meta, message, session_id, mut redacted) = redact_fields(&rec);
    let writer = crate::time::writer_id();

    let _lock = store.writer_lock(rec.run.as_str())?;
    for attempt in 0..MAX_ATTEMPTS {
        let mut catalog = Catalog::new(store);
        let head = store.run_head(&rec.run)?;
        let notes_tip = store.notes_tip(&rec.run)?;
        if rec.new_run && head.is_some() {
            return Err(Error::refused(format!("run {} already exists", rec.run))
                .with_hint("choose another --run id, or leave it out to generate one"));
        }
        let prev = match head {
            Some(h) => Some(
                catalog
                    .checkpoint(h)
                    .map_err(|e| e.context(format!("cannot append to run {}", rec.run)))?,
            ),
            None => None,
        };
        let step_tip = match &rec.step {
            Some(s) => store.step_tip(&rec.run, s)?,
            None => None,
        };
        let step_prev = match step_tip {
            Some(id) => catalog.try_checkpoint(id)?,
            None => None,
        };
        let step_attempt = step_prev.as_ref().map(|c| c.line().attempt);
        // A finish carries the start time of the attempt it ends.
        let attempt_started = step_prev
            .as_ref()
            .filter(|c| rec.event != Event::Begin && c.line().run == rec.run.as_str())
            .and_then(|c| c.line().started_at.clone());
        let attempt_no = match (rec.event, step_attempt) {
            (Event::Begin, Some(a)) => a + 1,
            (_, Some(a)) => a,
            (_, None) => 1,
        };
        let seq = prev.as_ref().map_or(0, |p| p.line().seq + 1);
        let run_root = prev.as_ref().map(|p| {
            p.line()
                .run_root
                .clone()
                .unwrap_or_else(|| p.id().to_string())
        });

        let first_parent = match (&prev, &rec.origin) {
            (Some(p), _) => Some(p.id()),
            (None, Some(o)) => Some(o.checkpoint),
            (None, None) => user_head.commit,
        };
        let mut parents: Vec<ObjectId> = first_parent.into_iter().collect();
        // A root's first parent (the checkpoint it came from) already reaches its commit.
        if let Some(h) = user_head.commit
            && Some(h) != first_parent
            && !(prev.is_none() && rec.origin.is_some())
        {
            parents.push(h);
        }

        // A record of a step that is neither its begin nor its finish (a commit, a turn, a
        // manual checkpoint) continues the step's current attempt: it keeps its status,
        // kind and input hash unless told otherwise.
        let continues = step_prev
            .as_ref()
            .filter(|_| !matches!(rec.event, Event::Begin | Event::Finish));
        let status = rec.status.or_else(|| continues.and_then(|c| c.status()));
        let kind = rec
            .kind
            .or_else(|| step_prev.as_ref().and_then(|c| c.line().step_kind));
        let inputs_hash = rec
            .inputs_hash
            .clone()
            .or_else(|| continues.and_then(|c| c.line().inputs_hash.clone()));
        let idempotency_key = rec
            .idempotency_key
            .clone()
            .or_else(|| continues.and_then(|c| c.line().idempotency_key.clone()));

        let now = crate::time::now_rfc3339();
        let line = CheckpointLine {
            schema: CHECKPOINT_SCHEMA.into(),
            run: rec.run.to_string(),
            step: rec.step.as_ref().map(|s| s.to_string()),
            attempt: attempt_no,
            seq,
            event: rec.event,
            step_kind: kind,
            status,
            sdk_session_id: session_id.clone(),
            git_commit_sha: user_head.commit.map(|c| c.to_string()),
            head_ref: user_head.branch.clone(),
            artifacts: artifacts.clone(),
            inputs_hash,
            idempotency_key,
            rewound_from: rec
                .origin
                .as_ref()
                .filter(|o| o.rewound)
                .map(|o| o.link.clone()),
            forked_from: rec
                .origin
                .as_ref()
                .filter(|o| !o.rewound)
                .map(|o| o.link.clone()),
            excluded: excluded.clone(),
            started_at: rec
                .started_at
                .clone()
                .or_else(|| (rec.event == Event::Begin).then(|| now.clone()))
                .or(attempt_started),
            finished_at: (rec.event == Event::Finish).then(|| now.clone()),
            ts: now.clone(),
            writer: writer.clone(),
            next_action: rec.next_action.clone(),
            meta: meta.clone(),
            message: message.clone(),
            label: rec.label.clone(),
            workflow_digest: rec.workflow_digest.clone(),
            run_root,
            exit_code: rec.exit_code,
        };

        if let Some(p) = &prev
            && !rec.force
            && rec.extra_lines.is_empty()
            && p.commit.tree == tree
            && p.line().git_commit_sha == line.git_commit_sha
            && p.line().same_facts(&line)
        {
            return Ok(Recorded {
                checkpoint: p.id(),
                line: p.line().clone(),
                unchanged: true,
                redacted: vec![],
            });
        }

        let mut lines = vec![NoteLine::Checkpoint(Box::new(line.clone()))];
        lines.extend(rec.extra_lines.iter().cloned());
        if !redacted.is_empty() {
            lines.push(NoteLine::Redaction {
                fields: redacted.clone(),
                ts: now.clone(),
            });
        }
        let body = Note { lines }.to_body();
        let commit =
            staged.write_commit(tree, &parents, &commit_message(&line, message.as_deref()))?;
        let notes_commit = staged.write_notes_commit(
            notes_tip,
            &[(commit, body.into_bytes())],
            &format!("agent-rewind: note for {}", describe(&line)),
        )?;

        staged.persist_staged_objects()?;
        crate::trace::mark("checkpoint: commit and note written");
        // Order matters for crash safety: notes, then HEAD, then step refs (store::publish).
        let mut changes = vec![
            RefChange::set(layout::notes_ref(&rec.run), notes_commit, notes_tip),
            RefChange::set(layout::run_head(&rec.run), commit, head),
        ];
        if let Some(s) = &rec.step {
            changes.push(RefChange::set(
                layout::step_ref(&rec.run, s),
                commit,
                step_tip,
            ));
        }
        if prev.is_none()
            && let Some(o) = &rec.origin
        {
            for (s, id) in &o.inherited_steps {
                if rec.step.as_ref() != Some(s) {
                    changes.push(RefChange::set(layout::step_ref(&rec.run, s), *id, None));
                }
            }
        }
        match store.publish(&changes, &format!("agent-rewind: {}", describe(&line))) {
            Ok(()) => {
                crate::trace::mark("checkpoint: refs published");
                // Each checkpoint adds a small pack: past a few dozen, fold the small ones
                // together. About one write in 64 (decided by the commit id) lets
                // `git gc --auto` pack loose objects and refs when its thresholds say so.
                if store.many_small_packs() {
                    store.spawn_small_pack_repack();
                } else if commit.as_bytes()[0] < 4 {
                    store.spawn_auto_gc();
                }
                return Ok(Recorded {
                    checkpoint: commit,
                    line,
                    unchanged: false,
                    redacted: std::mem::take(&mut redacted),
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

/// Sleep before retrying after a lost compare-and-swap: exponential with jitter.
pub(crate) fn backoff(attempt: u32) {
    let mut b = [0u8; 2];
    crate::ids::fill_random(&mut b);
    let base = 2u64.saturating_pow(attempt.min(6));
    let jitter = u16::from_le_bytes(b) as u64 % (base * 1000);
    std::thread::sleep(Duration::from_micros(base * 500 + jitter));
}

fn describe(line: &CheckpointLine) -> String {
    format!(
        "{} {} #{} {}",
        line.run,
        line.step.as_deref().unwrap_or("-"),
        line.seq,
        line.event
    )
}

/// Subject, optional body, and the identity trailers.
fn commit_message(line: &CheckpointLine, message: Option<&str>) -> String {
    let mut subject = format!("agent-rewind: {} {}", line.run, line.event);
    if let Some(s) = &line.step {
        subject.push_str(&format!(" {s}"));
    }
    if let Some(st) = line.status {
        subject.push_str(&format!(" ({st})"));
    }
    let trailers = Trailers {
        run: Some(line.run.clone()),
        step: line.step.clone(),
        attempt: Some(line.attempt),
        event: Some(line.event.to_string()),
        schema: Some(TRAILER_SCHEMA),
    };
    match message {
        Some(m) if !m.trim().is_empty() => {
            format!("{subject}\n\n{}\n\n{}", m.trim(), trailers.render())
        }
        _ => format!("{subject}\n\n{}", trailers.render()),
    }
}

/// Redact secret-looking values in meta, message and session id.
fn redact_fields(
    rec: &Record,
) -> (
    BTreeMap<String, String>,
    Option<String>,
    Option<String>,
    Vec<String>,
) {
    let mut redacted = vec![];
    let meta = rec
        .meta
        .iter()
        .map(|(k, v)| {
            let (v, hit) = redact::redact_value(k, v);
            if hit {
                redacted.push(format!("meta.{k}"));
            }
            (k.clone(), v)
        })
        .collect();
    let mut one = |field: &str, v: &Option<String>| {
        v.as_ref().map(|v| {
            let (v, hit) = redact::redact_value(field, v);
            if hit {
                redacted.push(field.to_string());
            }
            v
        })
    };
    let message = one("message", &rec.message);
    let session = one("sdk_session_id", &rec.session_id);
    (meta, message, session, redacted)
}

/// Refuse bad `--artifact` arguments before anything is written: a URI carrying a
/// credential (never echoed back), a path that is not in the worktree.
fn check_artifacts(store: &Store, args: &[String]) -> Result<()> {
    for a in args {
        if a.contains("://") {
            if redact::looks_secret(a) {
                return Err(Error::usage(
                    "an artifact URI contains a credential; refusing to record it",
                )
                .with_hint(
                    "point to the artifact without user:password (use a credential helper)",
                ));
            }
        } else if let Ok(root) = store.workdir()
            && std::fs::symlink_metadata(root.join(a.trim_start_matches("./"))).is_err()
        {
            return Err(
                Error::usage(format!("artifact {a:?} does not exist in the worktree"))
                    .with_hint("artifact paths are relative to the repository root"),
            );
        }
    }
    Ok(())
}

/// `path` artifacts get the blob id they have in the snapshot; `scheme://` ones are kept as
/// URIs (with `#sha256=…` style digests split off).
fn resolve_artifacts(store: &Store, tree: ObjectId, args: &[String]) -> Result<Vec<Artifact>> {
    let mut out = vec![];
    for a in args {
        if a.contains("://") {
            let (uri, digest) = match a.split_once('#') {
                Some((u, d)) => (u.to_string(), Some(d.to_string())),
                None => (a.clone(), None),
            };
            out.push(Artifact {
                path: None,
                oid: None,
                uri: Some(uri),
                digest,
            });
            continue;
        }
        let path = a.trim_start_matches("./").to_string();
        let oid = store.path_in_tree(tree, &path)?.ok_or_else(|| {
            Error::usage(format!(
                "artifact {path:?} is not in the snapshot (ignored, excluded or a folder)"
            ))
            .with_hint("artifact paths are relative to the repository root")
        })?;
        out.push(Artifact {
            path: Some(path),
            oid: Some(oid.to_string()),
            uri: None,
            digest: None,
        });
    }
    Ok(out)
}

/// The id to show for a commit in messages.
pub fn shown(id: ObjectId) -> String {
    short(id)
}

/// Append lines to the note of `commit` in `run`'s notes ref (a later fact about that
/// checkpoint: a run status, an approval…). Compare-and-swap on the notes ref, with retry.
pub fn append_note_lines(
    store: &Store,
    run: &RunId,
    commit: ObjectId,
    lines: &[NoteLine],
) -> Result<()> {
    let _lock = store.writer_lock(run.as_str())?;
    for attempt in 0..MAX_ATTEMPTS {
        let notes_tip = store.notes_tip(run)?;
        let mut body = store.notes_reader(run)?.body(commit)?.ok_or_else(|| {
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
        let notes_commit = store.write_notes_commit(
            notes_tip,
            &[(commit, body)],
            &format!("agent-rewind: record on {}", short(commit)),
        )?;
        match store.publish(
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
