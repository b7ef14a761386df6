//! Secret detection for the free-text values we store (metadata, messages, labels, the
//! approver) and for the content of new untracked files. Values that look like credentials
//! are replaced by `[REDACTED]` before anything is written; which paths are left out of
//! snapshots is `store::snapshot`'s policy (the built-in patterns are listed here).
//!
//! Redaction targets secrets, not words: `max_tokens=4096` and `token_count=12` are kept;
//! `ghp_…`, a JWT, `Bearer …`, a private key block, a URL with a password, any value of a
//! `*pass*`/`*secret*` key, and high-entropy values of `*token*` keys are redacted. The
//! rules are listed in docs/SECRETS.md. Pure functions; never touches git.
//!
//! Detection by content comes from the rule set of [`rules`] (gitleaks' format and
//! semantics; `push` scans what it shares with the same rules), plus the key-name rules here.

mod entropy;
mod pattern;
pub mod rules;

/// What a redacted value is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Key names whose (non-trivial) values are always secrets: `DB_PASSWORD`, `dbpass`,
/// `client-secret`, `api_key`, `Authorization` …
const SECRET_KEY_WORDS: &[&str] = &[
    "pass",
    "secret",
    "api_key",
    "apikey",
    "private_key",
    "privatekey",
    "credential",
    "authorization",
    "cookie",
];

/// Key names whose values are secrets only when they look like one (high entropy):
/// `github_token=…` is, `max_tokens=4096` is not.
const TOKEN_KEY_WORDS: &[&str] = &["token", "key", "sig"];

/// Token prefixes of well-known credential formats, with the minimum length of what follows.
const TOKEN_PREFIXES: &[(&str, usize)] = &[
    ("ghp_", 20),
    ("gho_", 20),
    ("ghu_", 20),
    ("ghs_", 20),
    ("ghr_", 20),
    ("github_pat_", 20),
    ("glpat-", 16),
    ("sk-ant-", 16),
    ("sk-proj-", 16),
    ("sk-", 20),
    ("xoxb-", 10),
    ("xoxp-", 10),
    ("xoxa-", 10),
    ("xoxs-", 10),
    ("xapp-", 10),
    ("AKIA", 16),
    ("ASIA", 16),
    ("AIza", 30),
    ("npm_", 30),
    ("hf_", 30),
    ("pypi-", 50),
    ("dop_v1_", 40),
    ("shpat_", 30),
    ("sq0atp-", 20),
];

fn normalized_key(key: &str) -> String {
    key.to_ascii_lowercase().replace('-', "_")
}

/// Whether `key` names a secret whatever its value looks like (`DB_PASSWORD`, `dbpass`,
/// `client_secret`, `Authorization`).
pub fn is_secret_key(key: &str) -> bool {
    let k = normalized_key(key);
    SECRET_KEY_WORDS.iter().any(|w| k.contains(w))
        // `auth` as a word of its own (`auth`, `x_auth`), not inside `author`.
        || k.split(['_', '.']).any(|w| w == "auth")
}

/// Whether `key` names something that is a secret when its value looks random
/// (`github_token`, `signing_key`), as opposed to a count (`max_tokens`).
fn is_token_key(key: &str) -> bool {
    let k = normalized_key(key);
    TOKEN_KEY_WORDS.iter().any(|w| k.contains(w))
}

/// A value that is plainly not a secret even under a secret-named key: empty, a number,
/// a boolean, or a placeholder.
fn is_trivial(value: &str) -> bool {
    let v = value.trim();
    v.is_empty()
        || v.parse::<f64>().is_ok()
        || matches!(
            v.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "none" | "null" | "[redacted]"
        )
}

/// Whether `value` looks randomly generated: at least 16 characters without spaces, of at
/// least two character classes, with a Shannon entropy of at least 3 bits per character.
pub fn looks_random(value: &str) -> bool {
    let v = value.trim();
    if v.len() < 16 || v.chars().any(char::is_whitespace) || v.parse::<f64>().is_ok() {
        return false;
    }
    let classes = [
        v.bytes().any(|b| b.is_ascii_lowercase()),
        v.bytes().any(|b| b.is_ascii_uppercase()),
        v.bytes().any(|b| b.is_ascii_digit()),
        v.bytes().any(|b| !b.is_ascii_alphanumeric()),
    ]
    .iter()
    .filter(|x| **x)
    .count();
    classes >= 2 && entropy::per_char(v) >= 3.0
}

/// Whether `value` contains something that looks like a credential: a known token format,
/// a JWT, an `Authorization` scheme with its token, a private key block, or a password
/// inside a URL (`scheme://user:pass@host`).
pub fn looks_secret(value: &str) -> bool {
    if has_private_key_block(value)
        || url_has_password(value)
        || has_auth_scheme(value)
        || rules::RuleSet::builtin().finds(value)
    {
        return true;
    }
    value
        .split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '=' | ',' | ';' | ':'))
        .any(is_jwt)
        || value
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.'))
            .flat_map(|w| w.split('.'))
            .any(|word| {
                TOKEN_PREFIXES.iter().any(|(p, min)| {
                    word.starts_with(p)
                        && word.len() >= p.len() + min
                        && word[p.len()..].bytes().any(|b| b.is_ascii_digit())
                })
            })
}

/// `-----BEGIN … PRIVATE KEY-----` (RSA, EC, OPENSSH, DSA, ENCRYPTED, PGP … blocks).
pub fn has_private_key_block(text: &str) -> bool {
    let mut rest = text;
    while let Some(i) = rest.find("-----BEGIN ") {
        let after = &rest[i + 11..];
        let header = after.split("-----").next().unwrap_or("");
        if header.len() < 60 && header.contains("PRIVATE KEY") {
            return true;
        }
        rest = after;
    }
    false
}

/// A JSON Web Token: three base64url parts, the first two starting with `eyJ` (`{"`).
fn is_jwt(word: &str) -> bool {
    let parts: Vec<&str> = word.split('.').collect();
    parts.len() == 3
        && parts[0].starts_with("eyJ")
        && parts[1].starts_with("eyJ")
        && parts[0].len() >= 10
        && parts[1].len() >= 10
        && parts.iter().all(|p| {
            p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'=')
        })
}

/// `Bearer <token>`, `Basic <base64>`, `token <token>` as in an `Authorization` header.
fn has_auth_scheme(value: &str) -> bool {
    let words: Vec<&str> = value.split_whitespace().collect();
    words.windows(2).any(|w| {
        let scheme = w[0].trim_start_matches(['"', '\'']).to_ascii_lowercase();
        let scheme = scheme.rsplit(':').next().unwrap_or("");
        matches!(scheme, "bearer" | "basic" | "token" | "digest")
            && w[1].len() >= 8
            && w[1]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.~+/=".contains(&b))
            && w[1].bytes().any(|b| b.is_ascii_digit())
    })
}

fn url_has_password(value: &str) -> bool {
    let mut rest = value;
    while let Some(i) = rest.find("://") {
        let after = &rest[i + 3..];
        let authority = after.split(['/', ' ', '?', '#']).next().unwrap_or("");
        if let Some((userinfo, _host)) = authority.rsplit_once('@')
            && let Some((_, pass)) = userinfo.split_once(':')
            && !pass.is_empty()
        {
            return true;
        }
        rest = after;
    }
    false
}

/// Whether the value of `key` is a secret.
pub fn is_secret(key: &str, value: &str) -> bool {
    if looks_secret(value) {
        return true;
    }
    if is_trivial(value) {
        return false;
    }
    is_secret_key(key) || (is_token_key(key) && looks_random(value))
}

/// Redact one value. Returns the value to store and whether it was redacted.
pub fn redact_value(key: &str, value: &str) -> (String, bool) {
    if is_secret(key, value) {
        (REDACTED.to_string(), true)
    } else {
        (value.to_string(), false)
    }
}

/// Whether the content of a file holds a credential that must not leave this machine: a
/// private key block or a cloud access key (AWS `AKIA…`/`ASIA…`, a Google API key, a
/// GitHub/GitLab/Slack/OpenAI/Anthropic token). Only text up to `limit` bytes is scanned.
pub fn content_holds_secret(content: &[u8], limit: usize) -> Option<&'static str> {
    let head = &content[..content.len().min(limit)];
    if head.contains(&0) {
        // Binary: key stores (*.p12, *.jks) are left out by name instead.
        return None;
    }
    let text = String::from_utf8_lossy(head);
    if has_private_key_block(&text) {
        return Some("private key");
    }
    let cloud = |w: &str| {
        TOKEN_PREFIXES.iter().any(|(p, min)| {
            w.starts_with(p)
                && w.len() >= p.len() + min
                && w[p.len()..].bytes().any(|b| b.is_ascii_digit())
        })
    };
    if text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .any(cloud)
    {
        return Some("access key");
    }
    None
}

/// The built-in secret file patterns (git wildmatch, matched against the file name when
/// the pattern has no `/`). `agentRewind.exclude` adds more.
pub const SECRET_PATH_PATTERNS: &[&str] = &[
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "credentials.json",
    "credentials",
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    ".pgpass",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// (key, value, redacted?) — both directions.
    const CASES: &[(&str, &str, bool)] = &[
        // Kept: counts, numbers, words.
        ("max_tokens", "4096", false),
        ("input_tokens", "1200", false),
        ("output_tokens", "833", false),
        ("token_count", "12", false),
        ("tokens", "1.5k", false),
        ("tokenizer", "cl100k_base", false),
        ("model", "claude-sonnet-4-5", false),
        ("temperature", "0.7", false),
        ("ticket", "JIRA-1234", false),
        ("passes", "3", false),
        ("password_min_length", "12", false),
        ("secret_rotation", "true", false),
        ("note", "remember to rotate the token next week", false),
        ("url", "https://example.com/a?b=c", false),
        ("repo", "git@github.com:org/repo.git", false),
        ("commit", "0123456789abcdef0123456789abcdef01234567", false),
        ("session", "s1", false),
        ("key", "value", false),
        ("primary_key", "id", false),
        ("message", "sk-short", false),
        ("message", "Bearer of bad news", false),
        ("cost_usd", "0.0123", false),
        ("label", "implement the parser", false),
        // Redacted: known formats anywhere.
        (
            "note",
            "token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            true,
        ),
        (
            "x",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
            true,
        ),
        ("x", "glpat-abcdefghij0123456789", true),
        ("x", "sk-ant-api03-abcdefghijklmnop0123456789", true),
        ("x", "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789", true),
        ("x", "xoxb-1234567890-abcdefghij", true),
        ("x", "AKIAABCDEFGHIJ123456", true),
        ("x", "AIzaSyA1234567890abcdefghijklmnopqrstuv", true),
        ("x", "https://user:hunter2@example.com/repo.git", true),
        ("x", "-----BEGIN OPENSSH PRIVATE KEY-----\nabc", true),
        ("x", "-----BEGIN RSA PRIVATE KEY-----", true),
        (
            "Authorization",
            "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abc123",
            true,
        ),
        ("header", "Bearer abcdef0123456789", true),
        (
            "x",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sflKxwRJSMeKKF2QT4fwpM",
            true,
        ),
        (
            "header",
            "Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==",
            true,
        ),
        // Redacted: secret-named keys.
        ("dbpass", "hunter2", true),
        ("DB_PASSWORD", "correct horse battery staple", true),
        ("client-secret", "abc", true),
        ("api_key", "whatever", true),
        ("Authorization", "xyz", true),
        ("private_key", "k", true),
        ("aws_credentials", "some text", true),
        // Token-named keys: redacted only when the value looks random.
        ("github_token", "a8Fk29dKq0Zx71LmPq4T", true),
        ("session_token", "Zm9vYmFyYmF6cXV4MTIzNDU2", true),
        ("signing_key", "9f8e7d6c5b4a39281726354a5b6c7d8e", true),
        ("token", "hello", false),
        ("cache_key", "build-linux", false),
        ("author", "Ada Lovelace", false),
        (
            "sdk_session_id",
            "3f2b8c1e-9a7d-4e2f-b1c3-5d6e7f8a9b0c",
            false,
        ),
        ("x_auth", "letmein", true),
        // An Authorization scheme closed by a quote, a comma or a paren.
        (
            "message",
            "curl -H 'Authorization: Bearer abcdef0123456789'",
            true,
        ),
        (
            "message",
            "h = {\"Authorization\": \"Basic dXNlcjpwYXNzd29yZA==\"}",
            true,
        ),
        ("label", "fetch(url, Bearer a1b2c3d4e5f6g7h8, x)", true),
        ("message", "call(Bearer a1b2c3d4e5f6g7h8)", true),
        (
            "message",
            "explain basic authentication to bearer tokens",
            false,
        ),
    ];

    #[test]
    fn redaction_targets_secrets_not_words() {
        assert!(CASES.len() >= 40);
        for (key, value, secret) in CASES {
            let (out, hit) = redact_value(key, value);
            assert_eq!(hit, *secret, "{key}={value:?}");
            assert_eq!(out == REDACTED, *secret, "{key}={value:?}");
        }
    }

    #[test]
    fn file_content_with_credentials() {
        assert_eq!(
            content_holds_secret(
                b"{\"private_key\": \"-----BEGIN PRIVATE KEY-----\\nMIIE\"}",
                1 << 20
            ),
            Some("private key")
        );
        assert_eq!(
            content_holds_secret(
                b"[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE1\n",
                1 << 20
            ),
            Some("access key")
        );
        assert_eq!(
            content_holds_secret(b"just text\nAKIA is a prefix\n", 1 << 20),
            None
        );
        assert_eq!(
            content_holds_secret(b"\0binary -----BEGIN PRIVATE KEY-----", 1 << 20),
            None
        );
    }
}
