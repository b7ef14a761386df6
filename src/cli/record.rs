//! The options every recording command shares (`checkpoint`, `step begin|end`): their clap
//! definition, their parsing into library options, and the rendering of what was recorded.

use super::paths::worktree_paths;
use super::render::{self, Style};
use super::{Ctx, Output};
use agent_rewind::journal::StepFacts;
use agent_rewind::model::{Status, StepKind};
use agent_rewind::ops;
use agent_rewind::store::Store;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::RunId;
use clap::Args;
use std::collections::BTreeMap;

#[derive(Debug, Args, Clone, Default)]
pub struct RecordArgs {
    /// The run (default: the active run of this worktree; a new run is started if none).
    #[arg(long)]
    pub run: Option<String>,
    /// Step kind: agent, deterministic, effect, gate.
    #[arg(long, value_name = "K")]
    pub kind: Option<String>,
    /// Status: pending, running, awaiting_approval, completed, failed, interrupted, skipped.
    #[arg(long, value_name = "S")]
    pub status: Option<String>,
    /// The agent's own session id (e.g. Claude Code's session_id).
    #[arg(long, value_name = "ID")]
    pub session_id: Option<String>,
    /// An artifact: a path in the worktree (relative to the current folder), or a URI
    /// (`scheme://…[#digest]`). Repeatable.
    #[arg(long = "artifact", value_name = "P")]
    pub artifacts: Vec<String>,
    /// Free-form metadata, repeatable.
    #[arg(long = "meta", value_name = "K=V")]
    pub meta: Vec<String>,
    /// A message, kept in the commit body and the note.
    #[arg(short = 'm', long = "message", value_name = "TEXT")]
    pub message: Option<String>,
    /// A run this starts (`--run NEW`, or none active) does not become the active run of
    /// this worktree.
    #[arg(long)]
    pub no_activate: bool,
}

/// The library options of `a`; artifact paths (not `scheme://` URIs) are read relative to
/// the folder the command started in, as git reads paths, and become worktree paths.
pub fn record_options(
    a: &RecordArgs,
    store: &Store,
    ctx: &Ctx,
) -> Result<ops::checkpoint::CheckpointOptions> {
    let mut artifacts = Vec::with_capacity(a.artifacts.len());
    for art in &a.artifacts {
        if art.contains("://") {
            artifacts.push(art.clone());
        } else {
            artifacts.extend(worktree_paths(
                store.worktree().root()?,
                &ctx.dir,
                std::slice::from_ref(art),
            )?);
        }
    }
    Ok(ops::checkpoint::CheckpointOptions {
        run: match a.run.as_deref() {
            // An existing run's id or unique prefix, or the name of a run to start.
            Some(r) => {
                let id = RunId::new(r)?;
                Some(ops::address::existing_run(store, &id)?.unwrap_or(id))
            }
            None => None,
        },
        event: None,
        keep_active_run: a.no_activate,
        facts: StepFacts {
            kind: a.kind.as_deref().map(StepKind::parse).transpose()?,
            status: a.status.as_deref().map(Status::parse).transpose()?,
            session_id: a.session_id.as_deref().map(session_id).transpose()?,
            artifacts,
            meta: parse_meta(&a.meta)?,
            message: a.message.clone(),
            ..Default::default()
        },
    })
}

pub fn recorded_output(out: &ops::checkpoint::CheckpointOutcome, style: &Style) -> Output {
    let mut human = String::new();
    if let Some(s) = &out.started {
        human.push_str(&format!("started run {}\n", s.line.run));
    }
    human.push_str(&render::recorded(&out.recorded, style));
    Output::new(out.recorded.to_json(), human)
}

/// An agent's session id as given: an empty one (or only blanks, as an unset `$SESSION`
/// in quotes gives) names no conversation, and a rewind would offer to resume nothing.
fn session_id(id: &str) -> Result<String> {
    if id.trim().is_empty() {
        return Err(
            Error::usage("--session-id is empty: it names no agent session")
                .with_hint("give the agent's session id, or leave --session-id out"),
        );
    }
    Ok(id.to_string())
}

/// `k=v` pairs; keys are non-empty and without control characters.
pub fn parse_meta(items: &[String]) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for item in items {
        let Some((k, v)) = item.split_once('=') else {
            return Err(Error::usage(format!(
                "invalid --meta {item:?}: expected KEY=VALUE"
            )));
        };
        if k.is_empty() || k.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(Error::usage(format!(
                "invalid --meta key {k:?}: must be non-empty, no spaces or control characters"
            )));
        }
        out.insert(k.to_string(), v.to_string());
    }
    Ok(out)
}
