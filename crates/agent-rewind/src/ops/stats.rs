//! `stats`: how many lines each agent (with its model) and each person added in a range of
//! commits, and how many of those are still there at the range's tip — from the same
//! attribution as `blame` (`crate::attribution`), and the tokens of the runs whose turns
//! wrote them (`super::usage`). Read-only; it never prints.

use crate::attribution::{Index, parse_porcelain};
use crate::store::linemap;
use crate::store::{CommitInfo, EntryKind, ObjectId, Store};
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::RunId;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One author's lines: an agent with its model, or a person.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StatsRow {
    /// `agent` or `person`.
    pub origin: &'static str,
    /// The agent (`claude`, …) or the person (`Name <email>`, the commit's author).
    pub name: String,
    /// The agent's model, when its turns named one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Lines the range's commits added, written by this author.
    pub added: u64,
    /// Of those, lines still at the range's tip (as `git blame -w -M -C` finds them there).
    pub kept: u64,
}

/// The lines of a range, by author.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Stats {
    pub range: String,
    /// The commit the kept lines are counted at.
    pub tip: String,
    /// Commits counted (merges are left out: their lines are their parents').
    pub commits: usize,
    pub rows: Vec<StatsRow>,
    pub added: u64,
    pub kept: u64,
    /// The tokens of the runs whose turns wrote lines the range added: per run (its own
    /// and what it inherited), per agent and per model, priced when configured; `None` when
    /// none of their turns recorded usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<super::usage::UsageReport>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

type Key = (&'static str, String, Option<String>);

/// The stats of `range` (`A..B`, or one commit; default `HEAD`).
pub fn stats(store: &Store, range: Option<&str>) -> Result<Stats> {
    let range = range.unwrap_or("HEAD");
    let tip_spec = match range.rsplit_once("..") {
        Some((_, right)) if !right.is_empty() => right.trim_start_matches('.'),
        Some(_) => "HEAD",
        None => range,
    };
    let commits = store.objects().rev_list(range)?;
    let tip = store.objects().resolve_commit(tip_spec)?;
    // What the range changed, and where its lines are at the tip, before the runs are
    // replayed over exactly those paths.
    let mut changed = vec![];
    let mut paths: BTreeSet<String> = BTreeSet::new();
    for (commit, author) in &commits {
        let (info, changes) = text_changes(store, *commit)?;
        paths.extend(changes.iter().map(|c| c.0.clone()));
        changed.push((info, author.clone(), changes));
    }
    let in_range: HashMap<String, String> = commits
        .iter()
        .map(|(c, a)| (c.to_string(), a.clone()))
        .collect();
    let tip_tree = store.objects().commit_tree(tip)?;
    let root = store.worktree().root()?.to_path_buf();
    let tip_hex = tip.to_string();
    let mut at_tip = vec![];
    for path in &paths {
        if store
            .objects()
            .path_in_tree(tip_tree, path.as_bytes())?
            .is_none()
        {
            continue;
        }
        let out = store.objects().blame_porcelain(
            &root,
            Some(&tip_hex),
            std::ffi::OsStr::new(path),
            &[],
        )?;
        at_tip.extend(
            parse_porcelain(&out)?
                .into_iter()
                .filter(|l| in_range.contains_key(&l.commit.id)),
        );
    }
    let mut followed = paths.clone();
    followed.extend(at_tip.iter().map(|l| l.orig_path.clone()));
    let mut index = Index::build(store, Some(&followed))?;
    let mut rows: BTreeMap<Key, (u64, u64)> = BTreeMap::new();
    let mut credited: BTreeSet<String> = BTreeSet::new();
    for (info, author, changes) in &changed {
        for (path, old, new) in changes {
            let old = match old {
                Some(id) => store.objects().read_blob(*id)?,
                None => vec![],
            };
            let data = store.objects().read_blob(*new)?;
            let authors = index.authors(store, *new, Some(&data), Some(info.time), path)?;
            for (n, kept) in linemap::kept_lines(&old, &data).into_iter().enumerate() {
                if kept.is_none() {
                    let who = authors.get(n).copied().flatten();
                    if let Some(t) = who {
                        credited.insert(index.turns[t as usize].run.clone());
                    }
                    rows.entry(key_of(&index, who, author.clone()))
                        .or_default()
                        .0 += 1;
                }
            }
        }
    }
    let who = index.attribute_lines(store, &at_tip, None)?;
    for (l, who) in at_tip.iter().zip(who) {
        let person = in_range.get(&l.commit.id).cloned().unwrap_or_default();
        rows.entry(key_of(&index, who, person)).or_default().1 += 1;
    }
    let rows: Vec<StatsRow> = rows
        .into_iter()
        .map(|((origin, name, model), (added, kept))| StatsRow {
            origin,
            name,
            model,
            added,
            kept,
        })
        .collect();
    let runs: Vec<RunId> = credited
        .into_iter()
        .filter_map(|r| RunId::new(r).ok())
        .filter(|r| store.refs().run_head(r).ok().flatten().is_some())
        .collect();
    let usage = super::usage::report(store, &runs)?;
    Ok(Stats {
        usage: (!usage.total.tokens.is_zero()).then_some(usage),
        range: range.to_string(),
        tip: tip_hex,
        commits: commits.len(),
        added: rows.iter().map(|r| r.added).sum(),
        kept: rows.iter().map(|r| r.kept).sum(),
        rows,
        warnings: index.warnings,
    })
}

fn key_of(index: &Index, who: Option<u32>, person: String) -> Key {
    match who {
        Some(t) => {
            let t = &index.turns[t as usize];
            (
                "agent",
                t.agent.clone().unwrap_or_else(|| "agent".into()),
                t.model.clone(),
            )
        }
        None => ("person", person, None),
    }
}

/// A text file a commit changed: its path, its blob before (none when added) and after.
pub(crate) type TextChange = (String, Option<ObjectId>, ObjectId);

/// The commit and the files it changed against its first parent (files only, not deleted).
pub(crate) fn text_changes(
    store: &Store,
    commit: ObjectId,
) -> Result<(CommitInfo, Vec<TextChange>)> {
    let info = store.objects().read_commit(commit)?;
    let parent_tree = match info.parents.first() {
        Some(p) => store.objects().commit_tree(*p)?,
        None => store.objects().empty_tree(),
    };
    let mut out = vec![];
    for change in store.objects().diff_trees(parent_tree, info.tree)? {
        let Some((new, EntryKind::Blob | EntryKind::BlobExecutable)) = change.new else {
            continue;
        };
        let old = match change.old {
            Some((id, EntryKind::Blob | EntryKind::BlobExecutable)) => Some(id),
            _ => None,
        };
        out.push((String::from_utf8_lossy(&change.path).into_owned(), old, new));
    }
    Ok((info, out))
}
