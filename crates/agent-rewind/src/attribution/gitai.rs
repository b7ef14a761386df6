//! git-ai's authorship log (the note git-ai attaches to a commit under `refs/notes/ai`,
//! schema `authorship/3.0.0`, git-ai-project/git-ai `specs/git_ai_standard_v3.0.0.md`): its
//! text read into plain data and written back. An attestation section (a file path at the
//! start of a line, quoted when it holds whitespace; under it, indented by two spaces, an
//! attestation key and its 1-based line ranges), a line `---`, and a JSON metadata object
//! whose `sessions` (keys `s_<id>::t_<trace>`), `prompts` (legacy bare hex keys) and
//! `humans` (`h_` keys) say who each key is.
//!
//! It owns the parsing rules (strict where git-ai's own parser would fail, bounded where a
//! hostile note could make it allocate) and the serialisation. It never reads objects or
//! refs and never decides what a line means to a blame (`ops::gitai` does).

use std::collections::BTreeMap;

/// The schema version git-ai writes and requires.
pub const SCHEMA: &str = "authorship/3.0.0";

/// A parsed note.
#[derive(Debug, Clone, PartialEq)]
pub struct Log {
    pub files: Vec<FileAttestation>,
    pub meta: Metadata,
}

/// One file of the attestation section and its entries, in the order written.
#[derive(Debug, Clone, PartialEq)]
pub struct FileAttestation {
    pub path: String,
    pub entries: Vec<Entry>,
}

/// `  <key> <ranges>`: the key and its inclusive, 1-based line ranges.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: String,
    pub ranges: Vec<(u32, u32)>,
}

/// The metadata section (unknown members are ignored, as git-ai's reader ignores them).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Metadata {
    pub schema_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_ai_version: Option<String>,
    pub base_commit_sha: String,
    pub prompts: BTreeMap<String, AgentRecord>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub humans: BTreeMap<String, HumanRecord>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sessions: BTreeMap<String, AgentRecord>,
}

/// A session (or a legacy prompt) record: the agent that wrote the lines.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AgentRecord {
    pub agent_id: AgentId,
    #[serde(default)]
    pub human_author: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_attributes: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AgentId {
    pub tool: String,
    pub id: String,
    pub model: String,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HumanRecord {
    pub author: String,
}

/// Who a key names.
#[derive(Debug, Clone, PartialEq)]
pub enum Origin<'a> {
    /// An agent: `group` is the session id (`s_…`, without its trace) or the legacy key.
    Agent {
        group: &'a str,
        record: &'a AgentRecord,
    },
    /// A person git-ai saw typing.
    Human,
}

/// Biggest note read (git-ai's notes hold line ranges and a few records; a bigger blob is
/// not one of them).
pub const MAX_NOTE: u64 = 16 << 20;

/// Parse a note. The error says what is wrong and where (line numbers of the note).
pub fn parse(bytes: &[u8]) -> Result<Log, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "the note is not UTF-8".to_string())?;
    let lines: Vec<&str> = text.lines().collect();
    let divider = lines
        .iter()
        .position(|l| *l == "---")
        .ok_or("no `---` line divides the attestations from the metadata")?;
    let files = parse_attestations(&lines[..divider])?;
    let json = lines[divider + 1..].join("\n");
    let meta: Metadata =
        serde_json::from_str(&json).map_err(|e| format!("the metadata is not valid: {e}"))?;
    if meta.schema_version != SCHEMA {
        return Err(format!(
            "schema {:?}, not {SCHEMA}",
            meta.schema_version.chars().take(64).collect::<String>()
        ));
    }
    Ok(Log { files, meta })
}

fn parse_attestations(lines: &[&str]) -> Result<Vec<FileAttestation>, String> {
    let mut files: Vec<FileAttestation> = vec![];
    for (n, raw) in lines.iter().enumerate() {
        let line = raw.trim_end();
        if line.is_empty() {
            continue;
        }
        let at = n + 1;
        if let Some(entry) = line.strip_prefix("  ") {
            let (key, ranges) = entry
                .split_once(' ')
                .ok_or_else(|| format!("line {at}: an entry without line ranges"))?;
            if key.is_empty() || key.contains(char::is_whitespace) {
                return Err(format!("line {at}: an entry without a key"));
            }
            let ranges = parse_ranges(ranges).map_err(|e| format!("line {at}: {e}"))?;
            let file = files
                .last_mut()
                .ok_or_else(|| format!("line {at}: an entry before any file"))?;
            file.entries.push(Entry {
                key: key.to_string(),
                ranges,
            });
        } else {
            let path = match line.strip_prefix('"').and_then(|l| l.strip_suffix('"')) {
                Some(p) => p,
                None => line,
            };
            files.push(FileAttestation {
                path: path.to_string(),
                entries: vec![],
            });
        }
    }
    files.retain(|f| !f.entries.is_empty());
    Ok(files)
}

/// `1,2,19-222`: inclusive ranges, each start at least 1 and no end before its start.
fn parse_ranges(s: &str) -> Result<Vec<(u32, u32)>, String> {
    let mut out = vec![];
    for part in s.split(',').filter(|p| !p.is_empty()) {
        let num = |v: &str| {
            v.parse::<u32>().map_err(|_| {
                format!(
                    "{:?} is not a line range",
                    part.chars().take(40).collect::<String>()
                )
            })
        };
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let a = num(part)?;
                (a, a)
            }
        };
        if a == 0 || b < a {
            return Err(format!(
                "{part:?} is not a line range (1-based, start ≤ end)"
            ));
        }
        out.push((a, b));
    }
    if out.is_empty() {
        return Err("an entry without line ranges".into());
    }
    Ok(out)
}

impl Log {
    /// Who `key` names, by its prefix (`s_` a session, `h_` a person, else a legacy
    /// prompt); `None` when the metadata has no record for it.
    pub fn origin(&self, key: &str) -> Option<Origin<'_>> {
        if key.starts_with("h_") {
            return self.meta.humans.get(key).map(|_| Origin::Human);
        }
        if key.starts_with("s_") {
            let session = key.split("::").next().unwrap_or(key);
            return self
                .meta
                .sessions
                .get_key_value(session)
                .map(|(group, record)| Origin::Agent { group, record });
        }
        self.meta
            .prompts
            .get_key_value(key)
            .map(|(group, record)| Origin::Agent { group, record })
    }

    /// The note's text, laid out as git-ai writes it.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for f in &self.files {
            if needs_quotes(&f.path) {
                out.push_str(&format!("\"{}\"\n", f.path));
            } else {
                out.push_str(&f.path);
                out.push('\n');
            }
            for e in &f.entries {
                let ranges: Vec<String> = e
                    .ranges
                    .iter()
                    .map(|(a, b)| {
                        if a == b {
                            a.to_string()
                        } else {
                            format!("{a}-{b}")
                        }
                    })
                    .collect();
                out.push_str(&format!("  {} {}\n", e.key, ranges.join(",")));
            }
        }
        out.push_str("---\n");
        out.push_str(&serde_json::to_string_pretty(&self.meta).expect("json"));
        out
    }
}

/// git-ai quotes a path holding whitespace; `---` alone would read as the divider.
fn needs_quotes(path: &str) -> bool {
    path.contains([' ', '\t']) || path == "---"
}

/// Whether a path can be written in a note at all: a quote or a line break inside it cannot
/// be read back (the format has no escapes).
pub fn writable_path(path: &str) -> bool {
    !path.is_empty() && !path.contains(['"', '\n', '\r'])
}

/// Consecutive line numbers (sorted) as inclusive ranges.
pub fn ranges_of(lines: &[u32]) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = vec![];
    for &n in lines {
        match out.last_mut() {
            Some((_, end)) if *end + 1 == n => *end = n,
            _ => out.push((n, n)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_bad_entries() {
        assert_eq!(
            parse_ranges("1,2,19-222").unwrap(),
            vec![(1, 1), (2, 2), (19, 222)]
        );
        for bad in ["0", "5-3", "a", "1-", "-2", "99999999999", ""] {
            assert!(parse_ranges(bad).is_err(), "{bad}");
        }
        assert!(parse(b"  k 1\n---\n{}").is_err());
        assert!(parse(b"f\n  k 1\n").is_err());
        assert!(parse(b"f\n  k\n---\n{}").is_err());
        assert!(parse(&[0xff, 0xfe]).is_err());
        let schema = br#"---
{"schema_version":"authorship/2.0.0","base_commit_sha":"","prompts":{}}"#;
        assert!(parse(schema).unwrap_err().contains("schema"));
    }

    #[test]
    fn round_trip_keeps_quoted_paths() {
        let note = "\"a b.rs\"\n  s_0123456789abcd::t_0123456789abcd 1-3,7\n\"---\"\n  abcdabcdabcdabcd 2\n---\n{\n  \"schema_version\": \"authorship/3.0.0\",\n  \"base_commit_sha\": \"x\",\n  \"prompts\": {}\n}";
        let log = parse(note.as_bytes()).unwrap();
        assert_eq!(log.files[0].path, "a b.rs");
        assert_eq!(log.files[1].path, "---");
        assert_eq!(log.to_text(), note);
        assert_eq!(
            ranges_of(&[1, 2, 3, 7, 9, 10]),
            vec![(1, 3), (7, 7), (9, 10)]
        );
    }
}
