//! Secret detection for the free-text values we store (metadata, messages, labels, the
//! approver) and for the content of new untracked files. Values that look like credentials
//! are replaced by `[REDACTED]` before anything is written; which paths are left out of
//! snapshots is `scan::snapshot`'s policy (the built-in patterns are listed here).
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

/// Whether `value` contains something that looks like a credential: anything a built-in
/// [secret rule](rules) finds (a provider's token format, a JWT, a private key block, a
/// password in a URL or a pasted configuration line …), or an `Authorization` scheme with
/// its token (`token …` and `Digest …` as well as the rules' `Bearer`/`Basic`).
pub fn looks_secret(value: &str) -> bool {
    has_private_key_block(value)
        || url_has_password(value)
        || has_auth_scheme(value)
        || rules::builtin_finds(value)
        || value
            .split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '=' | ',' | ';' | ':'))
            .any(is_jwt)
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

/// The first secret the built-in [rules](rules) find in a new file's content (only its
/// first `limit` bytes are read), named by its rule and line: the snapshot leaves such a
/// file out of checkpoints, with the same rules `push` checks and redaction applies.
/// `path` (relative to the worktree's top) is what path-bound rules (YAML passwords) and
/// path allowlists see.
pub fn content_holds_secret(content: &[u8], limit: usize, path: &str) -> Option<String> {
    let head = &content[..content.len().min(limit)];
    if head.contains(&0) {
        // Binary: key stores (*.p12, *.jks) are left out by name instead.
        return None;
    }
    let origin = rules::Origin {
        path: Some(path),
        commit: None,
    };
    let found = rules::RuleSet::builtin().scan(head, origin);
    let first = found.iter().min_by_key(|f| f.line)?;
    Some(match first.line {
        0 => format!("secret ({})", first.rule),
        n => format!("secret ({}, line {n})", first.rule),
    })
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
            concat!("token ghp_", "abcdefghijklmnopqrstuvwxyz0123456789"),
            true,
        ),
        (
            "x",
            concat!(
                "github_pat_",
                "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"
            ),
            true,
        ),
        ("x", concat!("glpat-", "abcdefghij0123456789"), true),
        (
            "x",
            concat!("sk-ant-api03-", "abcdefghijklmnop0123456789"),
            true,
        ),
        (
            "x",
            concat!("sk-proj-", "abcdefghijklmnopqrstuvwxyz0123456789"),
            true,
        ),
        ("x", concat!("xoxb-", "1234567890-abcdefghij"), true),
        ("x", concat!("AKIA", "ABCDEFGHIJ234567"), true),
        (
            "x",
            concat!("AIza", "SyA1234567890abcdefghijklmnopqrstuv"),
            true,
        ),
        ("x", "https://user:hunter2@example.com/repo.git", true), // gitleaks:allow
        ("x", "-----BEGIN OPENSSH PRIVATE KEY-----\nabc", true),
        ("x", "-----BEGIN RSA PRIVATE KEY-----", true),
        (
            "Authorization",
            "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abc123", // gitleaks:allow
            true,
        ),
        ("header", "Bearer abcdef0123456789", true), // gitleaks:allow
        (
            "x",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sflKxwRJSMeKKF2QT4fwpM", // gitleaks:allow
            true,
        ),
        (
            "header",
            "Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==", // gitleaks:allow
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
            "curl -H 'Authorization: Bearer abcdef0123456789'", // gitleaks:allow
            true,
        ),
        (
            "message",
            "h = {\"Authorization\": \"Basic dXNlcjpwYXNzd29yZA==\"}", // gitleaks:allow
            true,
        ),
        ("label", "fetch(url, Bearer a1b2c3d4e5f6g7h8, x)", true), // gitleaks:allow
        ("message", "call(Bearer a1b2c3d4e5f6g7h8)", true),        // gitleaks:allow
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
        let key = concat!(
            "{\"private_key\": \"-----BEGIN ",
            "PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\"}"
        );
        assert_eq!(
            content_holds_secret(key.as_bytes(), 1 << 20, "sa.json").as_deref(),
            Some("secret (private-key, line 1)")
        );
        let aws = concat!(
            "[default]\nregion = x\naws_access_key_id = AKIA",
            "2OGYBAH6TQM7X4LB\n"
        );
        assert_eq!(
            content_holds_secret(aws.as_bytes(), 1 << 20, "config.ini").as_deref(),
            Some("secret (aws-access-key-id, line 3)")
        );
        // A path-bound rule needs its path.
        let yaml = b"db:\n  password: hunter2-prod\n";
        assert!(content_holds_secret(yaml, 1 << 20, "app.yaml").is_some());
        assert_eq!(content_holds_secret(yaml, 1 << 20, "app.rs"), None);
        assert_eq!(
            content_holds_secret(b"just text\nAKIA is a prefix\n", 1 << 20, "a.txt"),
            None
        );
        let binary = concat!("\0binary -----BEGIN ", "PRIVATE KEY-----");
        assert_eq!(content_holds_secret(binary.as_bytes(), 1 << 20, "k"), None);
    }
}
