//! A checkpoint's snapshot that starts from the run's last checkpoint, when a filesystem
//! monitor says what changed since.
//!
//! Every monitored snapshot taken for a checkpoint saves where it ended (`cache/monitored`,
//! `store::private`): the monitor's token, the tree, HEAD's tree, a digest of the index's
//! entries and the index's tree when its cache-tree has it (`scan::rawindex`), and what the
//! policy left out. The next checkpoint of the run starts from that tree when the run's last
//! checkpoint has exactly that tree (so it is stored and reachable), the index is plain, and
//! the configuration, the policy and the ignore and attribute files outside the worktree are
//! unchanged. Then only the paths the monitor reported are looked at, as the full pass
//! would, and with them the paths git changed meanwhile: where HEAD's tree differs from the
//! saved one, and, when the index's entries differ, where the index's tree differs (both
//! trees known from the cache-tree: after a commit, not after a bare `git add`). A tracked
//! file is hashed (its index entry kept when content and mode still match it), an untracked
//! one goes through the ignore rules and the policy, a reported folder of that tree is
//! listed for names the monitor did not report, and a new folder is walked. There is no
//! index decode, no stat of anything else and no walk.
//!
//! Every doubt means the full pass (which saves a new state): no state, any of the above
//! different, an index changed without both its trees known, a submodule in what git
//! changed, a reported `.gitignore`, `.gitattributes` or `.git`, a name that is not UTF-8,
//! more than [`MAX_PATHS`] paths, an index entry below a new folder that its walk did not
//! reach, a folder that cannot be read, a kind of file a tree cannot hold. It writes only
//! objects and its own file.
//!
//! One of the scanner's sources (`scan::snapshot::scan`): it answers "the paths since the run's last
//! checkpoint" ([`paths_since`]), and [`SinceLast::snapshot`] builds the tree from there.
//! Fallback: the full pass. Kill switch: `agentRewind.fromLastCheckpoint=false` (and no
//! `core.fsmonitor`).

mod edits;
mod state;

use super::{Policy, Snapshot};
use crate::ScanContext;
use crate::fsmonitor;
use crate::rawindex::{self, Identity, RawIndex};
use agent_rewind_core::error::Result;
use edits::Work;
use gix::ObjectId;
use gix::bstr::ByteSlice;
use state::{Saved, hex_id, state_key};

/// More reported paths than this (a build, a checkout): the full pass.
const MAX_PATHS: usize = 2000;

/// The paths that may have changed since the run's last checkpoint, with what building the
/// snapshot from that checkpoint needs (`scan::snapshot::scan`'s `SinceLastCheckpoint`).
pub(crate) struct SinceLast {
    last: ObjectId,
    saved: Saved,
    raw: RawIndex,
    /// The monitor's token, for the state saved at the end.
    token: String,
    /// What the monitor reported and what git changed meanwhile, sorted, at most
    /// [`MAX_PATHS`].
    paths: Vec<gix::bstr::BString>,
}

/// What asking for the paths since the last checkpoint came to.
pub(crate) enum Asked {
    Since(Box<SinceLast>),
    /// The full pass is needed; the index as read here, when it was.
    Full(Option<RawIndex>),
}

fn full<T>(why: &str, raw: Option<RawIndex>) -> Result<std::result::Result<T, Option<RawIndex>>> {
    agent_rewind_core::trace::mark(&format!("snapshot: not from the last checkpoint ({why})"));
    Ok(Err(raw))
}

/// Whether checkpoints may start from the last one (`agentRewind.fromLastCheckpoint`,
/// default true).
pub(crate) fn enabled(ctx: &ScanContext) -> bool {
    ctx.repo()
        .config_snapshot()
        .boolean("agentRewind.fromLastCheckpoint")
        .unwrap_or(true)
}

/// The paths that may have changed since `last` (the tree of the run's newest checkpoint),
/// when the saved state allows starting from it (see the module comment).
pub(crate) fn paths_since(
    ctx: &ScanContext,
    policy: &Policy,
    last: ObjectId,
    head_tree: ObjectId,
) -> Result<Asked> {
    Ok(match asked(ctx, policy, last, head_tree)? {
        Ok(since) => Asked::Since(Box::new(since)),
        Err(raw) => Asked::Full(raw),
    })
}

fn asked(
    ctx: &ScanContext,
    policy: &Policy,
    last: ObjectId,
    head_tree: ObjectId,
) -> Result<std::result::Result<SinceLast, Option<RawIndex>>> {
    let Some(saved) = state::load(ctx) else {
        return full("no saved state", None);
    };
    if hex_id(&saved.tree) != Some(last) {
        return full("the run's last checkpoint is not where it ended", None);
    }
    let repo = ctx.repo();
    if repo
        .config_snapshot()
        .boolean("core.ignoreCase")
        .unwrap_or(false)
    {
        return full("core.ignoreCase", None);
    }
    if saved.key != state_key(ctx, policy) {
        return full("settings changed", None);
    }
    let Some(pending) = fsmonitor::start_since(ctx, &saved.token) else {
        return full("no monitor", None);
    };
    let raw = rawindex::read(&repo.index_path(), repo.object_hash());
    agent_rewind_core::trace::mark("snapshot: index scanned");
    let monitor = pending.finish();
    let Some(raw) = raw else {
        return full("the index cannot be scanned", None);
    };
    if !raw.plain {
        return full("the index holds entries a tree cannot say", Some(raw));
    }
    let (Some(changes), Some(token)) = (monitor.changes, monitor.next_token) else {
        return full("the monitor gave no list", Some(raw));
    };
    // What git changed meanwhile: the paths whose index entry (a commit's `git add`, a
    // reset) or HEAD entry (a commit) differ are looked at too, as if the monitor had
    // reported them. The old index is known only by its cache-tree's root.
    let mut also = Vec::new();
    let mut index_moved = None;
    if raw.digest != saved.index {
        let old = saved.index_tree.as_deref().and_then(hex_id);
        let (Some(old), Some(new)) = (old, raw.tree) else {
            return full("the index changed", Some(raw));
        };
        if let Err(why) = changed_paths(ctx, old, new, &mut also) {
            return full(why, Some(raw));
        }
        index_moved = Some((old, new));
    }
    let old_head = hex_id(&saved.head_tree);
    if old_head != Some(head_tree) {
        let Some(old) = old_head else {
            return full("HEAD moved", Some(raw));
        };
        // After `git add` and `git commit`, both moved between the same two trees.
        if index_moved != Some((old, head_tree))
            && let Err(why) = changed_paths(ctx, old, head_tree, &mut also)
        {
            return full(why, Some(raw));
        }
    }
    let paths = if also.is_empty() {
        changes.into_paths()
    } else {
        also.extend_from_slice(changes.paths());
        also.sort();
        also.dedup();
        also
    };
    if paths.len() > MAX_PATHS {
        return full("too many paths reported", Some(raw));
    }
    Ok(Ok(SinceLast {
        last,
        saved,
        raw,
        token,
        paths,
    }))
}

impl SinceLast {
    /// The snapshot from the last checkpoint with the paths looked at as the full pass would,
    /// or, on a doubt found while looking, the index as read (for the full pass).
    pub(crate) fn snapshot(
        self,
        ctx: &ScanContext,
        policy: &Policy,
        head_tree: ObjectId,
    ) -> Result<std::result::Result<Snapshot, Option<RawIndex>>> {
        let SinceLast {
            last,
            saved,
            raw,
            token,
            paths,
        } = self;
        let mut work = Work::new(ctx, last, &paths)?;
        if let Err(why) = work.gather() {
            return full(why, Some(raw));
        }
        agent_rewind_core::trace::mark("snapshot: reported paths gathered");
        let edited = match work.edit(policy, head_tree, &raw, saved.excluded)? {
            Ok(edited) => edited,
            Err(why) => return full(why, Some(raw)),
        };
        agent_rewind_core::trace::mark(&format!(
            "snapshot: from the last checkpoint ({} paths reported, {} looked at, {} folders read)",
            paths.len(),
            work.files.len(),
            work.dirs_read
        ));
        state::save(
            ctx,
            &Saved {
                key: saved.key,
                token,
                head_tree: head_tree.to_string(),
                index: raw.digest,
                index_tree: raw.tree.map(|t| t.to_string()),
                tree: edited.tree.to_string(),
                excluded: edited.excluded.clone(),
            },
        );
        Ok(Ok(Snapshot {
            tree: edited.tree,
            index_tree: None,
            excluded: edited.excluded,
            dirs_read: work.dirs_read,
            dirs_skipped: 0,
            entries_proven: raw.len().saturating_sub(work.files.len()),
            index_flags: false,
        }))
    }
}

/// How a full monitored pass for a checkpoint ended.
pub(crate) struct Ended<'a> {
    /// The monitor's token, asked before anything was read.
    pub next_token: Option<&'a str>,
    pub head_tree: ObjectId,
    /// The index scanned meanwhile, if it was.
    pub raw: Option<RawIndex>,
    /// Whether a folder could not be read (its files left out).
    pub unreadable: bool,
    /// The index file's identity before gix read it.
    pub index_before: Option<Identity>,
}

/// After a full monitored pass for a checkpoint: save where it ended, when the index it read
/// (`index`) is the one scanned (`ended.raw`, or read now) and nothing was left unread.
pub(crate) fn record(
    ctx: &ScanContext,
    policy: &Policy,
    ended: Ended<'_>,
    index: &gix::index::File,
    snapshot: &Snapshot,
) {
    let raw = ended
        .raw
        .or_else(|| rawindex::read(index.path(), ctx.repo().object_hash()));
    // The file scanned is the one gix read: it was at the index's path before gix read it
    // and still is (and, when it has one, its checksum is the one gix read).
    let same_index = raw.as_ref().is_some_and(|r| {
        r.plain
            && r.identity.is_some()
            && r.identity == ended.index_before
            && r.identity == Identity::at(index.path())
            && index
                .checksum()
                .is_none_or(|c| r.checksum() == c.as_bytes().as_bstr())
    });
    let (Some(token), Some(raw), false) = (
        ended.next_token,
        raw.filter(|_| same_index),
        ended.unreadable,
    ) else {
        state::forget(ctx);
        return;
    };
    state::save(
        ctx,
        &Saved {
            key: state_key(ctx, policy),
            token: token.to_string(),
            head_tree: ended.head_tree.to_string(),
            index: raw.digest,
            index_tree: raw.tree.map(|t| t.to_string()),
            tree: snapshot.tree.to_string(),
            excluded: snapshot.excluded.clone(),
        },
    );
}

/// Add to `out` the paths that differ between trees `old` and `new`, or say why the full
/// pass must decide (a submodule's entry, which the full pass takes from its checkout, or
/// more paths than [`MAX_PATHS`]).
fn changed_paths(
    ctx: &ScanContext,
    old: ObjectId,
    new: ObjectId,
    out: &mut Vec<gix::bstr::BString>,
) -> std::result::Result<(), &'static str> {
    if old == new {
        return Ok(());
    }
    let changes = crate::treediff::diff_trees_at_most(
        ctx.repo(),
        old,
        new,
        MAX_PATHS.saturating_sub(out.len()),
    )
    .map_err(|_| "the trees git changed cannot be compared")?
    .ok_or("too many paths changed by git")?;
    for c in changes {
        let kinds = [c.old, c.new];
        if kinds
            .iter()
            .flatten()
            .any(|(_, kind)| *kind == gix::objs::tree::EntryKind::Commit)
        {
            return Err("a submodule in what git changed");
        }
        out.push(c.path);
    }
    Ok(())
}
