//! Hooks (docs/HOOKS.md): installing and removing them, and the handlers they call.
//!
//! - [`install`]: the git hook files (`post-commit`, `post-rewrite`) as marker-delimited
//!   blocks in the hooks folder git actually uses, and each agent's project configuration
//!   ([`settings`] for the JSON ones, [`opencode`] for OpenCode's plugin file, [`pi`] for
//!   Pi's extension file, [`kilo`] for Kilo's plugin file; what is particular to Qwen Code,
//!   Copilot CLI, Auggie and Factory Droid in [`qwen`], [`copilot`], [`auggie`] and
//!   [`droid`]), without clobbering anything that is not ours; the same in each agent's
//!   user-level configuration ([`global`], its status in [`global_status`]).
//! - [`handlers`]: `hook post-commit` / `hook post-rewrite`, recording into the worktree's
//!   active run, the post-commit checkpoint of a large worktree after the commit returns
//!   ([`background`]); [`turn`]: `hook <agent>`, reading an agent's payload ([`payload`]),
//!   noting the files it edits ([`touched`]) and the tokens a turn used ([`usage`]);
//!   [`switch`]: `agentRewind.enabled`, checked before any hook records, and `init`'s
//!   set-up on a hook's first run.
//!
//! A handler never decides to fail the user's operation: it returns an outcome (recorded,
//! or skipped with a reason) or an error, and the CLI turns errors into a warning with exit
//! status 0. Nothing here prompts or prints.

pub mod assisted;
pub mod auggie;
pub mod background;
pub mod conversation;
pub mod copilot;
pub mod droid;
pub mod global;
pub mod global_status;
pub mod handlers;
pub mod install;
pub mod jsonfile;
pub mod kilo;
pub mod manifest;
pub mod mcp_config;
pub mod opencode;
pub mod ownedfile;
pub mod payload;
pub mod pi;
pub mod qwen;
pub mod settings;
pub mod status;
pub mod switch;
pub mod touched;
pub mod turn;
pub mod usage;

pub use crate::agent::Agent;

use agent_rewind_core::error::{Error, Result};
use serde::Serialize;

/// First line of every block we add to a hook file.
pub const MARKER_BEGIN: &str = "# >>> git-agent-rewind >>>";
/// Last line of every block we add to a hook file.
pub const MARKER_END: &str = "# <<< git-agent-rewind <<<";

/// The git hooks we install.
pub const GIT_HOOKS: [GitHook; 2] = [GitHook::PostCommit, GitHook::PostRewrite];

/// The git hooks installed only when asked for (`hooks install --assisted-by`).
pub const OPT_IN_HOOKS: [GitHook; 1] = [GitHook::PrepareCommitMsg];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitHook {
    PostCommit,
    PostRewrite,
    /// `Assisted-by:` trailers ([`assisted`]); opt-in.
    PrepareCommitMsg,
}

impl GitHook {
    /// The hook's file name (and the `hook <name>` argument).
    pub fn name(self) -> &'static str {
        match self {
            GitHook::PostCommit => "post-commit",
            GitHook::PostRewrite => "post-rewrite",
            GitHook::PrepareCommitMsg => "prepare-commit-msg",
        }
    }

    /// The block template from `hooks/` at the repository root.
    pub(crate) fn template(self) -> &'static str {
        match self {
            GitHook::PostCommit => include_str!("../../../../hooks/post-commit"),
            GitHook::PostRewrite => include_str!("../../../../hooks/post-rewrite"),
            GitHook::PrepareCommitMsg => include_str!("../../../../hooks/prepare-commit-msg"),
        }
    }
}

/// What a hook did; serialized in lower case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HookAction {
    /// A new checkpoint.
    Recorded,
    /// The tip already recorded this state; nothing written.
    Unchanged,
    /// A record added to an existing checkpoint.
    Appended,
    /// A run started for an agent's session.
    Started,
    /// An agent's session joined the worktree's active run.
    Joined,
    /// Edited paths kept for the next turn.
    Noted,
    /// A checkpoint being recorded after the hook returns (`background`).
    Background,
    /// Nothing to do.
    Skipped,
    /// A payload we could not use.
    Ignored,
}

/// What a hook invocation did. Serialized as the `--json` output of `hook <name>`.
#[derive(Debug, Clone, Serialize)]
pub struct HookOutcome {
    pub hook: String,
    pub action: HookAction,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Problems worth telling the user about (the CLI prints them to stderr).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The run's state for the agent's context ([`manifest`]), after a compaction, resume
    /// or clear; the CLI hands it to the agent through its documented channel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
}

impl HookOutcome {
    pub(crate) fn new(hook: &str, action: HookAction) -> Self {
        HookOutcome {
            hook: hook.to_string(),
            action,
            run: None,
            step: None,
            checkpoint: None,
            reason: None,
            warnings: vec![],
            context: None,
        }
    }

    /// The outcome of a hook that recorded (or found already recorded) a checkpoint.
    pub(crate) fn recorded(hook: &str, out: &crate::ops::checkpoint::CheckpointOutcome) -> Self {
        let r = &out.recorded;
        HookOutcome {
            run: Some(r.line.run.clone()),
            step: r.line.step.clone(),
            checkpoint: Some(r.checkpoint.to_string()),
            ..Self::new(
                hook,
                if r.unchanged {
                    HookAction::Unchanged
                } else {
                    HookAction::Recorded
                },
            )
        }
    }

    pub(crate) fn skipped(hook: &str, reason: impl Into<String>) -> Self {
        HookOutcome {
            reason: Some(reason.into()),
            ..Self::new(hook, HookAction::Skipped)
        }
    }

    pub(crate) fn ignored(hook: &str, reason: impl Into<String>) -> Self {
        HookOutcome {
            reason: Some(reason.into()),
            ..Self::new(hook, HookAction::Ignored)
        }
    }

    /// Whether something was written.
    pub fn wrote(&self) -> bool {
        matches!(
            self.action,
            HookAction::Recorded | HookAction::Appended | HookAction::Started
        )
    }
}

/// How long a hook waits for another writer of the same run before warning and giving up.
pub const HOOK_WRITER_WAIT_SECS: u64 = 3;

/// Run `handler` on the repository at `dir` (nothing when `agentRewind.enabled` is false
/// there) once a post-commit checkpoint being recorded
/// there in the background is written. What that one could not record is told with the
/// handler's outcome, and kept for a command a person runs (a hook's stderr is often
/// thrown away).
fn after_background(
    hook: &str,
    dir: &std::path::Path,
    handler: impl FnOnce(&crate::store::Store) -> Result<HookOutcome>,
) -> Result<HookOutcome> {
    let store = crate::store::Store::discover(dir, crate::store::OpenFor::Work)?;
    if let Some(off) = switch::disabled(&store, hook) {
        return Ok(off);
    }
    let told = background::settle(&store, background::Tell::Kept);
    let mut out = handler(&store)?;
    out.warnings.splice(0..0, told);
    Ok(out)
}

/// The child a post-commit hook started through [`background::StartInBackground`]: record
/// the checkpoint of the job given as the words of [`background::Job::to_args`], in `dir`.
pub fn run_background_checkpoint(dir: &std::path::Path, job: &[String]) -> Result<HookOutcome> {
    crate::store::set_writer_wait(std::time::Duration::from_secs(HOOK_WRITER_WAIT_SECS));
    let job = background::Job::from_args(job)?;
    background::record_in_background(
        &crate::store::Store::discover(dir, crate::store::OpenFor::Work)?,
        job,
    )
}

/// Run the handler `name` (`post-commit`, `post-rewrite`, or an agent) from `dir` with the hook's
/// arguments and standard input. Errors are for the caller to report; it must still exit 0.
/// `start_background` is how the caller starts a post-commit checkpoint in the background
/// (`None`: always recorded now).
pub fn run_hook(
    name: &str,
    args: &[String],
    dir: &std::path::Path,
    stdin: &[u8],
    start_background: Option<background::StartInBackground>,
) -> Result<HookOutcome> {
    // A hook gives up on a busy run quickly (a held lock file fails within a second anyway).
    crate::store::set_writer_wait(std::time::Duration::from_secs(HOOK_WRITER_WAIT_SECS));
    match name {
        "post-commit" => after_background(name, dir, |store| {
            handlers::post_commit(store, start_background)
        }),
        "prepare-commit-msg" => after_background(name, dir, |store| {
            assisted::prepare_commit_msg(store, dir, args)
        }),
        "post-rewrite" => {
            let kind = args.first().map(String::as_str).unwrap_or("");
            after_background(name, dir, |store| handlers::post_rewrite(store, kind, stdin))
        }
        other => match Agent::from_name(other) {
            Some(agent) => Ok(turn::handle(agent, stdin, args, dir)),
            None => Err(Error::usage(format!("unknown hook {other:?}")).with_hint(
                "hooks: post-commit, post-rewrite, prepare-commit-msg, claude, codex, gemini, cursor, \
                 opencode, qwen, copilot, pi, auggie, kilo, droid",
            )),
        },
    }
}
