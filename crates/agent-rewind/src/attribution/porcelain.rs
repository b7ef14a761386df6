//! Reading `git blame --porcelain`: per line of the file, the commit git found it in, its
//! line number and path there, and that commit's author. A parser of git's output only: it
//! never decides who wrote a line.

use agent_rewind_core::error::{Error, Result};
use std::collections::HashMap;
use std::rc::Rc;

/// What git says of a commit a line came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineCommit {
    /// Full hex id; forty zeros for lines not committed yet.
    pub id: String,
    pub author: String,
    pub author_mail: String,
    pub author_time: i64,
    pub author_tz: String,
    /// When the commit was made (seconds): no turn recorded later can have written its
    /// lines.
    pub committer_time: i64,
    pub summary: String,
    /// The commit is the blame's boundary (`^` in git's own output).
    pub boundary: bool,
}

impl LineCommit {
    pub fn committed(&self) -> bool {
        self.id.bytes().any(|b| b != b'0')
    }
}

/// One line of the file.
#[derive(Debug, Clone)]
pub struct BlameLine {
    pub commit: Rc<LineCommit>,
    /// Line number in the commit's version of the file (1-based).
    pub orig_line: u32,
    /// Line number in the file blamed (1-based).
    pub final_line: u32,
    /// The path in the commit the line came from.
    pub orig_path: String,
    /// The line's bytes, without its line break.
    pub content: Vec<u8>,
}

fn bad(what: &str) -> Error {
    Error::git(format!("git blame printed something unexpected: {what}"))
}

/// Every line git printed, in file order.
pub fn parse_porcelain(out: &[u8]) -> Result<Vec<BlameLine>> {
    let mut commits: HashMap<String, LineCommit> = HashMap::new();
    let mut paths: HashMap<String, String> = HashMap::new();
    let mut shared: HashMap<String, Rc<LineCommit>> = HashMap::new();
    let mut lines = vec![];
    let mut current: Option<(String, u32, u32)> = None;
    let body = out.strip_suffix(b"\n").unwrap_or(out);
    if body.is_empty() {
        return Ok(lines);
    }
    for raw in body.split(|b| *b == b'\n') {
        if let Some(content) = raw.strip_prefix(b"\t") {
            let (id, orig, fin) = current
                .take()
                .ok_or_else(|| bad("a line without a header"))?;
            let commit = match shared.get(&id) {
                Some(c) => c.clone(),
                None => {
                    let c = Rc::new(commits.get(&id).cloned().unwrap_or_else(|| LineCommit {
                        id: id.clone(),
                        ..Default::default()
                    }));
                    shared.insert(id.clone(), c.clone());
                    c
                }
            };
            lines.push(BlameLine {
                commit,
                orig_line: orig,
                final_line: fin,
                orig_path: paths.get(&id).cloned().unwrap_or_default(),
                content: content.to_vec(),
            });
            continue;
        }
        let text = String::from_utf8_lossy(raw);
        let (key, value) = text.split_once(' ').unwrap_or((&text, ""));
        // A commit's full id: 40 hex digits, 64 in a SHA-256 repository.
        if matches!(key.len(), 40 | 64) && key.bytes().all(|b| b.is_ascii_hexdigit()) {
            let mut n = value.split(' ').map(|v| v.parse::<u32>());
            let (Some(Ok(orig)), Some(Ok(fin))) = (n.next(), n.next()) else {
                return Err(bad(&text));
            };
            commits
                .entry(key.to_string())
                .or_insert_with(|| LineCommit {
                    id: key.to_string(),
                    ..Default::default()
                });
            current = Some((key.to_string(), orig, fin));
            continue;
        }
        let Some((id, _, _)) = &current else {
            return Err(bad(&text));
        };
        if key == "filename" {
            paths.insert(id.clone(), value.to_string());
            continue;
        }
        let c = commits.get_mut(id).expect("inserted with its header");
        match key {
            "author" => c.author = value.to_string(),
            "author-mail" => c.author_mail = value.to_string(),
            "author-time" => c.author_time = value.parse().unwrap_or(0),
            "author-tz" => c.author_tz = value.to_string(),
            "committer-time" => c.committer_time = value.parse().unwrap_or(0),
            "summary" => c.summary = value.to_string(),
            "boundary" => c.boundary = true,
            _ => {}
        }
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn porcelain_groups_share_their_commit_and_path() {
        let a = "a".repeat(40);
        let out = format!(
            "{a} 1 1 2\nauthor P\nauthor-mail <p@x>\nauthor-time 5\nauthor-tz +0000\nsummary s\nboundary\nfilename f.txt\n\tone\n{a} 2 2\n\ttwo\n"
        );
        let lines = parse_porcelain(out.as_bytes()).unwrap();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1].commit.author, "P");
        assert_eq!(lines[1].orig_path, "f.txt");
        assert_eq!(lines[1].content, b"two");
        assert!(lines[0].commit.boundary);
        assert!(parse_porcelain(b"\tno header\n").is_err());
    }
}
