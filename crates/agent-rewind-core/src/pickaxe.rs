//! git's pickaxe over bytes: how many times a string (or, with `--pickaxe-regex`, a
//! regex) occurs in a text (`log -S`), and whether a patch adds or removes a line that a
//! regex matches (`log -G`). Pure functions: it must never read objects or files, nor
//! decide which versions to compare.

use crate::error::{Error, Result};
use regex::bytes::{Regex, RegexBuilder};

/// Compiled regexes larger than this are refused, as the secret rules refuse theirs.
const SIZE_LIMIT: usize = 10 << 20;

/// What `log -S`/`-G` looks for.
#[derive(Debug, Clone)]
pub struct Pickaxe {
    regex: Regex,
    kind: PickaxeKind,
}

/// `-S` compares counts of occurrences; `-G` looks at the added and removed lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickaxeKind {
    Occurrences,
    ChangedLines,
}

impl Pickaxe {
    /// `-S <needle>`: the string itself, or a regex when `as_regex` (`--pickaxe-regex`).
    pub fn occurrences(needle: &str, as_regex: bool) -> Result<Pickaxe> {
        let source = if as_regex {
            needle.to_string()
        } else {
            regex::escape(needle)
        };
        Self::compile(needle, &source, PickaxeKind::Occurrences)
    }

    /// `-G <regex>`.
    pub fn changed_lines(pattern: &str) -> Result<Pickaxe> {
        Self::compile(pattern, pattern, PickaxeKind::ChangedLines)
    }

    fn compile(given: &str, source: &str, kind: PickaxeKind) -> Result<Pickaxe> {
        if given.is_empty() {
            return Err(Error::usage(
                "the pickaxe needs a non-empty string or regex",
            ));
        }
        // Bytes, not Unicode: files are bytes, and `.` should match any of them as git's
        // regexes do in the C locale.
        let regex = RegexBuilder::new(source)
            .unicode(false)
            .size_limit(SIZE_LIMIT)
            .build()
            .map_err(|e| {
                let why = e.to_string();
                let last = why.lines().last().unwrap_or("").trim().to_string();
                Error::usage(format!("invalid regex {given:?}: {last}"))
            })?;
        Ok(Pickaxe { regex, kind })
    }

    pub fn kind(&self) -> PickaxeKind {
        self.kind
    }

    /// Non-overlapping occurrences in `data`, as git counts them (each search resumes after
    /// the previous match).
    pub fn count(&self, data: &[u8]) -> usize {
        self.regex.find_iter(data).count()
    }

    /// Whether `data` holds at least one occurrence.
    pub fn occurs_in(&self, data: &[u8]) -> bool {
        self.regex.is_match(data)
    }

    /// In a unified patch (`---`/`+++` header, then hunks), how many added and how many
    /// removed lines the regex matches, each line without its `+`/`-` and line break.
    pub fn changed_lines_matching(&self, patch: &[u8]) -> ChangedLines {
        let mut out = ChangedLines::default();
        let mut in_hunks = false;
        for line in patch.split(|b| *b == b'\n') {
            if line.starts_with(b"@@") {
                in_hunks = true;
                continue;
            }
            if !in_hunks {
                continue;
            }
            match line.split_first() {
                Some((b'+', rest)) if self.regex.is_match(rest) => out.added += 1,
                Some((b'-', rest)) if self.regex.is_match(rest) => out.removed += 1,
                _ => {}
            }
        }
        out
    }
}

/// Matching lines a patch adds and removes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChangedLines {
    pub added: usize,
    pub removed: usize,
}

/// Whether git would call `data` binary: a NUL byte in its first 8000 bytes
/// (`buffer_is_binary`). `-G` skips binary files, as git does without `--text`.
pub fn is_binary(data: &[u8]) -> bool {
    data[..data.len().min(8000)].contains(&0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_do_not_overlap_and_a_literal_is_not_a_regex() {
        let p = Pickaxe::occurrences("aa", false).unwrap();
        assert_eq!(p.count(b"aaaa"), 2);
        assert_eq!(p.count(b"aaa"), 1);
        let dot = Pickaxe::occurrences("a.b", false).unwrap();
        assert_eq!(dot.count(b"axb a.b"), 1);
        let re = Pickaxe::occurrences("a.b", true).unwrap();
        assert_eq!(re.count(b"axb a.b"), 2);
    }

    #[test]
    fn changed_lines_skip_the_header_and_context() {
        let p = Pickaxe::changed_lines("^fo+$").unwrap();
        let patch = b"--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n foo\n-bar\n+foo\n-foo\n";
        let got = p.changed_lines_matching(patch);
        assert_eq!(
            got,
            ChangedLines {
                added: 1,
                removed: 1
            }
        );
        let header_only = Pickaxe::changed_lines("x").unwrap();
        assert_eq!(
            header_only.changed_lines_matching(b"--- a/x\n+++ b/x\n"),
            ChangedLines::default()
        );
    }

    #[test]
    fn bad_input_is_a_usage_error() {
        assert!(Pickaxe::occurrences("", false).is_err());
        assert!(Pickaxe::changed_lines("(").is_err());
        assert!(Pickaxe::occurrences("(", false).is_ok());
    }
}
