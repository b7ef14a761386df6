//! File names are bytes: how they are shown and how they go into JSON without loss.
//!
//! Display follows git's `core.quotePath` (its default, `true`): a name holding a control
//! character, a double quote, a backslash or a byte ≥ 0x80 is shown C-quoted, between
//! double quotes, with `\t`, `\n`, `\"`, `\\`… and octal escapes (`\351`); any other name is
//! shown as it is. JSON (docs/FORMAT.md, "Paths in JSON"): a UTF-8 name is a plain string;
//! any other is an object `{"base64": …, "quoted": …}`. Pure functions: never touches disk.

use serde::{Serialize, Serializer};
use std::borrow::Cow;

/// Whether git would quote a name holding this byte.
fn needs_quoting(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\' || b >= 0x7f
}

/// `name` as git shows it (`core.quotePath=true`): as it is, or C-quoted between double
/// quotes when it holds a byte git quotes.
pub fn quote_path(name: &[u8]) -> Cow<'_, str> {
    if !name.iter().copied().any(needs_quoting) {
        // Only printable ASCII left: valid UTF-8.
        return Cow::Borrowed(std::str::from_utf8(name).expect("printable ASCII"));
    }
    let mut s = String::with_capacity(name.len() + 8);
    s.push('"');
    for &b in name {
        match b {
            0x07 => s.push_str("\\a"),
            0x08 => s.push_str("\\b"),
            b'\t' => s.push_str("\\t"),
            b'\n' => s.push_str("\\n"),
            0x0b => s.push_str("\\v"),
            0x0c => s.push_str("\\f"),
            b'\r' => s.push_str("\\r"),
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            b if needs_quoting(b) => s.push_str(&format!("\\{b:03o}")),
            b => s.push(b as char),
        }
    }
    s.push('"');
    Cow::Owned(s)
}

/// `prefix` + `name` quoted as one, as git prints `a/<path>` in a diff header.
pub fn quote_prefixed(prefix: &str, name: &[u8]) -> String {
    let mut full = prefix.as_bytes().to_vec();
    full.extend_from_slice(name);
    quote_path(&full).into_owned()
}

/// A file name as bytes: shown quoted (Display), serialized losslessly.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PathBytes(pub Vec<u8>);

impl std::fmt::Display for PathBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&quote_path(&self.0))
    }
}

impl Serialize for PathBytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        json_path(&self.0).serialize(s)
    }
}

/// The JSON value of a file name: a string when it is UTF-8, else
/// `{"base64": <the bytes, standard base64>, "quoted": <git's quoted form>}`.
pub fn json_path(name: &[u8]) -> serde_json::Value {
    match std::str::from_utf8(name) {
        Ok(s) => serde_json::Value::String(s.to_string()),
        Err(_) => serde_json::json!({
            "base64": base64(name),
            "quoted": quote_path(name),
        }),
    }
}

/// A file name in a text field that must stay a string (a note's `excluded` list): the name
/// itself when it is UTF-8, else git's quoted form (which starts with a double quote).
pub fn text_path(name: &[u8]) -> String {
    match std::str::from_utf8(name) {
        Ok(s) => s.to_string(),
        Err(_) => quote_path(name).into_owned(),
    }
}

/// A path from a text field ([`text_path`]) for the terminal: quoted as git quotes it,
/// unless it already is.
pub fn display_text_path(path: &str) -> Cow<'_, str> {
    if path.starts_with('"') {
        Cow::Borrowed(path)
    } else {
        quote_path(path.as_bytes())
    }
}

/// Standard base64 (RFC 4648, with padding).
pub fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A worktree-relative path (bytes, `/`-separated) as a filesystem path (the platform's
/// rule: [`crate::platform::paths`]).
pub use crate::platform::paths::rel_path;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_as_git_does() {
        assert_eq!(quote_path(b"plain/name.txt"), "plain/name.txt");
        assert_eq!(quote_path(b"with space"), "with space");
        assert_eq!(quote_path(b"latin1-\xe9.txt"), "\"latin1-\\351.txt\"");
        assert_eq!(quote_path("é".as_bytes()), "\"\\303\\251\"");
        assert_eq!(quote_path(b"a\tb\nc"), "\"a\\tb\\nc\"");
        assert_eq!(quote_path(b"q\"b\\"), "\"q\\\"b\\\\\"");
        assert_eq!(quote_path(b"\x01\x7f"), "\"\\001\\177\"");
        assert_eq!(quote_prefixed("a/", b"x\ty"), "\"a/x\\ty\"");
    }

    #[test]
    fn base64_matches_rfc4648() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(i.as_bytes()), o);
        }
    }

    #[test]
    fn json_is_lossless() {
        assert_eq!(json_path(b"a\nb"), serde_json::json!("a\nb"));
        assert_eq!(
            json_path(b"latin1-\xe9.txt"),
            serde_json::json!({"base64": "bGF0aW4xLekudHh0", "quoted": "\"latin1-\\351.txt\""})
        );
    }
}
