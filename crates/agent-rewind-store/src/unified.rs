//! The hunks of one text file's patch, byte for byte as `git diff` prints them with its
//! defaults: Myers (not minimal) with the indent heuristic, 3 lines of context, hunks
//! merged when at most 6 unchanged lines lie between, and the default function-name
//! context in hunk headers (git's `xdiff/xemit.c`, `def_ff`).
//!
//! It only renders; whether git would print exactly this for a pair (attributes,
//! config, binary content) is decided by `patch.rs`, never here.

use gix::diff::blob::sources::byte_lines;
use gix::diff::blob::{Algorithm, Diff, IndentHeuristic, IndentLevel, InternedInput};
use std::ops::Range;

/// How many lines the patch from `old` to `new` adds and deletes (`--stat`'s counts).
pub(super) fn counts(old: &[u8], new: &[u8]) -> (i64, i64) {
    let input = InternedInput::new(byte_lines(old), byte_lines(new));
    let diff = Diff::compute(Algorithm::Myers, &input);
    (
        i64::from(diff.count_additions()),
        i64::from(diff.count_removals()),
    )
}

/// The patch of one text file as `git diff` prints it after its `diff --git` and `index`
/// lines: `--- <old_label>`, `+++ <new_label>` and the hunks, one engine for every output
/// (the terminal's `diff`, `--json`, the page). Empty when the two have the same lines.
pub fn text_patch(old_label: &str, new_label: &str, old: &[u8], new: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    hunks(&mut body, old, new);
    if body.is_empty() {
        return body;
    }
    let mut out = Vec::with_capacity(body.len() + old_label.len() + new_label.len() + 10);
    out.extend_from_slice(b"--- ");
    out.extend_from_slice(old_label.as_bytes());
    out.extend_from_slice(b"\n+++ ");
    out.extend_from_slice(new_label.as_bytes());
    out.push(b'\n');
    out.extend_from_slice(&body);
    out
}

/// git's `-U3` and `--inter-hunk-context=0`.
const CONTEXT: u32 = 3;
/// `struct func_line`'s buffer in `xemit.c`: the function line is cut to this many bytes.
const FUNC_LINE_MAX: usize = 80;

/// One change atom (git's `xdchange_t`): lines `before` of the old file replaced by `after`.
struct Atom {
    before: Range<u32>,
    after: Range<u32>,
}

/// Append the hunks of the patch from `old` to `new` (both text: no NUL) to `out`, each
/// starting with its `@@` header; `out` is unchanged when the two have the same lines.
pub(super) fn hunks(out: &mut Vec<u8>, old: &[u8], new: &[u8]) {
    let input = InternedInput::new(byte_lines(old), byte_lines(new));
    let mut diff = Diff::compute(Algorithm::Myers, &input);
    // git's `get_indent` counts only ' ' and '\t' as indentation and treats '\r' and '\n'
    // as blank; imara's also skips a form feed, which git sees as text: hide it.
    diff.postprocess_with_heuristic(
        &input,
        IndentHeuristic::new(|token| {
            let line: &[u8] = input.interner[token];
            IndentLevel::for_ascii_line(
                line.iter().map(|&c| if c == b'\x0c' { b'x' } else { c }),
                8,
            )
        }),
    );
    let atoms: Vec<Atom> = diff
        .hunks()
        .map(|h| Atom {
            before: h.before,
            after: h.after,
        })
        .collect();
    if atoms.is_empty() {
        return;
    }
    let old_lines: Vec<&[u8]> = input.before.iter().map(|&t| input.interner[t]).collect();
    let new_lines: Vec<&[u8]> = input.after.iter().map(|&t| input.interner[t]).collect();
    let (n1, n2) = (old_lines.len() as u32, new_lines.len() as u32);

    // The function line shown in headers: searched backwards from just above a hunk down
    // to where the previous search started, and kept when none is found (`xdl_emit_diff`).
    let mut func: &[u8] = &[];
    let mut func_search_end: i64 = -1;

    let mut first = 0;
    while first < atoms.len() {
        // `xdl_get_hunk`: take following atoms while at most 2 * context lines separate them.
        let mut last = first;
        while last + 1 < atoms.len()
            && atoms[last + 1].before.start - atoms[last].before.end <= 2 * CONTEXT
        {
            last += 1;
        }
        let (xch, xche) = (&atoms[first], &atoms[last]);
        let s1 = xch.before.start.saturating_sub(CONTEXT);
        let s2 = xch.after.start.saturating_sub(CONTEXT);
        let lctx = CONTEXT.min(n1 - xche.before.end).min(n2 - xche.after.end);
        let e1 = xche.before.end + lctx;
        let e2 = xche.after.end + lctx;

        let mut l = i64::from(s1) - 1;
        while l != func_search_end && l >= 0 {
            if let Some(f) = func_name(old_lines[l as usize]) {
                func = f;
                break;
            }
            l -= 1;
        }
        func_search_end = i64::from(s1) - 1;

        out.extend_from_slice(b"@@ -");
        range(out, s1 + 1, e1 - s1);
        out.extend_from_slice(b" +");
        range(out, s2 + 1, e2 - s2);
        out.extend_from_slice(b" @@");
        if !func.is_empty() {
            out.push(b' ');
            out.extend_from_slice(func);
        }
        out.push(b'\n');

        for line in &new_lines[s2 as usize..xch.after.start as usize] {
            record(out, b' ', line);
        }
        for (i, atom) in atoms[first..=last].iter().enumerate() {
            if i > 0 {
                let prev = &atoms[first + i - 1];
                for line in &new_lines[prev.after.end as usize..atom.after.start as usize] {
                    record(out, b' ', line);
                }
            }
            for line in &old_lines[atom.before.start as usize..atom.before.end as usize] {
                record(out, b'-', line);
            }
            for line in &new_lines[atom.after.start as usize..atom.after.end as usize] {
                record(out, b'+', line);
            }
        }
        for line in &new_lines[xche.after.end as usize..e2 as usize] {
            record(out, b' ', line);
        }
        first = last + 1;
    }
}

/// `xdl_emit_hunk_hdr`'s `start,count`: the count left out when 1, and the start one
/// lower when the count is 0.
fn range(out: &mut Vec<u8>, start: u32, count: u32) {
    let start = if count == 0 { start - 1 } else { start };
    out.extend_from_slice(start.to_string().as_bytes());
    if count != 1 {
        out.push(b',');
        out.extend_from_slice(count.to_string().as_bytes());
    }
}

/// One line with its sign, and git's marker when it is the last and has no newline.
fn record(out: &mut Vec<u8>, sign: u8, line: &[u8]) {
    out.push(sign);
    out.extend_from_slice(line);
    if line.last() != Some(&b'\n') {
        out.extend_from_slice(b"\n\\ No newline at end of file\n");
    }
}

/// git's default function line (`def_ff`): a line starting with an ASCII letter, `_` or
/// `$`, cut to 80 bytes, without its trailing whitespace (git's: space, tab, CR, LF).
fn func_name(line: &[u8]) -> Option<&[u8]> {
    let c = *line.first()?;
    if !(c.is_ascii_alphabetic() || c == b'_' || c == b'$') {
        return None;
    }
    let mut f = &line[..line.len().min(FUNC_LINE_MAX)];
    while let [rest @ .., b' ' | b'\t' | b'\r' | b'\n'] = f {
        f = rest;
    }
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch(old: &str, new: &str) -> String {
        let mut out = vec![];
        hunks(&mut out, old.as_bytes(), new.as_bytes());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn headers_counts_and_missing_newline() {
        assert_eq!(
            patch("a\n", "b"),
            "@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n"
        );
        assert_eq!(patch("", "x\n"), "@@ -0,0 +1 @@\n+x\n");
        assert_eq!(patch("x\n", ""), "@@ -1 +0,0 @@\n-x\n");
    }

    #[test]
    fn function_line_is_cut_then_trimmed() {
        let long = format!("fn {}  \n", "x".repeat(100));
        assert_eq!(func_name(long.as_bytes()).unwrap().len(), 80);
        assert_eq!(func_name(b"main() \t\r\n"), Some(&b"main()"[..]));
        assert_eq!(func_name(b"  indented\n"), None);
        assert_eq!(func_name(b"$var\n"), Some(&b"$var"[..]));
    }
}
