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

/// A line as `-w` compares it, every ASCII whitespace byte (a CR too) left out, as a 64-bit
/// FNV-1a digest: equal lines have equal keys, and two different lines share one with a
/// chance of 2^-64 (then they would count as equal; keys never leave the process).
pub fn key(line: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in line {
        if !b.is_ascii_whitespace() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// Whether a line says too little to be recognised away from its place (nothing but
/// punctuation and whitespace: `}`, an empty line): such a line is matched only by its
/// position.
pub fn is_trivial(line: &[u8]) -> bool {
    !line.iter().any(|b| b.is_ascii_alphanumeric() || *b >= 0x80)
}

/// The [`key`] of every line of `data`.
pub fn keys(data: &[u8]) -> Vec<u64> {
    lines(data).into_iter().map(key).collect()
}

/// For each line of `new`, the index of the line of `old` it is kept from (a line diff,
/// whitespace ignored), or `None` for a line the change added.
pub fn kept_lines(old: &[u8], new: &[u8]) -> Vec<Option<u32>> {
    kept_keys(&keys(old), &keys(new))
}

/// [`kept_lines`] of lines already turned into keys.
pub fn kept_keys(old: &[u64], new: &[u64]) -> Vec<Option<u32>> {
    let mut input: InternedInput<u64> = InternedInput::default();
    input.update_before(old.iter().copied());
    input.update_after(new.iter().copied());
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
        assert!(is_trivial(b"  });"));
        assert_eq!(key(b"a b"), key(b"ab\r"));
        assert_ne!(key(b"ab"), key(b"ba"));
        assert!(!is_trivial(b"x"));
    }
}
