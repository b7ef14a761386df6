//! Every helper the integration tests share, and only those: temporary repositories driven
//! by the real `git` binary, the `git-agent-rewind` binary under test, and (in submodules)
//! fixtures larger than one function. It must never hold a test. A helper used by one
//! test file stays in that file; once a second file needs it, it moves here, so that no
//! two files define the same helper.
//!
//! Where a new test goes: in the module of its subject (tests/suite/main.rs lists them);
//! a new subject gets a module of its own there, and a folder once it needs more than one
//! file.
#![allow(dead_code)]

pub mod agent_fixtures;
pub mod external_workflow;
#[cfg(unix)]
pub mod worktree;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary under test: the one cargo built with this suite, or the one
/// `AGENT_REWIND_TEST_BINARY` names (CI runs part of the suite against the static musl
/// build that way, `.ci/run`). It must be built with the `crash-points` feature of
/// agent-rewind-core for the crash tests.
pub fn bin() -> PathBuf {
    match std::env::var_os("AGENT_REWIND_TEST_BINARY") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_git-agent-rewind")),
    }
}

/// A temporary repository with a deterministic git environment.
pub struct Repo {
    pub dir: tempfile::TempDir,
}

impl Repo {
    /// `git init` with one commit (`README.md`).
    pub fn new() -> Repo {
        Repo::new_with(&[])
    }

    /// [`Repo::new`] with its refs in git's reftable format (`--ref-format=reftable`).
    pub fn new_reftable() -> Repo {
        Repo::new_with(&["--ref-format=reftable"])
    }

    /// [`Repo::new`] with SHA-256 object ids (`--object-format=sha256`).
    pub fn new_sha256() -> Repo {
        Repo::new_with(&["--object-format=sha256"])
    }

    /// [`Repo::new`] with more `git init` options.
    pub fn new_with(init: &[&str]) -> Repo {
        let r = Repo::empty_with(init);
        r.write("README.md", "hello\n");
        r.git(&["add", "-A"]);
        r.git(&["commit", "-q", "-m", "initial"]);
        r
    }

    /// `git init` with no commit (an unborn branch).
    pub fn empty() -> Repo {
        Repo::empty_with(&[])
    }

    /// [`Repo::empty`] with more `git init` options.
    pub fn empty_with(init: &[&str]) -> Repo {
        let dir = tempfile::tempdir().expect("tempdir");
        let r = Repo { dir };
        r.git(&[&["init", "-q", "-b", "main"], init].concat());
        r.git(&["config", "user.name", "Test User"]);
        r.git(&["config", "user.email", "test@example.com"]);
        r.git(&["config", "commit.gpgsign", "false"]);
        r
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Run git in the repository; panics on failure; returns stdout.
    pub fn git(&self, args: &[&str]) -> String {
        git_in(self.path(), args)
    }

    /// Run git, returning the whole output whatever the exit status.
    pub fn git_output(&self, args: &[&str]) -> Output {
        git_cmd(self.path()).args(args).output().expect("run git")
    }

    /// Run the tool in the repository; returns the whole output.
    pub fn run(&self, args: &[&str]) -> Output {
        run_in(self.path(), args)
    }

    /// Run the tool; panic with its stderr unless it succeeds; return stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        ok_in(self.path(), args)
    }

    /// Run the tool with `--json` and parse stdout.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut a = vec!["--json"];
        a.extend_from_slice(args);
        let out = self.ok(&a);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    }

    pub fn write(&self, rel: &str, content: &str) {
        write_in(self.path(), rel, content)
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path().join(rel)).unwrap()
    }

    /// Bytes of `.git/index` (None when absent).
    pub fn index_bytes(&self) -> Option<Vec<u8>> {
        std::fs::read(self.path().join(".git/index")).ok()
    }

    /// `git rev-parse`.
    pub fn rev(&self, spec: &str) -> String {
        self.git(&["rev-parse", spec]).trim().to_string()
    }

    /// `git fsck --strict` must be clean.
    pub fn assert_fsck(&self) {
        assert_fsck_in(self.path(), "the test repository")
    }

    /// Whether everything reachable from our refs (runs and their notes) is present:
    /// `None` when complete, else what `git rev-list --objects` complained about.
    pub fn missing_objects_under_our_refs(&self) -> Option<String> {
        let out = self.git_output(&[
            "rev-list",
            "--objects",
            "--glob=refs/agent-runs/*",
            "--glob=refs/notes/agent-runs/*",
        ]);
        (!out.status.success()).then(|| String::from_utf8_lossy(&out.stderr).into_owned())
    }

    /// `git submodule add` of the repository at `origin` as `at`, committed.
    pub fn add_submodule(&self, origin: &Path, at: &str) {
        let origin = origin.to_str().unwrap();
        self.git(&[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            origin,
            at,
        ]);
        self.git(&["commit", "-q", "-m", "submodule"]);
    }

    /// The tree `git add -A` would write, computed in a throw-away index (see
    /// [`add_all_tree_in`]).
    pub fn add_all_tree(&self) -> String {
        add_all_tree_in(self.path())
    }
}

/// Write `content` to `rel` below `dir`, creating its folders.
pub fn write_in(dir: &Path, rel: &str, content: &str) {
    let p = dir.join(rel);
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(p, content).unwrap();
}

/// `git fsck --strict` in `dir` must be clean; `ctx` says which repository failed.
pub fn assert_fsck_in(dir: &Path, ctx: &str) {
    let out = git_cmd(dir)
        .args(["fsck", "--strict", "--no-progress"])
        .output()
        .expect("run git fsck");
    assert!(
        out.status.success(),
        "{ctx}: git fsck --strict failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Set the mtime of every worktree file (not folder) below `dir` an hour back, so that
/// after `git update-index --refresh` no entry is racily clean: what waiting out git's
/// one-second racy window would do, without the wait.
pub fn age_files(dir: &Path) {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            if e.file_name() == ".git" {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                walk(&e.path(), out);
            } else {
                out.push(e.path());
            }
        }
    }
    let then = filetime::FileTime::from_system_time(
        std::time::SystemTime::now() - std::time::Duration::from_secs(3600),
    );
    let mut files = vec![];
    walk(dir, &mut files);
    for f in files {
        filetime::set_symlink_file_times(&f, then, then).unwrap();
    }
}

/// `PATH` with the binary under test first, so that `git agent-rewind` (and a hook git
/// starts) runs it.
pub fn path_with_tool() -> std::ffi::OsString {
    let dir = bin().parent().unwrap().to_path_buf();
    let mut paths = vec![dir];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(paths).unwrap()
}

/// A git command with a deterministic environment (no user/system config, no pager).
pub fn git_cmd(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_PAGER", "cat")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE");
    c
}

pub fn git_in(dir: &Path, args: &[&str]) -> String {
    let out = git_cmd(dir).args(args).output().expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} failed in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The tool as a command, with the same deterministic environment.
pub fn tool_cmd(dir: &Path) -> Command {
    let mut c = Command::new(bin());
    c.current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("NO_COLOR", "1")
        .env_remove("AGENT_RUN")
        .env_remove("AGENT_STEP")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE");
    c
}

/// What a command printed on stderr, as text (lossy: a test only reads it).
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn run_in(dir: &Path, args: &[&str]) -> Output {
    tool_cmd(dir)
        .args(args)
        .output()
        .expect("run git-agent-rewind")
}

pub fn ok_in(dir: &Path, args: &[&str]) -> String {
    let out = run_in(dir, args);
    assert!(
        out.status.success(),
        "git-agent-rewind {args:?} failed ({:?}): {}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Every ref under a prefix, as (name, id), via `git for-each-ref`.
pub fn refs(dir: &Path, prefix: &str) -> Vec<(String, String)> {
    git_in(
        dir,
        &["for-each-ref", "--format=%(refname) %(objectname)", prefix],
    )
    .lines()
    .filter_map(|l| {
        l.split_once(' ')
            .map(|(a, b)| (a.to_string(), b.to_string()))
    })
    .collect()
}

/// The tree `git add -A` would write in the worktree at `dir` (linked worktrees included),
/// computed in a throw-away copy of that worktree's index.
///
/// Unlike [`Repo::add_all_tree`], the copy keeps the real index's mtime: git decides whether
/// an entry whose stat data matches may still have changed ("racily clean") by comparing
/// file mtimes with the index file's own mtime, so a copy stamped "now" makes git trust
/// stale stat data and miss same-size edits made within the same second.
pub fn add_all_tree_in(dir: &Path) -> String {
    add_all_tree_except(dir, &[], &[])
}

/// [`add_all_tree_in`] without `left_out` (paths a snapshot's policy leaves out), git run
/// with `env` too, and with `core.fsmonitor` off: the tree is what a full look at every file
/// finds, whatever a monitor would say.
pub fn add_all_tree_except(
    dir: &Path,
    env: &[(&str, &std::ffi::OsStr)],
    left_out: &[&str],
) -> String {
    let index = dir.join(git_in(dir, &["rev-parse", "--git-path", "index"]).trim());
    let tmp = tempfile::NamedTempFile::new().unwrap();
    match std::fs::metadata(&index) {
        Ok(md) => {
            std::fs::write(tmp.path(), std::fs::read(&index).unwrap()).unwrap();
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(tmp.path())
                .unwrap();
            f.set_modified(md.modified().unwrap()).unwrap();
        }
        Err(_) => std::fs::remove_file(tmp.path()).unwrap(),
    }
    let run = |args: &[&str]| {
        let out = git_cmd(dir)
            .envs(env.iter().copied())
            .env("GIT_INDEX_FILE", tmp.path())
            .args(["-c", "core.fsmonitor=false"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    run(&["add", "-A"]);
    for p in left_out {
        run(&["rm", "-q", "--cached", "--ignore-unmatch", "--", p]);
    }
    run(&["write-tree"]).trim().to_string()
}

/// Run git with `input` on stdin; panics on failure; returns stdout, trimmed.
pub fn git_stdin(dir: &Path, args: &[&str], input: &[u8]) -> String {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = git_cmd(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run git");
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Run the tool with `input` on stdin (and extra environment), returning the whole output.
pub fn tool_stdin(dir: &Path, args: &[&str], input: &[u8], env: &[(&str, &str)]) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut c = tool_cmd(dir);
    c.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// `--json` output of the tool run in `dir`.
pub fn json_in(dir: &Path, args: &[&str]) -> serde_json::Value {
    let mut a = vec!["--json"];
    a.extend_from_slice(args);
    let out = ok_in(dir, &a);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// The checkpoints of `run`, oldest first.
pub fn checkpoints(dir: &Path, run: &str) -> Vec<serde_json::Value> {
    json_in(dir, &["list", run]).as_array().unwrap().clone()
}

/// Snapshot the worktree at `dir` through the library (a fresh open, as a new process would)
/// and check its tree against `git add -A`; `what` names the change for the failure message.
pub fn snapshot_matches_git(dir: &Path, what: &str) -> agent_rewind::snapshot::Snapshot {
    use agent_rewind::snapshot::{Policy, snapshot_worktree};
    let store = agent_rewind::store::Store::discover(dir, agent_rewind::store::OpenFor::Work)
        .expect("open");
    let snap = snapshot_worktree(&store, &Policy::from_config(&store).unwrap()).expect("snapshot");
    assert_eq!(
        snap.tree.to_string(),
        add_all_tree_in(dir),
        "after {what}: the snapshot differs from `git add -A` (walk read {} folders, skipped {}; \
         {} entries proven unchanged)",
        snap.dirs_read,
        snap.dirs_skipped,
        snap.entries_proven
    );
    snap
}

/// How long a command may run in the tests that bound it: far above any command's duration
/// here, so only a hang reaches it.
pub const HANG_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Run `cmd` to completion, failing the test if it takes longer than [`HANG_TIMEOUT`].
pub fn bounded(cmd: Command, what: &str) -> Output {
    bounded_by(cmd, what, HANG_TIMEOUT)
}

/// Run `cmd` to completion, failing the test if it takes longer than `limit` (for a program
/// known to start slowly; still only a hang reaches it).
pub fn bounded_by(mut cmd: Command, what: &str, limit: std::time::Duration) -> Output {
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let start = std::time::Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let o = child.wait_with_output().expect("output");
            panic!(
                "{what} hung (killed after {limit:?}): {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// `git daemon` serving the bare repositories under `base` on 127.0.0.1 (pushes enabled),
/// stopped on drop (also when a test panics).
pub struct Daemon {
    child: std::process::Child,
    pub port: u16,
}

impl Daemon {
    /// Start it on a free port (trying another when the port was taken meanwhile).
    pub fn start(base: &Path) -> Daemon {
        use std::net::{TcpListener, TcpStream};
        use std::process::Stdio;
        // Run the daemon binary itself: `git daemon` execs it as a child that killing `git`
        // would leave running.
        let exec_path = git_in(base, &["--exec-path"]).trim().to_string();
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let child = Command::new(Path::new(&exec_path).join("git-daemon"))
                .current_dir(base)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .args([
                    "--export-all",
                    "--enable=receive-pack",
                    &format!("--base-path={}", base.display()),
                    "--listen=127.0.0.1",
                    &format!("--port={port}"),
                    "--reuseaddr",
                    &base.display().to_string(),
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start git daemon");
            let mut d = Daemon { child, port };
            // Ready when it accepts connections (or gone: the port was taken meanwhile).
            for _ in 0..200 {
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return d;
                }
                if d.child.try_wait().ok().flatten().is_some() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
        panic!("git daemon did not start");
    }

    /// The URL of the repository `repo` (a folder under `base`).
    pub fn url(&self, repo: &str) -> String {
        format!("git://127.0.0.1:{}/{repo}", self.port)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A private file of format `name` and `version` holding `body`, as docs/FORMAT.md ("Local
/// state outside refs") spells the envelope: `agent-rewind/<name> v<N>`, the body, and the
/// CRC-32 of both (written here from the documentation, not by the tool's own code).
pub fn envelope(name: &str, version: u32, body: &[u8]) -> Vec<u8> {
    let mut out = format!("agent-rewind/{name} v{version}\n").into_bytes();
    out.extend_from_slice(body);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(format!("crc32 {crc:08x}\n").as_bytes());
    out
}

/// The body of an enveloped private file whose header is `agent-rewind/<name> v<version>`,
/// after checking its checksum.
pub fn envelope_body<'a>(data: &'a [u8], name: &str, version: u32) -> &'a [u8] {
    let header = format!("agent-rewind/{name} v{version}\n");
    assert!(
        data.starts_with(header.as_bytes()),
        "not a {name} v{version} file: {:?}",
        String::from_utf8_lossy(&data[..data.len().min(80)])
    );
    let (signed, trailer) = data.split_at(data.len() - 15);
    assert_eq!(
        trailer,
        format!("crc32 {:08x}\n", crc32fast::hash(signed)).as_bytes(),
        "the checksum of the {name} file"
    );
    &signed[header.len()..]
}

/// The records of a private log (`touched/<run>`, `post-commit.report`) of format `name`
/// and `version`: its header, then `<text>\t<CRC-32 of text, 8 hex digits>` per line.
pub fn envelope_body_log(data: &[u8], name: &str, version: u32) -> Vec<String> {
    let text = String::from_utf8_lossy(data);
    let (header, rest) = text.split_once('\n').expect("a header line");
    assert_eq!(header, format!("agent-rewind/{name} v{version}"));
    rest.lines()
        .map(|l| {
            let (t, crc) = l.rsplit_once('\t').expect("a checksum");
            assert_eq!(crc, format!("{:08x}", crc32fast::hash(t.as_bytes())), "{l}");
            t.to_string()
        })
        .collect()
}

/// `git add -A` and a commit in the repository at `dir` (its own, or a nested one), with a
/// fixed identity.
pub fn commit_all_in(dir: &Path, message: &str) {
    git_in(dir, &["add", "-A"]);
    git_in(
        dir,
        &[
            "-c",
            "user.name=N",
            "-c",
            "user.email=n@e",
            "commit",
            "-q",
            "-m",
            message,
        ],
    );
}

#[cfg(unix)]
/// A new pseudo-terminal of `columns` columns (24 rows): the end the test reads and writes
/// (the terminal's screen and keyboard), and the end a command gets as its stdin, stdout
/// or stderr.
pub fn pseudo_terminal(columns: u16) -> (std::fs::File, std::os::fd::OwnedFd) {
    use std::os::fd::{FromRawFd, OwnedFd};
    let (mut m, mut s) = (-1, -1);
    let mut size = libc::winsize {
        ws_row: 24,
        ws_col: columns,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two new file descriptors into `m` and `s` and only reads
    // `size`; each is owned by exactly one File/OwnedFd below.
    let rc = unsafe {
        libc::openpty(
            &mut m,
            &mut s,
            std::ptr::null_mut(),
            // Mutable on macOS, const on Linux: a null and a `*mut` fit both.
            std::ptr::null_mut(),
            &raw mut size,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: `m` and `s` are open (rc 0) and owned by nothing else.
    unsafe { (std::fs::File::from_raw_fd(m), OwnedFd::from_raw_fd(s)) }
}

#[cfg(unix)]
/// What is left on the screen of a pseudo-terminal whose other ends are all closed: read
/// up to the EIO that says so.
pub fn read_screen(master: &mut std::fs::File) -> String {
    use std::io::Read;
    let mut screen = vec![];
    let mut buf = [0u8; 4096];
    while let Ok(n) = master.read(&mut buf) {
        if n == 0 {
            break;
        }
        screen.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&screen).into_owned()
}
