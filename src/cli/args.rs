//! The command line (clap). Definitions only: no git, no rendering.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "git-agent-rewind",
    bin_name = "git agent-rewind",
    version,
    about = "Every step of an AI agent's workflow as a durable git checkpoint: rewind, fork, resume, share.",
    propagate_version = true
)]
pub struct Cli {
    /// Print one JSON document (arrays for list/log) instead of human output.
    #[arg(long, global = true)]
    pub json: bool,
    /// Run as if started in this directory.
    #[arg(short = 'C', global = true, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// One-time set-up of this repository (idempotent); optionally installs hooks.
    Init(InitArgs),
    /// Begin a run: record its first checkpoint and make it the active run of this worktree.
    Start(StartArgs),
    /// Snapshot the worktree now and append a checkpoint of STEP to the run.
    Checkpoint(CheckpointArgs),
    /// Record a step's lifecycle: `begin` before dispatch, `end` after the outcome.
    #[command(subcommand)]
    Step(StepCommand),
    /// List runs, or the checkpoints of one run.
    List(ListArgs),
    /// Show one checkpoint: metadata, files changed against its predecessor, artifacts.
    Show(ShowArgs),
    /// Lineage: the chain back through rewinds and forks to the first run.
    Log(LogArgs),
    /// Unified diff of files and metadata between two checkpoints.
    Diff(DiffArgs),
    /// Write one self-contained HTML page of the runs (tree, checkpoints, diffs, timelines).
    View(ViewArgs),
    /// The active run of this worktree, its last checkpoint, unfinished steps, next action.
    Status,
    /// New run pinned to an earlier point of RUN, checked out here; the source is archived.
    Rewind(RewindArgs),
    /// Like rewind, but the source run stays active (A/B exploration).
    Fork(RewindArgs),
    /// Put files from a checkpoint back into the worktree (whole, or the given paths).
    Restore(RestoreArgs),
    /// Take back what one run (or one step's latest attempt, or one checkpoint) changed,
    /// keeping everyone else's work: a three-way merge per file.
    Revert(RevertArgs),
    /// Bring back the worktree as it was before the last rewind/fork/restore/undo.
    Undo,
    /// Print shell completions (bash, zsh, fish, elvish, powershell).
    Completions { shell: clap_complete::Shell },
    /// Execute a workflow file as a new run.
    Run(RunArgs),
    /// Continue a run without redoing finished steps.
    Resume(ResumeArgs),
    /// Approve a checkpoint (a gate passes only with an approval of its exact checkpoint).
    Approve(ApproveArgs),
    /// Reject a checkpoint.
    Reject(ApproveArgs),
    /// Change a run's inputs and invalidate steps; shows the blast radius first.
    Steer(SteerArgs),
    /// Install or remove the git hooks and agent hooks (never clobbering existing ones).
    #[command(subcommand)]
    Hooks(HooksCommand),
    /// Entry point the installed hooks call: post-commit, post-rewrite, claude. Always exits 0.
    Hook(HookArgs),
    /// Push runs (refs and notes) to a remote with `git push --atomic`, never forced.
    Push(PushArgs),
    /// Fetch runs from a remote and import them (new, fast-forward, or a forked run when
    /// both sides moved on; notes merged).
    Fetch(FetchArgs),
    /// Delete a run from this repository (its refs, notes and fetched copies).
    Delete(DeleteArgs),
    /// Delete old runs: older than DUR and/or beyond the newest N; then pack refs.
    Gc(GcArgs),
    /// Write runs (chain, refs and notes) to a git bundle file.
    Export(ExportArgs),
    /// Import the runs of a bundle file made by `export`.
    Import(ImportArgs),
}

#[derive(Debug, Args)]
pub struct RewindArgs {
    /// The run to go back in (an id or a unique prefix; default: the active run).
    pub run: Option<String>,
    /// A step (the state right before its latest attempt began), or a checkpoint
    /// (`<run>@<seq>`, a commit id).
    #[arg(long, value_name = "STEP|CHECKPOINT", required_unless_present = "list")]
    pub to: Option<String>,
    /// The state when the step last finished, instead of right before it began.
    #[arg(long)]
    pub after: bool,
    /// Check out into a new linked worktree at PATH; this worktree is left alone.
    #[arg(long, value_name = "PATH", conflicts_with = "no_checkout")]
    pub worktree: Option<PathBuf>,
    /// Only write refs (for orchestrators).
    #[arg(long)]
    pub no_checkout: bool,
    /// The new run's id (default: generated).
    #[arg(long = "run", value_name = "NEWID")]
    pub new_run: Option<String>,
    /// Branch to create (default: agent-runs/<newrun>).
    #[arg(long, value_name = "NAME")]
    pub branch: Option<String>,
    /// A label for the new run.
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// List the run's checkpoints instead (same as `list RUN`).
    #[arg(long)]
    pub list: bool,
}

#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// `<run>`, `<run>/<step>`, `<run>@<seq>`, or a commit id.
    pub checkpoint: String,
    /// Only these paths (files or folders); default: the whole tree.
    #[arg(last = true, value_name = "PATH")]
    pub paths: Vec<String>,
}

#[derive(Debug, Args)]
pub struct RevertArgs {
    /// `<run>` (the whole run), `<run>/<step>` (its latest attempt), `<run>@<seq>` or a
    /// commit id (that one checkpoint).
    pub target: String,
    /// Print the plan (per file: revert, merge, keep, conflict); write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// On a conflict: `refuse` (default, nothing written) or `markers` (write git-style
    /// conflict markers, after the backup).
    #[arg(long, value_name = "STYLE", default_value = "refuse", value_parser = ["refuse", "markers"])]
    pub conflict: String,
}

#[derive(Debug, Args)]
pub struct StartArgs {
    /// Run id (default: a generated, time-sortable id).
    #[arg(long)]
    pub run: Option<String>,
    /// Workflow file whose digest is recorded with the run.
    #[arg(long, value_name = "FILE")]
    pub workflow: Option<PathBuf>,
    /// A human label for the run.
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// Free-form metadata, repeatable.
    #[arg(long = "meta", value_name = "K=V")]
    pub meta: Vec<String>,
}

#[derive(Debug, Args, Clone)]
pub struct RecordArgs {
    /// The run (default: the active run of this worktree; a new run is started if none).
    #[arg(long)]
    pub run: Option<String>,
    /// Step kind: agent, deterministic, effect, gate.
    #[arg(long, value_name = "K")]
    pub kind: Option<String>,
    /// Status: pending, running, awaiting_approval, completed, failed, interrupted, skipped.
    #[arg(long, value_name = "S")]
    pub status: Option<String>,
    /// The agent's own session id (e.g. Claude Code's session_id).
    #[arg(long, value_name = "ID")]
    pub session_id: Option<String>,
    /// An artifact: a path in the worktree, or a URI (`scheme://…[#digest]`). Repeatable.
    #[arg(long = "artifact", value_name = "P")]
    pub artifacts: Vec<String>,
    /// Free-form metadata, repeatable.
    #[arg(long = "meta", value_name = "K=V")]
    pub meta: Vec<String>,
    /// A message, kept in the commit body and the note.
    #[arg(short = 'm', long = "message", value_name = "TEXT")]
    pub message: Option<String>,
}

#[derive(Debug, Args)]
pub struct CheckpointArgs {
    /// The step this checkpoint belongs to.
    pub step: String,
    /// Event: begin, finish, commit, turn, manual, steer (default: manual).
    #[arg(long, value_name = "E")]
    pub event: Option<String>,
    #[command(flatten)]
    pub record: RecordArgs,
}

#[derive(Debug, Subcommand)]
pub enum StepCommand {
    /// Record that STEP is about to run (status running, a new attempt).
    Begin {
        step: String,
        #[command(flatten)]
        record: RecordArgs,
    },
    /// Record STEP's outcome (`--status completed|failed`) with a snapshot.
    End {
        step: String,
        /// The command's exit code, if any.
        #[arg(long, value_name = "N")]
        exit_code: Option<i32>,
        #[command(flatten)]
        record: RecordArgs,
    },
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// List the checkpoints of this run instead of all runs.
    pub run: Option<String>,
    /// Include archived runs.
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// `<run>`, `<run>/<step>`, `<run>@<seq>`, `<run>@-1`, `@-1`, or a commit id (default:
    /// the active run's newest checkpoint).
    pub checkpoint: Option<String>,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// The run (an id or a unique prefix; default: the active run).
    pub run: Option<String>,
    /// Show the tree of runs (which run came from which checkpoint of which run).
    #[arg(long)]
    pub graph: bool,
    /// With --graph: text (default), mermaid, dot, or json (nodes and edges).
    #[arg(long, value_name = "FMT", requires = "graph",
          value_parser = ["text", "mermaid", "dot", "json"])]
    pub format: Option<String>,
}

#[derive(Debug, Args)]
pub struct ViewArgs {
    /// Only these runs and the runs linked to them by rewinds and forks (default: every run).
    pub runs: Vec<String>,
    /// The HTML file to write (default: agent-rewind/view.html in the git directory).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Open the page in the browser ($BROWSER, else xdg-open or open); never fails the command.
    #[arg(long)]
    pub open: bool,
    /// Which checkpoints carry their changed files: all, none, or the newest N.
    #[arg(long, value_name = "all|none|N", default_value = "100")]
    pub diffs: String,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The checkpoint to diff (against its predecessor when alone; default: the active
    /// run's newest checkpoint).
    pub first: Option<String>,
    /// With two: diff from FIRST to SECOND.
    pub second: Option<String>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The workflow file (TOML).
    pub workflow: PathBuf,
    /// Run id (default: generated).
    #[arg(long)]
    pub run: Option<String>,
    /// A label for the run (default: the workflow's name).
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The run (default: the active run of this worktree).
    pub run: Option<String>,
    /// Record a new attempt of STEP even if it was interrupted or failed.
    #[arg(long, value_name = "STEP")]
    pub retry: Option<String>,
    /// Use this workflow file instead of the copy stored with the run (it becomes the
    /// stored copy).
    #[arg(long, value_name = "FILE")]
    pub workflow: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// `<run>`, `<run>/<step>`, `<run>@<seq>`, or a commit id.
    pub checkpoint: String,
    /// Who decides (default: your git identity).
    #[arg(long, value_name = "WHO")]
    pub by: Option<String>,
    #[arg(short = 'm', long = "message", value_name = "TEXT")]
    pub message: Option<String>,
}

#[derive(Debug, Args)]
pub struct SteerArgs {
    pub run: String,
    /// Replace PATH (relative to the worktree root) with the content of FILE. Repeatable.
    #[arg(long = "edit", value_name = "PATH=FILE")]
    pub edits: Vec<String>,
    /// Re-run STEP (and what depends on it) on the next resume. Repeatable.
    #[arg(long = "invalidate", value_name = "STEP")]
    pub invalidate: Vec<String>,
    /// Only show the blast radius (the default without --yes).
    #[arg(long, conflicts_with = "yes")]
    pub dry_run: bool,
    /// Apply.
    #[arg(long)]
    pub yes: bool,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Also install the git hooks (post-commit, post-rewrite).
    #[arg(long)]
    pub hooks: bool,
    /// Also install an agent's hooks (claude, codex, gemini, cursor, opencode, all). Repeatable.
    #[arg(long = "agent", value_name = "AGENT")]
    pub agents: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Install hooks: the git hooks (the default), and/or an agent's (`--agent claude`).
    Install(HooksArgs),
    /// Remove exactly what install added (with no flags: the git hooks and every agent's).
    Uninstall(HooksArgs),
}

#[derive(Debug, Args)]
pub struct HooksArgs {
    /// The git hooks (post-commit, post-rewrite) in the hooks folder git uses.
    #[arg(long)]
    pub git: bool,
    /// An agent's hooks: claude, codex, gemini, cursor, opencode, or all (merged into the
    /// agent's project configuration; see docs/HOOKS.md). Repeatable.
    #[arg(long = "agent", value_name = "AGENT")]
    pub agents: Vec<String>,
}

#[derive(Debug, Args)]
pub struct HookArgs {
    /// post-commit, post-rewrite, or an agent: claude, codex, gemini, cursor, opencode.
    pub name: String,
    /// The arguments git passes to the hook (post-rewrite: amend or rebase).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

#[derive(Debug, Args)]
pub struct PushArgs {
    /// `[REMOTE] [RUN…]`: the first word is the remote when one of that name exists
    /// (default: origin); the rest are runs (default: the active run of this worktree).
    #[arg(value_name = "REMOTE|RUN")]
    pub words: Vec<String>,
    /// Every run of this repository.
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct FetchArgs {
    /// `[REMOTE] [RUN…]`: the first word is the remote when one of that name exists
    /// (default: origin); the rest are runs (default: every run of the remote).
    #[arg(value_name = "REMOTE|RUN")]
    pub words: Vec<String>,
    /// Every run of the remote (the default when no run is named).
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct DeleteArgs {
    pub run: String,
    /// Delete even when other runs' lineage passes through it.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Only runs whose last activity is older than this (e.g. 30d, 12h, 2w, 1d12h).
    #[arg(long, value_name = "DUR")]
    pub older_than: Option<String>,
    /// Always keep the newest N runs.
    #[arg(long, value_name = "N")]
    pub keep: Option<usize>,
    /// Only list what would be deleted.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The runs to export.
    #[arg(required = true)]
    pub runs: Vec<String>,
    /// The bundle file to write.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// Overwrite FILE when it already exists.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// A bundle file written by `export`.
    pub file: PathBuf,
}
