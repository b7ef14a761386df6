//! `blame`: who wrote each line of a file, an agent's turn or a person, as `git blame`
//! lays it out (`--porcelain`, `--json`, `-L`, colour by git's rules). Arguments and
//! rendering only: the attribution is `ops::blame`'s.

use crate::cli::paths::worktree_paths;
use crate::cli::render::Style;
use crate::cli::{Ctx, Output};
use agent_rewind::ops;
use agent_rewind::ops::blame::{AttributedLine, Blamed};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::time::Timestamp;
use clap::Args;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind blame src/cart.rs
      Each line of the file as it is in the worktree: the agent turn (agent:model run/step@seq) or the person that wrote it.
  git agent-rewind blame src/cart.rs main -L 10,40
      Lines 10 to 40 of the file at main.
  git agent-rewind blame src/cart.rs --porcelain
      One block of `key value` lines per line, for scripts (docs/COMMANDS.md, \"blame\").";

#[derive(Debug, Args)]
pub struct BlameArgs {
    /// The file, relative to the current folder.
    #[arg(value_name = "FILE")]
    pub file: String,
    /// The commit to blame the file at (default: the file in the worktree, its changes not
    /// committed yet included).
    #[arg(value_name = "REV")]
    pub rev: Option<String>,
    /// Only these lines, as git's `-L` reads them: `<start>,<end>`, `<start>,+<count>`,
    /// `/<regex>/,<end>` or `:<funcname>` (repeatable).
    #[arg(short = 'L', value_name = "RANGE")]
    pub ranges: Vec<String>,
    /// For scripts: per line, its header (`<commit> <orig-line> <final-line>`), `key value`
    /// lines (`origin`, `author…`, `filename`, `agent…`) and the line after a tab.
    #[arg(long)]
    pub porcelain: bool,
    #[command(flatten)]
    pub colors: crate::cli::color::ColorArgs,
}

pub fn run(a: BlameArgs, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    let rel = worktree_paths(
        store.worktree().root()?,
        &ctx.dir,
        std::slice::from_ref(&a.file),
    )?
    .pop()
    .unwrap_or_default();
    if rel == "." {
        return Err(Error::usage(format!("{}: not a file", a.file))
            .with_hint("name one file, relative to the current folder"));
    }
    let color = a.colors.use_color(&store, "blame")?;
    let blamed = ops::blame::blame(&store, &ctx.dir, &a.file, &rel, a.rev.as_deref(), &a.ranges)?;
    for w in &blamed.warnings {
        crate::cli::render::warn(w);
    }
    let json = crate::cli::output::json(&blamed);
    if ctx.json {
        return Ok(Output::new(json, String::new()));
    }
    if a.porcelain {
        return Ok(Output::raw(json, porcelain(&blamed).into_bytes()));
    }
    Ok(Output::new(json, human(&blamed, &Style::colored(color))))
}

/// Who wrote a line, as the human output names it.
fn who(l: &AttributedLine) -> String {
    match &l.agent {
        Some(t) => {
            let agent = t.agent.as_deref().unwrap_or("agent");
            let agent = match &t.model {
                Some(m) => format!("{agent}:{m}"),
                None => agent.to_string(),
            };
            let step = t
                .step
                .as_deref()
                .map(|s| format!("/{s}"))
                .unwrap_or_default();
            let via = t
                .source
                .as_deref()
                .map(|s| format!(" via {s}"))
                .unwrap_or_default();
            format!("{agent}{via} {}{step}@{}", t.run, t.seq)
        }
        None => l.author.name.clone(),
    }
}

fn date(l: &AttributedLine) -> String {
    match &l.agent {
        Some(t) => t.ts.utc_date(),
        None => Timestamp::EPOCH.add_millis(l.author.time * 1000).utc_date(),
    }
}

/// git blame's default layout: `<commit> (<who> <date> <line>) <content>`.
fn human(b: &Blamed, st: &Style) -> String {
    let whos: Vec<String> = b.lines.iter().map(who).collect();
    let width = whos.iter().map(|w| w.chars().count()).max().unwrap_or(0);
    let num_width = b
        .lines
        .iter()
        .map(|l| l.line)
        .max()
        .unwrap_or(0)
        .to_string()
        .len();
    let mut out = String::new();
    for (l, w) in b.lines.iter().zip(&whos) {
        let mark = if l.boundary { "^" } else { "" };
        let short: String = l
            .commit
            .chars()
            .take(if l.boundary { 7 } else { 8 })
            .collect();
        let w = crate::cli::render::escape(w);
        let pad = width.saturating_sub(w.chars().count());
        let w = if l.agent.is_some() {
            st.paint("36", &w)
        } else {
            w.into_owned()
        };
        out.push_str(&format!(
            "{} ({w}{:pad$} {} {:>num_width$}) {}\n",
            st.paint("33", &format!("{mark}{short}")),
            "",
            date(l),
            l.line,
            l.content
        ));
    }
    out.trim_end_matches('\n').to_string()
}

/// The `--porcelain` layout (docs/COMMANDS.md, "blame").
fn porcelain(b: &Blamed) -> String {
    let mut out = String::new();
    for l in &b.lines {
        out.push_str(&format!("{} {} {}\n", l.commit, l.orig_line, l.line));
        out.push_str(&format!("origin {}\n", l.origin));
        out.push_str(&format!("author {}\n", one_line(&l.author.name)));
        out.push_str(&format!("author-mail <{}>\n", one_line(&l.author.email)));
        out.push_str(&format!("author-time {}\n", l.author.time));
        out.push_str(&format!("author-tz {}\n", l.author.tz));
        out.push_str(&format!("filename {}\n", l.orig_path));
        if let Some(t) = &l.agent {
            let field = |k: &str, v: Option<&str>| {
                v.map(|v| format!("{k} {}\n", one_line(v)))
                    .unwrap_or_default()
            };
            out.push_str(&field("agent", t.agent.as_deref()));
            out.push_str(&field("agent-model", t.model.as_deref()));
            out.push_str(&field("agent-run", Some(&t.run)));
            out.push_str(&field("agent-step", t.step.as_deref()));
            out.push_str(&format!("agent-seq {}\n", t.seq));
            out.push_str(&field("agent-checkpoint", Some(&t.checkpoint)));
            out.push_str(&field("agent-session", t.session.as_deref()));
            out.push_str(&field("agent-source", t.source.as_deref()));
            out.push_str(&format!("agent-time {}\n", t.ts));
        }
        out.push('\t');
        out.push_str(&l.content);
        out.push('\n');
    }
    out
}

/// A value on one porcelain line: a line break inside it would start a new key.
fn one_line(v: &str) -> String {
    v.replace(['\n', '\r'], " ")
}
