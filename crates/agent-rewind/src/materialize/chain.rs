//! The backups chain (`refs/agent-rewind/backups`, docs/FORMAT.md "Backups"): publishing a
//! capture as a backup commit with its index commit and details (touched paths, the index
//! file), reading this worktree's backups back, and trimming old ones. Backups name their
//! worktree by a relative id, so moving the repository keeps them. Never writes the
//! worktree, the index or HEAD.

use super::Capture;
use crate::model::Excluded;
use crate::store::{
    BString, EntryKind, IndexFile, ObjectId, PublishError, RefChange, Store, layout,
};
use agent_rewind_core::error::{Error, Result};
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
    /// Which worktree: `main`, or `worktrees/<name>` for a linked one (its git dir relative
    /// to the common one: moving the repository keeps it).
    pub worktree: String,
    pub reason: String,
    /// Files the operation left as they were although the target lacks them or they are not
    /// in the backup: secret-looking files snapshots leave out, untracked files too big.
    pub left_in_place: Vec<Excluded>,
    /// When it was taken (read back from the chain; not set on a backup just published).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub taken_at: Option<agent_rewind_core::time::Timestamp>,
    #[serde(flatten)]
    pub runs: RunFacts,
    #[serde(skip)]
    pub details: BackupDetails,
}

/// What a backup records about runs, so `undo` also puts back which run was active and
/// reverses the archiving the operation did (trailers `Backup-Active-Run`,
/// `Backup-Archives`, `Backup-Unarchives`, `Backup-New-Run`), and whether a run's revert is
/// taken back or brought back (`Backup-Reverts`, `Backup-Unreverts`).
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
    /// The run the operation reverted: undoing it takes the revert back (`list` stops
    /// calling the run reverted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reverts: Option<String>,
    /// The run whose revert the operation (an undo) took back: undoing it makes the run
    /// reverted again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreverts: Option<String>,
}

impl RunFacts {
    /// Facts recording `active` as the worktree's active run, and no change to runs yet.
    pub fn active(active: Option<&agent_rewind_core::ids::RunId>) -> RunFacts {
        RunFacts {
            recorded: true,
            active_run: active.map(|r| r.to_string()),
            ..Default::default()
        }
    }
}

/// The value of `Backup-Active-Run` when the worktree had no active run (`-` is no run id).
const NO_ACTIVE_RUN: &str = "-";

/// What a backup keeps beyond its trees (docs/FORMAT.md, "Backups").
#[derive(Debug, Clone, Default)]
pub struct BackupDetails {
    /// Every path the operation wrote or deleted; the backup tree holds each of them (when
    /// it existed) as its bytes were on disk.
    pub touched: Vec<BString>,
    /// The index file, when it held entries a tree cannot (intent-to-add, skip-worktree,
    /// assume-unchanged).
    pub index_file: Option<IndexFile>,
    /// The permission bits of each touched path that was a regular file, which a tree
    /// cannot hold (it knows 644 and 755 only): undo gives each file exactly its bits.
    pub modes: std::collections::BTreeMap<BString, u32>,
}

/// This worktree's name in backups: `main`, or `worktrees/<name>` for a linked worktree.
pub fn worktree_id(store: &Store) -> String {
    let git_dir = store.worktree().git_dir();
    if git_dir == store.worktree().common_dir() {
        return "main".into();
    }
    match git_dir.file_name() {
        Some(name) => format!("worktrees/{}", name.to_string_lossy()),
        None => git_dir.display().to_string(),
    }
}

/// A `Backup-Worktree` value as a worktree id: backups written before ids were relative
/// name the absolute git dir (`…/.git` or `…/.git/worktrees/<name>`).
fn normalize_worktree_field(value: &str) -> String {
    if !value.starts_with('/') {
        return value.to_string();
    }
    let path = std::path::Path::new(value);
    match (path.parent().and_then(|p| p.file_name()), path.file_name()) {
        (Some(parent), Some(name)) if parent == "worktrees" => {
            format!("worktrees/{}", name.to_string_lossy())
        }
        _ => "main".into(),
    }
}

/// Put a capture on the backups chain (compare-and-swap, retried).
pub fn publish_backup(store: &Store, cap: &Capture, reason: &str) -> Result<Backup> {
    let head = &cap.head;
    let details = write_details(store, &cap.details)?;
    let mut index_parents: Vec<ObjectId> = head.commit.into_iter().collect();
    index_parents.extend(details);
    let index_commit = store.objects().write_commit(
        cap.index_tree,
        &index_parents,
        "agent-rewind: index at backup\n",
    )?;
    let worktree = worktree_id(store);
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
    if let Some(r) = &cap.runs.reverts {
        run_trailers.push_str(&format!("Backup-Reverts: {r}\n"));
    }
    if let Some(r) = &cap.runs.unreverts {
        run_trailers.push_str(&format!("Backup-Unreverts: {r}\n"));
    }
    let mut message = format!(
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
    if let Some(d) = details {
        message.push_str(&format!("Backup-Details: {d}\n"));
    }
    let _lock = store.locks().writer_lock("backups")?;
    for attempt in 0..20 {
        let prev = store.refs().ref_target(layout::BACKUPS_REF)?;
        let mut parents: Vec<ObjectId> = prev.into_iter().collect();
        parents.push(index_commit);
        let commit = store.objects().write_commit(cap.tree, &parents, &message)?;
        agent_rewind_core::crash_point!("backup:objects-written");
        match store.refs().publish(
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
                    taken_at: None,
                    runs: cap.runs.clone(),
                    details: cap.details.clone(),
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

/// Take back the backup [`publish_backup`] just published for an operation that then failed
/// before writing anything, so that `undo` does not pick a backup of an operation that never
/// happened. The backups ref moves back by compare-and-swap; when another backup was
/// published on top meanwhile, this one stays (it is still a true copy of the files) and
/// `false` is returned.
pub fn withdraw_backup(store: &Store, backup: &Backup) -> Result<bool> {
    let commit = ObjectId::from_hex(backup.commit.as_bytes())
        .map_err(|e| Error::corrupt(format!("backup id {}: {e}", backup.commit)))?;
    let _lock = store.locks().writer_lock("backups")?;
    if store.refs().ref_target(layout::BACKUPS_REF)? != Some(commit) {
        return Ok(false);
    }
    // A backup's parents: the previous tip (when there was one), then its index commit.
    let parents = store.objects().read_commit(commit)?.parents;
    let change = match parents.as_slice() {
        [prev, _index] => RefChange::set(layout::BACKUPS_REF, *prev, Some(commit)),
        _ => RefChange::delete(layout::BACKUPS_REF, commit),
    };
    match store.refs().publish(
        &[change],
        &format!(
            "agent-rewind: withdraw backup ({})",
            one_line(&backup.reason)
        ),
    ) {
        Ok(()) => Ok(true),
        Err(PublishError::Conflict(_)) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The details commit of a backup: a tree with `touched` (the paths, each ended by a NUL),
/// `modes` (`<octal bits> <path>`, each ended by a NUL) when a file was among them, and,
/// when kept, `index` (the index file) and `index-mtime` (`<seconds>.<nanoseconds>`).
/// `None` when there is nothing to keep.
fn write_details(store: &Store, d: &BackupDetails) -> Result<Option<ObjectId>> {
    if d.touched.is_empty() && d.index_file.is_none() {
        return Ok(None);
    }
    let mut list = Vec::new();
    for p in &d.touched {
        list.extend_from_slice(p);
        list.push(0);
    }
    let mut entries = vec![(
        BString::from("touched"),
        Some((store.objects().write_blob(&list)?, EntryKind::Blob)),
    )];
    if !d.modes.is_empty() {
        let mut modes = Vec::new();
        for (p, bits) in &d.modes {
            modes.extend_from_slice(format!("{bits:o} ").as_bytes());
            modes.extend_from_slice(p);
            modes.push(0);
        }
        entries.push((
            "modes".into(),
            Some((store.objects().write_blob(&modes)?, EntryKind::Blob)),
        ));
    }
    if let Some(f) = &d.index_file {
        entries.push((
            "index".into(),
            Some((store.objects().write_blob(&f.bytes)?, EntryKind::Blob)),
        ));
        let mtime = format!("{}.{:09}\n", f.mtime.0, f.mtime.1);
        entries.push((
            "index-mtime".into(),
            Some((
                store.objects().write_blob(mtime.as_bytes())?,
                EntryKind::Blob,
            )),
        ));
    }
    let tree = store
        .objects()
        .edit_tree(store.objects().empty_tree(), &entries)?;
    Ok(Some(store.objects().write_commit(
        tree,
        &[],
        "agent-rewind: backup details\n",
    )?))
}

/// Read what [`write_details`] wrote.
fn read_details(store: &Store, commit: ObjectId) -> Result<BackupDetails> {
    let tree = store.objects().commit_tree(commit)?;
    let blob = |name: &str| -> Result<Option<Vec<u8>>> {
        store
            .objects()
            .path_in_tree(tree, name)?
            .map(|id| store.objects().read_blob(id))
            .transpose()
    };
    let touched = blob("touched")?
        .unwrap_or_default()
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(BString::from)
        .collect();
    let mtime = blob("index-mtime")?.and_then(|m| {
        let m = String::from_utf8(m).ok()?;
        let (s, n) = m.trim().split_once('.')?;
        Some((s.parse().ok()?, n.parse().ok()?))
    });
    let index_file = match (blob("index")?, mtime) {
        (Some(bytes), Some(mtime)) => Some(IndexFile { bytes, mtime }),
        _ => None,
    };
    let modes = parse_modes(&blob("modes")?.unwrap_or_default());
    Ok(BackupDetails {
        touched,
        index_file,
        modes,
    })
}

/// The records of a details tree's `modes` (`<octal bits> <path>` NUL …). A record that
/// does not parse is passed over: that file then gets git's mode, as before modes were kept.
fn parse_modes(blob: &[u8]) -> std::collections::BTreeMap<BString, u32> {
    blob.split(|b| *b == 0)
        .filter_map(|record| {
            let space = record.iter().position(|b| *b == b' ')?;
            let bits = std::str::from_utf8(&record[..space]).ok()?;
            let bits = u32::from_str_radix(bits, 8).ok().filter(|b| *b <= 0o777)?;
            let path = &record[space + 1..];
            (!path.is_empty()).then(|| (BString::from(path), bits))
        })
        .collect()
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
            .filter(|r| agent_rewind_core::ids::RunId::new(r.clone()).is_ok())
            .collect()
    };
    let active = backup_field(message, "Backup-Active-Run");
    let one = |key: &str| valid(backup_field(message, key).into_iter().collect()).pop();
    RunFacts {
        recorded: active.is_some(),
        active_run: active.filter(|r| agent_rewind_core::ids::RunId::new(r.clone()).is_ok()),
        archives: valid(backup_fields(message, "Backup-Archives")),
        unarchives: valid(backup_fields(message, "Backup-Unarchives")),
        new_run: one("Backup-New-Run"),
        reverts: one("Backup-Reverts"),
        unreverts: one("Backup-Unreverts"),
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
        Some(store.objects().read_commit(id).inspect(|c| {
            next = (c.parents.len() >= 2).then(|| c.parents[0]);
        }))
    })
}

/// The backups of this worktree, newest first.
pub fn backups_of_this_worktree(store: &Store, limit: usize) -> Result<Vec<Backup>> {
    backups_where(store, limit, |_| true)
}

/// Every backup of this worktree, newest first, without their details (touched paths, the
/// index file: `details` is empty), for listing them.
pub fn list_backups(store: &Store) -> Result<Vec<Backup>> {
    backups_where(store, usize::MAX, |_| false)
}

/// The backup of this worktree whose commit is `commit`, with its details.
pub fn backup_of_this_worktree(store: &Store, commit: &str) -> Result<Option<Backup>> {
    Ok(backups_where(store, usize::MAX, |c| c == commit)?
        .into_iter()
        .find(|b| b.commit == commit))
}

/// The backups of this worktree, newest first, up to `limit`; the details are read for those
/// whose commit id `details` accepts (for the others they stay empty).
fn backups_where(
    store: &Store,
    limit: usize,
    details: impl Fn(&str) -> bool,
) -> Result<Vec<Backup>> {
    let Some(tip) = store.refs().ref_target(layout::BACKUPS_REF)? else {
        return Ok(vec![]);
    };
    let me = worktree_id(store);
    let mut out = vec![];
    for c in backup_chain(store, tip) {
        let c = c?;
        let field = |k: &str| backup_field(&c.message, k);
        if field("Backup-Worktree").map(|w| normalize_worktree_field(&w)) != Some(me.clone()) {
            continue;
        }
        let Some(index_commit) =
            field("Backup-Index").and_then(|h| ObjectId::from_hex(h.as_bytes()).ok())
        else {
            continue;
        };
        let commit = c.id.to_string();
        let details =
            match field("Backup-Details").and_then(|h| ObjectId::from_hex(h.as_bytes()).ok()) {
                Some(d) if details(&commit) => read_details(store, d)?,
                _ => BackupDetails::default(),
            };
        out.push(Backup {
            commit,
            worktree_tree: c.tree.to_string(),
            index_tree: store.objects().commit_tree(index_commit)?.to_string(),
            head: field("Backup-Head").filter(|h| h != "unborn"),
            branch: field("Backup-Branch").filter(|b| b != "detached"),
            worktree: me.clone(),
            reason: field("Backup-Reason").unwrap_or_default(),
            left_in_place: vec![],
            taken_at: Some(
                agent_rewind_core::time::Timestamp::EPOCH.add_millis(c.time.saturating_mul(1000)),
            ),
            runs: run_facts(&c.message),
            details,
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
    let _lock = store.locks().writer_lock("backups")?;
    let Some(tip) = store.refs().ref_target(layout::BACKUPS_REF)? else {
        return Ok(BackupTrim::default());
    };
    let chain = backup_chain(store, tip).collect::<Result<Vec<_>>>()?;
    let mut worktrees_seen = std::collections::HashSet::new();
    let keep: Vec<bool> = chain
        .iter()
        .map(|c| {
            let newest_of_its_worktree = worktrees_seen.insert(
                backup_field(&c.message, "Backup-Worktree").map(|w| normalize_worktree_field(&w)),
            );
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
        new_tip = Some(store.objects().write_commit_at(
            c.tree,
            &parents,
            &c.message,
            Some(c.time),
        )?);
    }
    let new_tip = new_tip.expect("the newest backup is always kept");
    store
        .refs()
        .publish(
            &[RefChange::set(layout::BACKUPS_REF, new_tip, Some(tip))],
            &format!("agent-rewind: gc dropped {dropped} old backup(s)"),
        )
        .map_err(Error::from)?;
    agent_rewind_core::crash_point!("gc:backups-trimmed");
    store
        .refs()
        .expire_unreachable_reflog(layout::BACKUPS_REF)?;
    Ok(trim)
}
