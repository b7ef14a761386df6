//! Putting a checkpoint's files into a worktree without ever losing a byte.
//!
//! Before anything is overwritten, the current state (worktree, index, HEAD) is captured as
//! a backup commit on `refs/agent-rewind/backups` (a chain shared by all worktrees, each entry
//! naming its worktree), so `undo` can bring it back. Then only the paths that differ are
//! written, each atomically. Untracked files the backup could not hold (too big) and ignored
//! files are never touched: if the target needs their path, the operation is refused.
//!
//! This module decides *what* to write; `store` does the writing. It never prints.

use crate::error::IoResultExt;
use crate::error::{Error, Result};
use crate::model::Excluded;
use crate::snapshot::{Policy, snapshot_worktree};
use crate::store::ObjectId;
use crate::store::{PublishError, RefChange, Store, TreeChange, UserHead, WrittenFile, layout};
use serde::Serialize;

/// A safety snapshot taken before a worktree was overwritten.
#[derive(Debug, Clone, Serialize)]
pub struct Backup {
    /// The backup commit (its tree is the worktree as it was).
    pub commit: String,
    pub worktree_tree: String,
    pub index_tree: String,
    /// The user's HEAD commit then (None on an unborn branch).
    pub head: Option<String>,
    /// The branch HEAD was attached to then (None when detached).
    pub branch: Option<String>,
    /// Which worktree (its git dir).
    pub worktree: String,
    pub reason: String,
    /// Untracked files too big for the backup: left in place, never touched.
    pub left_in_place: Vec<Excluded>,
    #[serde(flatten)]
    pub runs: RunFacts,
}

/// What a backup records about runs, so `undo` also puts back which run was active and
/// reverses the archiving the operation did (trailers `Backup-Active-Run`,
/// `Backup-Archives`, `Backup-Unarchives`, `Backup-New-Run`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunFacts {
    /// Whether the backup recorded the active run at all (backups written before this was
    /// recorded did not: `undo` then leaves the active run alone).
    #[serde(skip)]
    pub recorded: bool,
    /// The active run of the worktree then (None: no active run).
    pub active_run: Option<String>,
    /// Runs the operation archived (a rewind's source).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub archives: Vec<String>,
    /// Runs the operation un-archived (an undo of a rewind).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unarchives: Vec<String>,
    /// The run the operation created (rewind/fork); undoing the operation archives it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_run: Option<String>,
}

impl RunFacts {
    /// Facts recording `active` as the worktree's active run, and no change to runs yet.
    pub fn active(active: Option<&crate::ids::RunId>) -> RunFacts {
        RunFacts {
            recorded: true,
            active_run: active.map(|r| r.to_string()),
            ..Default::default()
        }
    }
}

/// The value of `Backup-Active-Run` when the worktree had no active run (`-` is no run id).
const NO_ACTIVE_RUN: &str = "-";

/// Refuse when the worktree is in a state a checkout would destroy: a merge, rebase,
/// cherry-pick or revert in progress, or conflicted paths.
pub fn ensure_safe_to_overwrite(store: &Store) -> Result<()> {
    store.workdir()?;
    if let Some(op) = store.operation_in_progress() {
        return Err(
            Error::refused(format!("{op} is in progress in this worktree")).with_hint(
                "finish or abort it first (e.g. `git merge --abort`, `git rebase --abort`)",
            ),
        );
    }
    if store.user_index_locked() {
        return Err(Error::refused(
            "the index is locked (index.lock exists): another git process is running in this worktree",
        )
        .with_hint("wait for it to finish; if none is running, remove the lock file"));
    }
    let unmerged = store.unmerged_paths()?;
    if !unmerged.is_empty() {
        return Err(Error::refused(format!(
            "{} path(s) have unresolved conflicts (first: {})",
            unmerged.len(),
            unmerged[0]
        ))
        .with_hint("resolve them and `git add` them, or `git merge --abort`"));
    }
    Ok(())
}

/// The current state of this worktree (worktree tree, index tree, HEAD), written as
/// objects but not yet published: nothing is referenced until [`publish_backup`].
#[derive(Debug, Clone)]
pub struct Capture {
    pub tree: ObjectId,
    pub index_tree: ObjectId,
    pub head: UserHead,
    /// Untracked files too big for the backup (left in place, never touched).
    pub excluded: Vec<Excluded>,
    /// The active run now and what the operation does to runs: filled by the caller (the
    /// active run is the journal's, a layer beside this one), see [`RunFacts::active`].
    pub runs: RunFacts,
}

pub fn capture(store: &Store) -> Result<Capture> {
    let snap = snapshot_worktree(store, &Policy::for_backup(store)?)?;
    Ok(Capture {
        tree: snap.tree,
        index_tree: snap
            .index_tree
            .expect("the backup policy records the index"),
        head: store.user_head()?,
        excluded: snap.excluded,
        runs: RunFacts::default(),
    })
}

/// Capture the worktree, index and HEAD of this worktree onto the backups chain, with the
/// run facts given.
pub fn take_backup(store: &Store, reason: &str, runs: RunFacts) -> Result<Backup> {
    let mut cap = capture(store)?;
    cap.runs = runs;
    publish_backup(store, &cap, reason)
}

/// Put a capture on the backups chain (compare-and-swap, retried).
pub fn publish_backup(store: &Store, cap: &Capture, reason: &str) -> Result<Backup> {
    let head = &cap.head;
    let index_commit = store.write_commit(
        cap.index_tree,
        &head.commit.into_iter().collect::<Vec<_>>(),
        "agent-rewind: index at backup\n",
    )?;
    let worktree = store.git_dir().display().to_string();
    let mut run_trailers = String::new();
    if cap.runs.recorded {
        run_trailers.push_str(&format!(
            "Backup-Active-Run: {}\n",
            cap.runs.active_run.as_deref().unwrap_or(NO_ACTIVE_RUN)
        ));
    }
    for r in &cap.runs.archives {
        run_trailers.push_str(&format!("Backup-Archives: {r}\n"));
    }
    for r in &cap.runs.unarchives {
        run_trailers.push_str(&format!("Backup-Unarchives: {r}\n"));
    }
    if let Some(r) = &cap.runs.new_run {
        run_trailers.push_str(&format!("Backup-New-Run: {r}\n"));
    }
    let message = format!(
        "agent-rewind backup: {}\n\nBackup-Reason: {}\nBackup-Worktree: {}\nBackup-Head: {}\nBackup-Branch: {}\nBackup-Index: {}\n{run_trailers}",
        one_line(reason),
        one_line(reason),
        worktree,
        head.commit
            .map(|c| c.to_string())
            .unwrap_or_else(|| "unborn".into()),
        head.branch.clone().unwrap_or_else(|| "detached".into()),
        index_commit,
    );
    let _lock = store.writer_lock("backups")?;
    for attempt in 0..20 {
        let prev = store.ref_target(layout::BACKUPS_REF)?;
        let mut parents: Vec<ObjectId> = prev.into_iter().collect();
        parents.push(index_commit);
        let commit = store.write_commit(cap.tree, &parents, &message)?;
        crate::crash_point!("backup:objects-written");
        match store.publish(
            &[RefChange::set(layout::BACKUPS_REF, commit, prev)],
            &format!("agent-rewind: backup before {}", one_line(reason)),
        ) {
            Ok(()) => {
                return Ok(Backup {
                    commit: commit.to_string(),
                    worktree_tree: cap.tree.to_string(),
                    index_tree: cap.index_tree.to_string(),
                    head: head.commit.map(|c| c.to_string()),
                    branch: head.branch.clone(),
                    worktree,
                    reason: reason.to_string(),
                    left_in_place: cap.excluded.clone(),
                    runs: cap.runs.clone(),
                });
            }
            Err(PublishError::Conflict(_)) if attempt < 19 => {
                std::thread::sleep(std::time::Duration::from_millis(5 << attempt.min(5)))
            }
            Err(e) => return Err(e.into()),
        }
    }
    unreachable!("the loop returns")
}

/// Everything an overwrite needs, decided before anything is written: the capture of the
/// current state (to publish as the backup) and the changes that reach the target.
pub struct PreparedOverwrite {
    pub capture: Capture,
    pub changes: Vec<TreeChange>,
}

/// Capture this worktree and plan the changes that turn it into `target` (only under
/// `paths` when given). Refuses — with nothing written but unreferenced objects — when the
/// changes would overwrite something the capture does not hold. Secret-looking untracked
/// files that checkpoints leave out are also left in place when the target lacks them.
pub fn prepare_overwrite(
    store: &Store,
    target: ObjectId,
    paths: Option<&[String]>,
) -> Result<PreparedOverwrite> {
    let capture = capture(store)?;
    let mut changes = plan_changes(store, capture.tree, target, paths)?;
    if paths.is_none() {
        let policy = Policy::from_config(store)?;
        let root = store.workdir()?;
        changes.retain(|c| !(c.new.is_none() && policy.is_excluded_file(root, &c.path)));
    }
    ensure_no_unsaved_collisions(store, capture.tree, &changes)?;
    Ok(PreparedOverwrite { capture, changes })
}

fn one_line(s: &str) -> String {
    s.replace('\n', " ")
}

/// A field (`Backup-Worktree: …`) of a backup commit's message.
fn backup_field(message: &str, key: &str) -> Option<String> {
    message
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}: ")).map(str::to_string))
}

/// Every value of a repeated field of a backup commit's message.
fn backup_fields(message: &str, key: &str) -> Vec<String> {
    message
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("{key}: ")).map(str::to_string))
        .collect()
}

/// The run facts a backup recorded (names checked: they came from a commit message).
fn run_facts(message: &str) -> RunFacts {
    let valid = |v: Vec<String>| -> Vec<String> {
        v.into_iter()
            .filter(|r| crate::ids::RunId::new(r.clone()).is_ok())
            .collect()
    };
    let active = backup_field(message, "Backup-Active-Run");
    RunFacts {
        recorded: active.is_some(),
        active_run: active.filter(|r| crate::ids::RunId::new(r.clone()).is_ok()),
        archives: valid(backup_fields(message, "Backup-Archives")),
        unarchives: valid(backup_fields(message, "Backup-Unarchives")),
        new_run: valid(
            backup_field(message, "Backup-New-Run")
                .into_iter()
                .collect(),
        )
        .pop(),
    }
}

/// The backup commits of the chain ending at `tip`, newest first. A backup's parents are the
/// previous backup (absent for the first) and the commit of its index, always last; so the
/// walk stops at a commit with fewer than two parents, and never walks into the user's
/// history behind the first backup's index commit.
fn backup_chain(
    store: &Store,
    tip: ObjectId,
) -> impl Iterator<Item = Result<crate::store::CommitInfo>> + '_ {
    let mut next = Some(tip);
    std::iter::from_fn(move || {
        let id = next.take()?;
        Some(store.read_commit(id).inspect(|c| {
            next = (c.parents.len() >= 2).then(|| c.parents[0]);
        }))
    })
}

/// The backups of this worktree, newest first.
pub fn backups_of_this_worktree(store: &Store, limit: usize) -> Result<Vec<Backup>> {
    let Some(tip) = store.ref_target(layout::BACKUPS_REF)? else {
        return Ok(vec![]);
    };
    let me = store.git_dir().display().to_string();
    let mut out = vec![];
    for c in backup_chain(store, tip) {
        let c = c?;
        let field = |k: &str| backup_field(&c.message, k);
        if field("Backup-Worktree").as_deref() != Some(me.as_str()) {
            continue;
        }
        let Some(index_commit) =
            field("Backup-Index").and_then(|h| ObjectId::from_hex(h.as_bytes()).ok())
        else {
            continue;
        };
        out.push(Backup {
            commit: c.id.to_string(),
            worktree_tree: c.tree.to_string(),
            index_tree: store.commit_tree(index_commit)?.to_string(),
            head: field("Backup-Head").filter(|h| h != "unborn"),
            branch: field("Backup-Branch").filter(|b| b != "detached"),
            worktree: me.clone(),
            reason: field("Backup-Reason").unwrap_or_default(),
            left_in_place: vec![],
            runs: run_facts(&c.message),
        });
        if out.len() >= limit {
            break;
        }
    }
    Ok(out)
}

/// What trimming the backups chain did (with `dry_run`: would do).
#[derive(Debug, Clone, Default, Serialize)]
pub struct BackupTrim {
    pub before: usize,
    pub dropped: usize,
    pub after: usize,
}

/// Drop the backups taken at or before `cutoff` (seconds since the epoch), except the newest
/// of each worktree (what its `undo` brings back). The kept backups are written again as a
/// new chain (same trees, index commits, messages and times), the ref moves by
/// compare-and-swap, and the reflog entries of the old chain are expired so that `git gc` can
/// free its objects. Nothing changes with `dry_run` or when no backup is to go.
pub fn trim_backups(store: &Store, cutoff: i64, dry_run: bool) -> Result<BackupTrim> {
    let _lock = store.writer_lock("backups")?;
    let Some(tip) = store.ref_target(layout::BACKUPS_REF)? else {
        return Ok(BackupTrim::default());
    };
    let chain = backup_chain(store, tip).collect::<Result<Vec<_>>>()?;
    let mut worktrees_seen = std::collections::HashSet::new();
    let keep: Vec<bool> = chain
        .iter()
        .map(|c| {
            let newest_of_its_worktree =
                worktrees_seen.insert(backup_field(&c.message, "Backup-Worktree"));
            newest_of_its_worktree || c.time > cutoff
        })
        .collect();
    let dropped = keep.iter().filter(|k| !**k).count();
    let trim = BackupTrim {
        before: chain.len(),
        dropped,
        after: chain.len() - dropped,
    };
    if dry_run || dropped == 0 {
        return Ok(trim);
    }
    let mut new_tip = None;
    for (c, _) in chain.iter().zip(&keep).rev().filter(|(_, k)| **k) {
        let mut parents: Vec<ObjectId> = new_tip.into_iter().collect();
        parents.extend(c.parents.last());
        new_tip = Some(store.write_commit_at(c.tree, &parents, &c.message, Some(c.time))?);
    }
    let new_tip = new_tip.expect("the newest backup is always kept");
    store
        .publish(
            &[RefChange::set(layout::BACKUPS_REF, new_tip, Some(tip))],
            &format!("agent-rewind: gc dropped {dropped} old backup(s)"),
        )
        .map_err(Error::from)?;
    crate::crash_point!("gc:backups-trimmed");
    store.expire_unreachable_reflog(layout::BACKUPS_REF)?;
    Ok(trim)
}

/// The changes that turn the worktree captured in `from` (a backup tree) into `to`,
/// optionally only under the given paths (files or folders).
pub fn plan_changes(
    store: &Store,
    from: ObjectId,
    to: ObjectId,
    paths: Option<&[String]>,
) -> Result<Vec<TreeChange>> {
    let mut changes = store.diff_trees(from, to)?;
    if let Some(paths) = paths {
        let norm: Vec<String> = paths
            .iter()
            .map(|p| p.trim_start_matches("./").trim_end_matches('/').to_string())
            .collect();
        changes.retain(|c| {
            norm.iter().any(|p| {
                p.is_empty() || p == "." || c.path == *p || c.path.starts_with(&format!("{p}/"))
            })
        });
    }
    store.check_checkout_paths(&changes)?;
    Ok(changes)
}

/// Refuse when writing `changes` would overwrite something `from` (the capture that becomes
/// the backup) does not hold: a file at a path the target adds, a folder there holding such
/// files, or a file where the target needs a folder. Ignored files and untracked files too
/// big for the backup are never overwritten.
pub fn ensure_no_unsaved_collisions(
    store: &Store,
    from: ObjectId,
    changes: &[TreeChange],
) -> Result<()> {
    let root = store.workdir()?;
    let refuse = |path: &str| {
        Err(Error::refused(format!(
            "{path} is in the worktree but not in the backup (ignored or too big), and the target needs that path"
        ))
        .with_hint("move it out of the way, then run the command again"))
    };
    for c in changes.iter().filter(|c| c.old.is_none()) {
        // A file where the target needs a folder.
        let mut prefix = String::new();
        for comp in c
            .path
            .split('/')
            .collect::<Vec<_>>()
            .split_last()
            .map(|(_, dirs)| dirs)
            .unwrap_or(&[])
        {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(comp);
            match std::fs::symlink_metadata(root.join(&prefix)) {
                Ok(md) if !md.is_dir() && store.path_in_tree(from, &prefix)?.is_none() => {
                    return refuse(&prefix);
                }
                _ => {}
            }
        }
        // The path itself.
        match std::fs::symlink_metadata(root.join(&c.path)) {
            Err(_) => {}
            Ok(md) if md.is_dir() => {
                if let Some(unsaved) = first_unsaved_under(store, root, from, &c.path)? {
                    return refuse(&unsaved);
                }
            }
            Ok(_) => {
                if store.path_in_tree(from, &c.path)?.is_none() {
                    return refuse(&c.path);
                }
            }
        }
    }
    Ok(())
}

/// The first file under folder `rel` (on disk) that `tree` does not hold.
fn first_unsaved_under(
    store: &Store,
    root: &std::path::Path,
    tree: ObjectId,
    rel: &str,
) -> Result<Option<String>> {
    let mut stack = vec![rel.to_string()];
    while let Some(dir) = stack.pop() {
        let full = root.join(&dir);
        for entry in std::fs::read_dir(&full).at(&full)? {
            let entry = entry.at(&full)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = format!("{dir}/{name}");
            if entry.file_type().at(entry.path())?.is_dir() {
                stack.push(path);
            } else if store.path_in_tree(tree, &path)?.is_none() {
                return Ok(Some(path));
            }
        }
    }
    Ok(None)
}

/// Write the planned changes into this worktree; returns the files written.
pub fn write_changes(store: &Store, changes: &[TreeChange]) -> Result<Vec<WrittenFile>> {
    store.apply_changes(store.workdir()?, changes)
}

/// Put HEAD, index and worktree of this worktree back to what `backup` captured, writing
/// the changes planned by [`prepare_overwrite`]. The current state (`prepared.capture`) must
/// already be backed up by the caller.
pub fn restore_backup(store: &Store, prepared: &PreparedOverwrite, backup: &Backup) -> Result<()> {
    let written = write_changes(store, &prepared.changes)?;
    let head = backup.head.as_deref().map(oid).transpose()?;
    crate::crash_point!("undo:files-written");
    match (&backup.branch, head) {
        // The branch may have moved since; leave it where it is and only re-attach HEAD.
        (Some(b), _) => store.attach_user_head(b, "agent-rewind: undo")?,
        (None, Some(h)) => store.move_user_head(None, Some(h))?,
        (None, None) => {}
    }
    crate::crash_point!("undo:head-moved");
    store.set_user_index(
        Some(oid(&backup.index_tree)?),
        Some(prepared.capture.index_tree),
        &written,
    )?;
    Ok(())
}

fn oid(hex: &str) -> Result<ObjectId> {
    ObjectId::from_hex(hex.as_bytes())
        .map_err(|_| Error::corrupt(format!("invalid object id {hex:?} in a backup")))
}
