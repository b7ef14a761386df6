//! Parsing the command line cheaply: a line that names a command is first parsed by a
//! definition holding only that command; the whole definition (all commands, the grouped
//! help) is built only when that fails. It must never accept a line the whole definition
//! rejects, nor read one differently: anything it is not sure of goes to the whole one,
//! which then also prints every help text and error.
//!
//! Why: building the whole definition (every command's arguments, the help template) and
//! dropping it cost about a fifth of the instructions of a small `diff` or `show`
//! (callgrind, docs/PERFORMANCE.md "small commands").

use super::args::{Cli, Globals, command};
use super::commands::{
    approve::ApproveArgs, blame::BlameArgs, checkpoint::CheckpointArgs, completions::CompleteArgs,
    delete::DeleteArgs, diff::DiffArgs, gc::GcArgs, hook::HookArgs, list::ListArgs, log::LogArgs,
    mcp::McpArgs, restore::RestoreArgs, revert::RevertArgs, rewind::RewindArgs, run::ResumeArgs,
    run::RunArgs, share::FetchArgs, share::PushArgs, show::ShowArgs, start::StartArgs,
    stats::StatsArgs, steer::SteerArgs, step::StepCommand, trust::TrustArgs, undo::UndoArgs,
    verify::VerifyArgs, view::ViewArgs, watch::WatchArgs,
};
use clap::{Args, FromArgMatches, Subcommand};
use std::ffi::OsString;

/// Adds one command's arguments (and nested commands) to its `clap::Command`.
type Define = fn(clap::Command) -> clap::Command;

/// The commands parsed by a definition of their own, by name: each must define exactly
/// what the derived `args::Command` variant of that name defines (tests below compare them).
/// A command missing here is parsed by the whole definition, which is always right.
pub(super) const ONE: &[(&str, Define)] = &[
    ("start", StartArgs::augment_args),
    ("checkpoint", CheckpointArgs::augment_args),
    ("step", StepCommand::augment_subcommands),
    ("list", ListArgs::augment_args),
    ("show", ShowArgs::augment_args),
    ("log", LogArgs::augment_args),
    ("diff", DiffArgs::augment_args),
    ("blame", BlameArgs::augment_args),
    ("stats", StatsArgs::augment_args),
    ("view", ViewArgs::augment_args),
    ("status", no_arguments),
    ("rewind", RewindArgs::augment_args),
    ("fork", RewindArgs::augment_args),
    ("restore", RestoreArgs::augment_args),
    ("revert", RevertArgs::augment_args),
    ("undo", UndoArgs::augment_args),
    ("run", RunArgs::augment_args),
    ("resume", ResumeArgs::augment_args),
    ("watch", WatchArgs::augment_args),
    ("approve", ApproveArgs::augment_args),
    ("reject", ApproveArgs::augment_args),
    ("steer", SteerArgs::augment_args),
    ("trust", TrustArgs::augment_args),
    ("hook", HookArgs::augment_args),
    ("mcp", McpArgs::augment_args),
    ("push", PushArgs::augment_args),
    ("fetch", FetchArgs::augment_args),
    ("verify", VerifyArgs::augment_args),
    ("delete", DeleteArgs::augment_args),
    ("gc", GcArgs::augment_args),
    ("__complete", CompleteArgs::augment_args),
];

fn no_arguments(c: clap::Command) -> clap::Command {
    c
}

/// The parsed command line, or clap's error for it (help and version requests included)
/// as the whole definition reports it.
pub fn parse() -> Result<Cli, clap::Error> {
    let args: Vec<OsString> = std::env::args_os().collect();
    if let Some(cli) = parse_one(&args) {
        return Ok(cli);
    }
    command()
        .try_get_matches_from(args)
        .and_then(|m| Cli::from_arg_matches(&m))
}

/// What `--version` (or `-V`) alone prints, when that is the whole command line: the same
/// line clap prints for it (a test compares them), without building any definition.
pub fn version_request() -> Option<String> {
    let mut args = std::env::args_os().skip(1);
    let only = args.next().filter(|a| a == "--version" || a == "-V");
    (only.is_some() && args.next().is_none()).then(version_line)
}

fn version_line() -> String {
    format!("git-agent-rewind {}\n", env!("CARGO_PKG_VERSION"))
}

/// `args` parsed by the definition of the one command it names, when that accepts it.
pub(super) fn parse_one(args: &[OsString]) -> Option<Cli> {
    let name = command_name(args)?;
    let &(name, define) = ONE.iter().find(|(n, _)| *n == name)?;
    let root = Globals::augment_args(clap::Command::new("git-agent-rewind"))
        .subcommand(define(clap::Command::new(name)));
    let matches = root.try_get_matches_from(args).ok()?;
    Cli::from_arg_matches(&matches).ok()
}

/// The command `args` names: the first argument after the global options (`--json`,
/// `-C PATH`), when nothing else comes before it.
fn command_name(args: &[OsString]) -> Option<&str> {
    let mut rest = args.iter().skip(1);
    while let Some(a) = rest.next() {
        let a = a.to_str()?;
        if a == "--json" || (a.starts_with("-C") && a.len() > 2) {
            continue;
        }
        if a == "-C" {
            rest.next()?;
            continue;
        }
        return (!a.starts_with('-')).then_some(a);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(line: &[&str]) -> Vec<OsString> {
        std::iter::once("git-agent-rewind")
            .chain(line.iter().copied())
            .map(OsString::from)
            .collect()
    }

    /// Each command's own definition holds exactly the arguments (and nested commands)
    /// of the whole definition's command of that name.
    #[test]
    fn one_command_definitions_match_the_whole_definition() {
        let whole = command();
        for (name, define) in ONE {
            let full = whole
                .find_subcommand(name)
                .unwrap_or_else(|| panic!("no command {name}"));
            let one = define(clap::Command::new(*name));
            let describe = |c: &clap::Command| {
                let args: Vec<String> = c.get_arguments().map(|a| format!("{a:?}")).collect();
                let subs: Vec<(String, Vec<String>)> = c
                    .get_subcommands()
                    .map(|s| {
                        let a = s.get_arguments().map(|a| format!("{a:?}")).collect();
                        (s.get_name().to_string(), a)
                    })
                    .collect();
                (args, subs)
            };
            assert_eq!(describe(full), describe(&one), "command {name}");
        }
        // Every command of the whole definition with arguments of its own is covered,
        // except `hooks`, `completions`, `export`, `import`, `init` and `manpages`.
        let covered: Vec<&str> = ONE.iter().map(|(n, _)| *n).collect();
        for sub in whole.get_subcommands() {
            let n = sub.get_name();
            assert!(
                covered.contains(&n)
                    || [
                        "hooks",
                        "completions",
                        "export",
                        "import",
                        "init",
                        "manpages"
                    ]
                    .contains(&n),
                "command {n} is neither covered nor listed as left out"
            );
        }
    }

    /// `--version` alone prints what clap prints for it.
    #[test]
    fn version_line_is_clap_s() {
        assert_eq!(version_line(), command().render_version());
    }

    /// Lines the one-command definition accepts are read exactly as the whole one reads
    /// them; lines it must leave to the whole one (help, version, errors) are left.
    #[test]
    fn one_command_parse_reads_lines_as_the_whole_definition() {
        let accepted: &[&[&str]] = &[
            &["diff", "r/a", "r/b"],
            &["--json", "diff", "--stat", "r/a", "r/b"],
            &["-C", "sub", "show", "r/a", "--json"],
            &["-Csub", "status"],
            &["checkpoint", "s1", "-m", "msg"],
            &["list", "r"],
            &["step", "begin", "build"],
            &["undo"],
        ];
        for line in accepted {
            let args = os(line);
            let one = parse_one(&args).unwrap_or_else(|| panic!("not accepted: {line:?}"));
            let whole = command()
                .try_get_matches_from(&args)
                .and_then(|m| Cli::from_arg_matches(&m))
                .unwrap();
            assert_eq!(format!("{one:?}"), format!("{whole:?}"), "{line:?}");
        }
        let left: &[&[&str]] = &[
            &[],
            &["--help"],
            &["-h"],
            &["diff", "-h"],
            &["diff", "--version"],
            &["--version"],
            &["help", "diff"],
            &["step"],
            &["hooks", "install"],
            &["dif", "a", "b"],
            &["diff", "--no-such-option"],
            &["--json"],
            &["-C"],
        ];
        for line in left {
            assert!(parse_one(&os(line)).is_none(), "accepted: {line:?}");
        }
    }
}
