//! Secret detection for metadata values and snapshot paths. Values that look like
//! credentials are replaced by `[REDACTED]` before anything is written; paths that look
//! like secret files are left out of snapshots. Pure functions; never touches git.

/// What a redacted value is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Key names whose values are always treated as secrets.
const SECRET_KEY_WORDS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "token",
    "api_key",
    "apikey",
    "private_key",
    "credential",
];

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
    ("sk-", 20),
    ("xoxb-", 10),
    ("xoxp-", 10),
    ("xoxa-", 10),
    ("AKIA", 16),
    ("ASIA", 16),
    ("AIza", 30),
    ("npm_", 30),
];

/// Whether `key` names a secret (`DB_PASSWORD`, `api-token` …).
pub fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase().replace('-', "_");
    SECRET_KEY_WORDS.iter().any(|w| k.contains(w))
}

/// Whether `value` contains something that looks like a credential: a known token format,
/// a private key block, or a password inside a URL (`scheme://user:pass@host`).
pub fn looks_secret(value: &str) -> bool {
    if value.contains("-----BEGIN") && value.contains("PRIVATE KEY") {
        return true;
    }
    if url_has_password(value) {
        return true;
    }
    value
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .any(|word| {
            TOKEN_PREFIXES.iter().any(|(p, min)| {
                word.starts_with(p)
                    && word.len() >= p.len() + min
                    && word[p.len()..].bytes().any(|b| b.is_ascii_digit())
            })
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

/// Redact one value. Returns the value to store and whether it was redacted.
pub fn redact_value(key: &str, value: &str) -> (String, bool) {
    if is_secret_key(key) || looks_secret(value) {
        (REDACTED.to_string(), true)
    } else {
        (value.to_string(), false)
    }
}

/// The built-in secret file patterns of DESIGN.md §3.5 (matched against the file name).
pub const SECRET_PATH_PATTERNS: &[&str] =
    &[".env", ".env.*", "*.pem", "*.key", "id_rsa*", "id_ed25519*"];

/// Match a glob against a path. A pattern without `/` matches the file name in any folder;
/// one with `/` matches the whole repository-relative path. `*` and `?` do not cross `/`,
/// `**` does.
pub fn glob_matches(pattern: &str, path: &str) -> bool {
    let pattern = pattern.trim_start_matches('/');
    if pattern.contains('/') {
        wildmatch(pattern.as_bytes(), path.as_bytes())
    } else {
        let name = path.rsplit('/').next().unwrap_or(path);
        wildmatch(pattern.as_bytes(), name.as_bytes())
    }
}

fn wildmatch(p: &[u8], s: &[u8]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some(b'*') if p.get(1) == Some(&b'*') => {
            let rest = p[2..].strip_prefix(b"/").unwrap_or(&p[2..]);
            (0..=s.len()).any(|i| wildmatch(rest, &s[i..]))
        }
        Some(b'*') => {
            let rest = &p[1..];
            for i in 0..=s.len() {
                if wildmatch(rest, &s[i..]) {
                    return true;
                }
                if i < s.len() && s[i] == b'/' {
                    break;
                }
            }
            false
        }
        Some(b'?') => !s.is_empty() && s[0] != b'/' && wildmatch(&p[1..], &s[1..]),
        Some(c) => !s.is_empty() && s[0] == *c && wildmatch(&p[1..], &s[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_secrets() {
        assert!(looks_secret(
            "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"
        ));
        assert!(looks_secret("https://user:hunter2@example.com/repo.git"));
        assert!(looks_secret("AKIAABCDEFGHIJ123456"));
        assert!(looks_secret("-----BEGIN OPENSSH PRIVATE KEY-----\nabc"));
        assert!(!looks_secret("https://example.com/a?b=c"));
        assert!(!looks_secret("sk-short"));
        assert!(!looks_secret("implement the parser"));
        assert!(is_secret_key("DB_PASSWORD"));
        assert!(!is_secret_key("ticket"));
        assert_eq!(redact_value("api-token", "abc").0, REDACTED);
    }

    #[test]
    fn globs() {
        assert!(glob_matches(".env", "a/b/.env"));
        assert!(glob_matches(".env.*", ".env.local"));
        assert!(glob_matches("*.pem", "certs/server.pem"));
        assert!(!glob_matches("*.pem", "certs/server.pem.txt"));
        assert!(glob_matches("secrets/**", "secrets/a/b.txt"));
        assert!(!glob_matches("docs/*.md", "docs/a/b.md"));
        assert!(glob_matches("docs/**/*.md", "docs/a/b.md"));
    }
}
