//! The repository's configuration as git reads it (`git -c` included): strings, booleans,
//! sizes and multi-valued keys, the identities and the signer it names, where git looks for
//! hooks, and the one config write we make (`git config --local --add`). It reads what the
//! user configured; it never decides what a value means for an operation.

use crate::repository::Store;
use crate::sign::{SignFormat, Signer};
use agent_rewind_core::error::{Error, Result};
use std::path::Path;

/// The identity used when the user has none configured.
const FALLBACK_NAME: &str = "git-agent-rewind";
const FALLBACK_EMAIL: &str = "agent-rewind@localhost";

/// The repository's configuration: read as git reads it, and the one write we make.
#[derive(Clone, Copy)]
pub struct Config<'s> {
    pub(crate) store: &'s Store,
}

impl Config<'_> {
    /// Read a config value as a string.
    pub fn string(&self, key: &str) -> Option<String> {
        self.snapshot().string(key).map(|s| s.to_string())
    }

    /// Read a boolean the way git reads one: `true`/`yes`/`on`/`1` and a key without a
    /// value are true, `false`/`no`/`off`/`0` and an empty value are false, in any case
    /// (`False`, `OFF`). Anything else is an error naming the key, as git's "bad boolean
    /// config value" is.
    pub fn bool(&self, key: &str) -> Result<Option<bool>> {
        match self.snapshot().try_boolean(key) {
            Ok(b) => Ok(b),
            Err(_) => Err(Error::usage(format!(
                "bad boolean config value {:?} for {key}",
                self.string(key).unwrap_or_default()
            ))
            .with_hint("a boolean is true, false, yes, no, on, off, 1 or 0")),
        }
    }

    /// Read all values of a multi-valued config key.
    pub fn strings(&self, key: &str) -> Vec<String> {
        self.snapshot()
            .plumbing()
            .strings(key)
            .unwrap_or_default()
            .into_iter()
            .map(|s| s.to_string())
            .collect()
    }

    /// Read a size: a config integer as git reads it (`k`/`m`/`g` suffixes), not negative.
    pub fn size(&self, key: &str) -> Result<Option<u64>> {
        let bad = |v: String| {
            Error::usage(format!(
                "config {key} = {v:?} is not a size (like 10m or 1048576)"
            ))
        };
        match self.snapshot().try_integer(key) {
            Ok(None) => Ok(None),
            Ok(Some(n)) => u64::try_from(n).map(Some).map_err(|_| bad(n.to_string())),
            Err(_) => Err(bad(self.string(key).unwrap_or_default())),
        }
    }

    /// An integer as git reads it (`k`/`m`/`g` suffixes); `None` when unset or unreadable.
    pub(crate) fn integer(&self, key: &str) -> Option<i64> {
        self.snapshot().integer(key)
    }

    fn snapshot(&self) -> gix::config::Snapshot<'_> {
        self.store.repo.config_snapshot()
    }

    /// Whether our commits are signed: `agentRewind.sign` is `true`, or is
    /// `commit.gpgSign` and git's `commit.gpgSign` is true. Unset: not signed.
    pub fn signing_enabled(&self) -> Result<bool> {
        signing_enabled(*self)
    }

    /// The signer of our commits, or `None` when signing is off. A configuration git could
    /// not sign with (an unknown `gpg.format`, ssh with neither `user.signingKey` nor a
    /// `gpg.ssh.defaultKeyCommand` that prints a key) is an error naming the key to set.
    pub fn signer(&self) -> Result<Option<Signer>> {
        signer(*self)
    }

    /// The zlib level git packs objects with: `pack.compression`, else `core.compression`,
    /// else zlib's default (-1, level 6). `git gc` copies a packed object's compressed bytes
    /// as they are, so our small packs must be compressed as git would compress them.
    pub(crate) fn pack_compression(&self) -> gix::zlib::Compression {
        let level = ["pack.compression", "core.compression"]
            .iter()
            .find_map(|k| self.integer(k))
            .unwrap_or(-1);
        i32::try_from(level)
            .ok()
            .and_then(gix::zlib::Compression::new)
            .unwrap_or_default()
    }

    /// A configured identity as git resolves it for `role` (`"committer"` or `"author"`):
    /// `GIT_<ROLE>_NAME`/`_EMAIL`, else `<role>.name`/`.email`, else `user.*`, else (email
    /// only) `EMAIL`. Read from the environment and the config snapshot directly, never
    /// through gix's persona lookup: that resolves the local time zone by walking the whole
    /// zoneinfo database (about 1 ms a command), and our times are UTC anyway.
    pub(crate) fn configured_identity(&self, role: &str) -> (Option<String>, Option<String>) {
        let env = |k: String| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let upper = role.to_ascii_uppercase();
        let name = env(format!("GIT_{upper}_NAME"))
            .or_else(|| self.string(&format!("{role}.name")))
            .or_else(|| self.string("user.name"));
        let email = env(format!("GIT_{upper}_EMAIL"))
            .or_else(|| self.string(&format!("{role}.email")))
            .or_else(|| self.string("user.email"))
            .or_else(|| env("EMAIL".into()));
        let given = |v: Option<String>| v.filter(|v| !v.trim().is_empty());
        (given(name), given(email))
    }

    /// The committer identity of our commits and reflog entries, with a fixed fallback for
    /// a repository without one (docs/FORMAT.md: recording never fails for want of a name).
    pub(crate) fn signature(&self) -> gix::actor::Signature {
        let (name, email) = self.configured_identity("committer");
        gix::actor::Signature {
            name: name.unwrap_or_else(|| FALLBACK_NAME.to_string()).into(),
            email: email.unwrap_or_else(|| FALLBACK_EMAIL.to_string()).into(),
            time: gix::date::Time::now_utc(),
        }
    }

    /// The user's git identity, `Name <email>`, resolved as git resolves a commit's author;
    /// `None` when git has none.
    pub fn identity(&self) -> Option<String> {
        match self.configured_identity("author") {
            (Some(name), Some(email)) => Some(format!("{name} <{email}>")),
            _ => None,
        }
    }

    /// Add `key = value` to the repository's own config (`git config --local --add`; git
    /// owns config locking). Never touches the user's global config.
    pub fn add(&self, key: &str, value: &str) -> Result<()> {
        let dir = self.store.repo.common_dir().to_string_lossy().into_owned();
        self.store
            .git_in(
                self.store.repo.common_dir(),
                &["--git-dir", &dir, "config", "--local", "--add", key, value],
            )
            .map(|_| ())
    }

    /// The hooks directory git actually uses for this repository: `core.hooksPath` when set
    /// (relative values resolved the way git resolves them), else the common `hooks` folder
    /// that linked worktrees share. The folder may not exist yet.
    pub fn hooks_dir(&self) -> Result<std::path::PathBuf> {
        let dir = self.store.git_run_dir();
        let out = self
            .store
            .git_in(dir, &["rev-parse", "--git-path", "hooks"])?;
        let p = Path::new(out.trim_end_matches(['\n', '\r']));
        if p.as_os_str().is_empty() {
            return Err(Error::other(
                "`git rev-parse --git-path hooks` printed nothing",
            ));
        }
        Ok(if p.is_absolute() {
            p.to_path_buf()
        } else {
            dir.join(p)
        })
    }
}

/// What `agentRewind.sign` says: `true`, `false`, or follow git's `commit.gpgSign`.
const FOLLOW_GIT: &str = "commit.gpgsign";

fn signing_enabled(config: Config<'_>) -> Result<bool> {
    match config.string("agentRewind.sign") {
        Some(v) if v.trim().eq_ignore_ascii_case(FOLLOW_GIT) => {
            Ok(config.bool("commit.gpgSign")?.unwrap_or(false))
        }
        _ => Ok(config.bool("agentRewind.sign")?.unwrap_or(false)),
    }
}

fn signer(config: Config<'_>) -> Result<Option<Signer>> {
    if !signing_enabled(config)? {
        return Ok(None);
    }
    let format = match config
        .string("gpg.format")
        .map(|f| f.to_ascii_lowercase())
        .as_deref()
    {
        None | Some("openpgp") => SignFormat::OpenPgp,
        Some("x509") => SignFormat::X509,
        Some("ssh") => SignFormat::Ssh,
        Some(other) => {
            return Err(Error::usage(format!(
                "gpg.format {other:?} is not a signature format git knows"
            ))
            .with_hint("gpg.format is openpgp, x509 or ssh"));
        }
    };
    let program = match format {
        SignFormat::OpenPgp => config
            .string("gpg.openpgp.program")
            .or_else(|| config.string("gpg.program"))
            .unwrap_or_else(|| "gpg".into()),
        SignFormat::X509 => config
            .string("gpg.x509.program")
            .unwrap_or_else(|| "gpgsm".into()),
        SignFormat::Ssh => config
            .string("gpg.ssh.program")
            .unwrap_or_else(|| "ssh-keygen".into()),
    };
    let key = match (config.string("user.signingKey"), format) {
        (Some(k), _) if !k.trim().is_empty() => k,
        // As git: the first key `gpg.ssh.defaultKeyCommand` prints (`ssh-add -L`).
        (_, SignFormat::Ssh) => match config.string("gpg.ssh.defaultKeyCommand") {
            Some(command) => crate::sign::default_ssh_key(&command)?,
            None => {
                return Err(Error::usage(
                    "either user.signingKey or gpg.ssh.defaultKeyCommand needs to be configured for ssh signing",
                )
                .with_hint("agentRewind.sign is on and gpg.format is ssh: set user.signingKey to your key (a file, or `key::ssh-ed25519 …` for a key in ssh-agent), or gpg.ssh.defaultKeyCommand to a command printing it (`ssh-add -L`)"));
            }
        },
        // git signs with the committer's identity when no key is named.
        _ => {
            let (name, email) = config.configured_identity("committer");
            match (name, email) {
                (Some(n), Some(e)) => format!("{n} <{e}>"),
                _ => {
                    return Err(Error::usage(
                        "no key to sign with: user.signingKey is not set and there is no committer identity",
                    )
                    .with_hint("set user.signingKey, or user.name and user.email"));
                }
            }
        }
    };
    Ok(Some(Signer {
        format,
        program,
        key,
    }))
}
