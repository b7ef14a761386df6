//! `blame`: who wrote each line of a file — an agent's turn (agent, model, run, step,
//! checkpoint, session) or a person (the commit and its author) — from git's own blame of
//! the file and the runs' turns (`crate::attribution`). Read-only; it never prints.

use crate::attribution::{AgentTurn, Index, parse_porcelain};
use crate::store::Store;
use agent_rewind_core::error::{IoResultExt, Result};
use std::collections::BTreeSet;
use std::path::Path;

/// A person's side of a line: the commit it came from and that commit's author.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Author {
    pub name: String,
    pub email: String,
    /// Seconds since the epoch.
    pub time: i64,
    pub tz: String,
}

/// One line of the file and who wrote it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AttributedLine {
    /// Line number in the file (1-based).
    pub line: u32,
    pub content: String,
    /// `agent` or `person`.
    pub origin: &'static str,
    /// The commit git found the line in (forty zeros: not committed yet).
    pub commit: String,
    pub orig_line: u32,
    pub orig_path: String,
    pub author: Author,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentTurn>,
    /// git's boundary commit (`^` in its output).
    #[serde(skip)]
    pub boundary: bool,
}

/// The attributed file.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Blamed {
    /// The file, relative to the worktree root.
    pub path: String,
    /// The revision blamed (`null`: the worktree's file).
    pub rev: Option<String>,
    pub lines: Vec<AttributedLine>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Blame `file` (as typed, relative to `cwd`; `rel` is the same file relative to the
/// worktree root) at `rev`, or in the worktree; `ranges` are git's `-L` ranges.
pub fn blame(
    store: &Store,
    cwd: &Path,
    file: &str,
    rel: &str,
    rev: Option<&str>,
    ranges: &[String],
) -> Result<Blamed> {
    // git blames while the runs are replayed over the file's path.
    let running = store
        .objects()
        .blame_porcelain_start(cwd, rev, file.as_ref(), ranges)?;
    let mut paths: BTreeSet<String> = BTreeSet::from([rel.to_string()]);
    let index = Index::build(store, Some(&paths));
    agent_rewind_core::trace::mark("blame: runs replayed");
    let out = running.finish()?;
    agent_rewind_core::trace::mark("blame: git blame done");
    let mut index = index?;
    let lines = parse_porcelain(&out)?;
    // Lines git found in other files (moved or copied there): those paths too.
    let before = paths.len();
    paths.extend(lines.iter().map(|l| l.orig_path.clone()));
    if paths.len() > before {
        index = Index::build(store, Some(&paths))?;
        agent_rewind_core::trace::mark("blame: runs replayed for the other paths");
    }
    let worktree = match rev {
        None if lines.iter().any(|l| !l.commit.committed()) => {
            let p = store.worktree().root()?.join(rel);
            Some(std::fs::read(&p).at(&p)?)
        }
        _ => None,
    };
    let who = index.attribute_lines(store, &lines, worktree.as_deref())?;
    let lines = lines
        .into_iter()
        .zip(who)
        .map(|(l, who)| AttributedLine {
            line: l.final_line,
            content: String::from_utf8_lossy(&l.content).into_owned(),
            origin: if who.is_some() { "agent" } else { "person" },
            commit: l.commit.id.clone(),
            orig_line: l.orig_line,
            orig_path: l.orig_path.clone(),
            author: Author {
                name: l.commit.author.clone(),
                email: l
                    .commit
                    .author_mail
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_string(),
                time: l.commit.author_time,
                tz: l.commit.author_tz.clone(),
            },
            agent: who.map(|t| index.turns[t as usize].clone()),
            boundary: l.commit.boundary,
        })
        .collect();
    Ok(Blamed {
        path: rel.to_string(),
        rev: rev.map(str::to_string),
        lines,
        warnings: index.warnings,
    })
}

/// Blame `path` (relative to the worktree root, `/`-separated) as the checkpoint `checkpoint`
/// (full hex id) recorded it: for the view page, which asks by checkpoint and path. Only a
/// checkpoint commit of a run, and only a file of its tree, is blamed; anything else is
/// `not found`, nothing is run.
pub fn blame_at_checkpoint(store: &Store, checkpoint: &str, path: &str) -> Result<Blamed> {
    let not_found = || {
        agent_rewind_core::error::Error::not_found(format!(
            "no file {path:?} in checkpoint {checkpoint:?}"
        ))
    };
    let full =
        matches!(checkpoint.len(), 40 | 64) && checkpoint.bytes().all(|b| b.is_ascii_hexdigit());
    let safe = !path.is_empty()
        && !path.starts_with('-')
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != ".." && !c.eq_ignore_ascii_case(".git"));
    if !full || !safe {
        return Err(not_found());
    }
    let id = crate::store::ObjectId::from_hex(checkpoint.as_bytes()).map_err(|_| not_found())?;
    let info = store.objects().read_commit(id).map_err(|_| not_found())?;
    if info.trailers.run.is_none() {
        return Err(not_found());
    }
    match store.objects().entry_in_tree(info.tree, path.as_bytes())? {
        Some((_, crate::store::EntryKind::Blob | crate::store::EntryKind::BlobExecutable)) => {}
        _ => return Err(not_found()),
    }
    let root = store.worktree().root()?.to_path_buf();
    blame(store, &root, path, path, Some(checkpoint), &[])
}
