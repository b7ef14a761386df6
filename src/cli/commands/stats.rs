//! `stats`: lines added and kept per agent (with its model) and per person over a commit, a
//! branch or a range. Arguments and rendering only: the counting is `ops::stats`'s.

use crate::cli::render::{escape, table};
use crate::cli::{Ctx, Output};
use agent_rewind::ops;
use agent_rewind_core::error::Result;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind stats
      Lines the last commit added, per agent and model and per person, and how many are still there.
  git agent-rewind stats main..feature
      The same over a branch's commits (a pull request's range); kept = still at feature.
  git agent-rewind stats main..HEAD --json
      As one JSON document, for a report.";

#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    /// A commit (alone) or a range `A..B` (default: HEAD).
    #[arg(value_name = "RANGE")]
    pub range: Option<String>,
}

pub fn run(a: StatsArgs, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    let s = ops::stats::stats(&store, a.range.as_deref())?;
    for w in &s.warnings {
        crate::cli::render::warn(w);
    }
    let json = crate::cli::output::json(&s);
    if ctx.json {
        return Ok(Output::new(json, String::new()));
    }
    let st = ctx.style(&store)?;
    let cell = |s: String| (s.clone(), s);
    let mut rows: Vec<Vec<(String, String)>> = s
        .rows
        .iter()
        .map(|r| {
            vec![
                cell(r.origin.to_string()),
                cell(escape(&r.name).into_owned()),
                cell(
                    r.model
                        .as_deref()
                        .map_or_else(|| "-".into(), |m| escape(m).into_owned()),
                ),
                cell(r.added.to_string()),
                cell(r.kept.to_string()),
            ]
        })
        .collect();
    rows.push(vec![
        cell("total".into()),
        cell(String::new()),
        cell(String::new()),
        cell(s.added.to_string()),
        cell(s.kept.to_string()),
    ]);
    let header = format!(
        "{} commit{} in {}, kept at {}",
        s.commits,
        if s.commits == 1 { "" } else { "s" },
        escape(&s.range),
        st.id(&s.tip[..12.min(s.tip.len())])
    );
    let mut text = format!(
        "{header}\n{}",
        table(&["ORIGIN", "WHO", "MODEL", "ADDED", "KEPT"], rows)
    );
    if let Some(u) = &s.usage {
        text.push_str("\n\ntokens of the runs that wrote these lines:\n");
        text.push_str(&crate::cli::render::usage::report(u));
    }
    Ok(Output::new(json, text))
}
