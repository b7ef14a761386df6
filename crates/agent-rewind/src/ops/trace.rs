//! `export --format agent-trace`: the agent lines of a range of commits as Agent Trace
//! records (cursor/agent-trace, specification 0.1.0): one record per commit that added
//! agent lines, its files, one conversation per agent session and model, and the line
//! ranges (in the commit's version of the file) that session's turns wrote, from the same
//! attribution as `blame` (`crate::attribution`). Read-only; it never prints.

use super::stats::text_changes;
use crate::attribution::Index;
use crate::store::linemap;
use crate::store::{CommitInfo, ObjectId, Store};
use agent_rewind_core::error::Result;
use agent_rewind_core::time::Timestamp;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// The specification version the records follow.
pub const AGENT_TRACE_VERSION: &str = "0.1.0";

/// The added lines of one file of a commit that agents wrote: `(0-based line, turn)`.
pub(crate) struct AgentFile {
    pub path: String,
    pub data: Vec<u8>,
    pub lines: Vec<(u32, u32)>,
}

/// A commit, its facts, and the files where it added agent lines.
pub(crate) type CommitAgentLines = (ObjectId, CommitInfo, Vec<AgentFile>);

/// Per commit of `range` (`A..B` or one commit; default `HEAD`), oldest first, the files
/// where it added agent lines, with the index naming the turns.
pub(crate) fn added_agent_lines(
    store: &Store,
    range: Option<&str>,
) -> Result<(Index, Vec<CommitAgentLines>)> {
    let range = range.unwrap_or("HEAD");
    let mut commits = store.objects().rev_list(range)?;
    commits.reverse();
    let mut changed = vec![];
    let mut paths = BTreeSet::new();
    for (commit, _) in &commits {
        let (info, changes) = text_changes(store, *commit)?;
        paths.extend(changes.iter().map(|c| c.0.clone()));
        changed.push((*commit, info, changes));
    }
    let mut index = Index::build(store, Some(&paths))?;
    let mut out = vec![];
    for (commit, info, changes) in changed {
        let mut files = vec![];
        for (path, old, new) in changes {
            let old = match old {
                Some(id) => store.objects().read_blob(id)?,
                None => vec![],
            };
            let data = store.objects().read_blob(new)?;
            let authors = index.authors(store, new, Some(&data), Some(info.time), &path)?;
            let lines: Vec<(u32, u32)> = linemap::kept_lines(&old, &data)
                .into_iter()
                .enumerate()
                .filter(|(_, kept)| kept.is_none())
                .filter_map(|(n, _)| authors.get(n).copied().flatten().map(|t| (n as u32, t)))
                .collect();
            if !lines.is_empty() {
                files.push(AgentFile { path, data, lines });
            }
        }
        out.push((commit, info, files));
    }
    Ok((index, out))
}

/// The records of `range` (`A..B` or one commit; default `HEAD`), oldest commit first.
pub fn agent_trace(store: &Store, range: Option<&str>) -> Result<Vec<Value>> {
    let (index, commits) = added_agent_lines(store, range)?;
    let mut out = vec![];
    for (commit, info, changed) in commits {
        let mut files = vec![];
        let mut turns_used = BTreeSet::new();
        for f in &changed {
            let lines = linemap::lines(&f.data);
            // Per conversation (session, model): the added lines its turns wrote.
            let mut by_conv: BTreeMap<(String, String), Vec<u32>> = BTreeMap::new();
            for &(n, t) in &f.lines {
                turns_used.insert(t);
                let turn = &index.turns[t as usize];
                let key = (
                    turn.session.clone().unwrap_or_default(),
                    model_id(turn.agent.as_deref(), turn.model.as_deref()),
                );
                by_conv.entry(key).or_default().push(n);
            }
            let mut conversations = vec![];
            for ((_, model), lns) in by_conv {
                let mut ranges = vec![];
                for (start, end) in crate::attribution::gitai::ranges_of(&lns) {
                    let text: Vec<u8> = lines[start as usize..=end as usize].join(&b"\n"[..]);
                    ranges.push(json!({
                        "start_line": start + 1,
                        "end_line": end + 1,
                        "content_hash": format!("git-blob:{}", store.objects().blob_id(&text)?),
                    }));
                }
                let mut contributor = json!({"type": "ai"});
                if !model.is_empty() {
                    contributor["model_id"] = model.into();
                }
                conversations.push(json!({"contributor": contributor, "ranges": ranges}));
            }
            files.push(json!({"path": f.path, "conversations": conversations}));
        }
        if files.is_empty() {
            continue;
        }
        let turns: Vec<Value> = turns_used
            .iter()
            .map(|t| serde_json::to_value(&index.turns[*t as usize]).expect("json"))
            .collect();
        out.push(json!({
            "version": AGENT_TRACE_VERSION,
            "id": record_id(commit),
            "timestamp": Timestamp::EPOCH.add_millis(info.time.saturating_mul(1000)).to_string(),
            "vcs": {"type": "git", "revision": commit.to_string()},
            "tool": {"name": "git-agent-rewind", "version": env!("CARGO_PKG_VERSION")},
            "files": files,
            "metadata": {"dev.agent-rewind": {"turns": turns}},
        }));
    }
    Ok(out)
}

/// The model as models.dev names it (`provider/model`) when the agent says the provider.
fn model_id(agent: Option<&str>, model: Option<&str>) -> String {
    let Some(model) = model else {
        return String::new();
    };
    let provider = match agent {
        Some("claude") => Some("anthropic"),
        Some("codex") => Some("openai"),
        Some("gemini") => Some("google"),
        _ => None,
    };
    let id = match provider {
        Some(p) if !model.contains('/') => format!("{p}/{model}"),
        _ => model.to_string(),
    };
    id.chars().take(250).collect()
}

/// A stable UUID for a commit's record (RFC 9562 version 8: the commit id's first 122 bits),
/// so exporting twice gives the same ids.
fn record_id(commit: ObjectId) -> String {
    let hex = commit.to_string();
    let mut b: Vec<u8> = (0..16)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap_or(0))
        .collect();
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_and_ids() {
        assert_eq!(
            model_id(Some("claude"), Some("claude-x")),
            "anthropic/claude-x"
        );
        assert_eq!(model_id(Some("cursor"), Some("a/b")), "a/b");
        assert_eq!(model_id(Some("claude"), None), "");
        let id =
            record_id(ObjectId::from_hex(b"0123456789abcdef0123456789abcdef01234567").unwrap());
        assert_eq!(id, "01234567-89ab-8def-8123-456789abcdef");
    }
}
