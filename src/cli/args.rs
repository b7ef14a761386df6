//! The top-level command line (clap): global flags and the list of commands. Each command's
//! own arguments live beside its handler in `commands/`. Definitions only: no git, no
//! rendering.

use super::commands::*;
use super::commands::{
    approve::ApproveArgs, blame::BlameArgs, checkpoint::CheckpointArgs, completions::CompleteArgs,
    completions::CompletionsArgs, delete::DeleteArgs, diff::DiffArgs, gc::GcArgs, hook::HookArgs,
    hooks::HooksCommand, init::InitArgs, list::ListArgs, log::LogArgs, manpages::ManpagesArgs,
    mcp::McpArgs, pick::PickArgs, restore::RestoreArgs, revert::RevertArgs, rewind::RewindArgs,
    run::ResumeArgs, run::RunArgs, share::ExportArgs, share::FetchArgs, share::ImportArgs,
    share::PushArgs, show::ShowArgs, start::StartArgs, stats::StatsArgs, steer::SteerArgs,
    step::StepCommand, trust::TrustArgs, undo::UndoArgs, verify::VerifyArgs, view::ViewArgs,
    watch::WatchArgs, wrap::WrapArgs,
};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "git-agent-rewind",
    bin_name = "git agent-rewind",
    version,
    about = "Every step of an AI agent's workflow as a durable git checkpoint: rewind, fork, resume, share.",
    propagate_version = true,
    after_help = TOP_AFTER_HELP
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Globals,
    #[command(subcommand)]
    pub command: Command,
    /// The command's name as typed (`list`, `diff` …): the `color.<name>` it follows.
    #[arg(skip)]
    pub name: String,
}

/// The options every command accepts (before or after its name).
#[derive(Debug, Args)]
pub struct Globals {
    /// Print one JSON document (arrays for list/log) instead of human output.
    #[arg(long, global = true)]
    pub json: bool,
    /// Run as if started in this directory.
    #[arg(short = 'C', global = true, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Do not pipe the output of diff, show and log into the pager (as `git --no-pager`).
    #[arg(short = 'P', long = "no-pager", global = true)]
    pub no_pager: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// One-time set-up of this repository (idempotent); optionally installs hooks.
    #[command(after_help = init::EXAMPLES)]
    Init(InitArgs),
    /// Begin a run: record its first checkpoint and make it the active run of this worktree.
    #[command(after_help = start::EXAMPLES)]
    Start(StartArgs),
    /// Snapshot the worktree now and append a checkpoint of STEP to the run.
    #[command(after_help = checkpoint::EXAMPLES)]
    Checkpoint(CheckpointArgs),
    /// Record a step's lifecycle: `begin` before dispatch, `end` after the outcome.
    #[command(subcommand, after_help = step::EXAMPLES)]
    Step(StepCommand),
    /// List runs, or the checkpoints of one run.
    #[command(after_help = list::EXAMPLES)]
    List(ListArgs),
    /// Show one checkpoint: metadata, files changed against its predecessor, artifacts.
    #[command(after_help = show::EXAMPLES)]
    Show(ShowArgs),
    /// Lineage: the chain back through rewinds and forks to the first run.
    #[command(after_help = log::EXAMPLES)]
    Log(LogArgs),
    /// Unified diff of files and metadata between two checkpoints.
    #[command(after_help = diff::EXAMPLES)]
    Diff(DiffArgs),
    /// Who wrote each line of a file: an agent's turn (agent, model, run, step) or a person.
    #[command(after_help = blame::EXAMPLES)]
    Blame(BlameArgs),
    /// Lines added and kept per agent, model and person, over a commit or a range.
    #[command(after_help = stats::EXAMPLES)]
    Stats(StatsArgs),
    /// Write one self-contained HTML page of the runs (tree, checkpoints, diffs, timelines).
    #[command(after_help = view::EXAMPLES)]
    View(ViewArgs),
    /// The active run of this worktree, its last checkpoint, unfinished steps, next action.
    #[command(after_help = status::EXAMPLES)]
    Status,
    /// New run pinned to an earlier point of RUN, checked out here; the source is archived.
    #[command(after_help = rewind::EXAMPLES)]
    Rewind(RewindArgs),
    /// Like rewind, but the source run stays active (A/B exploration).
    #[command(after_help = rewind::FORK_EXAMPLES)]
    Fork(RewindArgs),
    /// Put files from a checkpoint back into the worktree (whole, or the given paths).
    #[command(after_help = restore::EXAMPLES)]
    Restore(RestoreArgs),
    /// Take back what one run (or one step's latest attempt, or one checkpoint) changed,
    /// keeping everyone else's work: a three-way merge per file.
    #[command(after_help = revert::EXAMPLES)]
    Revert(RevertArgs),
    /// Bring what one run (or one step's latest attempt, one checkpoint, or a range of
    /// checkpoints) changed onto this worktree, keeping the work here: revert's dual.
    #[command(after_help = pick::EXAMPLES)]
    Pick(PickArgs),
    /// Bring back the worktree as it was before the last rewind/fork/restore/revert/pick/undo
    /// (or an older backup); `--list` lists them.
    #[command(after_help = undo::EXAMPLES)]
    Undo(UndoArgs),
    /// Print shell completions (bash, zsh, fish, elvish, powershell).
    #[command(after_help = completions::EXAMPLES)]
    Completions(CompletionsArgs),
    /// Execute a workflow file as a new run.
    #[command(after_help = run::EXAMPLES)]
    Run(RunArgs),
    /// Continue a run without redoing finished steps.
    #[command(after_help = run::RESUME_EXAMPLES)]
    Resume(ResumeArgs),
    /// Drive runs: launch every step that became ready (once), until they complete or wait
    /// for a person.
    #[command(after_help = watch::EXAMPLES)]
    Watch(WatchArgs),
    /// Run any agent (or command) on this terminal and record a checkpoint whenever its
    /// files changed and then stayed quiet, and one when it exits.
    #[command(after_help = wrap::EXAMPLES)]
    Wrap(WrapArgs),
    /// Approve a checkpoint (a gate passes only with an approval of its exact checkpoint).
    #[command(after_help = approve::EXAMPLES)]
    Approve(ApproveArgs),
    /// Reject a checkpoint.
    #[command(after_help = approve::REJECT_EXAMPLES)]
    Reject(ApproveArgs),
    /// Change a run's inputs and invalidate steps; shows the blast radius first.
    #[command(after_help = steer::EXAMPLES)]
    Steer(SteerArgs),
    /// Show the commands of the workflow a run would execute and, once you say yes, let it
    /// run here (a workflow that came with a fetch, a bundle or a checkout runs only then).
    #[command(after_help = trust::EXAMPLES)]
    Trust(TrustArgs),
    /// Install or remove the git hooks and agent hooks (never clobbering existing ones).
    #[command(subcommand, after_help = hooks::EXAMPLES)]
    Hooks(HooksCommand),
    /// Serve this worktree's runs to an agent over the Model Context Protocol (stdio).
    #[command(after_help = mcp::EXAMPLES)]
    Mcp(McpArgs),
    /// Entry point the installed hooks call: post-commit, post-rewrite, claude. Always exits 0.
    #[command(hide = true)]
    Hook(HookArgs),
    /// Push runs (refs and notes) to a remote with `git push --atomic`, never forced.
    #[command(after_help = share::PUSH_EXAMPLES)]
    Push(PushArgs),
    /// Fetch runs from a remote and import them (new, fast-forward, or a forked run when
    /// both sides moved on; notes merged).
    #[command(after_help = share::FETCH_EXAMPLES)]
    Fetch(FetchArgs),
    /// Check who signed each checkpoint of runs, as git verifies signatures.
    #[command(after_help = verify::EXAMPLES)]
    Verify(VerifyArgs),
    /// Delete a run from this repository (its refs, notes and fetched copies).
    #[command(after_help = delete::EXAMPLES)]
    Delete(DeleteArgs),
    /// Delete old runs: older than DUR and/or beyond the newest N; then pack refs.
    #[command(after_help = gc::EXAMPLES)]
    Gc(GcArgs),
    /// Write runs (chain, refs and notes) to a git bundle file.
    #[command(after_help = share::EXPORT_EXAMPLES)]
    Export(ExportArgs),
    /// Import the runs of a bundle file made by `export`.
    #[command(after_help = share::IMPORT_EXAMPLES)]
    Import(ImportArgs),
    /// Write the manual pages (man1) into DIR (default: share/man/man1 beside the binary's
    /// folder, where `man` finds them for the installed binary).
    #[command(hide = true)]
    Manpages(ManpagesArgs),
    /// Names for shell completion: `runs`, or `steps <run>`; silent on any error.
    #[command(name = "__complete", hide = true)]
    Complete(CompleteArgs),
}

/// The end of the top-level help.
const TOP_AFTER_HELP: &str =
    "Exit status: 0 success; 1 failure (a one-line `error:` and a `hint:` on \
stderr; with --json also {\"error\": {\"kind\", \"message\", \"hint\"}} on stdout); 2 usage error; \
`run`/`resume`/`watch` 1 when the run failed and 3 when it waits for a person (or an external step's worker).

`git agent-rewind <command> -h` shows a command's options and examples; `man git-agent-rewind` \
(or `git agent-rewind --help`) the manual.";

/// The command list of the top-level help, by what the commands are for.
pub const GROUPS: &[(&str, &[&str])] = &[
    ("Record", &["start", "checkpoint", "step", "wrap"]),
    (
        "Inspect",
        &[
            "list", "show", "log", "diff", "blame", "stats", "view", "status",
        ],
    ),
    (
        "Travel",
        &["rewind", "fork", "restore", "revert", "pick", "undo"],
    ),
    (
        "Workflows",
        &[
            "run", "resume", "watch", "approve", "reject", "steer", "trust",
        ],
    ),
    ("Share", &["push", "fetch", "verify", "export", "import"]),
    ("Maintain", &["delete", "gc"]),
    ("Set up", &["init", "hooks", "mcp", "completions", "help"]),
];

/// The whole command line: the derived definition, with the command list of the top-level
/// help grouped (GROUPS) and every nested subcommand's `-h` ending with its parent's
/// examples.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    let mut cmd = with_command_list(Cli::command(), None);
    for parent in ["step", "hooks"] {
        cmd = cmd.mut_subcommand(parent, |p| {
            let examples = p
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            p.mut_subcommands(|c| c.after_help(examples.clone()))
        });
    }
    cmd
}

/// `cmd` with the grouped command list (GROUPS) in its help, each command's line wrapped
/// to `width` columns under its description when a width is given.
pub fn with_command_list(cmd: clap::Command, width: Option<usize>) -> clap::Command {
    let mut list = String::new();
    let name_width = GROUPS
        .iter()
        .flat_map(|(_, names)| names.iter().map(|n| n.len()))
        .max()
        .unwrap_or(0);
    for (group, names) in GROUPS {
        list.push_str(&format!("{group}:\n"));
        for name in *names {
            let about = cmd
                .find_subcommand(name)
                .and_then(|c| c.get_about())
                .map(|a| a.to_string())
                .unwrap_or_else(|| "Print this message or the help of the given command".into());
            // The description wraps in its own column, under its first line.
            let column = name_width + 4;
            let lines = match width {
                Some(w) => super::help::wrap_line(&about, w.saturating_sub(column).max(20), 0, ""),
                None => vec![about],
            };
            for (i, l) in lines.iter().enumerate() {
                let left = if i == 0 { name } else { "" };
                list.push_str(&format!("  {left:<name_width$}  {l}\n"));
            }
        }
        list.push('\n');
    }
    let template = format!(
        "{{before-help}}{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{list}Options:\n{{options}}{{after-help}}"
    );
    cmd.help_template(template)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The top-level help lists every command a person may type.
    #[test]
    fn the_command_list_names_every_visible_command() {
        let listed: Vec<&str> = GROUPS.iter().flat_map(|(_, n)| n.iter().copied()).collect();
        for sub in command().get_subcommands().filter(|s| !s.is_hide_set()) {
            assert!(
                listed.contains(&sub.get_name()),
                "{} is not listed",
                sub.get_name()
            );
        }
    }
}
