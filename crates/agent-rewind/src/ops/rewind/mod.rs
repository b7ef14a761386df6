//! `rewind` and `fork` (docs/COMMANDS.md): a new run whose root
//! checkpoint has the chosen checkpoint as first parent, carries `rewound_from`/`forked_from`,
//! and inherits the step refs of the steps completed before that point. Rewind archives the
//! source run; fork leaves it active. The state is then checked out into this worktree (after
//! a backup), into a new linked worktree, or not at all (`--no-checkout`).
//!
//! Every refusal happens before anything is written.

use crate::catalog::{Catalog, Checkpoint};
use crate::journal::set_active_run;
use crate::journal::{Origin, Record, TreeSource, append};
use crate::materialize::{self, Backup};
use crate::model::{Event, LineageLink};
use crate::store::ObjectId;
use crate::store::{Store, UserHead, layout};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::{RunId, StepName};
use serde::Serialize;
use std::path::PathBuf;

mod leftover;
mod point;
mod worktree_path;
use point::{Point, git_commit_of, inherited_steps, locate, session_at};

/// Where to go back to.
#[derive(Debug, Clone)]
pub enum RewindTarget {
    /// A step name, or a checkpoint address (`<run>@<seq>`, a commit id…), decided by what
    /// the run has.
    Named(String),
}

#[derive(Debug, Clone)]
pub struct RewindOptions {
    pub to: RewindTarget,
    /// The state when the step last finished, instead of right before it began.
    pub after: bool,
    pub worktree: Option<PathBuf>,
    pub no_checkout: bool,
    pub new_run: Option<RunId>,
    pub branch: Option<String>,
    /// Fork (source stays active) instead of rewind (source archived).
    pub fork: bool,
    pub label: Option<String>,
    /// Decide everything and say what would happen (files, what stays in place, where the
    /// conversation resumes), writing no ref, note or file.
    pub dry_run: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct RewindOutcome {
    /// The new run. None only for a dry run without `--run`: the id is generated when the
    /// run is made, so a preview cannot name the one the rewind will use.
    pub run: Option<String>,
    pub source_run: String,
    pub relation: &'static str,
    /// The checkpoint the new run starts from, and its step.
    pub from_checkpoint: String,
    pub from_step: Option<String>,
    /// The new run's root checkpoint.
    pub checkpoint: String,
    pub inherited_steps: Vec<String>,
    /// The agent session recorded at the chosen point, to resume the conversation there.
    pub sdk_session_id: Option<String>,
    /// The agent that recorded that session, and the command that resumes it there.
    pub agent: Option<String>,
    /// The command that continues the conversation as of the point: a fork of it at the
    /// recorded turn where the agent offers one ([`crate::agent::Agent::continue_command`]).
    pub resume_command: Option<String>,
    /// `resume_command` as a program and its arguments (what `--agent-resume` runs).
    #[serde(skip)]
    pub resume_argv: Vec<String>,
    /// What `resume_command` does: the pointer it forks at (none: at the conversation's
    /// end), and in words.
    pub conversation_at: Option<String>,
    pub conversation: Option<String>,
    pub git_commit_sha: Option<String>,
    pub branch: Option<String>,
    pub worktree: Option<String>,
    pub backup: Option<Backup>,
    pub source_archived: bool,
    /// What the checkout changed in this worktree (in place only); for a dry run, what it
    /// would change.
    pub files: Vec<materialize::PathChange>,
    /// A dry run: nothing was written, `run` and `branch` are what would be created (each
    /// None when it would be derived from a run id not generated yet).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
    /// For a dry run: the files the checkout would leave as they are, and why (a real run
    /// lists them in `backup.left_in_place`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_in_place: Vec<crate::model::Excluded>,
}

pub fn rewind(store: &Store, source: &RunId, mut opts: RewindOptions) -> Result<RewindOutcome> {
    // A relative --worktree is relative to where we were started, not to where git runs;
    // it is shown and recorded as git records it, without `..`.
    if let Some(p) = &opts.worktree {
        opts.worktree = Some(worktree_path::resolved(p)?);
    }
    let mut catalog = Catalog::new(store);
    let (tip, chain, point) = locate(store, &mut catalog, source, &opts)?;
    agent_rewind_core::trace::mark("rewind: point chosen");
    // What the note says is checked against the objects before anything is decided from
    // it: the commit to check out must be one the checkpoint holds, and hold only paths git
    // would check out.
    crate::verify::require_checkpoint(store, &point.checkpoint.commit, point.checkpoint.line())?;
    let git_commit = git_commit_of(store, &point)?;
    crate::verify::checkout_commit(store, git_commit)?;
    let plan = check(store, &opts, &point, git_commit)?;
    agent_rewind_core::trace::mark("rewind: checks passed");
    // What the lineage holds at the point: the steps, the agent's session and where its
    // conversation continues.
    let at = chain
        .iter()
        .position(|c| c.id() == point.checkpoint.id())
        .expect("the point is in the chain");
    let before_point = &chain[at..];
    let (session, agent, conversation_at) = session_at(before_point);
    let continuation = match (&agent, &session) {
        (Some(a), Some(s)) => crate::agent::Agent::from_name(a)
            .map(|a| a.continue_command(s, conversation_at.as_deref())),
        _ => None,
    };
    let inherited = inherited_at(&point, before_point, &opts);
    let outcome = |root: String, plan: &Plan| RewindOutcome {
        run: Some(plan.new_run.to_string()),
        source_run: source.to_string(),
        relation: if opts.fork { "forked" } else { "rewound" },
        from_checkpoint: point.checkpoint.id().to_string(),
        from_step: point.step.clone(),
        checkpoint: root,
        inherited_steps: inherited.iter().map(|(s, _)| s.to_string()).collect(),
        resume_command: continuation.as_ref().map(|c| c.command.clone()),
        resume_argv: continuation
            .as_ref()
            .map(|c| c.argv.clone())
            .unwrap_or_default(),
        conversation_at: continuation.as_ref().and_then(|c| c.forks_at.clone()),
        conversation: continuation.as_ref().map(|c| c.note.clone()),
        sdk_session_id: session.clone(),
        agent: agent.clone(),
        git_commit_sha: point.checkpoint.line().git_commit_sha.clone(),
        branch: plan.branch.clone(),
        worktree: None,
        backup: None,
        source_archived: false,
        files: vec![],
        dry_run: false,
        left_in_place: vec![],
    };
    if opts.dry_run {
        return preview(store, &opts, &plan, outcome(String::new(), &plan));
    }

    // In place: decide every change, and refuse if one would touch what the backup cannot
    // hold, before anything is published; then publish the backup.
    let (backup, prepared) = if plan.in_place {
        let (b, p) = back_up(store, source, &plan.new_run, &opts, plan.target_tree)?;
        (Some(b), Some(p))
    } else {
        (None, None)
    };
    // A linked worktree is made before the new run is published, so a path git cannot use
    // leaves nothing behind; if publishing fails after it, the worktree and its branch go.
    let linked = match &opts.worktree {
        Some(path) => {
            if let Some(b) = &plan.leftover {
                store.worktree().remove_linked_worktree(path, Some(b))?;
            }
            let linked = make_linked(store, path, &plan, git_commit)?;
            agent_rewind_core::crash_point!("fork:worktree-made");
            Some(linked)
        }
        None => None,
    };

    // The new run.
    let label = match &opts.label {
        Some(l) => Some(l.clone()),
        None => catalog.root_of(&tip)?.note.label().map(str::to_string),
    };
    let at_point = AtPoint {
        inherited: inherited.clone(),
        session: session.clone(),
        agent: agent.clone(),
        conversation_at: conversation_at.clone(),
        workflow: before_point.iter().find_map(|c| c.note.workflow()).cloned(),
        label,
    };
    let record = root_record(&point, at_point, &opts, &plan, git_commit);
    let root = match append(store, record) {
        Ok(r) => r,
        Err(e) => return Err(withdraw(store, &opts, &plan, backup.as_ref(), e)),
    };
    agent_rewind_core::trace::mark("rewind: new run recorded");
    agent_rewind_core::crash_point!("rewind:recorded");

    let mut source_archived = false;
    if !opts.fork {
        crate::journal::runstatus::archive(
            store,
            source,
            &format!("rewound into {}", plan.new_run),
        )?;
        source_archived = true;
    }

    let mut worktree_shown = None;
    if let Some(prepared) = &prepared {
        check_out_in_place(store, prepared, &plan, git_commit)?;
        worktree_shown = Some(store.worktree().root()?.display().to_string());
    } else if let (Some(path), Some(linked)) = (&opts.worktree, &linked) {
        set_active_run(linked, &plan.new_run)?;
        worktree_shown = Some(path.display().to_string());
    } else if let (Some(b), Some(c)) = (&plan.branch, git_commit) {
        store.refs().create_branch(b, c)?;
    }

    Ok(RewindOutcome {
        worktree: worktree_shown,
        backup,
        source_archived,
        files: prepared
            .as_ref()
            .map(|p| materialize::path_changes(&p.changes))
            .unwrap_or_default(),
        ..outcome(root.checkpoint.to_string(), &plan)
    })
}

/// What a `--dry-run` reports: the rewind planned as the real one plans it, naming no run id
/// the real rewind would not use; only unreferenced objects are written.
fn preview(
    store: &Store,
    opts: &RewindOptions,
    plan: &Plan,
    mut out: RewindOutcome,
) -> Result<RewindOutcome> {
    out.dry_run = true;
    if opts.new_run.is_none() {
        // The id planned here is not the one a real rewind would generate: name none, nor
        // the branch named after it.
        out.run = None;
        if opts.branch.is_none() {
            out.branch = None;
        }
    }
    out.source_archived = !opts.fork;
    out.worktree = opts.worktree.as_ref().map(|p| p.display().to_string());
    if plan.in_place {
        let prepared = materialize::prepare_overwrite(store, plan.target_tree, None, None)?;
        out.files = materialize::path_changes(&prepared.changes);
        out.left_in_place = prepared.capture.excluded;
    }
    Ok(out)
}

/// What every check before the first write decided.
struct Plan {
    new_run: RunId,
    in_place: bool,
    branch: Option<String>,
    target_tree: ObjectId,
    /// For a linked worktree: what to write over the commit git checks out there.
    linked_changes: Vec<crate::store::TreeChange>,
    /// The branch of what a killed fork left at `--worktree`, taken back before the new one
    /// is made ([`leftover`]).
    leftover: Option<String>,
}

/// Every check before the first write: the new run's id, the branch, the worktree folder,
/// the state of this worktree, the paths a linked worktree will get.
fn check(
    store: &Store,
    opts: &RewindOptions,
    point: &Point,
    git_commit: Option<ObjectId>,
) -> Result<Plan> {
    let new_run = opts.new_run.clone().unwrap_or_else(RunId::generate);
    if store.refs().run_head(&new_run)?.is_some() {
        return Err(Error::refused(format!("run {new_run} already exists"))
            .with_hint("choose another --run id"));
    }
    let in_place = opts.worktree.is_none() && !opts.no_checkout;
    let branch = match (&opts.branch, opts.no_checkout) {
        (Some(b), _) => Some(b.clone()),
        (None, false) => Some(layout::default_branch(&new_run)),
        (None, true) => None,
    };
    let target_tree = point.checkpoint.commit.tree;
    let base_tree = match git_commit {
        Some(c) => store.objects().commit_tree(c)?,
        None => store.objects().empty_tree(),
    };
    // A folder a killed fork left at --worktree is taken back (below, after every check).
    let mut leftover = None;
    if let Some(path) = &opts.worktree
        && path.exists()
        && std::fs::read_dir(path)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        leftover = leftover::leftover_fork(store, path, git_commit, base_tree, target_tree)?;
        if leftover.is_none() {
            return Err(
                Error::refused(format!("{} exists and is not empty", path.display()))
                    .with_hint("give a new or empty folder to --worktree"),
            );
        }
    }
    if let Some(b) = &branch {
        store.refs().check_branch_name(b)?;
        if store.refs().branch_exists(b)? && leftover.as_ref() != Some(b) {
            return Err(Error::refused(format!("branch {b} already exists"))
                .with_hint("choose another --branch"));
        }
    }
    if in_place {
        materialize::ensure_safe_to_overwrite(store)?;
        // HEAD and the branch move after the files are written: their locks are checked
        // before the first file changes (the index lock is, above).
        store.refs().ensure_unlocked("HEAD")?;
    }
    if let (Some(b), None) = (&branch, &opts.worktree) {
        store.refs().ensure_unlocked(&layout::branch_ref(b))?;
    }
    // A linked worktree gets the commit checked out by git, then the rest by us.
    let linked_changes = match &opts.worktree {
        Some(_) => {
            let changes = store.objects().diff_trees(base_tree, target_tree)?;
            store.worktree().check_checkout_paths(&changes)?;
            changes
        }
        None => vec![],
    };
    Ok(Plan {
        new_run,
        in_place,
        branch,
        target_tree,
        linked_changes,
        leftover,
    })
}

/// Plan the checkout in place and publish the backup `undo` reverses it with: the files,
/// the active run, the archiving and the new run.
fn back_up(
    store: &Store,
    source: &RunId,
    new_run: &RunId,
    opts: &RewindOptions,
    target_tree: ObjectId,
) -> Result<(Backup, materialize::PreparedOverwrite)> {
    let mut prepared = materialize::prepare_overwrite(store, target_tree, None, None)?;
    prepared.capture.runs =
        materialize::RunFacts::active(crate::journal::worktree_active_run(store)?.as_ref());
    if !opts.fork {
        prepared.capture.runs.archives.push(source.to_string());
    }
    prepared.capture.runs.new_run = Some(new_run.to_string());
    let reason = format!(
        "{} {source} into {new_run}",
        if opts.fork { "fork" } else { "rewind" }
    );
    agent_rewind_core::trace::mark("rewind: current state captured, changes planned");
    let backup = materialize::publish_backup(store, &prepared.capture, &reason)?;
    agent_rewind_core::trace::mark("rewind: backup published");
    agent_rewind_core::crash_point!("rewind:backed-up");
    Ok((backup, prepared))
}

/// The linked worktree at `path`: git checks the commit out, we write the rest; on failure
/// it and its branch are removed again.
fn make_linked(
    store: &Store,
    path: &std::path::Path,
    plan: &Plan,
    git_commit: Option<ObjectId>,
) -> Result<Store> {
    store
        .worktree()
        .add_linked_worktree(path, plan.branch.as_deref(), git_commit)?;
    let made = (|| {
        let linked = Store::open_linked_worktree(path)?;
        linked.worktree().apply_changes(
            linked.worktree().root()?,
            &plan.linked_changes,
            &Default::default(),
        )?;
        Ok(linked)
    })();
    made.map_err(|e| take_back(store, path, plan.branch.as_deref(), e))
}

/// The new run could not be recorded: nothing was written yet, so the backup published for
/// it and the linked worktree made for it go back too.
fn withdraw(
    store: &Store,
    opts: &RewindOptions,
    plan: &Plan,
    backup: Option<&Backup>,
    e: Error,
) -> Error {
    let e = match backup {
        Some(b) => match materialize::withdraw_backup(store, b) {
            Ok(_) => e,
            Err(w) => e.context(format!(
                "(the backup {} taken for it stays: {})",
                b.commit, w.message
            )),
        },
        None => e,
    };
    match &opts.worktree {
        Some(path) => take_back(store, path, plan.branch.as_deref(), e),
        None => e,
    }
}

/// The steps the new run inherits: those done before the point (newest first, a suffix of
/// the chain), but the step being re-entered, even if an earlier attempt completed.
fn inherited_at(
    point: &Point,
    before_point: &[Checkpoint],
    opts: &RewindOptions,
) -> Vec<(StepName, ObjectId)> {
    let reentered = point.step.clone().filter(|_| !opts.after);
    inherited_steps(before_point)
        .into_iter()
        .filter(|(s, _)| Some(s.as_str()) != reentered.as_deref())
        .collect()
}

/// What the lineage holds at the chosen point, carried into the new run's root.
struct AtPoint {
    inherited: Vec<(StepName, ObjectId)>,
    /// The agent session recorded there, and the agent that recorded it.
    session: Option<String>,
    agent: Option<String>,
    /// The agent's pointer to that point of the conversation (`meta.conversation_at`).
    conversation_at: Option<String>,
    /// The workflow stored in the lineage: it travels with the new run (which may be
    /// pushed alone).
    workflow: Option<crate::model::StoredWorkflow>,
    /// The source's label, unless the new run is given one.
    label: Option<String>,
}

/// The root checkpoint of the new run: its tree, its lineage link and what it carries from
/// the point, and the user's HEAD.
fn root_record(
    point: &Point,
    at: AtPoint,
    opts: &RewindOptions,
    plan: &Plan,
    git_commit: Option<ObjectId>,
) -> Record {
    let line = point.checkpoint.line();
    let mut rec = Record::new(plan.new_run.clone(), Event::Root);
    rec.tree = TreeSource::Given {
        tree: plan.target_tree,
        excluded: line.excluded.clone(),
    };
    rec.origin = Some(Origin {
        link: LineageLink {
            run: line.run.clone(),
            step: point.step.clone(),
            checkpoint: point.checkpoint.id().to_string(),
        },
        rewound: !opts.fork,
        checkpoint: point.checkpoint.id(),
        inherited_steps: at.inherited,
    });
    rec.new_run = true;
    rec.facts.session_id = at.session;
    if let Some(w) = at.workflow {
        rec.facts
            .extra_lines
            .push(crate::model::NoteLine::Workflow(Box::new(w)));
    }
    rec.facts.agent = at.agent;
    if let Some(c) = at.conversation_at {
        rec.facts.meta.insert("conversation_at".into(), c);
    }
    rec.label = at.label;
    rec.facts.user_head = Some(UserHead {
        commit: git_commit,
        branch: plan.branch.as_ref().map(|b| layout::branch_ref(b)),
    });
    rec.facts.next_action = Some(match &point.step {
        Some(s) if !opts.after => format!("re-enter step {s} (`git agent-rewind resume`)"),
        _ => "continue the run from here".into(),
    });
    rec
}

/// Write the planned changes into this worktree, then HEAD, the index and the active run,
/// each step a crash point.
fn check_out_in_place(
    store: &Store,
    prepared: &materialize::PreparedOverwrite,
    plan: &Plan,
    git_commit: Option<ObjectId>,
) -> Result<()> {
    agent_rewind_core::trace::mark("rewind: source archived");
    agent_rewind_core::crash_point!("rewind:source-archived");
    let written = materialize::write_changes(store, &prepared.changes, &prepared.backed_up)?;
    agent_rewind_core::trace::mark("rewind: files written");
    agent_rewind_core::crash_point!("rewind:files-written");
    let after_files = || -> Result<()> {
        store
            .worktree()
            .move_user_head(plan.branch.as_deref(), git_commit)?;
        agent_rewind_core::trace::mark("rewind: HEAD moved");
        agent_rewind_core::crash_point!("rewind:head-moved");
        let head_tree = match git_commit {
            Some(c) => Some(store.objects().commit_tree(c)?),
            None => None,
        };
        store
            .index()
            .set_user_index(head_tree, Some(prepared.capture.index_tree), &written)?;
        agent_rewind_core::trace::mark("rewind: index reset");
        agent_rewind_core::crash_point!("rewind:index-written");
        set_active_run(store, &plan.new_run)?;
        agent_rewind_core::trace::mark("rewind: done");
        Ok(())
    };
    after_files().map_err(|e| materialize::files_were_changed(e, &prepared.changes))
}

/// Remove the linked worktree made for a fork/rewind that then failed; `e` is the failure.
fn take_back(store: &Store, path: &std::path::Path, branch: Option<&str>, e: Error) -> Error {
    match store.worktree().remove_linked_worktree(path, branch) {
        Ok(()) => e,
        Err(r) => e.context(format!(
            "(the new worktree {} could not be removed: {})",
            path.display(),
            r.message
        )),
    }
}
