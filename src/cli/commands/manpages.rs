//! `manpages [DIR]` (hidden): write the manual pages generated from the clap definitions, so
//! that `man git-agent-rewind` and `git agent-rewind --help` (which git turns into `man
//! git-agent-rewind`) show them. The default folder is `../share/man/man1` beside the
//! binary's folder (`~/.cargo/share/man/man1` for `cargo install`), which man-db searches
//! for every folder on `PATH`.

use crate::cli::{Ctx, Output};
use agent_rewind_core::error::{Error, Result};
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct ManpagesArgs {
    /// The folder to write the `.1` files into.
    pub dir: Option<PathBuf>,
}

pub fn run(a: ManpagesArgs, ctx: &Ctx) -> Result<Output> {
    let dir = match a.dir {
        Some(d) => ctx.path(&d),
        None => default_dir()?,
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::other(format!("cannot create {}: {e}", dir.display())))?;
    let written = write_pages(&dir).map_err(|e| {
        Error::other(format!(
            "cannot write manual pages into {}: {e}",
            dir.display()
        ))
    })?;
    let human = format!(
        "wrote {} into {}",
        agent_rewind_core::words::count(written.len(), "manual page", "manual pages"),
        dir.display()
    );
    Ok(Output::new(
        serde_json::json!({"dir": dir.display().to_string(), "pages": written}),
        human,
    ))
}

/// `<prefix>/share/man/man1` for a binary in `<prefix>/bin`.
fn default_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|e| Error::other(format!("cannot find this binary: {e}")))?;
    let prefix = exe
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| Error::other(format!("{} has no parent folder", exe.display())))?;
    Ok(prefix.join("share/man/man1"))
}

/// One page for the command and one per visible subcommand (`git-agent-rewind-rewind.1`,
/// `git-agent-rewind-step-begin.1`, ...); returns the file names.
fn write_pages(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut cmd = crate::cli::args::command()
        .bin_name("git-agent-rewind")
        .disable_help_subcommand(true);
    cmd.build();
    let mut written = vec![];
    fn walk(cmd: &clap::Command, dir: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
        let name = format!(
            "{}.1",
            cmd.get_bin_name()
                .unwrap_or(cmd.get_name())
                .replace(' ', "-")
        );
        std::fs::write(dir.join(&name), page(cmd)?)?;
        out.push(name);
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, dir, out)?;
        }
        Ok(())
    }
    walk(&cmd, dir, &mut written)?;
    Ok(written)
}

/// The roff of one page: clap_mangen's sections, with a SYNOPSIS that names every option's
/// value and the examples of `-h` as an EXAMPLES section (each command with what it does),
/// the text after them as EXIT STATUS and NOTES.
fn page(cmd: &clap::Command) -> std::io::Result<Vec<u8>> {
    let after = cmd
        .get_after_help()
        .map(|h| h.to_string())
        .unwrap_or_default();
    let plain = cmd
        .clone()
        .after_help(None::<&str>)
        .override_usage(synopsis(cmd));
    let man = clap_mangen::Man::new(plain).manual("git agent-rewind manual");
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut out)?;
    }
    let (examples, notes) = split_after_help(&after);
    if !examples.is_empty() {
        out.extend_from_slice(b".SH EXAMPLES\n");
        for (command, what) in examples {
            out.extend_from_slice(format!(".TP\n\\fB{}\\fR\n", roff_text(&command)).as_bytes());
            let what = if what.is_empty() {
                "\\&".to_string()
            } else {
                roff_text(&what)
            };
            out.extend_from_slice(format!("{what}\n").as_bytes());
        }
    }
    let (exit, other): (Vec<&str>, Vec<&str>) = notes
        .split("\n\n")
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .partition(|p| p.starts_with("Exit status"));
    for (heading, paragraphs) in [(".SH \"EXIT STATUS\"\n", exit), (".SH NOTES\n", other)] {
        if !paragraphs.is_empty() {
            out.extend_from_slice(heading.as_bytes());
            for p in paragraphs {
                out.extend_from_slice(format!(".PP\n{}\n", roff_text(p)).as_bytes());
            }
        }
    }
    man.render_version_section(&mut out)?;
    Ok(out)
}

/// `git-agent-rewind rewind [--to <STEP|CHECKPOINT>] [-C <PATH>] … [RUN]`: every visible
/// option with its value's name, then the positionals.
fn synopsis(cmd: &clap::Command) -> String {
    let mut words = vec![cmd.get_bin_name().unwrap_or(cmd.get_name()).to_string()];
    for arg in cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !a.is_positional())
    {
        let flag = match (arg.get_long(), arg.get_short()) {
            (Some(long), _) => format!("--{long}"),
            (None, Some(short)) => format!("-{short}"),
            (None, None) => continue,
        };
        let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values());
        let value = match arg.get_value_names() {
            Some(names) if takes_value => format!(" <{}>", names.join("> <")),
            None if takes_value => format!(" <{}>", arg.get_id().as_str().to_uppercase()),
            _ => String::new(),
        };
        let word = format!("{flag}{value}");
        words.push(if arg.is_required_set() {
            word
        } else {
            format!("[{word}]")
        });
    }
    for arg in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
        let name = arg
            .get_value_names()
            .map(|n| n.join(" "))
            .unwrap_or_else(|| arg.get_id().as_str().to_uppercase());
        let many = if arg.get_num_args().is_some_and(|n| n.max_values() > 1) {
            "…"
        } else {
            ""
        };
        words.push(if arg.is_required_set() {
            format!("<{name}>{many}")
        } else {
            format!("[{name}]{many}")
        });
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        words.push("<COMMAND>".into());
    }
    words.join(" ")
}

/// The examples of an `after_help` text (`Examples:`, then each command indented by two
/// spaces with what it does indented by six) and the paragraphs after them.
fn split_after_help(text: &str) -> (Vec<(String, String)>, String) {
    let Some(rest) = text.trim_start().strip_prefix("Examples:\n") else {
        return (vec![], text.trim().to_string());
    };
    let (block, notes) = rest.split_once("\n\n").unwrap_or((rest, ""));
    let mut examples: Vec<(String, String)> = vec![];
    for line in block.lines() {
        if let Some(what) = line.strip_prefix("      ") {
            if let Some((_, w)) = examples.last_mut() {
                if !w.is_empty() {
                    w.push(' ');
                }
                w.push_str(what.trim());
            }
        } else if let Some(command) = line.strip_prefix("  ") {
            // A trailing `# comment` on the command's own line is what it does.
            let (command, what) = match command.split_once("   # ") {
                Some((c, w)) => (c.trim_end(), w.trim()),
                None => (command.trim_end(), ""),
            };
            examples.push((command.to_string(), what.to_string()));
        }
    }
    (examples, notes.trim().to_string())
}

/// Text as roff shows it literally: backslashes and hyphens escaped, no line read as a
/// request.
fn roff_text(text: &str) -> String {
    text.lines()
        .map(|l| {
            let l = l.replace('\\', "\\e").replace('-', "\\-");
            if l.starts_with('.') || l.starts_with('\'') {
                format!("\\&{l}")
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}
