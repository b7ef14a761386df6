//! git's pager for `diff`, `show`, `log` and `blame` on a terminal: which one (as git chooses it) and
//! starting it (through the store, `Purpose::Pager`). Never pages `--json`, a command whose
//! output is not a terminal, or with `--no-pager`/`-P`; never fails a command: a pager that
//! cannot be started leaves the output on stdout.

use super::args::{Cli, Command};
use agent_rewind::store::{OpenFor, Store};
use std::io::IsTerminal;
use std::path::Path;

/// The pager command line for this invocation, or `None` to print as usual. As git:
/// `pager.<cmd>` false turns paging off; else the `GIT_PAGER` environment variable, else
/// `pager.<cmd>` when it is a command, else `core.pager`, else `PAGER`, else `less`; an empty
/// one or `cat` means no pager.
pub fn choose(cli: &Cli) -> Option<String> {
    let name = match &cli.command {
        Command::Diff(_) => "diff",
        Command::Show(_) => "show",
        Command::Log(_) => "log",
        Command::Blame(_) => "blame",
        _ => return None,
    };
    if cli.global.json || cli.global.no_pager || !std::io::stdout().is_terminal() {
        return None;
    }
    let cwd = std::env::current_dir().ok()?;
    let dir = match &cli.global.dir {
        Some(d) => cwd.join(d),
        None => cwd,
    };
    let pager = pager_of(&dir, name)?;
    let trimmed = pager.trim();
    (!trimmed.is_empty() && trimmed != "cat").then(|| trimmed.to_string())
}

fn pager_of(dir: &Path, name: &str) -> Option<String> {
    let store = Store::discover(dir, OpenFor::Work).ok();
    let key = format!("pager.{name}");
    let mut for_command = None;
    if let Some(store) = &store
        && let Some(value) = store.config().string(&key)
    {
        match store.config().bool(&key) {
            Ok(Some(false)) => return None,
            Ok(Some(true)) => {}
            _ => for_command = Some(value),
        }
    }
    if let Some(p) = std::env::var_os("GIT_PAGER") {
        return Some(p.to_string_lossy().into_owned());
    }
    if for_command.is_some() {
        return for_command;
    }
    if let Some(p) = store.as_ref().and_then(|s| s.config().string("core.pager")) {
        return Some(p);
    }
    if let Some(p) = std::env::var_os("PAGER") {
        return Some(p.to_string_lossy().into_owned());
    }
    Some("less".into())
}

/// Write `bytes` through `pager` and wait for it to end; `Err(bytes)` when it could not be
/// started (the caller prints them itself). A pager quit early (`q` in less) is no error.
pub fn page(pager: &str, bytes: &[u8]) -> Result<(), ()> {
    use std::io::Write;
    let Ok(mut child) = agent_rewind_core::process::pager(pager).spawn() else {
        return Err(());
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(bytes);
    }
    let _ = child.wait();
    Ok(())
}
