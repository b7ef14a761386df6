//! `import --format git-ai [<notes-ref>]`: the lines git-ai's notes attribute to agents,
//! recorded as one new run of this repository so `blame`, `stats`, `export` and `view` find
//! them the way they find our own turns (docs/FORMAT.md, "Attribution imported from
//! git-ai"). Per annotated commit C, in commit order: a checkpoint of C's tree without the
//! agent lines, then one `turn` per git-ai session adding that session's lines (the last
//! one is C's own tree), each turn dated at C's commit time and labelled
//! `imported_from: git-ai` with the tool, model and conversation id git-ai recorded.
//!
//! Every note is read and checked before anything is written; a note that cannot be used is
//! skipped by name. It never changes the notes ref it reads, the user's HEAD, index or files.

use super::{GITAI, META_COMMIT, META_KEY, META_NOTE, notes_ref_name};
use crate::attribution::IMPORTED_FROM;
use crate::attribution::gitai::{self, MAX_NOTE, Origin};
use crate::catalog::Catalog;
use crate::journal::{Record, TreeSource, append};
use crate::model::Event;
use crate::store::{BString, EntryKind, ObjectId, Store, UserHead};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::RunId;
use agent_rewind_core::time::Timestamp;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// How many line slots the ranges of one note may name in all (a file of a million lines
/// named a few times over).
const MAX_COVERED: u64 = 1 << 24;

/// A commit whose note was imported.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ImportedCommit {
    pub commit: String,
    /// Agent lines recorded, over all files.
    pub lines: usize,
    /// The git-ai sessions (or legacy prompts) that wrote them.
    pub sessions: usize,
}

/// A note (or part of one) left out, and why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Skipped {
    pub commit: String,
    pub reason: String,
}

/// What `import --format git-ai` did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ImportOutcome {
    pub notes_ref: String,
    /// The run the attribution was recorded in (`null`: nothing new).
    pub run: Option<String>,
    pub imported: Vec<ImportedCommit>,
    /// Notes already imported here (by this repository's runs, or fetched with them).
    pub up_to_date: usize,
    /// Notes whose lines are all people's (`h_` keys): nothing to record.
    pub people_only: usize,
    pub skipped: Vec<Skipped>,
}

/// One agent (a git-ai session or legacy prompt) of a note.
struct Group {
    key: String,
    tool: String,
    id: String,
    model: String,
}

/// One file of a planned commit: its lines and, per line, the group that wrote it.
struct PlannedFile {
    path: String,
    kind: EntryKind,
    lines: Vec<Vec<u8>>,
    owner: Vec<Option<usize>>,
}

/// A note checked and ready to record.
struct Planned {
    commit: ObjectId,
    note: ObjectId,
    parent: Option<ObjectId>,
    tree: ObjectId,
    time: i64,
    groups: Vec<Group>,
    files: Vec<PlannedFile>,
}

pub fn import(store: &Store, notes_ref: Option<&str>) -> Result<ImportOutcome> {
    let name = notes_ref_name(notes_ref)?;
    let tip = store.refs().ref_target(&name)?.ok_or_else(|| {
        Error::not_found(format!("no notes at {name}")).with_hint(format!(
            "fetch git-ai's notes first: git fetch origin {name}:{name}"
        ))
    })?;
    let notes = store
        .notes()
        .all_notes(tip)
        .map_err(|e| Error::corrupt(format!("{name} is not a notes ref: {}", e.message)))?;
    let done = already_imported(store)?;
    let mut out = ImportOutcome {
        notes_ref: name.clone(),
        run: None,
        imported: vec![],
        up_to_date: 0,
        people_only: 0,
        skipped: vec![],
    };
    let mut plans = vec![];
    for (commit, note) in notes {
        if done.contains(&(commit.to_string(), note.to_string())) {
            out.up_to_date += 1;
            continue;
        }
        match plan(store, commit, note, &mut out.skipped) {
            Ok(Some(p)) => plans.push(p),
            Ok(None) => out.people_only += 1,
            Err(reason) => out.skipped.push(Skipped {
                commit: commit.to_string(),
                reason,
            }),
        }
    }
    plans.sort_by_key(|p| (p.time, p.commit));
    if plans.is_empty() {
        return Ok(out);
    }
    let run = RunId::generate();
    for (i, p) in plans.iter().enumerate() {
        record_commit(store, &run, p, i == 0, &name)?;
        out.imported.push(ImportedCommit {
            commit: p.commit.to_string(),
            lines: p
                .files
                .iter()
                .map(|f| f.owner.iter().flatten().count())
                .sum(),
            sessions: p.groups.len(),
        });
    }
    out.run = Some(run.to_string());
    Ok(out)
}

/// `(commit, note blob)` pairs some run of this repository already recorded.
fn already_imported(store: &Store) -> Result<HashSet<(String, String)>> {
    let mut catalog = Catalog::new(store);
    let (runs, _) = store.refs().list_runs()?;
    let mut out = HashSet::new();
    for (run, _) in runs {
        let Ok(chain) = catalog.run_chain(&run) else {
            continue;
        };
        for cp in chain {
            let m = &cp.line().meta;
            if m.get(IMPORTED_FROM).map(String::as_str) == Some(GITAI)
                && let (Some(c), Some(n)) = (m.get(META_COMMIT), m.get(META_NOTE))
            {
                out.insert((c.clone(), n.clone()));
            }
        }
    }
    Ok(out)
}

/// Check one note against its commit: `Ok(None)` when no line of it is an agent's.
fn plan(
    store: &Store,
    commit: ObjectId,
    note: ObjectId,
    warnings: &mut Vec<Skipped>,
) -> std::result::Result<Option<Planned>, String> {
    let info = store
        .objects()
        .read_commit(commit)
        .map_err(|_| "the note is not on a commit of this repository".to_string())?;
    let size = store.objects().object_size(note).map_err(|e| e.message)?;
    if size > MAX_NOTE {
        return Err(format!(
            "the note is {size} bytes, more than a git-ai note holds"
        ));
    }
    let bytes = store.objects().read_blob(note).map_err(|e| e.message)?;
    let log = gitai::parse(&bytes)?;
    let mut groups: Vec<Group> = vec![];
    let mut files = vec![];
    let mut budget = MAX_COVERED;
    for f in &log.files {
        if !safe_path(&f.path) {
            return Err(format!(
                "{:?} is not a path inside the repository",
                short(&f.path)
            ));
        }
        let (blob, kind) = match store.objects().entry_in_tree(info.tree, f.path.as_bytes()) {
            Ok(Some((id, k @ (EntryKind::Blob | EntryKind::BlobExecutable)))) => (id, k),
            _ => {
                warnings.push(Skipped {
                    commit: commit.to_string(),
                    reason: format!(
                        "{}: not a file of the commit, its lines are not imported",
                        short(&f.path)
                    ),
                });
                continue;
            }
        };
        let data = store.objects().read_blob(blob).map_err(|e| e.message)?;
        let lines = split_lines(&data);
        let mut owner: Vec<Option<usize>> = vec![None; lines.len()];
        for e in &f.entries {
            let group = match log.origin(&e.key) {
                Some(Origin::Agent { group, record }) => {
                    Some(group_index(&mut groups, group, record))
                }
                Some(Origin::Human) => None,
                None => {
                    warnings.push(Skipped {
                        commit: commit.to_string(),
                        reason: format!(
                            "{}: key {} has no record in the metadata, its lines are not imported",
                            short(&f.path),
                            short(&e.key)
                        ),
                    });
                    continue;
                }
            };
            for &(a, b) in &e.ranges {
                if b as usize > lines.len() {
                    return Err(format!(
                        "{}: line {b} is past the end of the file ({} lines)",
                        short(&f.path),
                        lines.len()
                    ));
                }
                // Overlapping ranges repeated over and over would make a small note cost
                // hours: a note names each line a few times at most.
                budget = budget
                    .checked_sub((b - a + 1) as u64)
                    .ok_or("its ranges name more lines than a git-ai note does")?;
                // A later entry wins, as in git-ai's own lookup.
                for slot in &mut owner[a as usize - 1..b as usize] {
                    *slot = group;
                }
            }
        }
        if owner.iter().any(Option::is_some) {
            files.push(PlannedFile {
                path: f.path.clone(),
                kind,
                lines,
                owner,
            });
        }
    }
    if files.is_empty() {
        return Ok(None);
    }
    Ok(Some(Planned {
        commit,
        note,
        parent: info.parents.first().copied(),
        tree: info.tree,
        time: info.time,
        groups,
        files,
    }))
}

fn group_index(groups: &mut Vec<Group>, key: &str, r: &gitai::AgentRecord) -> usize {
    if let Some(i) = groups.iter().position(|g| g.key == key) {
        return i;
    }
    groups.push(Group {
        key: key.to_string(),
        tool: r.agent_id.tool.clone(),
        id: r.agent_id.id.clone(),
        model: r.agent_id.model.clone(),
    });
    groups.len() - 1
}

/// A note's path as the commit's tree can hold it: relative, `/`-separated, no `.`/`..`
/// component, nothing under `.git`.
fn safe_path(p: &str) -> bool {
    !p.is_empty()
        && !p.starts_with('/')
        && !p.contains('\\')
        && !p.contains('\0')
        && p.split('/')
            .all(|c| !c.is_empty() && c != "." && c != ".." && !c.eq_ignore_ascii_case(".git"))
}

/// The file's lines with their line breaks, so joining them gives the file back.
fn split_lines(data: &[u8]) -> Vec<Vec<u8>> {
    data.split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

fn short(s: &str) -> String {
    let mut out: String = s.chars().take(120).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// The commit's tree with each planned file holding only the lines of people and of the
/// groups before `upto` (all groups: the commit's own tree).
fn tree_upto(store: &Store, p: &Planned, upto: usize) -> Result<ObjectId> {
    let mut edits: Vec<(BString, Option<(ObjectId, EntryKind)>)> = vec![];
    for f in &p.files {
        let data: Vec<u8> = f
            .lines
            .iter()
            .zip(&f.owner)
            .filter(|(_, o)| o.is_none_or(|g| g < upto))
            .flat_map(|(l, _)| l.iter().copied())
            .collect();
        let blob = store.objects().write_blob(&data)?;
        edits.push((f.path.clone().into(), Some((blob, f.kind))));
    }
    store.objects().edit_tree(p.tree, &edits)
}

/// The checkpoints of one commit: its tree without the agent lines, then a turn per group.
fn record_commit(
    store: &Store,
    run: &RunId,
    p: &Planned,
    first: bool,
    notes_ref: &str,
) -> Result<()> {
    let at = Timestamp::EPOCH.add_millis(p.time.saturating_mul(1000));
    let mut base_meta = BTreeMap::from([
        (IMPORTED_FROM.to_string(), GITAI.to_string()),
        (META_COMMIT.to_string(), p.commit.to_string()),
        (META_NOTE.to_string(), p.note.to_string()),
    ]);
    let mut rec = Record::new(
        run.clone(),
        if first { Event::Start } else { Event::Manual },
    );
    rec.new_run = first;
    if first {
        rec.label = Some(format!("git-ai attribution ({notes_ref})"));
    }
    rec.facts.message = Some(format!("git-ai: {} without its agent lines", p.commit));
    rec.tree = TreeSource::Given {
        tree: tree_upto(store, p, 0)?,
        excluded: vec![],
    };
    rec.facts.user_head = Some(UserHead {
        commit: p.parent,
        branch: None,
    });
    rec.facts.meta = base_meta.clone();
    rec.at = Some(at);
    rec.force = true;
    append(store, rec)?;
    for (i, g) in p.groups.iter().enumerate() {
        let touched: BTreeSet<String> = p
            .files
            .iter()
            .filter(|f| f.owner.contains(&Some(i)))
            .map(|f| f.path.clone())
            .collect();
        let mut rec = Record::new(run.clone(), Event::Turn);
        rec.facts.agent = Some(g.tool.clone()).filter(|t| !t.is_empty() && t != "unknown");
        rec.facts.session_id = Some(g.id.clone()).filter(|s| !s.is_empty());
        base_meta.insert(META_KEY.to_string(), g.key.clone());
        let mut meta = base_meta.clone();
        if !g.model.is_empty() && g.model != "unknown" {
            meta.insert("model".into(), g.model.clone());
        }
        rec.facts.meta = meta;
        rec.facts.touched = touched.into_iter().collect();
        rec.tree = TreeSource::Given {
            tree: tree_upto(store, p, i + 1)?,
            excluded: vec![],
        };
        rec.facts.user_head = Some(UserHead {
            commit: Some(p.commit),
            branch: None,
        });
        rec.at = Some(at);
        rec.force = true;
        append(store, rec)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_lines() {
        for ok in ["a", "src/a b.rs", "x/.gitignore"] {
            assert!(safe_path(ok), "{ok}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/./b",
            "a//b",
            ".git/config",
            "a\\b",
            "A/.GIT/x",
        ] {
            assert!(!safe_path(bad), "{bad}");
        }
        assert_eq!(split_lines(b"a\nb"), vec![b"a\n".to_vec(), b"b".to_vec()]);
    }
}
