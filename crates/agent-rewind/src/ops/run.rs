//! `run <workflow.toml>` and `resume [<run>] [--retry STEP] [--workflow FILE]`: start a
//! workflow run and execute it; continue a run — including one created by `rewind`/`fork` —
//! from its record.
//!
//! The workflow file may live anywhere. Its whole text is stored with the run (a `workflow`
//! line on the run's root note, docs/FORMAT.md), so it travels with the run's notes (push,
//! fetch, bundles) and `resume` works when the file is gone or on another machine. When the
//! file is still where it was and changed, `resume` says so and uses the stored copy unless
//! given `--workflow FILE` (which then becomes the stored copy).
//!
//! Trust is a local act (`workflow::trust`): a stored copy runs only when its digest is on
//! this repository's trusted list, put there by `run <file>`, `resume --workflow FILE` or
//! `trust <run>`. A file that merely has the same content (a checkout by `rewind`, `restore`
//! or `revert` of a fetched run writes exactly that) never makes it trusted.

use super::start::{StartOptions, start};
use crate::catalog::Catalog;
use crate::journal::{active_run, append_note_lines, set_active_run};
use crate::model::{NoteLine, StoredWorkflow};
use crate::store::Store;
use crate::workflow::{self, Workflow, runner::RunReport, trust};
use agent_rewind_core::error::IoResultExt;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::RunId;
use agent_rewind_core::time::Timestamp;
use std::path::{Path, PathBuf};

/// Meta key under which the start checkpoint records where the workflow file was (relative
/// to the worktree root when inside it, else absolute).
pub const WORKFLOW_META: &str = "workflow";

/// The largest workflow file stored with a run (a note must stay well under the 1 MiB that
/// `fetch` accepts).
pub const MAX_WORKFLOW_BYTES: usize = 256 * 1024;

pub fn run_workflow(
    store: &Store,
    file: &Path,
    run: Option<RunId>,
    label: Option<String>,
) -> Result<RunReport> {
    let wf = workflow::load(file)?;
    let stored = stored_workflow(store, file, &wf)?;
    let stored_digest = stored.digest.clone();
    let mut meta = std::collections::BTreeMap::new();
    meta.insert(WORKFLOW_META.to_string(), stored.path.clone());
    let started = start(
        store,
        StartOptions {
            run,
            label: label.or_else(|| Some(wf.name.clone())),
            workflow_digest: Some(stored.digest.clone()),
            meta,
            extra_lines: vec![NoteLine::Workflow(Box::new(stored))],
            keep_active_run: false,
        },
    )?;
    let run = RunId::new(started.line.run)?;
    // Run from a file of this worktree: its stored copy may run here again.
    trust::trust(store, &stored_digest)?;
    let mut report = workflow::runner::execute(store, &run, &wf, None)?;
    report.workflow_from = format!("{} (stored with the run)", file.display());
    Ok(report)
}

/// What `resume` is asked to do besides continuing the run.
#[derive(Debug, Default)]
pub struct ResumeOptions<'a> {
    /// Record a new attempt of this step even if it was interrupted or failed.
    pub retry: Option<&'a str>,
    /// Use this workflow file instead of the stored copy (it becomes the stored copy).
    pub workflow_file: Option<&'a Path>,
}

pub fn resume(store: &Store, run: Option<RunId>, opts: ResumeOptions) -> Result<RunReport> {
    let run = match run {
        Some(r) => r,
        None => active_run(store)?.ok_or_else(|| {
            Error::usage("no run given and this worktree has no active run")
                .with_hint("git agent-rewind resume <run>")
        })?,
    };
    let found = match opts.workflow_file {
        Some(file) => {
            let wf = workflow::load(file)?;
            let stored = stored_workflow(store, file, &wf)?;
            let digest = stored.digest.clone();
            // The file given becomes the run's stored copy (the newest line wins).
            let mut catalog = Catalog::new(store);
            let tip = catalog.require_run_tip(&run)?;
            let root = catalog.root_of(&tip)?;
            trust::trust(store, &stored.digest)?;
            if catalog_workflow(&mut catalog, &run)?.map(|(s, _)| s.digest)
                != Some(stored.digest.clone())
            {
                append_note_lines(
                    store,
                    &run,
                    root.id(),
                    &[NoteLine::Workflow(Box::new(stored))],
                )?;
            }
            Found {
                workflow: wf,
                from: format!("{} (given with --workflow)", file.display()),
                file_changed: None,
                digest,
                holder: run.to_string(),
                trusted: true,
            }
        }
        None => {
            let found = find_workflow(store, &run)?;
            found.require_trusted(&run)?;
            found
        }
    };
    set_active_run(store, &run)?;
    let mut report = workflow::runner::execute(store, &run, &found.workflow, opts.retry)?;
    report.workflow_from = found.from;
    report.workflow_file_changed = found.file_changed;
    Ok(report)
}

/// The workflow a run executes, and where it came from.
pub struct Found {
    pub workflow: Workflow,
    /// In words: the stored copy (and of which file), or the file.
    pub from: String,
    /// The file the run was started from, when it still exists and differs from the stored
    /// copy (which is what is used).
    pub file_changed: Option<String>,
    /// The digest of the text that would run (`git-blob:<hex>`).
    pub digest: String,
    /// The run whose root note holds that text (the run itself for a file read from disk).
    pub holder: String,
    /// Whether the digest is on this repository's trusted list (`workflow::trust`).
    pub trusted: bool,
}

impl Found {
    /// Refuse to execute a workflow that is not trusted here, saying how to read and accept
    /// it.
    pub fn require_trusted(&self, run: &RunId) -> Result<()> {
        if self.trusted {
            return Ok(());
        }
        Err(Error::refused(format!(
            "the workflow of run {run} ({}) is not trusted here: it was never run from a file you named in this repository (it may have come with a fetch, a bundle, or a checkout of a run's files), and its commands would run here",
            self.from
        ))
        .with_hint(format!(
            "`git agent-rewind trust {run}` shows what its steps run (command, env, inputs) and asks before trusting it; `resume --workflow FILE` runs a file of yours instead"
        )))
    }
}

/// The workflow of `run`: the copy stored in its lineage; for runs recorded before copies
/// were stored, the file recorded at their start, read from this worktree. Whether it may
/// run is only what the trusted list says of its digest.
pub fn find_workflow(store: &Store, run: &RunId) -> Result<Found> {
    let mut catalog = Catalog::new(store);
    if let Some((stored, holder)) = catalog_workflow(&mut catalog, run)? {
        let workflow = workflow::schema::parse(Path::new(&stored.path), &stored.text)
            .map_err(|e| e.context(format!("the workflow stored with run {holder}")))?;
        let on_disk = file_location(store, &stored.path);
        let disk_digest = match on_disk.as_ref().and_then(|p| std::fs::read(p).ok()) {
            Some(bytes) => Some(format!("git-blob:{}", store.objects().blob_id(&bytes)?)),
            None => None,
        };
        let file_changed = match &disk_digest {
            Some(d) if *d != stored.digest => Some(stored.path.clone()),
            _ => None,
        };
        // The digest is computed here from the text, never taken from the note: a crafted
        // note could name a trusted digest beside other commands.
        let digest = format!(
            "git-blob:{}",
            store.objects().blob_id(stored.text.as_bytes())?
        );
        return Ok(Found {
            workflow,
            from: format!("the copy of {} stored with run {holder}", stored.path),
            file_changed,
            trusted: trust::is_trusted(store, &digest)?,
            digest,
            holder,
        });
    }
    let file = workflow_file(store, run)?;
    let workflow = workflow::load(&file)?;
    let digest = format!(
        "git-blob:{}",
        store.objects().blob_id(workflow.text.as_bytes())?
    );
    Ok(Found {
        workflow,
        from: file.display().to_string(),
        file_changed: None,
        trusted: trust::is_trusted(store, &digest)?,
        digest,
        holder: run.to_string(),
    })
}

/// The newest stored workflow in `run`'s lineage and the run whose root holds it.
fn catalog_workflow(
    catalog: &mut Catalog,
    run: &RunId,
) -> Result<Option<(StoredWorkflow, String)>> {
    let tip = catalog.require_run_tip(run)?;
    for c in catalog.lineage_chain(tip.id(), usize::MAX)? {
        if let Some(w) = c.note.workflow() {
            return Ok(Some((w.clone(), c.line().run.clone())));
        }
    }
    Ok(None)
}

/// Where a recorded workflow path is on this machine: relative paths are in the worktree.
fn file_location(store: &Store, recorded: &str) -> Option<PathBuf> {
    let p = Path::new(recorded);
    if p.is_absolute() {
        Some(p.to_path_buf())
    } else {
        store.worktree().root().ok().map(|w| w.join(p))
    }
}

/// The `workflow` note line for `file` (already loaded as `wf`): its path (relative to the
/// worktree root when inside it, else absolute), digest and text. Refuses a file too big to
/// store, or one holding what looks like a credential (it would be pushed with the run).
fn stored_workflow(store: &Store, file: &Path, wf: &Workflow) -> Result<StoredWorkflow> {
    if wf.text.len() > MAX_WORKFLOW_BYTES {
        return Err(Error::usage(format!(
            "workflow file {} is {} bytes; at most {MAX_WORKFLOW_BYTES} are stored with a run",
            file.display(),
            wf.text.len()
        )));
    }
    if let Some((n, _)) = wf
        .text
        .lines()
        .enumerate()
        .find(|(_, l)| agent_rewind_core::redact::looks_secret(l))
    {
        return Err(Error::refused(format!(
            "workflow file {}:{}: this looks like a credential; the workflow is stored with the run and pushed with it",
            file.display(),
            n + 1
        ))
        .with_hint("read secrets from the environment in the step's command instead"));
    }
    let abs = std::fs::canonicalize(file).at(file)?;
    let path = match store.worktree().root() {
        Ok(root) => {
            let root = std::fs::canonicalize(root).at(root)?;
            match abs.strip_prefix(&root) {
                Ok(rel) => rel.to_string_lossy().into_owned(),
                Err(_) => abs.to_string_lossy().into_owned(),
            }
        }
        Err(_) => abs.to_string_lossy().into_owned(),
    };
    Ok(StoredWorkflow {
        name: wf.name.clone(),
        path,
        digest: format!("git-blob:{}", store.objects().blob_id(wf.text.as_bytes())?),
        text: wf.text.clone(),
        ts: Timestamp::now(),
    })
}

/// Whether the lineage of the run whose tip is `tip` was started from a workflow (what
/// `resume` needs): the run's root, else the roots of the runs it was forked or rewound
/// from, carry it. One note read per run of the lineage, not per checkpoint.
pub fn has_workflow(catalog: &mut Catalog, tip: &crate::catalog::Checkpoint) -> Result<bool> {
    let mut cp = tip.clone();
    // A lineage is acyclic; the bound only guards against damaged notes.
    for _ in 0..1000 {
        let root = catalog.root_of(&cp)?;
        if root.line().meta.contains_key(WORKFLOW_META) || root.note.workflow().is_some() {
            return Ok(true);
        }
        let Some((link, _)) = root.line().origin() else {
            return Ok(false);
        };
        let Ok(id) = crate::store::ObjectId::from_hex(link.checkpoint.as_bytes()) else {
            return Ok(false);
        };
        match catalog.try_checkpoint(id)? {
            Some(source) => cp = source,
            None => return Ok(false),
        }
    }
    Ok(false)
}

/// The workflow file recorded at the start of the run's lineage, resolved in this worktree
/// (runs recorded before the workflow was stored with them).
pub fn workflow_file(store: &Store, run: &RunId) -> Result<PathBuf> {
    let mut catalog = Catalog::new(store);
    let tip = catalog.require_run_tip(run)?;
    let rel = catalog
        .lineage_chain(tip.id(), usize::MAX)?
        .into_iter()
        .find_map(|c| c.line().meta.get(WORKFLOW_META).cloned())
        .ok_or_else(|| {
            Error::refused(format!("run {run} was not started from a workflow file"))
                .with_hint("start workflow runs with `git agent-rewind run <workflow.toml>`")
        })?;
    let path = file_location(store, &rel).unwrap_or_else(|| PathBuf::from(&rel));
    if !path.is_file() {
        return Err(Error::not_found(format!(
            "the workflow file of run {run} ({rel}) is missing and no copy is stored with the run"
        ))
        .with_hint("give it with `git agent-rewind resume --workflow FILE`"));
    }
    Ok(path)
}
