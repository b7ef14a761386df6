//! `diff`: files and metadata between two checkpoints. Files in git's own format (what `git
//! diff` between the two trees prints: pagers and diff viewers read it; rendered in-process
//! when the store is certain to match git, else git's own), coloured by git's rules.

use crate::cli::paths::worktree_paths;
use crate::cli::render::{colour_marks, escape};
use crate::cli::{Ctx, Output};
use agent_rewind::ops;
use agent_rewind::store::{DiffText, Store};
use agent_rewind_core::error::Result;
use clap::Args;
use std::io::IsTerminal;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind diff r1/implement
      What the latest attempt of step implement changed, against the checkpoint before it, files and metadata.
  git agent-rewind diff r1@2 r1@5 --stat
      Which files changed between two checkpoints of r1, as `git diff --stat` prints it.
  git agent-rewind diff r1/plan r2 -- src/
      Compare a step of one run with the newest checkpoint of another, only under src/.";

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The checkpoint to diff (against its predecessor when alone; default: the active
    /// run's newest checkpoint).
    pub first: Option<String>,
    /// With two: diff from FIRST to SECOND.
    pub second: Option<String>,
    /// Only a summary of the files changed, as `git diff --stat` prints it (no metadata
    /// unless `--meta`).
    #[arg(long)]
    pub stat: bool,
    /// Also the metadata fields that differ (shown by default without `--stat`).
    #[arg(long)]
    pub meta: bool,
    #[command(flatten)]
    pub colors: crate::cli::color::ColorArgs,
    /// Only these paths (files or folders, relative to the current folder).
    #[arg(last = true, value_name = "PATH")]
    pub paths: Vec<String>,
}

pub fn run(a: DiffArgs, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store_once()?;
    let first = ops::address::spec(&store, a.first.as_deref())?;
    let second = a
        .second
        .as_deref()
        .map(|s| ops::address::spec(&store, Some(s)))
        .transpose()?;
    let paths = if a.paths.is_empty() {
        vec![]
    } else {
        worktree_paths(store.worktree().root()?, &ctx.dir, &a.paths)?
    };
    let mut d = match &second {
        Some(s) => ops::diff::diff(&store, Some(&first), s, ctx.json)?,
        None => ops::diff::diff(&store, None, &first, ctx.json)?,
    };
    if !paths.is_empty() {
        d.files.retain(|f| {
            paths
                .iter()
                .any(|p| agent_rewind::materialize::path_is_under(&f.path.0, p))
        });
    }
    // `--stat` is git's stat alone, as a script reading it expects; the metadata comes
    // with it only when asked for.
    if a.stat && !a.meta {
        d.metadata.clear();
    }
    if a.stat {
        ops::diff::keep_only_stat(&mut d.files);
    }
    let color = use_color(&store, &a)?;
    let mut human = String::new();
    for m in &d.metadata {
        human.push_str(&format!(
            "metadata {}: {} -> {}\n",
            m.field,
            escape(&m.from.to_string()),
            escape(&m.to.to_string())
        ));
    }
    // The common case is rendered in-process (the same bytes git prints, or `None`);
    // anything else is git's own `git diff`.
    let inprocess = if color || !paths.is_empty() {
        None
    } else {
        store
            .diff()
            .text_inprocess(&d.from_tree, &d.to_tree, a.stat)?
    };
    let files = match inprocess {
        Some(bytes) => {
            agent_rewind_core::trace::mark("diff: files rendered in-process");
            bytes
        }
        None => {
            let how = DiffText {
                stat: a.stat,
                color,
                paths: &paths,
                as_user_in: Some(&ctx.dir),
            };
            let bytes = store.diff().text(&d.from_tree, &d.to_tree, &how)?;
            agent_rewind_core::trace::mark("diff: git diff printed the files");
            bytes
        }
    };
    let json = serde_json::to_value(&d).expect("json");
    if !color && !std::io::stdout().is_terminal() {
        // Piped without colour: git's bytes exactly as `git diff` prints them (a patch for
        // `git apply`, CRs and all), after the metadata lines; nothing when nothing differs.
        let mut out = human.into_bytes();
        if !out.is_empty() && !files.is_empty() {
            out.push(b'\n');
        }
        out.extend_from_slice(&files);
        return Ok(Output::raw(json, out));
    }
    // For display (a terminal, or colour asked for, as for `less -R`): git's colour codes
    // kept; any other control character of a file's content is shown escaped, so a file
    // cannot drive the terminal.
    let files = colour_marks(&String::from_utf8_lossy(&files));
    if !human.is_empty() && !files.is_empty() {
        human.push('\n');
    }
    human.push_str(&files);
    if human.is_empty() {
        human.push_str("no differences");
    }
    Ok(Output::new(json, human.trim_end_matches('\n').to_string()))
}

/// Git's rules for `diff`: the flags, then NO_COLOR, then `color.diff`, then `color.ui`.
fn use_color(store: &Store, a: &DiffArgs) -> Result<bool> {
    a.colors.use_color(store, "diff")
}
