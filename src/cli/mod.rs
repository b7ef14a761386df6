//! The thin CLI: turn parsed arguments into library calls and their results into output.
//! It knows nothing about git internals; every decision lives in the library. This file
//! only dispatches: each command's arguments and handler live together in `commands/`.

pub mod args;
mod color;
mod commands;
mod complete;
mod help;
mod listing;
mod maintenance;
mod mcp_events;
mod mcp_input;
mod mcp_server;
mod output;
pub mod pager;
mod parse;
mod paths;
mod post_rewind;
mod record;
pub mod render;
mod view_server;

use agent_rewind::store::{OpenFor, Store};
use agent_rewind_core::error::{Error, Result};
use args::{Cli, Command};
use commands::*;
pub use help::answer as help_answer;
pub use output::{Output, stderr_line, stderr_text};
pub use parse::{parse, version_request};
use std::path::{Path, PathBuf};

/// The repository of a command that opens it once and exits after its output: never
/// dropped, so the process does not spend its last moments unmapping every pack index and
/// freeing caches the exit frees anyway (about 5% of the instructions of a small `diff`,
/// docs/PERFORMANCE.md "small commands"). Dropping a store writes nothing, so nothing is
/// lost. Never for a store opened per request or per pass (`mcp`, `watch`): each would stay.
pub type Kept = std::mem::ManuallyDrop<Store>;

/// What every command handler gets: where the command runs and how to render.
pub struct Ctx {
    /// The directory the command was started in (after `-C`), absolute.
    pub dir: PathBuf,
    /// Whether `dir` is the process's own current folder (no `-C`).
    pub in_cwd: bool,
    /// How the command's human output is coloured.
    pub colour: Colour,
    /// `--json`: the JSON document is printed, not the human text (so work that only feeds
    /// one of them can be skipped).
    pub json: bool,
}

/// How a command's human output is coloured.
pub enum Colour {
    /// By git's rules for the command named (`color.<command>`, then `color.ui`:
    /// `color::command_uses_color`).
    ByGitConfig(String),
    /// Never: the output is for a program (the MCP server, shell completion).
    Never,
}

impl Ctx {
    /// The style of the command's human output: coloured by git's rules, read from the
    /// repository's config (`git -c` included).
    pub fn style(&self, store: &Store) -> Result<render::Style> {
        Ok(match &self.colour {
            Colour::ByGitConfig(command) => {
                render::Style::colored(color::command_uses_color(store, command)?)
            }
            Colour::Never => render::Style::plain(),
        })
    }

    /// The repository the command runs in, once a post-commit checkpoint still being
    /// recorded there in the background is written. What it could not record is kept for a
    /// command a person runs ([`Self::store_to_look`]); only "still running" is told here.
    pub fn store(&self) -> Result<Store> {
        let store = Store::discover(&self.dir, OpenFor::Work)?;
        Ok(self.settle(store, agent_rewind::hooks::background::Tell::Kept))
    }

    /// [`Self::store`] for a command a person runs that may write (`gc`): what background
    /// checkpoints could not record is told here, once.
    pub fn store_for_person(&self) -> Result<Store> {
        let store = Store::discover(&self.dir, OpenFor::Work)?;
        Ok(self.settle(store, agent_rewind::hooks::background::Tell::Person))
    }

    /// [`Self::store_for_person`] for `status`, `list`, `show` and `log`, the commands a
    /// person runs to look: opened for a brief read ([`Store::discover`] with [`OpenFor::BriefRead`]) and kept open
    /// until the process ends ([`Kept`]).
    pub fn store_to_look(&self) -> Result<Kept> {
        let store = Store::discover(&self.dir, OpenFor::BriefRead)?;
        let store = self.settle(store, agent_rewind::hooks::background::Tell::Person);
        Ok(Kept::new(store))
    }

    /// [`Self::store`] for a command that opens its repository once, only reads, and ends
    /// with it (`diff`): opened for a brief read ([`Store::discover`] with [`OpenFor::BriefRead`]) and kept open
    /// until the process ends ([`Kept`]).
    pub fn store_once(&self) -> Result<Kept> {
        let store = Store::discover(&self.dir, OpenFor::BriefRead)?;
        Ok(Kept::new(self.settle(
            store,
            agent_rewind::hooks::background::Tell::Kept,
        )))
    }

    /// A post-commit checkpoint still being recorded in the background is waited for;
    /// what background work could not record is told as `tell` says.
    fn settle(&self, store: Store, tell: agent_rewind::hooks::background::Tell) -> Store {
        let mut warnings = agent_rewind::hooks::background::settle(&store, tell);
        if tell == agent_rewind::hooks::background::Tell::Person {
            warnings.extend(agent_rewind::ops::retention::take_report(&store));
        }
        for w in warnings {
            // Kept for later: only what cannot wait (a checkpoint still being recorded).
            if tell == agent_rewind::hooks::background::Tell::Person
                || w == agent_rewind::hooks::background::STILL_RUNNING
            {
                render::warn(&w);
            }
        }
        store
    }

    /// A path argument as the user meant it, made absolute (relative to where the command
    /// was started): for paths handed on to git, which runs elsewhere.
    pub fn path(&self, p: &Path) -> PathBuf {
        self.dir.join(p)
    }

    /// A path argument for a file this process reads itself: as typed when the command runs
    /// in the process's own folder (so messages name it as the user did), else under `-C`.
    pub fn user_path(&self, p: &Path) -> PathBuf {
        if self.in_cwd {
            p.to_path_buf()
        } else {
            self.dir.join(p)
        }
    }
}

pub fn execute(cli: Cli) -> Result<Output> {
    let cwd =
        std::env::current_dir().map_err(|e| Error::other(format!("no current directory: {e}")))?;
    let dir = match &cli.global.dir {
        Some(d) => cwd.join(d),
        None => cwd,
    };
    let ctx = Ctx {
        dir,
        in_cwd: cli.global.dir.is_none(),
        colour: Colour::ByGitConfig(cli.name.clone()),
        json: cli.global.json,
    };
    match cli.command {
        Command::Init(a) => init::run(a, &ctx),
        Command::Start(a) => start::run(a, &ctx),
        Command::Checkpoint(a) => checkpoint::run(a, &ctx),
        Command::Step(a) => step::run(a, &ctx),
        Command::List(a) => list::run(a, cli.global.json, &ctx),
        Command::Show(a) => show::run(a, &ctx),
        Command::Log(a) => log::run(a, cli.global.json, &ctx),
        Command::Diff(a) => diff::run(a, &ctx),
        Command::Blame(a) => blame::run(a, &ctx),
        Command::Stats(a) => stats::run(a, &ctx),
        Command::View(a) => view::run(a, &ctx),
        Command::Status => status::run(&ctx),
        Command::Rewind(a) => rewind::run(a, false, &ctx),
        Command::Fork(a) => rewind::run(a, true, &ctx),
        Command::Restore(a) => restore::run(a, &ctx),
        Command::Revert(a) => revert::run(a, &ctx),
        Command::Pick(a) => pick::run(a, &ctx),
        Command::Undo(a) => undo::run(a, &ctx),
        Command::Completions(a) => completions::run(a, &ctx),
        Command::Run(a) => run::run(a, &ctx),
        Command::Resume(a) => run::resume(a, &ctx),
        Command::Watch(a) => watch::run(a, cli.global.json, &ctx),
        Command::Wrap(a) => wrap::run(a, cli.global.json, &ctx),
        Command::Approve(a) => approve::run(a, true, &ctx),
        Command::Reject(a) => approve::run(a, false, &ctx),
        Command::Steer(a) => steer::run(a, &ctx),
        Command::Trust(a) => trust::run(a, &ctx),
        Command::Hooks(a) => hooks::run(a, &ctx),
        Command::Hook(a) => Ok(hook::run(a, &ctx)),
        Command::Mcp(a) => mcp::run(a, &ctx),
        Command::Push(a) => share::push(a, &ctx),
        Command::Fetch(a) => share::fetch(a, &ctx),
        Command::Verify(a) => verify::run(a, &ctx),
        Command::Delete(a) => delete::run(a, &ctx),
        Command::Gc(a) => gc::run(a, &ctx),
        Command::Export(a) => share::export(a, &ctx),
        Command::Import(a) => share::import(a, &ctx),
        Command::Manpages(a) => manpages::run(a, &ctx),
        Command::Complete(a) => Ok(completions::complete(a, &ctx)),
    }
}
