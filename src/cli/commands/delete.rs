//! `delete`: remove a run from this repository, and with `--remote` from a remote too.

use crate::cli::output::json;
use crate::cli::render::{Style, short};
use crate::cli::{Ctx, Output};
use agent_rewind::ops;
use agent_rewind::ops::push::retire::Retired;
use agent_rewind_core::error::Result;
use clap::Args;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind delete r1
      Delete run r1: its refs, its notes and fetched copies of it; refused while another run's lineage passes through it.
  git agent-rewind delete r1 --force
      Delete it even so; the runs that came from it keep their own checkpoints.
  git agent-rewind delete r1 --remote origin
      Delete it here and on origin, leaving a tombstone that is pushed too; a copy there that moved on stays.";

#[derive(Debug, Args)]
pub struct DeleteArgs {
    pub run: String,
    /// Delete even when other runs' lineage passes through it.
    #[arg(long)]
    pub force: bool,
    /// Delete it on this remote too (a name or a URL): only at the tip deleted here or an
    /// ancestor of it, never forced; leaves a tombstone, pushed there.
    #[arg(long, value_name = "NAME|URL")]
    pub remote: Option<String>,
}

pub fn run(a: DeleteArgs, ctx: &Ctx) -> Result<Output> {
    let store = &ctx.store()?;
    // A bad remote is refused before anything changes.
    let remote = match &a.remote {
        Some(r) => Some(agent_rewind::remote::resolve_name_or_url(
            store, r, "--remote",
        )?),
        None => None,
    };
    let run = ops::address::run(store, &a.run)?;
    let Some(remote) = remote else {
        let out = ops::delete::delete(store, &run, a.force)?;
        return Ok(Output::new(json(&out), here_lines(&out)));
    };
    let st = &ctx.style(store)?;
    let out = ops::delete::delete_here_and_there(store, &run, a.force, &remote)?;
    let mut s = here_lines(&out.here);
    s.push_str(&format!("\non {}:\n", out.remote));
    s.push_str(&retired_lines(std::slice::from_ref(&out.on_remote), st));
    if out.tombstones_pushed > 0 {
        s.push_str("  tombstone pushed: other clones do not import the run again");
    }
    let mut o = Output::new(json(&out), s.trim_end().to_string());
    // Not everything asked for was done: the remote's copy stays.
    if out.on_remote.result == "kept" {
        o.exit_code = 1;
    }
    Ok(o)
}

fn here_lines(out: &ops::delete::DeleteOutcome) -> String {
    let mut s = format!(
        "deleted run {} ({} refs; tip {})",
        out.run,
        out.refs_deleted,
        out.head.as_deref().map(short).unwrap_or_else(|| "-".into())
    );
    if !out.lineage_of.is_empty() {
        s.push_str(&format!(
            "\n  the lineage of {} passed through it: their history before their root now shows plain commits",
            out.lineage_of.join(", ")
        ));
    }
    s
}

/// One line per covered run a push (or `delete --remote`) dealt with on the remote.
pub fn retired_lines(retired: &[Retired], st: &Style) -> String {
    let mut s = String::new();
    for r in retired {
        let what = match r.result {
            "deleted" => format!("deleted on the remote ({} refs)", r.refs),
            "would delete" => format!("would be deleted on the remote ({} refs)", r.refs),
            "kept" => "kept on the remote".to_string(),
            other => other.to_string(),
        };
        s.push_str(&format!("  {} {what}", st.id(&r.run)));
        if let Some(why) = &r.reason {
            s.push_str(&format!(": {why}"));
        }
        s.push('\n');
    }
    s
}
