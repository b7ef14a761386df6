//! `wrap -- <command> [args…]`: run any agent (or any command) on the user's terminal and
//! record a checkpoint whenever the worktree changed and then stayed quiet for
//! `agentRewind.wrapQuiet`, and one when it exits. The command runs as the user would run
//! it: same terminal, standard streams, environment and folder, in the terminal's
//! foreground process group (no pseudo-terminal in between); the wrapper survives Ctrl-C
//! and Ctrl-\ (the command gets them from the terminal), passes SIGTERM and SIGHUP on, and
//! reports the command's exit status.
//!
//! It joins the worktree's active run, or starts one labelled `wrap: <name>`; every
//! checkpoint's agent is the command's name. It writes only through `checkpoint` (the
//! journal's atomic append), so a killed wrapper leaves the last whole checkpoint and
//! nothing half-written. It never prints (the command owns the terminal) and never lets a
//! failed checkpoint disturb the command: failures are collected for the caller.

mod changes;

use super::checkpoint::{CheckpointOptions, checkpoint};
use super::start::{StartOptions, start};
use crate::journal::{StepFacts, active_run};
use crate::model::Event;
use crate::snapshot::{Policy, snapshot_worktree};
use crate::store::Store;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::{RunId, StepName};
use agent_rewind_core::platform::signals as relay;
use agent_rewind_core::process::{Purpose, command};
use changes::{Heard, Source};
use serde::Serialize;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The quiet time after a change before a checkpoint, when `agentRewind.wrapQuiet` is unset.
pub const DEFAULT_QUIET: Duration = Duration::from_secs(2);
/// The longest wait between two looks at the signals to pass on (and, with a filesystem
/// monitor, at the worktree).
const LOOK_EVERY: Duration = Duration::from_millis(100);
/// The step the wrapper's checkpoints belong to: the one the agents' hooks record turns
/// in (`hooks::turn`, a layer above this one, names it too), so `--to turn` means the same.
const STEP: &str = "turn";

/// What to run.
#[derive(Debug, Clone)]
pub struct WrapOptions {
    /// The program as typed (a name looked up on `PATH`, or a path) and its arguments.
    pub program: OsString,
    pub args: Vec<OsString>,
    /// The folder it runs in (the command's folder, after `-C`).
    pub dir: PathBuf,
}

/// What happened.
#[derive(Debug, Clone, Serialize)]
pub struct WrapReport {
    pub run: String,
    /// The run was started by this wrapper (none was active).
    pub started_run: bool,
    /// The command's name: every checkpoint's agent.
    pub agent: String,
    /// The checkpoints recorded, in order (the last one possibly at exit).
    pub checkpoints: Vec<String>,
    /// The exit status the wrapper exits with: the command's, or 128 + the signal that
    /// ended it.
    pub exit_code: i32,
    /// The signal that ended the command (`SIGTERM` …), if one did.
    pub signal: Option<String>,
    /// Signals passed on to the command, in order.
    pub forwarded: Vec<String>,
    /// `file events` or `filesystem monitor`.
    pub watched_by: String,
    /// Checkpoints that failed while the command ran (it was not disturbed).
    pub warnings: Vec<String>,
}

/// Why the command cannot be run: it is not found (exit 127, as a shell) or not executable
/// (126).
#[derive(Debug)]
pub struct Unrunnable {
    pub exit_code: i32,
    pub error: Error,
}

/// `agentRewind.wrapQuiet`: `<n>ms`, `<n>s` or a number of seconds; at least 1 ms.
pub fn quiet_time(store: &Store) -> Result<Duration> {
    match store.config().string("agentRewind.wrapQuiet") {
        None => Ok(DEFAULT_QUIET),
        Some(v) => parse_quiet(&v).ok_or_else(|| {
            Error::usage(format!("bad agentRewind.wrapQuiet {v:?}"))
                .with_hint("a quiet time such as 2s, 500ms or 2 (seconds), at least 1ms")
        }),
    }
}

fn parse_quiet(v: &str) -> Option<Duration> {
    let v = v.trim();
    let (digits, unit_ms) = if let Some(n) = v.strip_suffix("ms") {
        (n, 1)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1000)
    } else {
        (v, 1000)
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let ms = digits.parse::<u64>().ok()?.checked_mul(unit_ms)?;
    (ms > 0).then(|| Duration::from_millis(ms))
}

/// The program `program` names, as a shell finds it: a name with a `/` as a path (relative
/// to `dir`), any other on `PATH`.
pub fn resolve(program: &OsString, dir: &Path) -> std::result::Result<PathBuf, Unrunnable> {
    let shown = program.to_string_lossy().to_string();
    let not_found = || Unrunnable {
        exit_code: 127,
        error: Error::not_found(format!("cannot run {shown}: command not found"))
            .with_hint("check the name, or give its path: git agent-rewind wrap -- ./my-agent"),
    };
    if shown.is_empty() {
        return Err(not_found());
    }
    let candidates: Vec<PathBuf> =
        if Path::new(program).components().count() > 1 || shown.contains('/') {
            vec![dir.join(program)]
        } else {
            std::env::var_os("PATH")
                .map(|p| {
                    std::env::split_paths(&p)
                        .map(|d| dir.join(d).join(program))
                        .collect()
                })
                .unwrap_or_default()
        };
    let mut found_not_executable = None;
    for c in candidates {
        if !c.is_file() {
            continue;
        }
        if is_executable(&c) {
            return Ok(c);
        }
        found_not_executable.get_or_insert(c);
    }
    match found_not_executable {
        Some(p) => Err(Unrunnable {
            exit_code: 126,
            error: Error::refused(format!(
                "cannot run {shown}: permission denied ({} is not executable)",
                p.display()
            )),
        }),
        None => Err(not_found()),
    }
}

fn is_executable(p: &Path) -> bool {
    if cfg!(unix) {
        std::fs::metadata(p)
            .is_ok_and(|m| agent_rewind_core::platform::mode::any_executable_bit(&m))
    } else {
        // No executable bit to look at: the start itself says whether it runs.
        true
    }
}

/// The command's name, as every checkpoint's agent: the last part of what was typed.
pub fn agent_name(program: &OsString) -> String {
    Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| program.to_string_lossy().to_string())
}

/// Run the command (already [`resolve`]d to `path`) and record its work; returns once it
/// ended and the final checkpoint is recorded.
pub fn wrap(store: &Store, opts: &WrapOptions, path: &Path) -> Result<WrapReport> {
    let quiet = quiet_time(store)?;
    let root = store.worktree().root()?.to_path_buf();
    let policy = Policy::from_config(store)?;
    let agent = agent_name(&opts.program);
    // Watching first: a worktree that cannot be watched is refused before a run starts.
    let (tx, rx) = mpsc::channel();
    let mut source = Source::start(store, &root, tx.clone())?;
    let (run, started_run) = join_or_start(store, &agent)?;
    let watched_by = if source.polls() {
        "filesystem monitor"
    } else {
        "file events"
    };
    if source.polls() {
        source.look(store, &policy)?;
    }
    let relay = relay::Relay::install();
    let mut child = spawn(opts, path)?;
    let pid = child.id();
    std::thread::spawn(move || {
        let _ = tx.send(match child.wait() {
            Ok(status) => Heard::Exited(status),
            Err(e) => Heard::WaitFailed(e.to_string()),
        });
    });
    let mut rec = Recorder {
        store,
        policy: &policy,
        run: &run,
        agent: &agent,
        checkpoints: vec![],
        warnings: vec![],
    };
    let mut forwarded = vec![];
    let mut changed_at: Option<Instant> = None;
    let status = loop {
        let wait = match changed_at {
            Some(t) => (t + quiet).saturating_duration_since(Instant::now()),
            None => LOOK_EVERY,
        };
        match rx.recv_timeout(wait.min(LOOK_EVERY)) {
            Ok(Heard::Changed) => changed_at = Some(Instant::now()),
            Ok(Heard::Exited(status)) => break Some(status),
            Ok(Heard::WaitFailed(why)) => {
                rec.warnings
                    .push(format!("cannot wait for the command: {why}"));
                break None;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break None,
        }
        forwarded.extend(relay.forward(pid).into_iter().map(relay::signal_name));
        if source.polls() {
            match source.look(store, &policy) {
                Ok(true) => changed_at = Some(Instant::now()),
                Ok(false) => {}
                Err(e) => rec
                    .warnings
                    .push(format!("cannot look at the worktree: {}", e.message)),
            }
        }
        if changed_at.is_some_and(|t| t.elapsed() >= quiet) {
            changed_at = None;
            rec.record(
                &mut source,
                format!("{agent}: files quiet for {}", show(quiet)),
                None,
            );
        }
    };
    let exit_code = status.map_or(1, relay::shell_exit_code);
    let signal = status
        .and_then(relay::ended_by_signal)
        .map(relay::signal_name);
    let how = match &signal {
        Some(s) => format!("{agent} ended by {s}"),
        None => format!("{agent} exited {exit_code}"),
    };
    rec.record(&mut source, how, Some(exit_code));
    let (checkpoints, warnings) = (rec.checkpoints, rec.warnings);
    Ok(WrapReport {
        run: run.to_string(),
        started_run,
        agent,
        checkpoints,
        exit_code,
        signal,
        forwarded,
        watched_by: watched_by.into(),
        warnings,
    })
}

/// The worktree's active run, or a new one labelled `wrap: <agent>` (made active).
fn join_or_start(store: &Store, agent: &str) -> Result<(RunId, bool)> {
    if let Some(run) = active_run(store)?
        && store.refs().run_head(&run)?.is_some()
    {
        return Ok((run, false));
    }
    let rec = start(
        store,
        StartOptions {
            label: Some(format!("wrap: {agent}")),
            ..Default::default()
        },
    )?;
    Ok((RunId::new(rec.line.run)?, true))
}

fn spawn(opts: &WrapOptions, path: &Path) -> Result<std::process::Child> {
    let mut c = command(Purpose::WrappedCommand, path);
    c.args(&opts.args).current_dir(&opts.dir);
    // The program sees its name as the user typed it, as a shell passes it.
    agent_rewind_core::platform::process::set_arg0(&mut c, &opts.program);
    c.spawn().map_err(|e| {
        Error::other(format!(
            "cannot run {}: {e}",
            opts.program.to_string_lossy()
        ))
    })
}

/// `2s`, `200ms`.
fn show(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// Records the wrapper's checkpoints and keeps what failed for the end.
struct Recorder<'a> {
    store: &'a Store,
    policy: &'a Policy,
    run: &'a RunId,
    agent: &'a str,
    checkpoints: Vec<String>,
    warnings: Vec<String>,
}

impl Recorder<'_> {
    /// A checkpoint of the worktree now; nothing when it equals the run's last one.
    fn record(&mut self, source: &mut Source, message: String, exit_code: Option<i32>) {
        match self.same_as_last() {
            Ok(true) => return,
            Ok(false) => {}
            Err(e) => {
                self.warnings
                    .push(format!("a checkpoint failed: {}", e.message));
                return;
            }
        }
        let outcome = StepName::new(STEP).and_then(|step| {
            checkpoint(
                self.store,
                &step,
                CheckpointOptions {
                    run: Some(self.run.clone()),
                    event: Some(Event::Turn),
                    keep_active_run: true,
                    facts: StepFacts {
                        agent: Some(self.agent.to_string()),
                        message: Some(message),
                        exit_code,
                        ..Default::default()
                    },
                },
            )
        });
        match outcome {
            Ok(out) => {
                if let Ok(tree) = self.store.objects().commit_tree(out.recorded.checkpoint) {
                    source.recorded(tree);
                }
                if !out.recorded.unchanged {
                    self.checkpoints.push(out.recorded.checkpoint.to_string());
                }
            }
            Err(e) => self
                .warnings
                .push(format!("a checkpoint failed: {}", e.message)),
        }
    }
}

impl Recorder<'_> {
    /// Whether the worktree's snapshot is the tree of the run's last checkpoint (whatever
    /// its step or facts: the journal only leaves out a repeat of the same facts).
    fn same_as_last(&self) -> Result<bool> {
        let Some(head) = self.store.refs().run_head(self.run)? else {
            return Ok(false);
        };
        let last = self.store.objects().commit_tree(head)?;
        // A handle whose objects stay in memory: the look writes nothing.
        let now = snapshot_worktree(&self.store.handle_for_staged_writes(), self.policy)?.tree;
        Ok(now == last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_times() {
        assert_eq!(parse_quiet("2s"), Some(Duration::from_secs(2)));
        assert_eq!(parse_quiet("200ms"), Some(Duration::from_millis(200)));
        assert_eq!(parse_quiet("3"), Some(Duration::from_secs(3)));
        for bad in ["", "0", "0ms", "-1s", "1.5s", "2m", "ms", "s"] {
            assert_eq!(parse_quiet(bad), None, "{bad}");
        }
    }

    #[test]
    fn agent_names() {
        assert_eq!(agent_name(&"aider".into()), "aider");
        assert_eq!(agent_name(&"/usr/bin/goose".into()), "goose");
        assert_eq!(agent_name(&"./bin/my-agent".into()), "my-agent");
    }
}
