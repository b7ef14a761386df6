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
use std::collections::HashMap;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind blame src/cart.rs
      Each line of the file as it is in the worktree: the agent turn (agent:model run/step@seq, the run's unique prefix and the model's short name) or the person that wrote it.
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
    let prefixes = run_prefixes(&store, &blamed)?;
    Ok(Output::new(
        json,
        human(&blamed, &prefixes, &Style::colored(color)),
    ))
}

/// The widest the "who" column gets, as `git blame` keeps its author column narrow, so the
/// code starts near the same column on every line (`--json` and `--porcelain` keep the full
/// values).
const WHO_WIDTH: usize = 40;

/// The fewest characters of a run id shown, even where fewer would be unique: a prefix of
/// one or two characters reads as a typo.
const RUN_PREFIX_MIN: usize = 4;

/// Who wrote a line, as the human output names it: `agent:model run/step@seq` with the
/// run's unique prefix (`prefixes`) and the model's short name, cut to [`WHO_WIDTH`].
fn who(l: &AttributedLine, prefixes: &HashMap<String, usize>) -> String {
    let full = match &l.agent {
        Some(t) => {
            let agent = t.agent.as_deref().unwrap_or("agent");
            let agent = match &t.model {
                Some(m) => format!("{agent}:{}", short_model(m)),
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
            let keep = prefixes
                .get(&t.run)
                .copied()
                .unwrap_or(t.run.len())
                .max(RUN_PREFIX_MIN);
            let run: String = t.run.chars().take(keep).collect();
            format!("{agent}{via} {run}{step}@{}", t.seq)
        }
        None => l.author.name.clone(),
    };
    crate::cli::listing::cut(&full, WHO_WIDTH)
}

/// A model's short name: without its provider (`anthropic/`), its family when that is the
/// agent's own (`claude-`), and its release date (`-20250929`, `-2025-09-29`), so
/// `claude-sonnet-4-5-20250929` is `sonnet-4-5`.
fn short_model(model: &str) -> &str {
    let mut m = model.rsplit('/').next().unwrap_or(model);
    m = m.strip_prefix("claude-").unwrap_or(m);
    let is_date = |s: &str| {
        let digits: String = s.chars().filter(|c| *c != '-').collect();
        digits.len() == 8 && digits.chars().all(|c| c.is_ascii_digit())
    };
    for len in [9, 11] {
        if m.len() > len
            && m.is_char_boundary(m.len() - len)
            && m[m.len() - len..].starts_with('-')
            && is_date(&m[m.len() - len + 1..])
        {
            return &m[..m.len() - len];
        }
    }
    m
}

/// The shortest unique prefix of each run named in `b`.
fn run_prefixes(store: &agent_rewind::store::Store, b: &Blamed) -> Result<HashMap<String, usize>> {
    let mut catalog = agent_rewind::catalog::Catalog::new(store);
    let mut out = HashMap::new();
    for t in b.lines.iter().filter_map(|l| l.agent.as_ref()) {
        if !out.contains_key(&t.run)
            && let Ok(run) = agent_rewind_core::ids::RunId::new(t.run.clone())
        {
            out.insert(t.run.clone(), catalog.unique_prefix(&run)?);
        }
    }
    Ok(out)
}

fn date(l: &AttributedLine) -> String {
    match &l.agent {
        Some(t) => t.ts.utc_date(),
        None => Timestamp::EPOCH.add_millis(l.author.time * 1000).utc_date(),
    }
}

/// git blame's default layout: `<commit> (<who> <date> <line>) <content>`.
fn human(b: &Blamed, prefixes: &HashMap<String, usize>, st: &Style) -> String {
    let whos: Vec<String> = b.lines.iter().map(|l| who(l, prefixes)).collect();
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

#[cfg(test)]
mod tests {
    use super::short_model;

    #[test]
    fn a_model_s_short_name_drops_provider_family_and_date() {
        assert_eq!(short_model("claude-sonnet-4-5-20250929"), "sonnet-4-5");
        assert_eq!(short_model("anthropic/claude-opus-4-1"), "opus-4-1");
        assert_eq!(short_model("gpt-5-codex-2025-09-15"), "gpt-5-codex");
        assert_eq!(short_model("gemini-2.5-pro"), "gemini-2.5-pro");
        assert_eq!(short_model("-20250929"), "-20250929");
    }
}
