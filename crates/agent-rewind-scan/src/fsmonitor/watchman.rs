//! Asking Watchman directly when `core.fsmonitor` names git's own `fsmonitor-watchman`
//! sample hook: the hook is a Perl script (Perl start-up, `JSON::PP`, the `watchman` CLI)
//! that costs tens of milliseconds, while the query it sends is fixed. We send the very same
//! query over Watchman's unix socket (JSON, one line each way) and shape the answer as the
//! hook would print it (`<clock>\0<path>\0…`, or `<clock>\0/` for "everything").
//!
//! The hook is recognised strictly: an executable file whose content after its `#!…perl`
//! line is byte for byte one of the upstream versions of the sample that speak hook protocol
//! v2 ([`KNOWN_SAMPLES`]). Any other hook is run as before. A socket that cannot be reached
//! or a reply that is not Watchman's is a [`Unreachable`]: the caller then runs the hook
//! itself. It never reads or writes git's own token; it writes nothing but the cached socket
//! path (`cache/watchman-sock`, re-resolved whenever connecting fails).

use agent_rewind_core::private::envelope::WATCHMAN_SOCK;
use gix::bstr::ByteSlice;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Git blob ids of the sample hook's content after its first (`#!`) line, for each upstream
/// version that speaks hook protocol v2 (git's `templates/hooks--fsmonitor-watchman.sample`,
/// later `templates/hooks/fsmonitor-watchman.sample`). All of them send the query below when
/// given a Watchman clock (`c:…`); the later ones only differ when given anything else.
const KNOWN_SAMPLES: &[&str] = &[
    // git 2.26 to 2.36 (e4e1e83, "add fsmonitor hook scripts for version 2").
    "4c23718d64c461fa6debfcc16e867c17dbfe6fed",
    // git 2.37 onwards (134047b, "query watchman with right valid json").
    "28a65bd708b7fb78c381c984a036807e986f8c4f",
    // 41366e4 ("fix variable reference and remove redundant code").
    "29bcc3c9e4052946e553ed179480859614a4f546",
];

/// How long one exchange with Watchman may take (its own query sync waits up to 60 s).
const TIMEOUT: Duration = Duration::from_secs(90);

/// Watchman could not be asked over its socket: run the hook instead.
#[derive(Debug)]
pub struct Unreachable(pub String);

/// Whether the hook at `path` is git's fsmonitor-watchman sample, unmodified but for its
/// `#!` line (distributions rewrite the path to perl).
pub fn is_git_sample(path: &Path) -> bool {
    let Ok(md) = std::fs::metadata(path) else {
        return false;
    };
    // Git cannot run a hook that is not executable (then it takes the full pass).
    if !md.is_file()
        || md.len() > 64 * 1024
        || !agent_rewind_core::platform::mode::any_executable_bit(&md)
    {
        return false;
    }
    let Ok(content) = std::fs::read(path) else {
        return false;
    };
    let Some(nl) = content.find_byte(b'\n') else {
        return false;
    };
    let (first, body) = (&content[..nl], &content[nl + 1..]);
    if !first.starts_with(b"#!") || !first.contains_str("perl") {
        return false;
    }
    // The hook file's SHA-1 blob id whatever the repository's object format: a fingerprint
    // compared with the list above, never an id looked up in the repository.
    let Ok(id) = gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, body) else {
        return false;
    };
    let id = id.to_string();
    KNOWN_SAMPLES.contains(&id.as_str())
}

/// Ask Watchman what changed in `workdir` since `token`, as the sample hook does, and return
/// what the hook would print. `sockname_cache` is our cached socket path.
pub fn query(workdir: &Path, token: &str, sockname_cache: &Path) -> Result<Vec<u8>, Unreachable> {
    // The hook names the worktree by its physical path (`Cwd::cwd()`).
    let root =
        std::fs::canonicalize(workdir).map_err(|e| Unreachable(format!("worktree path: {e}")))?;
    let root = root
        .to_str()
        .ok_or_else(|| Unreachable("the worktree path is not UTF-8".into()))?
        .to_string();
    let mut conn = connect(workdir, sockname_cache)?;
    // The hook's query: `since` only for a Watchman clock.
    let mut spec = serde_json::Map::new();
    if token.starts_with('c') {
        spec.insert("since".into(), json!(token));
    }
    spec.insert("fields".into(), json!(["name"]));
    spec.insert("expression".into(), json!(["not", ["dirname", ".git"]]));
    let reply = conn.ask(&json!(["query", root, spec]))?;
    if let Some(error) = reply.get("error") {
        let error = error.as_str().unwrap_or("(not a string)");
        if !is_not_watched(error) {
            // The hook dies: git takes the full pass.
            return Ok(Vec::new());
        }
        // The hook then watches the worktree, and answers "everything" with a fresh clock.
        let watch = conn.ask(&json!(["watch", root]))?;
        if watch.get("error").is_some() {
            return Ok(Vec::new());
        }
        let clock = conn.ask(&json!(["clock", root]))?;
        return Ok(match clock.get("clock").and_then(Value::as_str) {
            Some(c) if clock.get("error").is_none() => answer(c, None),
            _ => Vec::new(),
        });
    }
    let Some(clock) = reply.get("clock").and_then(Value::as_str) else {
        return Ok(Vec::new());
    };
    // A fresh instance lists the files that exist, not those deleted meanwhile: everything.
    if reply.get("is_fresh_instance").and_then(Value::as_bool) != Some(false) {
        return Ok(answer(clock, None));
    }
    let Some(files) = reply.get("files").and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    let mut names = Vec::with_capacity(files.len());
    for f in files {
        match f.as_str() {
            // A name Watchman could not give as UTF-8 is not a path we can trust.
            Some(n) if !n.contains('\u{fffd}') && !n.contains('\0') => names.push(n),
            _ => return Ok(answer(clock, None)),
        }
    }
    Ok(answer(clock, Some(&names)))
}

/// The hook's output: the clock, then the names (`None`: `/`, everything), NUL-separated.
fn answer(clock: &str, names: Option<&[&str]>) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + names.map_or(1, |n| n.len() * 32));
    out.extend_from_slice(clock.as_bytes());
    out.push(0);
    match names {
        None => out.push(b'/'),
        Some(names) => {
            for (i, n) in names.iter().enumerate() {
                if i > 0 {
                    out.push(0);
                }
                out.extend_from_slice(n.as_bytes());
            }
        }
    }
    out
}

/// The hook's test: `unable to resolve root .* directory (.*) is not watched`.
fn is_not_watched(error: &str) -> bool {
    error.find("unable to resolve root ").is_some_and(|i| {
        let rest = &error[i..];
        rest.find(" directory ")
            .is_some_and(|j| rest[j..].contains(" is not watched"))
    })
}

struct Connection {
    reader: BufReader<UnixStream>,
}

impl Connection {
    /// Send one command, read its reply (skipping unilateral messages).
    fn ask(&mut self, command: &Value) -> Result<Value, Unreachable> {
        let lost = |e: std::io::Error| Unreachable(format!("Watchman's socket: {e}"));
        let mut line = serde_json::to_vec(command).map_err(|e| Unreachable(e.to_string()))?;
        line.push(b'\n');
        self.reader.get_mut().write_all(&line).map_err(lost)?;
        loop {
            let mut buf = Vec::new();
            let n = self.reader.read_until(b'\n', &mut buf).map_err(lost)?;
            if n == 0 || buf.last() != Some(&b'\n') {
                return Err(Unreachable("Watchman closed its socket".into()));
            }
            let reply: Value = serde_json::from_slice(&buf)
                .map_err(|e| Unreachable(format!("Watchman's reply is not JSON: {e}")))?;
            if !reply.is_object() {
                return Err(Unreachable("Watchman's reply is not an object".into()));
            }
            if reply.get("unilateral").and_then(Value::as_bool) == Some(true)
                || reply.get("log").is_some()
            {
                continue;
            }
            return Ok(reply);
        }
    }
}

/// Connect to Watchman: our cached socket path, else (or when that fails) the path
/// `watchman get-sockname` gives, which starts the server as the hook's `watchman` would.
/// The CLI decides, as it does for the hook (Watchman 4.9's ignores `WATCHMAN_SOCK`, later
/// ones honour it).
fn connect(workdir: &Path, cache: &Path) -> Result<Connection, Unreachable> {
    let open = |path: &Path| -> std::io::Result<Connection> {
        let s = UnixStream::connect(path)?;
        s.set_read_timeout(Some(TIMEOUT))?;
        s.set_write_timeout(Some(TIMEOUT))?;
        Ok(Connection {
            reader: BufReader::with_capacity(64 * 1024, s),
        })
    };
    let key = environment_key();
    if let Some(path) = cached_sockname(cache, &key)
        && let Ok(c) = open(&path)
    {
        return Ok(c);
    }
    let path = resolve_sockname(workdir)?;
    let c = open(&path).map_err(|e| Unreachable(format!("{}: {e}", path.display())))?;
    let mut text = key.into_bytes();
    text.push(b'\n');
    text.extend_from_slice(path.as_os_str().as_encoded_bytes());
    // Best effort: not cached only means asking the CLI next time.
    let _ = WATCHMAN_SOCK.write(cache, &text);
    Ok(c)
}

/// What decides where the `watchman` CLI looks for its server.
fn environment_key() -> String {
    let mut key = String::from("environment");
    for var in [
        "PATH",
        "WATCHMAN_SOCK",
        "TMPDIR",
        "TMP",
        "USER",
        "LOGNAME",
        "HOME",
    ] {
        let v = std::env::var_os(var).unwrap_or_default();
        key.push_str(&format!(" {var}={:?}", v.to_string_lossy()));
    }
    key.replace('\n', " ")
}

fn cached_sockname(cache: &Path, key: &str) -> Option<PathBuf> {
    let data = WATCHMAN_SOCK.read_cache(cache)?;
    let (k, path) = data.split_once_str(b"\n")?;
    if k != key.as_bytes() || path.is_empty() {
        return None;
    }
    Some(PathBuf::from(path.to_os_str().ok()?))
}

/// How long `watchman get-sockname` may take. It answers in milliseconds from a running
/// server and starts one in well under a second; but Watchman 4.9's CLI, when the server it
/// starts cannot take the pid file (the one before it is still shutting down), retries for
/// about two minutes before it gives up. Past this bound the caller runs the hook instead.
const SOCKNAME_BOUND: Duration = Duration::from_secs(5);

/// `watchman --no-pretty get-sockname`, run in the worktree as the hook runs it, for at most
/// [`SOCKNAME_BOUND`].
fn resolve_sockname(workdir: &Path) -> Result<PathBuf, Unreachable> {
    let mut child = std::process::Command::new("watchman")
        .args(["--no-pretty", "get-sockname"])
        .current_dir(workdir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| Unreachable(format!("watchman get-sockname: {e}")))?;
    // A thread reads the reply (one short line, then end of file when the CLI exits), so that
    // the wait for it can be bounded.
    let Some(mut stdout) = child.stdout.take() else {
        return Err(Unreachable("watchman get-sockname: no pipe".into()));
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stdout, &mut bytes);
        let _ = tx.send(bytes);
    });
    let Ok(stdout) = rx.recv_timeout(SOCKNAME_BOUND) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(Unreachable(format!(
            "watchman get-sockname gave no answer in {} s",
            SOCKNAME_BOUND.as_secs()
        )));
    };
    let status = child
        .wait()
        .map_err(|e| Unreachable(format!("watchman get-sockname: {e}")))?;
    let reply: Value = serde_json::from_slice(&stdout)
        .map_err(|_| Unreachable("watchman get-sockname gave no socket".into()))?;
    reply
        .get("sockname")
        .and_then(Value::as_str)
        .filter(|s| status.success() && !s.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| Unreachable("watchman get-sockname gave no socket".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hooks_not_watched_test() {
        assert!(is_not_watched(
            "unable to resolve root /a/b: directory /a/b is not watched"
        ));
        assert!(!is_not_watched("unable to resolve root /a/b: no such file"));
    }

    #[test]
    fn answers_are_shaped_as_the_hook_prints_them() {
        assert_eq!(answer("c:1", None), b"c:1\0/");
        assert_eq!(answer("c:1", Some(&["a", "b/c"])), b"c:1\0a\0b/c");
        assert_eq!(answer("c:1", Some(&[])), b"c:1\0");
    }
}
