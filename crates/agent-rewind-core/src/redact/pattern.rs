//! A secret rule's regex, checked when the rules are read and compiled the first time a scan
//! needs it: most scans (a hook's few metadata values) reach no rule past the keyword
//! prefilter, and compiling every rule up front cost more than the rest of a session-start
//! hook (docs/PERFORMANCE.md, "agent hooks").
//!
//! Owns the translation of a Go RE2 pattern to Rust's regex (ASCII classes, literal braces
//! escaped); never scans (the rules do).
//!
//! Patterns are read without Unicode classes: regex is built without its Unicode tables,
//! whose pointers the loader would relocate at every start of every command (about 110 KB;
//! docs/design/startup.md). No rule of gitleaks' set needs them; a rule with
//! `\p{…}` is skipped with that reason.

use regex::bytes::{Regex, RegexBuilder};
use std::sync::OnceLock;

/// Regexes larger than this compile to an error instead of using unbounded memory.
const REGEX_SIZE_LIMIT: usize = 64 << 20;

/// A parsed pattern, compiled on first use.
#[derive(Debug, Clone)]
pub(super) struct Pattern {
    source: String,
    /// Groups, the whole match included; `None` for a built-in pattern, not parsed before
    /// its first use.
    captures: Option<usize>,
    /// `None` when it parsed but did not compile (its compiled size is over the limit): it
    /// then matches nothing.
    compiled: OnceLock<Option<Regex>>,
}

impl Pattern {
    /// Parse a Go RE2 pattern with RE2's ASCII classes (`\d`, `\w`, `\b`). The error is
    /// the parser's last line.
    pub(super) fn new(pattern: &str) -> Result<Pattern, String> {
        let source = literal_braces(pattern);
        let hir = regex_syntax::ParserBuilder::new()
            .unicode(false)
            .utf8(false)
            .build()
            .parse(&source)
            .map_err(|e| unicode_named(&e))?;
        Ok(Pattern {
            captures: Some(hir.properties().explicit_captures_len() + 1),
            source,
            compiled: OnceLock::new(),
        })
    }

    /// A built-in pattern, not parsed until it is compiled: every command that redacts a
    /// value reads the built-in rules, and parsing their ~150 patterns up front cost more
    /// than reading the rule file. The built-in rules' unit tests parse and compile each.
    pub(super) fn trusted(pattern: &str) -> Pattern {
        Pattern {
            source: literal_braces(pattern),
            captures: None,
            compiled: OnceLock::new(),
        }
    }

    /// How many groups a match has, the whole match included (`None` before a built-in
    /// pattern is compiled).
    pub(super) fn captures_len(&self) -> Option<usize> {
        self.captures
    }

    /// The compiled regex; `None` if it is too large to compile.
    pub(super) fn regex(&self) -> Option<&Regex> {
        self.compiled
            .get_or_init(|| {
                RegexBuilder::new(&self.source)
                    .unicode(false)
                    .size_limit(REGEX_SIZE_LIMIT)
                    .build()
                    .ok()
            })
            .as_ref()
    }

    pub(super) fn is_match(&self, hay: &[u8]) -> bool {
        self.regex().is_some_and(|r| r.is_match(hay))
    }
}

fn last_line(s: &str) -> String {
    s.lines().last().unwrap_or("").trim().to_string()
}

/// The parser's error (its last line), saying what it means when the pattern asks for
/// Unicode (`\p{…}`, `(?u)`), which the ASCII-only parser refuses.
fn unicode_named(e: &regex_syntax::Error) -> String {
    let error = last_line(&e.to_string());
    match e {
        regex_syntax::Error::Translate(t)
            if *t.kind() == regex_syntax::hir::ErrorKind::UnicodeNotAllowed =>
        {
            format!("Unicode classes (\\p{{…}}) are not supported ({error})")
        }
        _ => error,
    }
}

/// RE2 reads a `{` that does not start a repetition (`{2}`, `{2,}`, `{2,5}` after something
/// to repeat) as a literal brace; Rust's regex refuses it. Escape those.
pub(super) fn literal_braces(pattern: &str) -> String {
    let b = pattern.as_bytes();
    let mut out = String::with_capacity(pattern.len() + 8);
    let (mut i, mut in_class, mut prev) = (0, false, None::<u8>);
    while i < b.len() {
        let c = b[i];
        if c == b'\\' && i + 1 < b.len() {
            // `\p{Greek}`, `\x{263a}`: the braces belong to the escape.
            if matches!(b[i + 1], b'p' | b'P' | b'x') && b.get(i + 2) == Some(&b'{') {
                let n = pattern[i..].find('}').map_or(b.len() - i, |n| n + 1);
                out.push_str(&pattern[i..i + n]);
                prev = Some(b'a');
                i += n;
                continue;
            }
            out.push_str(&pattern[i..i + 2]);
            prev = Some(b'a');
            i += 2;
            continue;
        }
        match c {
            b'[' if !in_class => in_class = true,
            b']' if in_class => in_class = false,
            b'{' if !in_class => {
                let rest = &pattern[i + 1..];
                let close = rest.find('}');
                let valid = close.is_some_and(|n| {
                    let inner = &rest[..n];
                    let (lo, hi) = inner.split_once(',').unwrap_or((inner, "0"));
                    !lo.is_empty()
                        && lo.bytes().all(|d| d.is_ascii_digit())
                        && hi.bytes().all(|d| d.is_ascii_digit())
                });
                let repeatable = !matches!(prev, None | Some(b'(' | b'|'));
                if !(valid && repeatable) {
                    out.push_str("\\{");
                    prev = Some(b'a');
                    i += 1;
                    continue;
                }
                // A valid repetition: copy it whole, so its `}` is not escaped below.
                let n = close.unwrap_or(0);
                out.push_str(&pattern[i..i + n + 2]);
                prev = Some(b'}');
                i += n + 2;
                continue;
            }
            b'}' if !in_class => {
                out.push_str("\\}");
                prev = Some(b'a');
                i += 1;
                continue;
            }
            _ => {}
        }
        let ch = pattern[i..].chars().next().unwrap_or('\0');
        out.push(ch);
        prev = Some(c);
        i += ch.len_utf8();
    }
    out
}
