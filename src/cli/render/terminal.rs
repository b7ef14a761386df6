//! Terminal safety: fields that came from a user or a remote (labels, writers, sessions,
//! messages, paths) shown the way git quotes paths, and a last pass that escapes every
//! control character of human output but our own colour codes. Never decides what to print.

/// A field that came from a user or a remote (label, writer, session, message, path, ...)
/// made safe for a terminal the way git quotes paths (`core.quotePath`): unchanged when it
/// holds no control character, else in double quotes with C escapes (`\t`, `\n`, `\033`,
/// `\\`, `\"`), so an ESC/OSC sequence is shown, never obeyed.
pub fn escape(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(is_control) {
        return s.into();
    }
    let mut out = String::with_capacity(s.len() + 8);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => push_escaped(&mut out, c),
        }
    }
    out.push('"');
    out.into()
}

/// A label in double quotes (escaped as [`escape`] does when it holds control characters).
pub fn quoted(s: &str) -> String {
    match escape(s) {
        std::borrow::Cow::Borrowed(s) => format!("\"{s}\""),
        std::borrow::Cow::Owned(q) => q,
    }
}

/// Free text of several lines (a message) for `show`'s `key: value` layout: each line
/// escaped, continuation lines indented under the value so none can pass for a field.
pub(super) fn multiline(s: &str) -> String {
    s.lines()
        .map(|l| escape(l).into_owned())
        .collect::<Vec<_>>()
        .join(&format!("\n{:14}", ""))
}

/// C0/C1 controls and DEL, the bidirectional overrides that reorder what a terminal shows,
/// and our colour marks.
fn is_control(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | OPEN | CLOSE)
}

/// The marks of a colour code (`OPEN 33 CLOSE`): private-use characters that fields never
/// carry unescaped.
pub(super) const OPEN: char = '\u{e000}';
pub(super) const CLOSE: char = '\u{e001}';

/// Text on its way to the terminal: every control character escaped (line breaks and tabs
/// kept), whatever field or library message it came from, and our colour marks made real
/// colour codes. The last guard: fields are escaped (`escape`) where they are rendered too.
pub fn terminal_safe(s: &str) -> std::borrow::Cow<'_, str> {
    // Most text has nothing to escape: one scan, no copy (a 100,000-run `list` table is
    // megabytes).
    if !s.chars().any(|c| is_control(c) && c != '\n' && c != '\t') {
        return s.into();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if c == OPEN
            && let Some(end) = rest.find(CLOSE)
            && rest[OPEN.len_utf8()..end]
                .chars()
                .all(|d| d.is_ascii_digit() || d == ';')
        {
            out.push_str("\x1b[");
            out.push_str(&rest[OPEN.len_utf8()..end]);
            out.push('m');
            rest = &rest[end + CLOSE.len_utf8()..];
            continue;
        }
        match c {
            '\n' | '\t' => out.push(c),
            c => push_escaped(&mut out, c),
        }
        rest = &rest[c.len_utf8()..];
    }
    out.into()
}

/// Colour codes (`ESC [ 1;31 m`) of git's own output as our marks, so that they survive
/// [`terminal_safe`] while every other escape sequence is shown, not obeyed.
pub fn colour_marks(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("\x1b[") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let n = after
            .find(|c: char| !(c.is_ascii_digit() || c == ';'))
            .unwrap_or(after.len());
        if after[n..].starts_with('m') {
            out.push(OPEN);
            out.push_str(&after[..n]);
            out.push(CLOSE);
            rest = &after[n + 1..];
        } else {
            out.push('\x1b');
            rest = &rest[i + 1..];
        }
    }
    out.push_str(rest);
    out
}

/// A warning on stderr, terminal-safe.
pub fn warn(msg: &str) {
    crate::cli::stderr_line(&format!("warning: {}", terminal_safe(msg)));
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\x07' => out.push_str("\\a"),
        '\x08' => out.push_str("\\b"),
        '\t' => out.push_str("\\t"),
        '\n' => out.push_str("\\n"),
        '\x0b' => out.push_str("\\v"),
        '\x0c' => out.push_str("\\f"),
        '\r' => out.push_str("\\r"),
        c if is_control(c) => {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\{b:03o}"));
            }
        }
        c => out.push(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::render::Style;

    #[test]
    fn fields_are_quoted_as_git_quotes_paths() {
        assert_eq!(escape("plain label"), "plain label");
        assert_eq!(escape("a\"b\\c"), "a\"b\\c");
        assert_eq!(escape("a\tb\"c\\"), "\"a\\tb\\\"c\\\\\"");
        assert_eq!(escape("a\x1b[2Jb"), "\"a\\033[2Jb\"");
        assert_eq!(escape("t\x07\r\n"), "\"t\\a\\r\\n\"");
        assert_eq!(escape("q\"\x1b"), "\"q\\\"\\033\"");
        assert_eq!(escape("\u{202e}x"), "\"\\342\\200\\256x\"");
        assert_eq!(quoted("x"), "\"x\"");
        assert_eq!(quoted("x\x1b"), "\"x\\033\"");
    }

    #[test]
    fn only_our_colour_marks_become_escape_sequences() {
        let st = Style { color: true };
        assert_eq!(terminal_safe(&st.id("r1")), "\x1b[33mr1\x1b[0m");
        assert_eq!(terminal_safe("a\x1b]0;t\x07\nb\tc"), "a\\033]0;t\\a\nb\tc");
        // A mark smuggled in a field is escaped by `escape` before it gets here.
        assert!(!terminal_safe(&escape("\u{e000}31\u{e001}x")).contains('\x1b'));
        let git = "\x1b[1mdiff\x1b[m \x1b[32m+x\x1b]0;t\x07\x1b[m";
        assert_eq!(
            terminal_safe(&colour_marks(git)),
            "\x1b[1mdiff\x1b[m \x1b[32m+x\\033]0;t\\a\x1b[m"
        );
    }
}
