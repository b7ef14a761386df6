//! The post-commit checkpoint recorded after `git commit` returns, where taking it first
//! would make every commit wait for a stat of every file (a large worktree, no filesystem
//! monitor: ~100 ms at 100,000 files, docs/PERFORMANCE.md).
//!
//! The hook resolves the run, the step and the commit (cheap), takes the worktree's
//! post-commit lock (a `flock`), and hands the [`Job`] and the lock to the program running
//! the hook, which starts the child its own way ([`StartInBackground`]; the CLI starts
//! itself again in a process group of its own with the lock file as its standard input),
//! and returns. The child holds the lock until it exits; the kernel drops it however the
//! child ends, so no stale lock is possible. Every writer waits for the lock
//! before it records (`journal::append`) and so does every command of the CLI ([`settle`]):
//! a command run after `git commit` returned sees the checkpoint. The child records only
//! while HEAD is still the commit, before and after its snapshot (or HEAD moved on from it
//! only by commits on top of it, as HEAD's reflog says); what it could not record
//! it leaves in a report, and a child that died leaves the pending marker the hook wrote,
//! which the next command turns into a line of that report. The report is kept until a
//! command a person runs (`status`, `list`, `show`, `log`: [`Tell::Person`]) has shown it:
//! a hook's stderr, or that of a command an agent runs, is often thrown away.
//!
//! `agentRewind.postCommitInBackground`: `auto` (the default: no monitor and at least
//! [`AUTO_MIN_ENTRIES`] index entries), `true` or `false`. This module decides and is the
//! child; it never starts a process itself, and never records anything but through
//! `handlers::record`.

use super::HookOutcome;
use super::handlers::{HookRecord, StepSource, record};
use crate::catalog::short;
use crate::store::{ObjectId, PostCommitWait, Store};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::{RunId, StepName};
use agent_rewind_core::private::envelope::{POST_COMMIT_PENDING, POST_COMMIT_REPORT};

/// With `auto`, checkpoints of indexes of at least this many entries are recorded in the
/// background when no filesystem monitor is configured: about where a checkpoint that stats
/// every file stops fitting the hook's budget (docs/design/hooks.md).
pub const AUTO_MIN_ENTRIES: u32 = 20_000;
const HOOK: &str = "post-commit";
const KEY: &str = "agentRewind.postCommitInBackground";

/// `agentRewind.postCommitInBackground`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Auto,
    Always,
    Never,
}

fn mode(store: &Store) -> Result<Mode> {
    let Some(value) = store.config().string(KEY) else {
        return Ok(Mode::Auto);
    };
    if value.eq_ignore_ascii_case("auto") {
        return Ok(Mode::Auto);
    }
    match store.config().bool(KEY) {
        Ok(Some(true)) => Ok(Mode::Always),
        Ok(Some(false)) => Ok(Mode::Never),
        _ => Err(Error::usage(format!(
            "config {KEY} = {value:?} is not auto, true or false"
        ))),
    }
}

/// Why this commit's checkpoint is recorded in the background, or `None` to record it now.
pub fn reason(store: &Store) -> Result<Option<String>> {
    if !cfg!(unix) {
        return Ok(None);
    }
    Ok(match mode(store)? {
        Mode::Never => None,
        Mode::Always => Some(format!("{KEY} is true")),
        Mode::Auto if store.worktree().has_fsmonitor() => None,
        Mode::Auto => store
            .index()
            .index_entry_count()
            .filter(|n| *n >= AUTO_MIN_ENTRIES)
            .map(|n| format!("{n} index entries and no filesystem monitor")),
    })
}

/// A post-commit checkpoint to record in the background: what the child records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub commit: ObjectId,
    pub run: RunId,
    pub step: StepName,
    pub source: StepSource,
}

impl Job {
    /// The job as four words (commit, run, step, source) for a child's command line.
    pub fn to_args(&self) -> [String; 4] {
        [
            self.commit.to_string(),
            self.run.to_string(),
            self.step.to_string(),
            self.source.as_str().to_string(),
        ]
    }

    /// The job from the four words of [`Job::to_args`].
    pub fn from_args(args: &[String]) -> Result<Job> {
        let [commit, run, step, source] = args else {
            return Err(Error::usage(
                "a background post-commit checkpoint takes a commit, a run, a step and a source",
            ));
        };
        Ok(Job {
            commit: ObjectId::from_hex(commit.as_bytes())
                .map_err(|_| Error::usage(format!("{commit:?} is not a commit id")))?,
            run: RunId::new(run.clone())?,
            step: StepName::new(step.clone())?,
            source: StepSource::parse(source)
                .ok_or_else(|| Error::usage(format!("{source:?} is not a step source")))?,
        })
    }
}

/// How the program running the hook starts a [`Job`] in the background: given the job and
/// the worktree's post-commit lock, which the child must hold until it has recorded (the
/// CLI hands it over as the child's standard input), it returns whether the child started.
/// Dropping the lock without starting one releases it.
pub type StartInBackground<'a> = &'a dyn Fn(&Job, std::fs::File) -> bool;

/// Hand the checkpoint of `commit` into `run` to `start_child`. The caller has waited for
/// the one before ([`settle`]); `None` when it (or another) still holds the lock, or the
/// child could not be started or marked pending: the caller records now.
pub(super) fn start(
    store: &Store,
    job: Job,
    why: String,
    start_child: StartInBackground,
) -> Result<Option<HookOutcome>> {
    let Some(lock) = store.locks().lock_post_commit()? else {
        return Ok(None);
    };
    // Removed by the child when it is done: left behind, the next command says it died.
    let pending = store.private().post_commit_pending();
    if POST_COMMIT_PENDING
        .write(&pending, format!("{}\n", job.commit).as_bytes())
        .is_err()
    {
        return Ok(None);
    }
    if !start_child(&job, lock) {
        // The lock went with the call: dropped there, released.
        let _ = agent_rewind_core::private::remove_if_exists(&pending);
        return Ok(None);
    }
    Ok(Some(HookOutcome {
        run: Some(job.run.to_string()),
        step: Some(job.step.to_string()),
        reason: Some(format!("recorded in the background ({why})")),
        ..HookOutcome::new(HOOK, super::HookAction::Background)
    }))
}

/// The child: record the checkpoint of `job` while HEAD is still its commit, or moved on
/// from it only by commits on top of it. What it could not record goes to the report the
/// next command prints. The caller holds the post-commit lock its parent handed over.
pub fn record_in_background(store: &Store, job: Job) -> Result<HookOutcome> {
    crate::store::hold_post_commit_lock();
    let Job {
        commit,
        run,
        step,
        source,
    } = job;
    let outcome = (|| {
        let mut head = store.refs().user_head()?;
        let mut what = HookRecord {
            expect_user_head: Some(commit),
            ..HookRecord::new(run, step, source)
        };
        if head.commit != Some(commit) {
            // Only commits on top of it since (HEAD's reflog says `commit:` all the way):
            // the worktree was not rewritten, so the checkpoint of this commit is still
            // worth having. Anything else is skipped and told.
            match head.commit {
                Some(now) if store.refs().head_moved_on_only_by_commits(commit, now)? => {
                    what.expect_user_head = Some(now);
                    what.record_head = true;
                    head.commit = Some(commit);
                }
                _ => {
                    return Ok(HookOutcome::skipped(
                        HOOK,
                        "HEAD moved on before the worktree was snapshotted",
                    ));
                }
            }
        }
        record(store, HOOK, &head, what)
    })();
    let failed = match &outcome {
        Ok(o) if o.action == super::HookAction::Skipped => o.reason.clone(),
        Ok(_) => None,
        Err(e) => Some(e.message.clone()),
    };
    if let Some(why) = failed {
        tell_later(
            store,
            &[format!(
                "the post-commit checkpoint of commit {} was not recorded: {why}",
                short(commit)
            )],
        )?;
    }
    agent_rewind_core::private::remove_if_exists(&store.private().post_commit_pending())?;
    outcome
}

/// Add `lines` to the report the next command prints (each without a line break).
pub fn tell_later(store: &Store, lines: &[String]) -> Result<()> {
    POST_COMMIT_REPORT.append(&store.private().post_commit_report(), lines)
}

/// A damaged private file, as a warning: what the error says, and its hint.
fn damaged(e: &Error) -> String {
    match &e.hint {
        Some(hint) => format!("{} ({hint})", e.message),
        None => e.message.clone(),
    }
}

/// The warning of [`settle`] when the checkpoint is still being recorded: told at once by
/// every command, as it cannot wait.
pub const STILL_RUNNING: &str =
    "a post-commit checkpoint is still being recorded in the background; going on without it";

/// Who will see the warnings [`settle`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tell {
    /// A command a person runs to look (`status`, `list`, `show`, `log`): the report is
    /// shown and then removed.
    Person,
    /// A hook, or a command an agent or a script runs: the report is shown (a hook's
    /// stderr) but kept for a person.
    Kept,
}

/// Wait for a post-commit checkpoint still being recorded in the background in this
/// worktree (`Store::wait_for_post_commit`: 10 s, a hook its 3 s), and read what the last
/// ones could not record (a child that died becomes a line of the report). Returns the
/// warnings to print; the report is removed only for [`Tell::Person`].
pub fn settle(store: &Store, tell: Tell) -> Vec<String> {
    // Held (shared) while the files are read: no new one can start meanwhile.
    let _guard = match store.locks().wait_for_post_commit() {
        PostCommitWait::Done(guard) => guard,
        PostCommitWait::StillRunning => {
            return vec![STILL_RUNNING.to_string()];
        }
    };
    let mut warnings = vec![];
    let path = store.private().post_commit_report();
    // The report first: a damaged one is told by name (the error's text and hint) and
    // removed, as it held only what was to be told.
    let mut reported = vec![];
    if let Ok(Some(bytes)) = agent_rewind_core::private::read_if_exists(&path) {
        match POST_COMMIT_REPORT.records(&path, &bytes) {
            Ok(lines) => reported.extend(lines.into_iter().filter(|l| !l.is_empty())),
            Err(e) => {
                warnings.push(damaged(&e));
                let _ = agent_rewind_core::private::remove_if_exists(&path);
            }
        }
    }
    // A child that died left its pending marker.
    let pending = store.private().post_commit_pending();
    let mut died = vec![];
    if let Ok(Some(bytes)) = agent_rewind_core::private::read_if_exists(&pending) {
        let commit = match POST_COMMIT_PENDING.state_body(&pending, &bytes) {
            Ok(text) => ObjectId::from_hex(text.trim_ascii())
                .map(short)
                .unwrap_or_else(|_| "(unreadable id)".into()),
            Err(e) => {
                died.push(damaged(&e));
                "(unreadable id)".into()
            }
        };
        died.push(format!(
            "the post-commit checkpoint of commit {commit} was not recorded: the process \
             recording it stopped before it was done"
        ));
    }
    if !died.is_empty() {
        // Kept for a person: the dead child becomes a line of the report (the next child
        // writes a marker of its own). If it cannot be written, it is told now only.
        if tell == Tell::Kept {
            let _ = tell_later(store, &died);
        }
        let _ = agent_rewind_core::private::remove_if_exists(&pending);
    }
    if tell == Tell::Person {
        // Told here: nothing is kept.
        let _ = agent_rewind_core::private::remove_if_exists(&path);
    }
    warnings.extend(reported);
    warnings.extend(died);
    warnings
}
