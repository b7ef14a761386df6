//! Named crash points for the crash tests: `crash_point!("rewind:backed-up")`
//! marks a place where a write path may die. In a build with the `crash-points` feature
//! (`cargo test` turns it on through the root package's dev-dependency on this crate), the environment variable
//! `AGENT_REWIND_CRASH_AT=<name>` (or `<name>#<n>` for its n-th time) aborts the process there
//! with `std::process::abort`, and `AGENT_REWIND_CRASH_TRACE=1` prints every point passed to
//! stderr. Without the feature the macro expands to nothing: release builds have no points.
//!
//! [`POINTS`] lists every name; a name passed to the macro must be listed there (the crash
//! test runs every write path, checks each point it passes is listed, and that every listed
//! point is reached by some path).
//!
//! Fail points, `fail_point!("worktree:write")`, are the same for errors: with the feature,
//! `AGENT_REWIND_FAIL_AT=<name>[#<n>]` makes the n-th pass return an error there, as a full
//! disk would, so that a test can see what a command says after a failure part-way (root
//! ignores file permissions, so a read-only folder cannot make such a failure).
//! [`FAIL_POINTS`] lists them. Must never do anything else.

/// Every crash point, by layer. Keep in sync with the `crash_point!` calls.
pub const POINTS: &[&str] = &[
    // store::publish / store::looserefs: the ref transaction.
    "publish:before",
    "publish:ref-locked",
    "publish:reflog-written",
    // store::indexlock: git's index.lock held, before the rename.
    "index:locked",
    // store::worktree: after each file written into a worktree.
    "worktree:file-written",
    // journal::append: commit and notes commit written, refs not moved.
    "journal:objects-written",
    // materialize: the backup commit written, the backups ref not moved.
    "backup:objects-written",
    // ops::rewind (rewind and fork).
    "rewind:backed-up",
    "fork:worktree-made",
    "rewind:recorded",
    "rewind:source-archived",
    "rewind:files-written",
    "rewind:head-moved",
    "rewind:index-written",
    // ops::restore and ops::undo.
    "restore:backed-up",
    "restore:files-written",
    "undo:backed-up",
    "undo:files-written",
    "undo:head-moved",
    // ops::revert: the backup published, then the files written (the record comes last).
    "revert:backed-up",
    "revert:files-written",
    // store::localcopy: a run's notes copied from a local remote, the staging ref not set.
    "fetch:notes-packed",
    // store::looserefs: every lock of a transaction that deletes refs held (theirs and
    // packed-refs.lock), nothing changed yet.
    "delete:refs-locked",
    // ops::gc, ops::delete, ops::steer, ops::fetch (import).
    "gc:runs-deleted",
    "gc:refs-packed",
    "gc:backups-trimmed",
    "delete:refs-deleted",
    "steer:written",
    "import:objects-fetched",
    "import:published",
    "import:packed-written",
    // workflow::runner: a step begun, its command run, the step finished.
    "runner:begun",
    "runner:command-done",
    "runner:finished",
];

/// Every fail point (`fail_point!`), where a write may fail with an error.
pub const FAIL_POINTS: &[&str] = &[
    // store::worktree: before a file of the worktree is removed, before one is written.
    "worktree:remove",
    "worktree:write",
];

/// Whether this build has crash points (a test build): code that sizes its work for the
/// tests (smaller chunks, so that a small test reaches every branch) reads this.
pub const ENABLED: bool = cfg!(feature = "crash-points");

/// Mark a place where a write path may die; nothing at all without the `crash-points`
/// feature.
#[macro_export]
macro_rules! crash_point {
    ($name:literal) => {
        $crate::crash::hit($name);
    };
}

/// Return an error from the enclosing function here when `AGENT_REWIND_FAIL_AT` names this
/// point; nothing at all without the `crash-points` feature.
#[macro_export]
macro_rules! fail_point {
    ($name:literal) => {
        if $crate::crash::should_fail($name) {
            return Err($crate::error::Error::other(format!(
                "failure injected at {} (AGENT_REWIND_FAIL_AT)",
                $name
            )));
        }
    };
}

/// Never: this build has no fail points.
#[cfg(not(feature = "crash-points"))]
#[inline(always)]
pub fn should_fail(_name: &str) -> bool {
    false
}

/// Whether `AGENT_REWIND_FAIL_AT` names this fail point (and this is its n-th time).
#[cfg(feature = "crash-points")]
pub fn should_fail(name: &str) -> bool {
    let Ok(at) = std::env::var("AGENT_REWIND_FAIL_AT") else {
        return false;
    };
    let n = count(&format!("fail:{name}"));
    let (want, nth) = match at.split_once('#') {
        Some((w, k)) => (w.to_string(), k.parse::<u32>().unwrap_or(1)),
        None => (at, 1),
    };
    want == name && nth == n
}

/// How many times `key` has been passed in this process, this one included.
#[cfg(feature = "crash-points")]
fn count(key: &str) -> u32 {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static SEEN: Mutex<Option<HashMap<String, u32>>> = Mutex::new(None);
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    let count = seen
        .get_or_insert_with(HashMap::new)
        .entry(key.to_string())
        .or_insert(0);
    *count += 1;
    *count
}

/// Nothing: this build has no crash points.
#[cfg(not(feature = "crash-points"))]
#[inline(always)]
pub fn hit(_name: &str) {}

/// Abort here if `AGENT_REWIND_CRASH_AT` names this point (and this is its n-th time).
#[cfg(feature = "crash-points")]
pub fn hit(name: &str) {
    let n = count(name);
    if std::env::var_os("AGENT_REWIND_CRASH_TRACE").is_some() {
        let known = if POINTS.contains(&name) {
            ""
        } else {
            " (unlisted)"
        };
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "crash-point: {name}#{n}{known}");
    }
    if let Ok(at) = std::env::var("AGENT_REWIND_CRASH_AT") {
        let (want, nth) = match at.split_once('#') {
            Some((w, k)) => (w.to_string(), k.parse::<u32>().unwrap_or(1)),
            None => (at, 1),
        };
        if want == name && nth == n {
            std::process::abort();
        }
    }
}
