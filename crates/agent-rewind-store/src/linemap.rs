//! Which lines of a new text are the lines of an old one, compared as `git blame -w`
//! compares them (whitespace ignored): the line alignment attribution carries authors
//! through (`agent_rewind::attribution`). Pure functions over bytes; it must never read
//! objects or files, nor decide who wrote anything.

use gix::diff::blob::{Algorithm, Diff, InternedInput};

/// The lines of `data`, split after each `\n` and without it (a last line without its
/// line break is a line; an empty text has none), as git blame counts them.
pub fn lines(data: &[u8]) -> Vec<&[u8]> {
    if data.is_empty() {
        return vec![];
    }
    let body = data.strip_suffix(b"\n").unwrap_or(data);
    body.split(|b| *b == b'\n').collect()
}

/// A line as `-w` compares it: every ASCII whitespace byte (a CR too) left out.
pub fn key(line: &[u8]) -> Vec<u8> {
    line.iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect()
}

/// Whether a compared line says too little to be recognised away from its place (nothing
/// but punctuation: `}`, an empty line): such a line is matched only by its position.
pub fn is_trivial(key: &[u8]) -> bool {
    !key.iter().any(|b| b.is_ascii_alphanumeric() || *b >= 0x80)
}

/// For each line of `new`, the index of the line of `old` it is kept from (a line diff,
/// whitespace ignored), or `None` for a line the change added.
pub fn kept_lines(old: &[u8], new: &[u8]) -> Vec<Option<u32>> {
    kept_keys(
        &lines(old).into_iter().map(key).collect::<Vec<_>>(),
        &lines(new).into_iter().map(key).collect::<Vec<_>>(),
    )
}

/// [`kept_lines`] of lines already turned into keys.
pub fn kept_keys(old: &[Vec<u8>], new: &[Vec<u8>]) -> Vec<Option<u32>> {
    let mut input: InternedInput<&[u8]> = InternedInput::default();
    input.update_before(old.iter().map(Vec::as_slice));
    input.update_after(new.iter().map(Vec::as_slice));
    let diff = Diff::compute(Algorithm::Histogram, &input);
    let mut out = vec![None; new.len()];
    let mut o: u32 = 0;
    for (n, slot) in out.iter_mut().enumerate() {
        if diff.is_added(n as u32) {
            continue;
        }
        while (o as usize) < old.len() && diff.is_removed(o) {
            o += 1;
        }
        if (o as usize) < old.len() {
            *slot = Some(o);
            o += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_lines_follow_the_diff_and_ignore_whitespace() {
        assert_eq!(lines(b""), Vec::<&[u8]>::new());
        assert_eq!(lines(b"a\nb"), vec![&b"a"[..], b"b"]);
        assert_eq!(lines(b"a\n\n"), vec![&b"a"[..], b""]);
        let old = b"fn a() {\n    one();\n}\n";
        let new = b"fn a() {\n        one();\n    two();\n}\n";
        assert_eq!(kept_lines(old, new), vec![Some(0), Some(1), None, Some(2)]);
        assert_eq!(kept_lines(b"", b"x\n"), vec![None]);
        assert!(is_trivial(b"});"));
        assert!(!is_trivial(b"x"));
    }
}
