//! `export --format git-ai [<range>]`: per commit of the range that added agent lines, a
//! git-ai authorship note (authorship/3.0.0) naming those lines, written under
//! `refs/notes/ai` (or the ref given) in one compare-and-swap update, so git-ai's own tools
//! (`git-ai blame`, `git-ai stats`) read what our runs recorded. Lines come from the same
//! attribution as `blame` (`ops::trace::added_agent_lines`).
//!
//! Keys follow git-ai's rules: the session is `s_` + the first 14 hex digits of
//! SHA-256(`<agent>:<session id>`) (the run id when the turn has no session), the trace is
//! `t_` + the first 14 hex digits of the turn's checkpoint. A commit that already has a
//! different note keeps it unless `force`. It never writes another ref, never a ref of
//! ours (a run's notes, staged copies: `layout::is_owned_ref`), never touches the user's
//! HEAD, index or files.

use super::notes_ref_name;
use crate::attribution::gitai::{
    self, AgentId, AgentRecord, Entry, FileAttestation, Log, Metadata, ranges_of,
};
use crate::attribution::{AgentTurn, Index};
use crate::ops::trace::added_agent_lines;
use crate::store::{ObjectId, PublishError, RefChange, Store};
use agent_rewind_core::error::{Error, Result};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// One commit's note.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ExportedNote {
    pub commit: String,
    /// `written`, `up to date` (the same note is there) or `kept` (another note is there).
    pub result: &'static str,
    pub lines: usize,
    pub sessions: usize,
    /// The note's text.
    pub note: String,
}

/// What `export --format git-ai` did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ExportOutcome {
    pub notes_ref: String,
    /// The notes commit the ref points at now (`null`: nothing written).
    pub notes_commit: Option<String>,
    pub notes: Vec<ExportedNote>,
    /// Files whose path a note cannot spell (a quote or a line break in it).
    pub skipped_paths: Vec<String>,
}

impl ExportOutcome {
    pub fn count(&self, result: &str) -> usize {
        self.notes.iter().filter(|n| n.result == result).count()
    }
}

/// How many times the ref is read again after another writer moved it.
const ROUNDS: u32 = 8;

pub fn export(
    store: &Store,
    range: Option<&str>,
    notes_ref: Option<&str>,
    force: bool,
) -> Result<ExportOutcome> {
    let name = notes_ref_name(notes_ref)?;
    // A run's own notes ref holding git-ai notes would make every fetcher skip the run as
    // corrupt: no ref of ours is ever written here, checked before anything is.
    if crate::store::layout::is_owned_ref(&name) {
        return Err(Error::usage(format!(
            "{name} belongs to git agent-rewind: git-ai notes cannot be written there"
        ))
        .with_hint("write them under refs/notes/ai (the default, where git-ai reads them) or another notes ref of your own"));
    }
    let (index, commits) = added_agent_lines(store, range)?;
    let mut skipped_paths = vec![];
    let mut built: Vec<(ObjectId, Log, usize)> = vec![];
    for (commit, _, files) in commits {
        if let Some((log, lines)) = note_of(commit, &index, files, &mut skipped_paths) {
            built.push((commit, log, lines));
        }
    }
    for round in 0..ROUNDS {
        let tip = store.refs().ref_target(&name)?;
        let existing = match tip {
            Some(t) => store
                .notes()
                .all_notes(t)
                .map_err(|e| Error::corrupt(format!("{name} is not a notes ref: {}", e.message)))?,
            None => Default::default(),
        };
        let mut notes = vec![];
        let mut to_write = vec![];
        for (commit, log, lines) in &built {
            let text = log.to_text();
            let result = match existing.get(commit) {
                Some(blob) if store.objects().read_blob(*blob)? == text.as_bytes() => "up to date",
                Some(_) if !force => "kept",
                _ => {
                    to_write.push((*commit, text.clone().into_bytes()));
                    "written"
                }
            };
            notes.push(ExportedNote {
                commit: commit.to_string(),
                result,
                lines: *lines,
                sessions: log.meta.sessions.len(),
                note: text,
            });
        }
        let mut out = ExportOutcome {
            notes_ref: name.clone(),
            notes_commit: None,
            notes,
            skipped_paths: skipped_paths.clone(),
        };
        if to_write.is_empty() {
            return Ok(out);
        }
        let message = format!(
            "agent-rewind: git-ai notes for {} commit(s)",
            to_write.len()
        );
        let new = store.notes().write_notes_commit(tip, &to_write, &message)?;
        match store
            .refs()
            .publish(&[RefChange::set(name.clone(), new, tip)], &message)
        {
            Ok(()) => {
                out.notes_commit = Some(new.to_string());
                return Ok(out);
            }
            Err(PublishError::Conflict(_)) if round + 1 < ROUNDS => crate::journal::backoff(round),
            Err(e) => return Err(e.into()),
        }
    }
    unreachable!("the loop returns")
}

/// The git-ai note of one commit and how many agent lines it names (`None`: none).
fn note_of(
    commit: ObjectId,
    index: &Index,
    files: Vec<crate::ops::trace::AgentFile>,
    skipped_paths: &mut Vec<String>,
) -> Option<(Log, usize)> {
    let mut sessions: BTreeMap<String, AgentRecord> = BTreeMap::new();
    let mut attestations = vec![];
    let mut total = 0;
    let mut files = files;
    files.sort_by(|a, b| a.path.cmp(&b.path));
    for f in files {
        if !gitai::writable_path(&f.path) {
            skipped_paths.push(f.path);
            continue;
        }
        let mut by_key: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for (n, t) in f.lines {
            let turn = &index.turns[t as usize];
            let (sid, record) = session_of(turn);
            let key = format!(
                "{sid}::t_{}",
                &turn.checkpoint[..14.min(turn.checkpoint.len())]
            );
            sessions.entry(sid).or_insert(record);
            by_key.entry(key).or_default().push(n + 1);
            total += 1;
        }
        let entries = by_key
            .into_iter()
            .map(|(key, lines)| Entry {
                key,
                ranges: ranges_of(&lines),
            })
            .collect();
        attestations.push(FileAttestation {
            path: f.path,
            entries,
        });
    }
    if total == 0 {
        return None;
    }
    let meta = Metadata {
        schema_version: gitai::SCHEMA.to_string(),
        git_ai_version: None,
        base_commit_sha: commit.to_string(),
        prompts: BTreeMap::new(),
        humans: BTreeMap::new(),
        sessions,
    };
    Some((
        Log {
            files: attestations,
            meta,
        },
        total,
    ))
}

/// git-ai's session id for a turn (`s_` + SHA-256(`tool:id`), its first 14 hex digits) and
/// the session's record.
fn session_of(turn: &AgentTurn) -> (String, AgentRecord) {
    let tool = turn.agent.clone().unwrap_or_else(|| "unknown".into());
    let id = turn.session.clone().unwrap_or_else(|| turn.run.clone());
    let digest = Sha256::digest(format!("{tool}:{id}").as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let record = AgentRecord {
        agent_id: AgentId {
            tool,
            id,
            model: turn.model.clone().unwrap_or_else(|| "unknown".into()),
        },
        human_author: None,
        custom_attributes: None,
    };
    (format!("s_{}", &hex[..14]), record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_follow_git_ai() {
        // The standard's rule: "s_" + SHA256("<tool>:<conversation_id>")[0..14].
        let turn = AgentTurn {
            agent: Some("cursor".into()),
            model: None,
            run: "r".into(),
            step: None,
            seq: 1,
            checkpoint: "0123456789abcdef0123456789abcdef01234567".into(),
            session: Some("session_123".into()),
            ts: agent_rewind_core::time::Timestamp::EPOCH,
            source: None,
        };
        let (sid, rec) = session_of(&turn);
        let digest = Sha256::digest(b"cursor:session_123");
        assert_eq!(sid, format!("s_{}", &hex_of(&digest)[..14]));
        assert_eq!(rec.agent_id.model, "unknown");
    }

    fn hex_of(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }
}
