//! `manpages [DIR]` (hidden): write the manual pages generated from the clap definitions, so
//! that `man git-agent-rewind` and `git agent-rewind --help` (which git turns into `man
//! git-agent-rewind`) show them. The default folder is `../share/man/man1` beside the
//! binary's folder (`~/.cargo/share/man/man1` for `cargo install`), which man-db searches
//! for every folder on `PATH`.

use crate::cli::{Ctx, Output};
use agent_rewind::error::{Error, Result};
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
        "wrote {} manual page(s) into {}",
        written.len(),
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
        let man = clap_mangen::Man::new(cmd.clone()).manual("git agent-rewind manual");
        let path = man.generate_to(dir)?;
        out.push(
            path.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
        );
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, dir, out)?;
        }
        Ok(())
    }
    walk(&cmd, dir, &mut written)?;
    Ok(written)
}
