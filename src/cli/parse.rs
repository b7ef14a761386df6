//! Parsing the command line: clap's whole definition (`args::command`), and nothing before
//! it but the answer to `--version` alone. It must never read a line differently from that
//! definition; every help text and error is clap's.
//!
//! A second table of commands, each parsed by a definition of its own, once saved building
//! the whole definition; measured against clap alone it saved under a tenth of a small
//! command's time, too little for a table kept by hand (docs/design/startup.md).

use super::args::{Cli, command};
use clap::FromArgMatches;

/// The parsed command line, or clap's error for it (help and version requests included).
pub fn parse() -> Result<Cli, clap::Error> {
    command()
        .try_get_matches_from(std::env::args_os())
        .and_then(|m| {
            let mut cli = Cli::from_arg_matches(&m)?;
            cli.name = m.subcommand_name().unwrap_or_default().to_string();
            Ok(cli)
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `--version` alone prints what clap prints for it.
    #[test]
    fn version_line_is_clap_s() {
        assert_eq!(version_line(), command().render_version());
    }
}
