//! What a snapshot leaves out (the exclusion policy): secret patterns, `agentRewind.exclude`
//! globs, the size limit for untracked files, and whether content is scanned for credentials.
//! It only decides; it reads the configuration and, for content, the file, and writes nothing.

use super::newfile::secret_in_content;
use agent_rewind_core::error::Result;
use agent_rewind_core::redact::SECRET_PATH_PATTERNS;

/// Default `agentRewind.maxUntrackedSize`: 10 MiB.
pub const DEFAULT_MAX_UNTRACKED: u64 = 10 * 1024 * 1024;

/// What the snapshot leaves out.
#[derive(Debug, Clone)]
pub struct Policy {
    pub max_untracked_size: u64,
    /// Secret patterns plus `agentRewind.exclude` globs.
    pub exclude: Vec<String>,
    /// Also write the index's tree (HEAD + staged changes): backups need it, checkpoints not.
    pub record_index: bool,
    /// Leave out new untracked files in whose content a built-in secret rule fires
    /// (checkpoints; backups stay local and keep them).
    pub scan_content: bool,
}

/// The configuration a policy is read from: the store's, which reads config values as git
/// does.
pub trait PolicyConfig {
    /// Every value of a multi-valued key, in order.
    fn config_strings(&self, key: &str) -> Vec<String>;
    /// A size, as git reads it (`k`/`m`/`g` suffixes); an error when it is not one.
    fn config_size(&self, key: &str) -> Result<Option<u64>>;
}

impl Policy {
    /// The policy from the repository's config (`agentRewind.maxUntrackedSize`,
    /// `agentRewind.exclude`).
    pub fn from_config(ctx: &impl PolicyConfig) -> Result<Policy> {
        let mut exclude: Vec<String> = SECRET_PATH_PATTERNS.iter().map(|s| s.to_string()).collect();
        exclude.extend(ctx.config_strings("agentRewind.exclude"));
        Ok(Policy {
            max_untracked_size: ctx
                .config_size("agentRewind.maxUntrackedSize")?
                .unwrap_or(DEFAULT_MAX_UNTRACKED),
            exclude,
            record_index: false,
            scan_content: true,
        })
    }

    /// The policy for safety backups: they stay local, so secret-looking files are kept;
    /// big untracked files are still left out (and are never touched by a checkout).
    pub fn for_backup(ctx: &impl PolicyConfig) -> Result<Policy> {
        Ok(Policy {
            exclude: vec![],
            record_index: true,
            scan_content: false,
            ..Self::from_config(ctx)?
        })
    }

    /// Whether checkpoints leave `path` out when it is not in HEAD (a secret pattern).
    pub fn is_excluded_path(&self, path: &str) -> bool {
        self.excluded_pattern(path).is_some()
    }

    /// Whether checkpoints leave the worktree file `path` out when it is new: a secret
    /// pattern, or (with [`Policy::scan_content`]) content holding a credential.
    pub fn is_excluded_file(&self, workdir: &std::path::Path, path: &str) -> bool {
        self.is_excluded_path(path)
            || (self.scan_content && secret_in_content(&workdir.join(path), path).is_some())
    }

    pub(super) fn excluded_pattern(&self, path: &str) -> Option<&str> {
        self.exclude
            .iter()
            .find(|p| glob_match(p, path))
            .map(String::as_str)
    }
}

/// Match a glob against a repository-relative path with git's wildmatch (`*` and `?` do not
/// cross `/`, `**` does, `[…]` classes). A pattern without `/` matches the file name in any
/// folder (as in `.gitignore`); one with `/` matches the whole path (a leading `/` anchors
/// it at the root, which it is anyway).
pub fn glob_match(pattern: &str, path: &str) -> bool {
    use gix::bstr::ByteSlice;
    use gix::glob::wildmatch::Mode;
    let pattern = pattern.trim_start_matches('/');
    let value = if pattern.contains('/') {
        path
    } else {
        path.rsplit('/').next().unwrap_or(path)
    };
    gix::glob::wildmatch(
        pattern.as_bytes().as_bstr(),
        value.as_bytes().as_bstr(),
        Mode::NO_MATCH_SLASH_LITERAL,
    )
}

#[cfg(test)]
mod glob_tests {
    use super::glob_match;

    #[test]
    fn globs() {
        assert!(glob_match(".env", "a/b/.env"));
        assert!(glob_match(".env.*", ".env.local"));
        assert!(glob_match("*.env", "config/app.env"));
        assert!(!glob_match("*.env", "config/app.envy"));
        assert!(glob_match("*.pem", "certs/server.pem"));
        assert!(!glob_match("*.pem", "certs/server.pem.txt"));
        assert!(glob_match("secrets/**", "secrets/a/b.txt"));
        assert!(!glob_match("docs/*.md", "docs/a/b.md"));
        assert!(glob_match("docs/**/*.md", "docs/a/b.md"));
        assert!(glob_match("docs/**/*.md", "docs/b.md"));
        assert!(glob_match("/build/*.log", "build/x.log"));
        assert!(glob_match("id_[rd]sa*", "home/id_dsa.pub"));
    }
}
