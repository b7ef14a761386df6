//! Signatures of our commits through git's own signing configuration:
//! whether to sign (`agentRewind.sign`), with which program and key (`gpg.format`,
//! `gpg.program`, `gpg.<format>.program`, `user.signingKey`, for ssh without it the key
//! `gpg.ssh.defaultKeyCommand` prints), the signature made the way
//! git makes it (`gpg --status-fd=2 -bsau KEY` / `gpgsm` on stdin, `ssh-keygen -Y sign -n
//! git -f KEY FILE`), and reading signatures back with git's own checks (`git log
//! --format=%G?…`, which uses `gpg.ssh.allowedSignersFile` and the gpg keyring).
//!
//! It must never choose a program on its own: the program and key come only from the
//! user's git config (and `git -c`), never from a fetched object, note or workflow; with
//! nothing configured, nothing is signed and no program starts. It never writes config.

#![allow(clippy::disallowed_methods)] // the store starts its own processes

use crate::repository::Store;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_scan::gixerror::from_gix;
use gix::ObjectId;
use std::io::Write;
use std::process::{Command, Stdio};

/// git's `gpg.format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignFormat {
    OpenPgp,
    X509,
    Ssh,
}

/// How our commits are signed: the program, the key, and the format.
#[derive(Debug, Clone)]
pub struct Signer {
    pub format: SignFormat,
    pub program: String,
    pub key: String,
}

impl Signer {
    /// A detached signature of `payload`, as git makes it, without its last newline (the
    /// form a commit header holds).
    pub fn sign(&self, payload: &[u8]) -> Result<String> {
        let sig = match self.format {
            SignFormat::OpenPgp | SignFormat::X509 => self.sign_gpg(payload)?,
            SignFormat::Ssh => self.sign_ssh(payload)?,
        };
        let sig =
            String::from_utf8(sig.into_iter().filter(|b| *b != b'\r').collect()).map_err(|_| {
                Error::other(format!(
                    "{} wrote a signature that is not text",
                    self.program
                ))
            })?;
        let sig = sig.trim_end_matches('\n').to_string();
        if sig.is_empty() {
            return Err(Error::other(format!("{} wrote no signature", self.program)));
        }
        Ok(sig)
    }

    fn could_not_run(&self, e: std::io::Error) -> Error {
        Error::other(format!("could not run the signing program {:?}: {e}", self.program))
            .with_hint("it is git's signing program: gpg.program, gpg.<format>.program (see `git help config`)")
    }

    fn sign_gpg(&self, payload: &[u8]) -> Result<Vec<u8>> {
        let mut child = Command::new(&self.program)
            .args(["--status-fd=2", "-bsau", &self.key])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| self.could_not_run(e))?;
        let mut stdin = child.stdin.take().expect("piped stdin");
        // A program that exits without reading (a bad key) closes the pipe: its status
        // says why, not the failed write.
        let _ = stdin.write_all(payload);
        drop(stdin);
        let out = child
            .wait_with_output()
            .map_err(|e| self.could_not_run(e))?;
        let status = String::from_utf8_lossy(&out.stderr);
        let created = status
            .lines()
            .any(|l| l.starts_with("[GNUPG:] SIG_CREATED "));
        if !out.status.success() || !created {
            return Err(Error::other(format!(
                "{} failed to sign the data: {}",
                self.program,
                agent_rewind_core::error::one_line(if status.trim().is_empty() { "(no output)" } else { &status })
            ))
            .with_hint("check user.signingKey and that the key is usable without a prompt (`git commit -S` fails the same way)"));
        }
        Ok(out.stdout)
    }

    fn sign_ssh(&self, payload: &[u8]) -> Result<Vec<u8>> {
        let dir = tempfile::Builder::new()
            .prefix(".git_signing_tmp")
            .tempdir()
            .map_err(|e| Error::io(std::env::temp_dir(), e))?;
        let literal = self
            .key
            .strip_prefix("key::")
            .or_else(|| self.key.starts_with("ssh-").then_some(self.key.as_str()));
        let key_file = match literal {
            Some(k) => {
                let p = dir.path().join("key");
                std::fs::write(&p, k).map_err(|e| Error::io(&p, e))?;
                p
            }
            None => expand_home(&self.key),
        };
        let buffer = dir.path().join("buffer");
        std::fs::write(&buffer, payload).map_err(|e| Error::io(&buffer, e))?;
        let mut cmd = Command::new(&self.program);
        cmd.args(["-Y", "sign", "-n", "git", "-f"]).arg(&key_file);
        if literal.is_some() {
            cmd.arg("-U");
        }
        let out = cmd
            .arg(&buffer)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| self.could_not_run(e))?;
        if !out.status.success() {
            return Err(Error::other(format!(
                "{} failed to sign the data: {}",
                self.program,
                agent_rewind_core::error::one_line(&String::from_utf8_lossy(&out.stderr))
            ))
            .with_hint("check user.signingKey (`git commit -S` fails the same way); ssh signing needs OpenSSH 8.2 or later"));
        }
        let sig = dir.path().join("buffer.sig");
        std::fs::read(&sig).map_err(|e| Error::io(&sig, e))
    }
}

/// The key git signs with when `gpg.format` is ssh and `user.signingKey` is not set: the
/// first line `command` prints (split into words as git splits it, started without a
/// shell), when that line is a literal key (`key::…` or `ssh-…`). A command that fails or
/// prints no key is an error saying so, with what it printed.
pub(crate) fn default_ssh_key(command: &str) -> Result<String> {
    let hint = "gpg.ssh.defaultKeyCommand must print a public key (`ssh-add -L` prints those of your ssh-agent); or set user.signingKey";
    let words = split_cmdline(command)
        .filter(|w| w.first().is_some_and(|p| !p.is_empty()))
        .ok_or_else(|| {
            Error::usage(format!(
                "gpg.ssh.defaultKeyCommand {command:?} is not a command"
            ))
            .with_hint(hint)
        })?;
    let out = Command::new(&words[0])
        .args(&words[1..])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            Error::other(format!(
                "could not run gpg.ssh.defaultKeyCommand {command:?}: {e}"
            ))
            .with_hint(hint)
        })?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let said = || {
        agent_rewind_core::error::one_line(&format!(
            "{} {}",
            String::from_utf8_lossy(&out.stderr),
            stdout
        ))
    };
    if !out.status.success() {
        return Err(
            Error::other(format!("gpg.ssh.defaultKeyCommand failed: {}", said())).with_hint(hint),
        );
    }
    let first = stdout
        .split('\n')
        .next()
        .unwrap_or("")
        .trim_end_matches('\r');
    if first.starts_with("key::") || first.starts_with("ssh-") {
        return Ok(first.to_string());
    }
    Err(Error::other(format!(
        "gpg.ssh.defaultKeyCommand succeeded but returned no keys: {}",
        said()
    ))
    .with_hint(hint))
}

/// A command line split into words as git's `split_cmdline` does: at whitespace outside
/// quotes; `'…'` taken as is, `"…"` and bare words with `\` escaping the next character.
/// `None` when a quote is left open or the line ends in a lone `\`.
fn split_cmdline(line: &str) -> Option<Vec<String>> {
    let mut words = vec![];
    let mut word = String::new();
    let mut quoted: Option<char> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if quoted.is_none() && c.is_ascii_whitespace() => {
                words.push(std::mem::take(&mut word));
                while chars.next_if(char::is_ascii_whitespace).is_some() {}
            }
            '\'' | '"' if quoted.is_none() => quoted = Some(c),
            c if Some(c) == quoted => quoted = None,
            '\\' if quoted != Some('\'') => word.push(chars.next()?),
            c => word.push(c),
        }
    }
    if quoted.is_some() {
        return None;
    }
    words.push(word);
    Some(words)
}

/// `~/…` as git's `interpolate_path` reads it.
fn expand_home(path: &str) -> std::path::PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => std::path::Path::new(&home).join(rest),
        _ => std::path::PathBuf::from(path),
    }
}

/// The header that holds a commit's signature in a repository of this hash.
pub(crate) fn signature_header(hash: gix::hash::Kind) -> &'static str {
    match hash {
        gix::hash::Kind::Sha1 => "gpgsig",
        _ => "gpgsig-sha256",
    }
}

/// What git says about one commit's signature (`git log --format=%G?…`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureCheck {
    pub commit: ObjectId,
    /// git's `%G?`: `G` good, `U` good with a key of unknown validity, `X`/`Y` good but
    /// expired signature/key, `R` revoked key, `B` bad, `E` cannot be checked, `N` none.
    pub code: char,
    /// Whether the commit carries a signature at all (git says `N` for a signature it
    /// cannot check when `gpg.ssh.allowedSignersFile` is not set).
    pub signed: bool,
    /// The signer git names (`%GS`: the principal of an ssh key, the user id of a gpg key).
    pub signer: String,
    /// The key (`%GK`) and its fingerprint (`%GF`).
    pub key: String,
    pub fingerprint: String,
    /// The trust level (`%GT`: `undefined`, `never`, `marginal`, `fully`, `ultimate`).
    pub trust: String,
}

/// [`Objects::check_signatures`].
pub(crate) fn check_signatures(store: &Store, commits: &[ObjectId]) -> Result<Vec<SignatureCheck>> {
    if commits.is_empty() {
        return Ok(vec![]);
    }
    let header = signature_header(store.repo.object_hash());
    let mut input = String::with_capacity(commits.len() * 41);
    for c in commits {
        input.push_str(&c.to_string());
        input.push('\n');
    }
    let dir = store.git_run_dir().to_path_buf();
    let out = store.git_with_input(
        &dir,
        &[
            "-c",
            "log.showSignature=false",
            "log",
            "--no-walk=unsorted",
            "--stdin",
            "--format=%H%x1f%G?%x1f%GS%x1f%GK%x1f%GF%x1f%GT%x1e",
        ],
        input.as_bytes(),
    )?;
    let mut checks = vec![];
    for rec in out.split('\x1e').map(|r| r.trim_start_matches('\n')) {
        let f: Vec<&str> = rec.split('\x1f').collect();
        if f.len() < 6 {
            continue;
        }
        let commit = ObjectId::from_hex(f[0].as_bytes())
            .map_err(|e| Error::git(format!("git log printed {:?}: {e}", f[0])))?;
        let signed = has_header(store, commit, header)?;
        checks.push(SignatureCheck {
            commit,
            code: f[1].chars().next().unwrap_or('N'),
            signed,
            signer: f[2].to_string(),
            key: f[3].to_string(),
            fingerprint: f[4].to_string(),
            trust: f[5].trim().to_string(),
        });
    }
    Ok(checks)
}

/// [`Objects::is_signed`].
pub(crate) fn is_signed(store: &Store, id: ObjectId) -> Result<bool> {
    has_header(store, id, signature_header(store.repo.object_hash()))
}

/// Whether the commit `id` has the header `name`.
fn has_header(store: &Store, id: ObjectId, name: &str) -> Result<bool> {
    let commit = store.repo.find_commit(id).map_err(from_gix)?;
    let decoded = commit.decode().map_err(from_gix)?;
    Ok(decoded.extra_headers().find(name).is_some())
}

/// [`Objects::commits_between`].
pub(crate) fn commits_between(
    store: &Store,
    tip: ObjectId,
    hidden: Option<ObjectId>,
) -> Result<Vec<ObjectId>> {
    let tip_s = tip.to_string();
    let hide = hidden.map(|h| format!("^{h}"));
    let mut args = vec!["rev-list", tip_s.as_str()];
    if let Some(h) = &hide {
        args.push(h);
    }
    let out = store.git(&args)?;
    out.lines()
        .map(|l| {
            ObjectId::from_hex(l.trim().as_bytes())
                .map_err(|e| Error::git(format!("git rev-list printed {l:?}: {e}")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::split_cmdline;

    #[test]
    fn splits_a_command_line_as_git_does() {
        let w = |s: &str| split_cmdline(s).map(|v| v.join("|"));
        assert_eq!(w("ssh-add -L").as_deref(), Some("ssh-add|-L"));
        assert_eq!(w("ssh-add   -L").as_deref(), Some("ssh-add|-L"));
        assert_eq!(
            w("'my tool' \"a b\" c\\ d").as_deref(),
            Some("my tool|a b|c d")
        );
        assert_eq!(w("'a\\b' \"x\\\"y\"").as_deref(), Some("a\\b|x\"y"));
        assert_eq!(w("sh -c 'echo hi"), None);
        assert_eq!(w("tool \\"), None);
    }
}
