//! Asking the filesystem monitor git uses (`core.fsmonitor`) which paths changed since our
//! last snapshot, so that a snapshot stats only those (`scan::statcheck`) and the untracked
//! walk reads only the directories whose listing may have changed (`scan::dirwalk`): a
//! reported path that is tracked and still the same kind of file (an edit) does not count,
//! anything else (new, gone, another kind, a `.gitignore`) marks its directory.
//!
//! The hook protocol v2, as git speaks it: `<hook> 2 <token>` run in the worktree (through
//! `sh -c` when the command holds shell characters), replying `<new token>\0<path>\0…`. A
//! hook that fails, a reply without a token, or a first path starting with `/` means
//! "everything may have changed". Git's built-in daemon (`core.fsmonitor=true`) is not asked:
//! its IPC is not implemented here (git 2.47 has no daemon on Linux), so the snapshot takes
//! the full pass.
//!
//! Our token lives in our own file (`store::private`, `cache/fsmonitor`) beside digests of
//! the index entries the snapshot that got it proved unchanged by their stat data. An entry
//! is taken as unchanged without a stat only when the monitor did not report its path (or a
//! directory above it) since that token and its index entry (path, stat data, id, mode,
//! flags) is exactly one that snapshot proved. Every doubt (no token, another hook or
//! settings, a failed hook, "everything") means the full pass. It never reads or writes git's
//! own fsmonitor token or index extension, writes nothing but its own files and runs nothing
//! but the configured hook (or, for git's Watchman sample hook, asks Watchman's socket the
//! same query: `watchman`).
//!
//! One of the scanner's sources (`scan::snapshot::scan`). Fallback: the full pass without a monitor
//! (every entry stat'ed, every folder the walk cache cannot vouch for read). Kill switch:
//! `core.fsmonitor` unset or `false` (a `core.fsmonitorHookVersion` other than 2 also turns
//! it off).

use crate::ScanContext;
use agent_rewind_core::private::envelope::FSMONITOR_TOKEN;
use gix::bstr::{BStr, BString, ByteSlice};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

mod digests;
#[cfg(unix)]
mod watchman;

use digests::Proofs;
pub use digests::{EntryDigests, entry_digests};
#[cfg(not(unix))]
mod watchman {
    pub struct Unreachable(pub String);
    pub fn is_git_sample(_: &std::path::Path) -> bool {
        false
    }
    pub fn query(
        _: &std::path::Path,
        _: &str,
        _: &std::path::Path,
    ) -> Result<Vec<u8>, Unreachable> {
        Err(Unreachable("not on this platform".into()))
    }
}

/// A hook query under way (started before the index is read, to overlap with it).
pub struct Pending {
    asking: Asking,
    key: String,
    /// The token we asked with: `None` when we had none (the reply then only gives a token).
    since: Option<String>,
    proven: Proofs,
}

/// How the monitor is being asked.
enum Asking {
    /// The configured hook, running.
    Hook(std::io::Result<Child>),
    /// Watchman's socket, in its own thread, in place of git's sample hook (the hook is run
    /// when the socket cannot be used).
    Socket {
        thread: std::thread::JoinHandle<Result<Vec<u8>, watchman::Unreachable>>,
        hook: String,
        asked: String,
        workdir: PathBuf,
    },
}

/// What the monitor said.
pub struct Monitor {
    /// The token to store once the snapshot is done (`None`: the monitor gave none).
    pub next_token: Option<String>,
    key: String,
    /// What changed since our token; `None` means everything may have (the full pass).
    pub changes: Option<Changes>,
}

/// The paths the monitor reported changed since our token.
pub struct Changes {
    /// The token we asked with (the walk cache records the one its records are valid at).
    pub since: String,
    /// Reported paths, without a trailing `/`, sorted.
    paths: Vec<BString>,
    /// Reported paths and the directories holding them: directories whose listing may differ.
    dirty_dirs: HashSet<BString>,
    /// Digests of the index entries the previous snapshot proved unchanged.
    proven: Proofs,
}

/// Start asking the monitor, when `core.fsmonitor` names a hook. `None` when no monitor is
/// configured or it cannot be asked (git's built-in daemon, another hook version).
pub fn start(ctx: &ScanContext) -> Option<Pending> {
    start_with(ctx, None)
}

/// [`start`], asking with `token` (a monitored snapshot's own, `scan::snapshot::monitored`)
/// in place of the one in our token file, and with no proofs.
pub fn start_since(ctx: &ScanContext, token: &str) -> Option<Pending> {
    start_with(ctx, Some(token))
}

/// Whether `core.fsmonitor` names a hook a snapshot asks (so a snapshot need not stat every
/// file): the same test [`start`] makes before it asks.
pub fn is_configured(repo: &gix::Repository) -> bool {
    configured_hook(repo).is_some()
}

/// The hook `core.fsmonitor` names, when it is one we can ask (protocol version 2).
fn configured_hook(repo: &gix::Repository) -> Option<String> {
    let config = repo.config_snapshot();
    let hook = match config.plumbing().boolean("core.fsmonitor") {
        Ok(None | Some(false)) => return None,
        Ok(Some(true)) => {
            agent_rewind_core::trace::mark(
                "fsmonitor: core.fsmonitor=true (git's built-in daemon) is not supported: full pass",
            );
            return None;
        }
        Err(_) => config.string("core.fsmonitor")?.to_string(),
    };
    if hook.is_empty() {
        return None;
    }
    if let Some(v) = config.integer("core.fsmonitorHookVersion")
        && v != 2
    {
        agent_rewind_core::trace::mark("fsmonitor: core.fsmonitorHookVersion is not 2: full pass");
        return None;
    }
    Some(hook)
}

fn start_with(ctx: &ScanContext, token: Option<&str>) -> Option<Pending> {
    let hook = configured_hook(ctx.repo())?;
    let workdir = ctx.workdir();
    let key = settings_key(ctx, &hook, workdir);
    let saved = match token {
        Some(t) => Some((t.to_string(), Proofs::default())),
        None => load(&ctx.private().fsmonitor_token(), &key),
    };
    let (since, proven) = match saved {
        Some((token, proven)) => (Some(token), proven),
        None => (None, Proofs::default()),
    };
    // Without a token of ours, ask with a timestamp as git does on first use: the reply is
    // only used for its new token.
    let asked = since.clone().unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
            .to_string()
    });
    let asking =
        if watchman::is_git_sample(&resolve_hook(&hook, workdir)) && !hook.contains(SHELL_CHARS) {
            agent_rewind_core::trace::mark(
                "fsmonitor: git's Watchman sample hook: asking Watchman's socket",
            );
            let (dir, cache, token) = (
                workdir.to_path_buf(),
                ctx.private().watchman_sockname(),
                asked.clone(),
            );
            let thread = std::thread::spawn(move || watchman::query(&dir, &token, &cache));
            Asking::Socket {
                thread,
                hook,
                asked,
                workdir: workdir.to_path_buf(),
            }
        } else {
            Asking::Hook(spawn_hook(&hook, &asked, workdir))
        };
    Some(Pending {
        asking,
        key,
        since,
        proven,
    })
}

fn spawn_hook(hook: &str, asked: &str, workdir: &Path) -> std::io::Result<Child> {
    hook_command(hook, asked, workdir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
}

/// The hook's output (`<token>\0<paths>`), or why there is none.
fn hook_output(child: std::io::Result<Child>) -> Result<Vec<u8>, String> {
    let out = child
        .and_then(|c| c.wait_with_output())
        .map_err(|e| format!("the hook cannot be run ({e})"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "the hook failed ({}: {})",
            out.status,
            agent_rewind_core::error::one_line(&stderr)
        ));
    }
    Ok(out.stdout)
}

impl Pending {
    /// Wait for the hook's reply.
    pub fn finish(self) -> Monitor {
        let everything = |next_token: Option<String>, why: &str| {
            agent_rewind_core::trace::mark(&format!("fsmonitor: {why}: full pass"));
            Monitor {
                next_token,
                key: self.key.clone(),
                changes: None,
            }
        };
        let reply = match self.asking {
            Asking::Hook(child) => hook_output(child),
            Asking::Socket {
                thread,
                hook,
                asked,
                workdir,
            } => match thread.join() {
                Ok(Ok(out)) if out.is_empty() => {
                    Err("Watchman answered with an error (the hook would fail)".to_string())
                }
                Ok(Ok(out)) => Ok(out),
                Ok(Err(watchman::Unreachable(why))) => {
                    agent_rewind_core::trace::mark(&format!(
                        "fsmonitor: Watchman's socket cannot be used ({why}): running the hook"
                    ));
                    hook_output(spawn_hook(&hook, &asked, &workdir))
                }
                Err(_) => Err("asking Watchman failed".to_string()),
            },
        };
        let out = match reply {
            Ok(out) => out,
            Err(why) => return everything(None, &why),
        };
        let Some((token, rest)) = parse_reply(&out) else {
            return everything(None, "the hook's reply has no token");
        };
        let token = Some(token);
        let Some(since) = self.since else {
            return everything(token, "no token of ours yet");
        };
        if rest.first() == Some(&b'/') {
            return everything(
                token,
                "the monitor reports that everything may have changed",
            );
        }
        if token
            .as_deref()
            .is_some_and(|t| !same_watchman_instance(&since, t))
        {
            // A fresh Watchman instance lists the files that exist, not those deleted since.
            return everything(token, "the monitor's token is of another instance");
        }
        let mut paths: Vec<BString> = rest
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| BString::from(p.strip_suffix(b"/").unwrap_or(p)))
            .filter(|p| !p.is_empty() && p.as_slice() != b".git" && !p.starts_with(b".git/"))
            .collect();
        paths.sort();
        paths.dedup();
        agent_rewind_core::trace::mark(&format!(
            "fsmonitor: {} paths changed since our token",
            paths.len()
        ));
        Monitor {
            next_token: token,
            key: self.key,
            changes: Some(Changes::new(since, paths, self.proven)),
        }
    }
}

impl Changes {
    /// The reported paths, sorted, without duplicates or a trailing `/`.
    pub fn paths(&self) -> &[BString] {
        &self.paths
    }

    /// [`Changes::paths`], taken.
    pub fn into_paths(self) -> Vec<BString> {
        self.paths
    }

    fn new(since: String, paths: Vec<BString>, proven: Proofs) -> Changes {
        let mut dirty_dirs = HashSet::with_capacity(paths.len() * 2);
        for p in &paths {
            dirty_dirs.insert(p.clone());
            dirty_dirs.insert(parent_of(p.as_bstr()).to_owned());
        }
        Changes {
            since,
            paths,
            dirty_dirs,
            proven,
        }
    }

    /// For each entry of `index` (with `digests` from [`entry_digests`]), whether it is known
    /// unchanged without a stat: the previous snapshot proved that very entry unchanged and
    /// the monitor reported neither its path nor a directory above it since.
    pub fn known_unchanged(&self, index: &gix::index::State, digests: &EntryDigests) -> Vec<bool> {
        let mut out = self.proven.holds(digests);
        if out.len() != index.entries().len() {
            return vec![false; index.entries().len()];
        }
        let entries = index.entries();
        for p in &self.paths {
            let mut prefix = p.to_vec();
            prefix.push(b'/');
            // The entry `p` itself (all its stages), then the entries below `p/`.
            let lo = entries.partition_point(|e| e.path(index).as_bytes() < p.as_slice());
            let hi = lo + entries[lo..].partition_point(|e| e.path(index) == p.as_bstr());
            for v in &mut out[lo..hi] {
                *v = false;
            }
            let lo = entries.partition_point(|e| e.path(index).as_bytes() < &prefix[..]);
            let hi = lo + entries[lo..].partition_point(|e| e.path(index).starts_with(&prefix));
            for v in &mut out[lo..hi] {
                *v = false;
            }
        }
        out
    }

    /// Take back the mark on the directories of reported paths whose change cannot have
    /// changed their directory's listing as the untracked walk sees it: a path that has an
    /// index entry (a regular file or a symlink, not skip-worktree) and is still that kind of
    /// file in the worktree at `workdir` only had its content or stat data changed, so which
    /// files are untracked there is as before. Every doubt keeps the mark: a path not in the
    /// index, gone, of another kind, a `.gitignore` (its rules decide what is ignored below),
    /// or a case-insensitive worktree (`ignore_case`), where a case-only rename keeps the old
    /// name reachable. Returns how many directories stay marked.
    pub fn unmark_content_only(
        &mut self,
        index: &gix::index::State,
        workdir: &Path,
        ignore_case: bool,
    ) -> usize {
        if ignore_case {
            return self.dirty_dirs.len();
        }
        let mut dirty = HashSet::with_capacity(self.paths.len() * 2);
        for p in &self.paths {
            dirty.insert(p.clone());
            if !content_only(index, workdir, p.as_bstr()) {
                dirty.insert(parent_of(p.as_bstr()).to_owned());
            }
        }
        self.dirty_dirs = dirty;
        self.dirty_dirs.len()
    }

    /// Whether the listing of directory `dir` (`""` is the root) may differ from what the
    /// walk saw at our token: the monitor reported it, an entry in it, or a directory above.
    pub fn dir_may_have_changed(&self, dir: &BStr) -> bool {
        if self.dirty_dirs.contains(dir) {
            return true;
        }
        let mut d = dir;
        while let Some(i) = d.rfind_byte(b'/') {
            d = d[..i].as_bstr();
            if self.paths.binary_search_by(|p| p.as_bstr().cmp(d)).is_ok() {
                return true;
            }
        }
        false
    }
}

impl Monitor {
    /// Store our token with the digests of the entries this snapshot proved unchanged
    /// (`proven[i]` for entry `i`), in index order, for the next snapshot. Best effort: a
    /// token that cannot be stored only means a full pass next time.
    pub fn save(&self, ctx: &ScanContext, digests: Option<&EntryDigests>, proven: &[bool]) {
        let path = ctx.private().fsmonitor_token();
        let Some(token) = self.next_token.as_deref().filter(|t| usable_token(t)) else {
            let _ = agent_rewind_core::private::remove_if_exists(&path);
            return;
        };
        let (layout, entries) = digests.map_or((0, &[][..]), |d| (d.layout, &d.entries[..]));
        if entries.len() != proven.len() {
            let _ = agent_rewind_core::private::remove_if_exists(&path);
            return;
        }
        let mut out = Vec::with_capacity(entries.len() * 8 + 256);
        out.extend_from_slice(
            format!("{}\n{token}\n{}\n{layout:016x}\n", self.key, entries.len()).as_bytes(),
        );
        for (d, p) in entries.iter().zip(proven) {
            out.extend_from_slice(&(if *p { *d } else { 0 }).to_le_bytes());
        }
        if FSMONITOR_TOKEN.write(&path, &out).is_err() {
            let _ = agent_rewind_core::private::remove_if_exists(&path);
        }
    }
}

/// Characters that make git run a hook through the shell.
const SHELL_CHARS: &[char] = &[
    '|', '&', ';', '<', '>', '(', ')', '$', '`', '\\', '"', '\'', ' ', '\t', '\n', '*', '?', '[',
    '#', '~', '=', '%',
];

/// The command that runs `hook` as git does (`run_command` with `use_shell`).
fn hook_command(hook: &str, token: &str, workdir: &Path) -> Command {
    let mut c = if hook.contains(SHELL_CHARS) {
        let mut c = Command::new("sh");
        c.arg("-c").arg(format!("{hook} \"$@\"")).arg(hook);
        c
    } else {
        Command::new(resolve_hook(hook, workdir))
    };
    c.arg("2").arg(token).current_dir(workdir);
    c
}

/// A hook path relative to the worktree (git runs it there) made absolute.
fn resolve_hook(hook: &str, workdir: &Path) -> PathBuf {
    let p = Path::new(hook);
    if hook.contains('/') && p.is_relative() {
        workdir.join(p)
    } else {
        p.to_path_buf()
    }
}

/// `<token>\0<rest>`: the token and the rest, or `None` when there is no usable token.
fn parse_reply(reply: &[u8]) -> Option<(String, &[u8])> {
    let nul = reply.iter().position(|b| *b == 0)?;
    let token = std::str::from_utf8(&reply[..nul]).ok()?;
    usable_token(token).then(|| (token.to_string(), &reply[nul + 1..]))
}

/// Whether two Watchman clocks (`c:<start>:<pid>:<root>:<ticks>`) are of the same server
/// instance and watch; tokens of other monitors are taken as they come.
fn same_watchman_instance(old: &str, new: &str) -> bool {
    let instance = |t: &str| {
        t.starts_with("c:")
            .then(|| t.rsplit_once(':').map(|(i, _)| i.to_string()))
    };
    match (instance(old), instance(new)) {
        (Some(a), Some(b)) => a.is_some() && a == b,
        _ => true,
    }
}

/// A token we can store and pass back as one argument.
fn usable_token(token: &str) -> bool {
    !token.is_empty() && !token.contains(['\n', '\t', '\0'])
}

/// Everything that must be the same for a stored token and its proofs to hold: the hook, the
/// worktree, and the settings that decide what a stat proves.
fn settings_key(ctx: &ScanContext, hook: &str, workdir: &Path) -> String {
    let config = ctx.repo().config_snapshot();
    let mut key = format!("hook={hook:?} workdir={:?}", workdir.display().to_string());
    for k in [
        "core.checkStat",
        "core.trustCtime",
        "core.fileMode",
        "core.symlinks",
        "core.ignoreCase",
    ] {
        key.push_str(&format!(
            " {k}={:?}",
            config.string(k).map(|v| v.to_string())
        ));
    }
    key.replace('\n', " ")
}

/// Our stored token and proven digests, when the file is ours and made with `key`.
fn load(path: &Path, key: &str) -> Option<(String, Proofs)> {
    let data = FSMONITOR_TOKEN.read_cache(path)?;
    let mut lines = data.splitn(5, |b| *b == b'\n');
    if lines.next()? != key.as_bytes() {
        return None;
    }
    let token = std::str::from_utf8(lines.next()?).ok()?.to_string();
    let count: usize = std::str::from_utf8(lines.next()?).ok()?.parse().ok()?;
    let layout_hex = std::str::from_utf8(lines.next()?).ok()?;
    let layout = u64::from_str_radix(layout_hex, 16).ok()?;
    let rest = lines.next()?;
    if !usable_token(&token) || layout_hex.len() != 16 || rest.len() != count.checked_mul(8)? {
        return None;
    }
    let digests: Vec<u64> = rest
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    Some((token, Proofs { layout, digests }))
}

/// Whether the reported path `rela` is tracked and still the same kind of file (see
/// [`Changes::unmark_content_only`]).
fn content_only(index: &gix::index::State, workdir: &Path, rela: &BStr) -> bool {
    use gix::index::entry::{Flags, Mode};
    if rela.rsplit_str("/").next() == Some(b".gitignore".as_slice()) {
        return false;
    }
    let Ok(first) = index.entry_index_by_path(rela) else {
        return false;
    };
    // Every stage of the path (a conflict has several): all must be files of one kind.
    let entries = index.entries();
    let lo = entries[..first].partition_point(|e| e.path(index) < rela);
    let same_path = entries[lo..]
        .iter()
        .take_while(|e| e.path(index) == rela)
        .collect::<Vec<_>>();
    let Some(mode) = same_path.first().map(|e| e.mode) else {
        return false;
    };
    if same_path
        .iter()
        .any(|e| e.flags.contains(Flags::SKIP_WORKTREE) || e.mode != mode)
    {
        return false;
    }
    let Ok(full) = gix::path::from_bstr(rela).map(|p| workdir.join(p)) else {
        return false;
    };
    let Ok(md) = std::fs::symlink_metadata(&full) else {
        return false;
    };
    match mode {
        Mode::FILE | Mode::FILE_EXECUTABLE => md.file_type().is_file(),
        Mode::SYMLINK => md.file_type().is_symlink(),
        _ => false,
    }
}

/// The directory holding `rela` (`""` for the root's entries).
fn parent_of(rela: &BStr) -> &BStr {
    match rela.rfind_byte(b'/') {
        Some(i) => rela[..i].as_bstr(),
        None => BStr::new(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_parsed_as_git_does() {
        assert_eq!(parse_reply(b"c:1:2\0a\0b").unwrap().0, "c:1:2");
        assert_eq!(parse_reply(b"c:1:2\0/").unwrap().1, b"/");
        assert!(parse_reply(b"no nul").is_none());
        assert!(parse_reply(b"\0a").is_none());
    }

    #[test]
    fn a_new_watchman_instance_is_noticed() {
        assert!(same_watchman_instance("c:1:2:1:5", "c:1:2:1:9"));
        assert!(!same_watchman_instance("c:1:2:1:5", "c:1:3:1:9"));
        assert!(!same_watchman_instance("c:1:2:1:5", "c:1:2:2:1"));
        assert!(same_watchman_instance("123", "456"));
    }

    #[test]
    fn dirs_above_reported_paths_count_as_changed() {
        let c = Changes::new(
            "t".into(),
            vec!["a/b/c".into(), "x".into()],
            Proofs::default(),
        );
        assert!(c.dir_may_have_changed(BStr::new("a/b")));
        assert!(c.dir_may_have_changed(BStr::new("x/y/z")));
        assert!(!c.dir_may_have_changed(BStr::new("y")));
        assert!(!c.dir_may_have_changed(BStr::new("a/d")));
        assert!(!c.dir_may_have_changed(BStr::new("a")));
    }
}
