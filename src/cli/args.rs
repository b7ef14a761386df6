//! The top-level command line (clap): global flags and the list of commands. Each command's
//! own arguments live beside its handler in `commands/`. Definitions only: no git, no
//! rendering.

use super::commands::{
    approve::ApproveArgs, checkpoint::CheckpointArgs, completions::CompletionsArgs,
    delete::DeleteArgs, diff::DiffArgs, gc::GcArgs, hook::HookArgs, hooks::HooksCommand,
    init::InitArgs, list::ListArgs, log::LogArgs, restore::RestoreArgs, revert::RevertArgs, rewind::RewindArgs,
    run::ResumeArgs, run::RunArgs, share::ExportArgs, share::FetchArgs, share::ImportArgs,
    share::PushArgs, show::ShowArgs, start::StartArgs, steer::SteerArgs, step::StepCommand, view::ViewArgs,
};
use clap::{Parser, Subcommand};
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
    Completions(CompletionsArgs),
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
