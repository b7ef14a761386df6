//! `hook prepare-commit-msg` (opt-in, `hooks install --assisted-by`): an `Assisted-by:
//! <agent>:<model>` trailer in the message of a commit for each agent (and model) whose
//! turns the commit holds — the turns of the worktree's active run recorded since HEAD was
//! committed, that edited files — as the Linux kernel asks for AI assistance. It never adds
//! `Co-Authored-By` (an agent is no author), never writes anything but the message file
//! git hands it, and never fails the commit.

use super::HookOutcome;
use super::handlers::hook_run;
use crate::catalog::Catalog;
use crate::model::Event;
use crate::store::Store;
use agent_rewind_core::error::Result;
use std::path::Path;

/// How many checkpoints back the hook looks for the turns since HEAD was committed.
const LOOKBACK: usize = 2_000;

/// The trailers for the turns of `store`'s active run since its HEAD commit, in order.
pub fn assisted_by(store: &Store) -> Result<Vec<String>> {
    let run = match hook_run(store)? {
        Ok(run) => run,
        Err(_) => return Ok(vec![]),
    };
    let head = store.refs().user_head()?.commit.map(|c| c.to_string());
    let mut catalog = Catalog::new(store);
    let Some(tip) = store.refs().run_head(&run)? else {
        return Ok(vec![]);
    };
    let mut out: Vec<String> = vec![];
    for cp in catalog.lineage_chain(tip, LOOKBACK)? {
        let line = cp.line();
        if line.run != run.as_str() || line.git_commit_sha != head {
            break;
        }
        if line.event != Event::Turn || line.touched.is_empty() {
            continue;
        }
        let agent = line.agent.as_deref().unwrap_or("agent");
        let value = match line.meta.get("model") {
            Some(m) => format!("{agent}:{m}"),
            None => agent.to_string(),
        };
        let trailer = format!("Assisted-by: {}", value.replace(['\n', '\r'], " "));
        if !out.contains(&trailer) {
            out.push(trailer);
        }
    }
    out.reverse();
    Ok(out)
}

/// `hook prepare-commit-msg <file> [<source> [<commit>]]`, run by git in the worktree root.
pub fn prepare_commit_msg(store: &Store, dir: &Path, args: &[String]) -> Result<HookOutcome> {
    const NAME: &str = "prepare-commit-msg";
    let Some(file) = args.first() else {
        return Ok(HookOutcome::ignored(NAME, "git named no message file"));
    };
    let trailers = assisted_by(store)?;
    if trailers.is_empty() {
        return Ok(HookOutcome::skipped(
            NAME,
            "no agent turn since the last commit in the active run",
        ));
    }
    store.objects().add_trailers(&dir.join(file), &trailers)?;
    Ok(HookOutcome {
        reason: Some(trailers.join("; ")),
        ..HookOutcome::new(NAME, super::HookAction::Appended)
    })
}
