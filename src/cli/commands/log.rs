//! `log`: a run's lineage, as a chain or as the tree of runs (`--graph`).

use crate::cli::{Ctx, Output, render};
use agent_rewind::ops;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::pickaxe::{Pickaxe, PickaxeKind};
use clap::Args;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind log r2
      The chain of r2 back through the rewinds and forks it came from to the first run.
  git agent-rewind log --graph
      Every tree of runs (archived ones folded), as `git log --graph --all`.
  git agent-rewind log -S parse_config --all
      Every turn, in any run, that added or removed the string parse_config (-G: a regex).";

#[derive(Debug, Args)]
pub struct LogArgs {
    /// The run (an id or a unique prefix; default: the active run, and with --graph every
    /// run).
    pub run: Option<String>,
    /// Show the tree of runs (which run came from which checkpoint of which run): the run's
    /// tree, or with no run named every tree, as `git log --graph --all`.
    #[arg(long)]
    pub graph: bool,
    /// With --graph and no run: also the trees of archived runs alone, unfolded. With -S or
    /// -G: search every run.
    #[arg(long)]
    pub all: bool,
    /// The turns whose change altered how many times STRING occurs in a file (git's
    /// pickaxe, as `git log -S`).
    #[arg(short = 'S', value_name = "STRING", conflicts_with_all = ["graph", "g"])]
    pub s: Option<String>,
    /// The turns whose change added or removed a line matching REGEX (as `git log -G`;
    /// binary files are skipped).
    #[arg(short = 'G', value_name = "REGEX", conflicts_with = "graph")]
    pub g: Option<String>,
    /// With -S: STRING is a regex.
    #[arg(long, requires = "s")]
    pub pickaxe_regex: bool,
    /// With --graph: text (default), mermaid, dot, or json (nodes and edges).
    #[arg(long, value_name = "FMT", requires = "graph",
          value_parser = ["text", "mermaid", "dot", "json"])]
    pub format: Option<String>,
}

pub fn run(a: LogArgs, json: bool, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store_to_look()?;
    let style = ctx.style(&store)?;
    if let Some(pickaxe) = pickaxe_of(&a)? {
        let scope = if a.all {
            if a.run.is_some() {
                return Err(Error::usage("name a run or give --all, not both"));
            }
            ops::pickaxe::PickaxeScope::AllRuns
        } else {
            ops::pickaxe::PickaxeScope::Run(ops::address::run_or_active(&store, a.run.as_deref())?)
        };
        let hits = ops::pickaxe::search(&store, &scope, &pickaxe)?;
        return Ok(Output::new(
            hits.iter().map(|h| h.to_json(pickaxe.kind())).collect(),
            render_hits(&hits, pickaxe.kind(), &style),
        ));
    }
    if a.all && !a.graph {
        return Err(Error::usage("--all needs --graph, -S or -G"));
    }
    if a.graph
        && let Some(out) = super::view::log_graph(&store, &a, json)?
    {
        return Ok(out);
    }
    let shape = render::GraphShape {
        fold_archived: !a.all,
    };
    if a.graph && a.run.is_none() {
        let trees = ops::log::lineage_forest(&store)?;
        return Ok(Output::new(
            serde_json::to_value(&trees).expect("json"),
            render::forest(&trees, shape, &style),
        ));
    }
    let run = ops::address::run_or_active(&store, a.run.as_deref())?;
    if a.graph {
        let g = ops::log::lineage_graph(&store, &run)?;
        Ok(Output::new(
            serde_json::to_value(vec![&g]).expect("json"),
            render::graph(&g, shape, &style),
        ))
    } else {
        let chain = ops::log::lineage(&store, &run)?;
        Ok(Output::new(
            chain.iter().map(|c| c.to_json()).collect(),
            render::lineage(&chain, &style),
        ))
    }
}

/// The pickaxe `-S`/`-G` ask for, if any.
fn pickaxe_of(a: &LogArgs) -> Result<Option<Pickaxe>> {
    match (&a.s, &a.g) {
        (Some(s), _) => Pickaxe::occurrences(s, a.pickaxe_regex).map(Some),
        (None, Some(g)) => Pickaxe::changed_lines(g).map(Some),
        (None, None) => Ok(None),
    }
}

/// One paragraph per checkpoint: who made the turn and when, then each file it changed
/// with the counts (`-S`) or matching lines (`-G`). No hit says so, as an empty `git log`
/// would say nothing: the exit code stays 0.
fn render_hits(hits: &[ops::pickaxe::PickaxeHit], kind: PickaxeKind, st: &render::Style) -> String {
    if hits.is_empty() {
        return "no checkpoint added or removed it".into();
    }
    let mut s = String::new();
    for h in hits {
        let l = h.checkpoint.line();
        let id = h.checkpoint.id().to_string();
        s.push_str(&format!(
            "{} {}@{} {} {} {}\n",
            st.id(&id[..12.min(id.len())]),
            st.bold(&l.run),
            l.seq,
            l.step.as_deref().unwrap_or("-"),
            l.event,
            st.dim(&l.ts.to_string()),
        ));
        let who = [
            ("agent", l.agent.as_deref()),
            ("model", l.meta.get("model").map(String::as_str)),
            ("prompt", l.meta.get("prompt_id").map(String::as_str)),
        ];
        let who: Vec<String> = who
            .iter()
            .filter_map(|(k, v)| v.map(|v| format!("{k} {v}")))
            .collect();
        if !who.is_empty() {
            s.push_str(&format!("    {}\n", who.join(", ")));
        }
        for f in &h.files {
            let counts = match kind {
                PickaxeKind::Occurrences => format!("{} -> {}", f.before, f.after),
                PickaxeKind::ChangedLines => format!("+{} -{}", f.after, f.before),
            };
            s.push_str(&format!("    {}  ({counts})\n", f.path));
        }
    }
    // The output adds the last line break.
    s.truncate(s.trim_end().len());
    s
}
