//! The secret scan `push` runs before it shares a run: the rule set (built-in, plus
//! gitleaks-format files named by `agentRewind.secretRules`) over what the run would share
//! that the user's own history does not hold: the lines each checkpoint adds to a file (new
//! untracked files included), the checkpoints' commit messages, and every field of the
//! run's notes (messages, metadata, labels, approvals, the workflow's text with its
//! commands). The same texts go to the installed scanners of `scanner`.
//!
//! Read-only: it never changes a ref, an object or a file. It never scans the user's own
//! commits (those without an `Agent-Run:` trailer): a run shares them only when they are
//! already in the history the run starts from.

use crate::store::{EntryKind, ObjectId, Store};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::RunId;
use agent_rewind_core::redact::rules::{Finding, Origin, RuleSet};
use serde::Serialize;
use std::collections::{BTreeSet, HashSet};

/// Files larger than this are not scanned (as `agentRewind.maxUntrackedSize`'s default).
const MAX_SCANNED: u64 = 10 << 20;

/// One secret a push would share. `place` is a file path, `commit message`, or
/// `note: <field>`; `line` is 1-based in that file or field (0: the path itself matched).
#[derive(Debug, Clone, Serialize)]
pub struct SecretFinding {
    pub commit: String,
    pub place: String,
    pub line: usize,
    pub rule: String,
    /// `<commit>:<place>:<rule>:<line>`: what `--allow-secret` takes.
    pub fingerprint: String,
}

impl SecretFinding {
    /// The finding of `rule` on 1-based `line` (0: the path) of `place`, added by `commit`.
    pub fn new(commit: ObjectId, place: String, rule: String, line: usize) -> Self {
        let commit = commit.to_string();
        SecretFinding {
            fingerprint: format!("{commit}:{place}:{rule}:{line}"),
            commit,
            place,
            line,
            rule,
        }
    }

    /// `file:line: rule` as git prints places.
    pub fn describe(&self) -> String {
        match self.line {
            0 => format!("{}: {}", self.place, self.rule),
            n => format!("{}:{n}: {}", self.place, self.rule),
        }
    }
}

/// A rule of `agentRewind.secretRules` that did not compile: its id and the parser's reason.
pub type SkippedRule = (String, String);

/// The rules of this repository: the built-in ones plus every file named by
/// `agentRewind.secretRules` (gitleaks' format; relative paths are from the worktree's top).
/// Also returns the rules that did not compile.
pub fn rules(store: &Store) -> Result<(std::borrow::Cow<'static, RuleSet>, Vec<SkippedRule>)> {
    let files = store.config().strings("agentRewind.secretRules");
    if files.is_empty() {
        return Ok((std::borrow::Cow::Borrowed(RuleSet::builtin()), vec![]));
    }
    let mut texts = vec![agent_rewind_core::redact::rules::BUILTIN_RULES.to_string()];
    for f in &files {
        let path = match store.worktree().root() {
            Ok(top) => top.join(f),
            Err(_) => std::path::PathBuf::from(f),
        };
        texts.push(
            std::fs::read_to_string(&path)
                .map_err(|e| Error::io(&path, e).context("agentRewind.secretRules"))?,
        );
    }
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let set = RuleSet::parse(&refs).map_err(|e| {
        Error::usage(format!("agentRewind.secretRules: {e}"))
            .with_hint("the files must be in gitleaks' configuration format")
    })?;
    let skipped = set.skipped().to_vec();
    Ok((std::borrow::Cow::Owned(set), skipped))
}

/// One text pushing a run would share: a checkpoint's file (new or changed), its commit
/// message, or a field of a note, with where it is.
pub struct SharedText {
    /// The checkpoint that adds it (or the note is on).
    pub commit: ObjectId,
    /// The file path, `commit message`, `note: <field>` or `note`.
    pub place: String,
    /// The file path, for path-bound rules (files only).
    pub path: Option<String>,
    /// Whether commit allowlists apply (files and commit messages; notes are not commits).
    pub in_commit: bool,
    pub text: Vec<u8>,
    /// The lines the checkpoint's first parent already had in that file: a finding on one
    /// of them is the history the run starts from, not the run's.
    pub old_lines: HashSet<Vec<u8>>,
}

impl SharedText {
    /// Whether 1-based `line` (0: the path itself) is one this checkpoint added.
    pub fn added(&self, line: usize) -> bool {
        line == 0
            || self
                .text
                .split(|&b| b == b'\n')
                .nth(line - 1)
                .is_none_or(|l| !self.old_lines.contains(l))
    }
}

/// Every secret that pushing `run` would share.
pub fn scan_run(store: &Store, run: &RunId, rules: &RuleSet) -> Result<Vec<SecretFinding>> {
    let mut out = vec![];
    for_each_shared(store, run, &mut |shared| {
        let hex = shared.commit.to_string();
        let origin = Origin {
            path: shared.path.as_deref(),
            commit: shared.in_commit.then_some(hex.as_str()),
        };
        for f in rules.scan(&shared.text, origin) {
            if shared.added(f.line) {
                out.push(finding(&shared, f));
            }
        }
        Ok(())
    })?;
    Ok(out)
}

fn finding(shared: &SharedText, f: Finding) -> SecretFinding {
    SecretFinding::new(shared.commit, shared.place.clone(), f.rule, f.line)
}

/// Hand every text pushing `run` would share to `visit`: the lines each of its checkpoints
/// adds to files, their commit messages, and every field of its notes.
pub fn for_each_shared(
    store: &Store,
    run: &RunId,
    visit: &mut dyn FnMut(SharedText) -> Result<()>,
) -> Result<()> {
    for id in checkpoint_commits(store, run)? {
        commit_texts(store, id, visit)?;
    }
    if let Some(tip) = store.refs().notes_tip(run)? {
        let mut notes: Vec<(ObjectId, ObjectId)> =
            store.notes().all_notes(tip)?.into_iter().collect();
        notes.sort();
        for (commit, blob) in notes {
            let body = store.objects().read_blob(blob)?;
            note_texts(commit, &body, visit)?;
        }
    }
    Ok(())
}

/// The checkpoint commits the run's refs reach (its own and those it was forked from),
/// stopping at the first commit without an `Agent-Run:` trailer on each path.
fn checkpoint_commits(store: &Store, run: &RunId) -> Result<Vec<ObjectId>> {
    let prefix = crate::store::layout::run_prefix(run);
    let mut todo: Vec<ObjectId> = store
        .refs()
        .refs_under(&prefix)?
        .into_iter()
        .map(|(_, id)| id)
        .collect();
    let mut seen = HashSet::new();
    let mut out = BTreeSet::new();
    while let Some(id) = todo.pop() {
        if !seen.insert(id) || !store.objects().is_commit(id) {
            continue;
        }
        let info = store.objects().read_commit(id)?;
        if info.trailers.run.is_none() {
            continue;
        }
        out.insert(id);
        todo.extend(info.parents.iter().copied());
    }
    Ok(out.into_iter().collect())
}

/// The message of `commit` and the files it adds or changes (compared with its first
/// parent; text files up to [`MAX_SCANNED`]).
fn commit_texts(
    store: &Store,
    id: ObjectId,
    visit: &mut dyn FnMut(SharedText) -> Result<()>,
) -> Result<()> {
    let info = store.objects().read_commit(id)?;
    visit(SharedText {
        commit: id,
        place: "commit message".into(),
        path: None,
        in_commit: true,
        text: info.message.as_bytes().to_vec(),
        old_lines: HashSet::new(),
    })?;
    let changed: Vec<(String, Option<ObjectId>, ObjectId)> = match info.parents.first() {
        Some(&p) => {
            let from = store.objects().commit_tree(p)?;
            store
                .objects()
                .diff_trees(from, info.tree)?
                .into_iter()
                .filter_map(|c| {
                    let (new, kind) = c.new?;
                    let blob = matches!(kind, EntryKind::Blob | EntryKind::BlobExecutable);
                    blob.then(|| (c.path.to_string(), c.old.map(|o| o.0), new))
                })
                .collect()
        }
        None => store
            .objects()
            .tree_entries(info.tree)?
            .into_iter()
            .filter(|(_, _, mode)| mode.is_blob())
            .map(|(path, blob, _)| (path.to_string(), None, blob))
            .collect(),
    };
    for (path, old, new) in changed {
        if store.objects().object_size(new)? > MAX_SCANNED {
            continue;
        }
        let content = store.objects().read_blob(new)?;
        if content[..content.len().min(8000)].contains(&0) {
            continue; // binary
        }
        let old_lines: HashSet<Vec<u8>> = match old {
            Some(o) if store.objects().object_size(o)? <= MAX_SCANNED => store
                .objects()
                .read_blob(o)?
                .split(|&b| b == b'\n')
                .map(<[u8]>::to_vec)
                .collect(),
            _ => HashSet::new(),
        };
        visit(SharedText {
            commit: id,
            place: path.clone(),
            path: Some(path),
            in_commit: true,
            text: content,
            old_lines,
        })?;
    }
    Ok(())
}

/// Every string field of every line of a note, named `meta.KEY`, `message`, `label`,
/// `approval.by`, `workflow.text` …; a line that is not JSON as it is, named `note`.
fn note_texts(
    commit: ObjectId,
    body: &[u8],
    visit: &mut dyn FnMut(SharedText) -> Result<()>,
) -> Result<()> {
    let text = String::from_utf8_lossy(body);
    let shared = |place: String, text: &str| SharedText {
        commit,
        place,
        path: None,
        in_commit: false,
        text: text.as_bytes().to_vec(),
        old_lines: HashSet::new(),
    };
    for line in text.lines() {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else {
            visit(shared("note".into(), line))?;
            continue;
        };
        let ty = value.get("type").and_then(|t| t.as_str()).unwrap_or("");
        let prefix = match ty {
            "checkpoint" | "" => String::new(),
            t => format!("{t}."),
        };
        let mut fields = vec![];
        flatten(&value, &prefix, &mut fields);
        for (name, s) in fields {
            // `label.label` reads `label`.
            let name = match name.split_once('.') {
                Some((a, b)) if a == b => a.to_string(),
                _ => name,
            };
            visit(shared(format!("note: {name}"), s))?;
        }
    }
    Ok(())
}

fn flatten<'v>(v: &'v serde_json::Value, name: &str, out: &mut Vec<(String, &'v str)>) {
    use serde_json::Value;
    let join = |k: &str| match name {
        "" => k.to_string(),
        n if n.ends_with('.') => format!("{n}{k}"),
        n => format!("{n}.{k}"),
    };
    match v {
        Value::String(s) => out.push((name.trim_end_matches('.').to_string(), s)),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(x, &join(&i.to_string()), out);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                if k != "type" {
                    flatten(x, &join(k), out);
                }
            }
        }
        _ => {}
    }
}
