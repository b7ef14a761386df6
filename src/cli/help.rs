//! Help for a person, once clap says help was asked for: `-h` laid out for the terminal's
//! width (100 columns when stdout is not a terminal), every wrapped line keeping its
//! indentation, and `<command> --help` opening the manual page
//! `git-agent-rewind-<command>(1)` as `git <command> --help` does, with the `-h` text when
//! no page is installed. It must never change what a command line means, and costs nothing
//! to a command line that asks for no help (nothing here runs before clap's answer).

use super::args::{self, command};
use super::listing::terminal_width;
use agent_rewind_core::process::{Purpose, command as process};
use clap::error::ErrorKind;
use std::process::Stdio;

/// The width help is laid out for when stdout is no terminal and `COLUMNS` is unset.
const NOT_A_TERMINAL_WIDTH: usize = 100;

/// Clap's answer to a help request, for a person: the manual page for `--help` when one
/// is installed (shown here; `None`), else the help text laid out for the terminal.
/// Any other answer (a usage error) is returned as it is.
pub fn answer(e: clap::Error) -> Option<clap::Error> {
    let help = matches!(
        e.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    if !help {
        return Some(e);
    }
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if e.kind() == ErrorKind::DisplayHelp
        && asks_for_manual(&argv)
        && show_manual(&manual_page(&argv))
    {
        return None;
    }
    let width = terminal_width().unwrap_or(NOT_A_TERMINAL_WIDTH);
    // The same command line again, through the same definition laid out for `width`:
    // clap answers it with the same help, wrapped.
    Some(
        fitted(command(), width)
            .try_get_matches_from(&argv)
            .err()
            .unwrap_or(e),
    )
}

/// `--help` (not `-h`) before any `--`: what git answers with the manual.
fn asks_for_manual(argv: &[std::ffi::OsString]) -> bool {
    let words = argv.iter().skip(1).take_while(|a| *a != "--");
    let (mut long, mut short) = (false, false);
    for w in words {
        long |= w == "--help";
        short |= w == "-h";
    }
    long && !short
}

/// `git-agent-rewind-step-begin` for `… step begin --help`: the page of the command (and
/// subcommand) clap read in the command line.
fn manual_page(argv: &[std::ffi::OsString]) -> String {
    let without_help = argv.iter().filter(|a| *a != "--help");
    let mut page = "git-agent-rewind".to_string();
    if let Ok(m) = command()
        .ignore_errors(true)
        .try_get_matches_from(without_help)
    {
        let mut at = &m;
        while let Some((name, sub)) = at.subcommand() {
            page.push('-');
            page.push_str(name);
            at = sub;
        }
    }
    page
}

/// Show manual page `page` with `man` (its pager, its width), as `git help` does; false
/// when there is no `man` or no such page, so that the caller prints the help text.
fn show_manual(page: &str) -> bool {
    let found = process(Purpose::Manual, "man")
        .args(["-w", page])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        super::stderr_line(&format!(
            "note: no manual page {page}(1) here (`git agent-rewind manpages` installs them)"
        ));
        return false;
    }
    match process(Purpose::Manual, "man").arg(page).status() {
        Ok(s) if s.success() => true,
        Ok(s) => std::process::exit(s.code().unwrap_or(1)),
        Err(_) => false,
    }
}

/// The whole definition laid out for `width` columns: clap wraps options and abouts with
/// their hanging indentation; the command list of the top-level help and the examples and
/// notes after each command's options are wrapped here, where clap would start every
/// wrapped line at the margin.
pub fn fitted(cmd: clap::Command, width: usize) -> clap::Command {
    let cmd = cmd.term_width(width);
    let cmd = args::with_command_list(cmd, Some(width));
    fit_after_help(cmd, width)
}

fn fit_after_help(mut cmd: clap::Command, width: usize) -> clap::Command {
    if let Some(after) = cmd.get_after_help().map(|a| a.to_string()) {
        cmd = cmd.after_help(fit_text(&after, width));
    }
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in names {
        cmd = cmd.mut_subcommand(name, |s| fit_after_help(s, width));
    }
    cmd
}

/// Every line of `text` wrapped to `width` columns. A wrapped line goes on under its own
/// indentation; an example's command (two spaces in, under `Examples:`) goes on after a
/// ` \` as a shell reads it, four spaces in, so it still reads as one command.
pub fn fit_text(text: &str, width: usize) -> String {
    let mut out: Vec<String> = vec![];
    let mut in_examples = false;
    for line in text.lines() {
        in_examples = line == "Examples:" || (in_examples && !line.trim().is_empty());
        let indent = line.len() - line.trim_start().len();
        let is_command = in_examples && indent == 2;
        let (more, carry) = if is_command { (4, " \\") } else { (indent, "") };
        out.extend(wrap_line(line, width, more, carry));
    }
    out.join("\n")
}

/// `line` cut at spaces into lines of at most `width` columns (a single longer word stays
/// whole), the later ones indented by `more` spaces; every line but the last ends in
/// `carry`.
pub fn wrap_line(line: &str, width: usize, more: usize, carry: &str) -> Vec<String> {
    let columns = |s: &str| s.chars().count();
    if columns(line) <= width {
        return vec![line.to_string()];
    }
    let indent = line.len() - line.trim_start().len();
    let mut lines: Vec<String> = vec![];
    let mut current = line[..indent].to_string();
    let mut empty = true;
    for word in line.split_whitespace() {
        let fits = columns(&current) + 1 + columns(word) + columns(carry) <= width;
        if !empty && !fits {
            current.push_str(carry);
            lines.push(std::mem::replace(&mut current, " ".repeat(more)));
            empty = true;
        }
        if !empty {
            current.push(' ');
        }
        current.push_str(word);
        empty = false;
    }
    lines.push(current);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapped_line_keeps_its_indentation_and_a_command_its_shell_continuation() {
        let text = "Examples:\n  git agent-rewind push origin r1 --allow-secret 3f2a:config:rule:3\n      Push run r1 although that finding looks like a secret.";
        let fitted = fit_text(text, 40);
        assert_eq!(
            fitted,
            "Examples:\n  git agent-rewind push origin r1 \\\n    --allow-secret 3f2a:config:rule:3\n      Push run r1 although that finding\n      looks like a secret."
        );
        assert!(fitted.lines().all(|l| l.chars().count() <= 40), "{fitted}");
    }

    #[test]
    fn a_short_line_and_a_long_word_stay_whole() {
        assert_eq!(wrap_line("  short", 40, 2, ""), ["  short"]);
        let long = "x".repeat(50);
        assert_eq!(
            wrap_line(&format!("a {long}"), 40, 2, ""),
            ["a", &format!("  {long}")]
        );
    }
}
