//! The guard of the MCP server's writes: a caller may take back only what its own turns
//! wrote, in the active run, unless a person widened that with `agentRewind.mcpAllow`
//! (`other-runs`, `other-agents`).
//!
//! Whose a change is comes from the records, as line attribution reads them: a change a
//! checkpoint recorded to a path is the agent's of that checkpoint when its turn recorded
//! the path as edited (`touched`). Anything else — a checkpoint no agent recorded (a
//! person's, a run's start), a path the turn did not report editing, a change in the
//! worktree that no checkpoint holds yet — is a person's, and a person's work is never
//! taken back through MCP, whatever `mcpAllow` says.
//!
//! - `revert`: one checkpoint must be the caller's turn; a range (a run, a step) is refused
//!   when it holds a checkpoint that changed something and is not the caller's, naming
//!   whose; and each path the plan writes must have been changed inside the range by the
//!   caller's turns only.
//! - `restore`: the checkpoint must be the caller's, and each path the plan writes must have
//!   been changed since it only by the caller's turns, with nothing unrecorded on top.
//!
//! Reads only: never writes a file, an object or a ref, never speaks the protocol.

use super::{Caller, allowed};
use crate::catalog::{Catalog, Checkpoint, short};
use crate::materialize::PathChange;
use crate::ops::revert::{Action, RevertOutcome, RevertSpan};
use crate::store::{BString, ByteSlice, Store};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::CheckpointSpec;
use std::collections::BTreeSet;

/// How many refused checkpoints or paths a refusal names (then "and N more").
const NAMED: usize = 8;

/// Whose a checkpoint or a change is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Owner {
    Caller,
    Agent(String),
    Person,
    /// A change an agent's checkpoint holds in a path its turn did not report editing:
    /// whose it is, the records do not tell, so it counts as a person's.
    Unreported(String),
}

/// The caller, and how far `agentRewind.mcpAllow` lets it reach.
struct Reach {
    caller: Caller,
    other_runs: bool,
    other_agents: bool,
}

impl Reach {
    fn new(store: &Store, caller: &Caller) -> Reach {
        let allow = allowed(store);
        Reach {
            caller: caller.clone(),
            other_runs: allow.iter().any(|a| a == "other-runs"),
            other_agents: allow.iter().any(|a| a == "other-agents"),
        }
    }

    /// Whose checkpoint `cp` is: the agent's that recorded it, a person's when none did.
    fn owner(&self, cp: &Checkpoint) -> Owner {
        match cp.line().agent.as_deref() {
            None => Owner::Person,
            Some(a) if Some(a) == self.caller.agent.as_deref() => Owner::Caller,
            Some(a) => Owner::Agent(a.to_string()),
        }
    }

    /// Whose the change `cp` recorded to `path` is: its agent's when the turn reported
    /// editing the path, else a person's (attribution's rule).
    fn owner_of_change(&self, cp: &Checkpoint, path: &[u8]) -> Owner {
        match cp.line().agent.as_deref() {
            _ if cp.line().touched.iter().any(|t| t.as_bytes() == path) => self.owner(cp),
            Some(agent) => Owner::Unreported(agent.to_string()),
            None => Owner::Person,
        }
    }

    fn allows(&self, owner: &Owner) -> bool {
        match owner {
            Owner::Caller => true,
            Owner::Agent(_) => self.other_agents,
            Owner::Person | Owner::Unreported(_) => false,
        }
    }

    /// Refuse a write reaching into `run` when it is not this worktree's active run, unless
    /// `other-runs` is allowed.
    fn check_run(&self, store: &Store, run: &str, what: &str) -> Result<()> {
        let active = crate::journal::active_run(store)?;
        if self.other_runs || active.as_ref().is_some_and(|r| r.as_str() == run) {
            return Ok(());
        }
        Err(Error::refused(format!(
            "{what} is in run {run}, not in this worktree's active run{}",
            active.map(|r| format!(" ({r})")).unwrap_or_default()
        ))
        .with_hint("a person can allow it: git config agentRewind.mcpAllow other-runs"))
    }

    /// Refuse `cp` as the checkpoint a write takes back or restores from, unless it is in a
    /// run the caller may reach and is the caller's (or another agent's, when allowed).
    fn check_target(&self, store: &Store, cp: &Checkpoint, verb: &str) -> Result<()> {
        let what = format!("checkpoint {}", short(cp.id()));
        self.check_run(store, &cp.line().run, &what)?;
        let at = address(cp);
        match self.owner(cp) {
            Owner::Caller => Ok(()),
            Owner::Agent(_) if self.other_agents => Ok(()),
            Owner::Agent(a) => Err(Error::refused(format!(
                "checkpoint {at} was recorded by {a}, not by the caller ({})",
                self.caller.by()
            ))
            .with_hint("a person can allow it: git config agentRewind.mcpAllow other-agents")),
            Owner::Person | Owner::Unreported(_) => Err(Error::refused(format!(
                "checkpoint {at} was recorded by no agent (a person's checkpoint, or where the \
                 run began): it is no one's to {verb} through MCP"
            ))
            .with_hint(format!(
                "a person can, on the command line: git agent-rewind {verb} …"
            ))),
        }
    }
}

/// A checkpoint as messages name it: `r@3 (1a2b3c4d)`.
fn address(cp: &Checkpoint) -> String {
    format!("{}@{} ({})", cp.line().run, cp.line().seq, short(cp.id()))
}

/// Whose, in words: `codex`, `a person`.
fn whose(owner: &Owner) -> String {
    match owner {
        Owner::Caller => "the caller".to_string(),
        Owner::Agent(a) => a.clone(),
        Owner::Person => "a person".to_string(),
        Owner::Unreported(a) => {
            format!("a person (the turn of {a} there did not report editing it)")
        }
    }
}

/// The range of a revert in words: `run r`, `step split of run r`.
fn range(span: &RevertSpan) -> String {
    if span.scope == "run" {
        format!("run {}", span.run)
    } else {
        format!("{} of run {}", span.scope, span.run)
    }
}

/// `items` joined, at most [`NAMED`] of them.
fn listed(items: &[String]) -> String {
    let mut out = items[..items.len().min(NAMED)].join("; ");
    if items.len() > NAMED {
        out.push_str(&format!("; and {} more", items.len() - NAMED));
    }
    out
}

/// What the guard let a revert reach, for the check of the paths its plan writes.
pub struct RevertReach {
    reach: Reach,
    span: RevertSpan,
}

/// Refuse a revert of `spec` through MCP unless its range is the caller's own work (see the
/// module's rules). Checked before the revert is planned; [`RevertReach::check_plan`] then
/// checks the paths the plan writes.
pub fn check_revert(store: &Store, caller: &Caller, spec: &CheckpointSpec) -> Result<RevertReach> {
    let reach = Reach::new(store, caller);
    if matches!(spec, CheckpointSpec::Seq(..) | CheckpointSpec::Commit(_)) {
        let cp = Catalog::new(store).resolve(spec)?;
        reach.check_target(store, &cp, "revert")?;
    }
    let span = crate::ops::revert::span(store, spec)?;
    reach.check_run(store, span.run.as_str(), &range(&span))?;
    let mut before = &span.from;
    let mut theirs = vec![];
    for cp in &span.checkpoints {
        let owner = reach.owner(cp);
        if cp.commit.tree != before.commit.tree && !reach.allows(&owner) {
            theirs.push(format!("{}'s {}", whose(&owner), address(cp)));
        }
        before = cp;
    }
    if !theirs.is_empty() {
        return Err(Error::refused(format!(
            "{} holds work that is not the caller's ({}): {}",
            range(&span),
            reach.caller.by(),
            listed(&theirs)
        ))
        .with_hint(
            "revert one of your own turns (<run>@<seq>) or a step only you worked in; a person \
             can allow other agents' turns (git config agentRewind.mcpAllow other-agents), \
             never a person's",
        ));
    }
    Ok(RevertReach { reach, span })
}

impl RevertReach {
    /// Refuse `plan` when a path it writes was changed inside the range by anyone but the
    /// caller's turns (a turn that did not report editing it counts as a person).
    pub fn check_plan(&self, store: &Store, plan: &RevertOutcome) -> Result<()> {
        let written: BTreeSet<&str> = plan
            .files
            .iter()
            .filter(|f| f.action != Action::Keep)
            .map(|f| f.path.as_str())
            .collect();
        let mut before = &self.span.from;
        let mut theirs = vec![];
        for cp in &self.span.checkpoints {
            if cp.commit.tree != before.commit.tree {
                for change in store
                    .objects()
                    .diff_trees(before.commit.tree, cp.commit.tree)?
                {
                    let path = agent_rewind_core::quote::text_path(&change.path);
                    let owner = self.reach.owner_of_change(cp, &change.path);
                    if written.contains(path.as_str()) && !self.reach.allows(&owner) {
                        theirs.push(format!("{path} by {} at {}", whose(&owner), address(cp)));
                    }
                }
            }
            before = cp;
        }
        if theirs.is_empty() {
            return Ok(());
        }
        Err(Error::refused(format!(
            "reverting {} would take back changes that are not the caller's ({}): {}",
            range(&self.span),
            self.reach.caller.by(),
            listed(&theirs)
        ))
        .with_hint(
            "a change is an agent's only where its turn reported editing the file (its \
             file-edit hook); nothing was written",
        ))
    }
}

/// Refuse a restore from `spec` through MCP unless the checkpoint is the caller's, in a run
/// the caller may reach: checked before anything is planned, so a caller learns nothing of
/// a checkpoint that is not theirs.
pub fn check_restore_source(store: &Store, caller: &Caller, spec: &CheckpointSpec) -> Result<()> {
    check_restore(store, caller, spec, &[])
}

/// Refuse a restore from `spec` through MCP of the paths `plan` writes, unless the
/// checkpoint is the caller's and every change to those paths since it is the caller's
/// turns' (see the module's rules).
pub fn check_restore(
    store: &Store,
    caller: &Caller,
    spec: &CheckpointSpec,
    plan: &[PathChange],
) -> Result<()> {
    let reach = Reach::new(store, caller);
    let mut catalog = Catalog::new(store);
    let cp = catalog.resolve(spec)?;
    reach.check_target(store, &cp, "restore")?;
    let paths: BTreeSet<BString> = plan
        .iter()
        .map(|c| BString::from(c.path.0.clone()))
        .collect();
    if paths.is_empty() {
        return Ok(());
    }
    let unknown = |why: String| {
        Error::refused(format!(
            "{why}: who changed {} since checkpoint {} is not known",
            listed(
                &paths
                    .iter()
                    .map(|p| agent_rewind_core::quote::text_path(p))
                    .collect::<Vec<_>>()
            ),
            address(&cp)
        ))
        .with_hint("restore from a checkpoint of this worktree's active run")
    };
    let Some(active) = crate::journal::active_run(store)? else {
        return Err(unknown("this worktree has no active run".into()));
    };
    let tip = catalog.require_run_tip(&active)?;
    let lineage = catalog.lineage_chain(tip.id(), usize::MAX)?;
    let Some(at) = lineage.iter().position(|c| c.id() == cp.id()) else {
        return Err(unknown(format!(
            "checkpoint {} is not in the history of the active run {active}",
            short(cp.id())
        )));
    };
    let mut theirs = vec![];
    let mut before = &cp;
    for later in lineage[..at].iter().rev() {
        if later.commit.tree != before.commit.tree {
            for change in store
                .objects()
                .diff_trees(before.commit.tree, later.commit.tree)?
            {
                let owner = reach.owner_of_change(later, &change.path);
                if paths.contains(&change.path) && !reach.allows(&owner) {
                    theirs.push(format!(
                        "{} by {} at {}",
                        agent_rewind_core::quote::text_path(&change.path),
                        whose(&owner),
                        address(later)
                    ));
                }
            }
        }
        before = later;
    }
    theirs.extend(unrecorded(store, &tip, &paths)?);
    if theirs.is_empty() {
        return Ok(());
    }
    Err(Error::refused(format!(
        "restoring from checkpoint {} would take back changes that are not the caller's ({}): {}",
        address(&cp),
        reach.caller.by(),
        listed(&theirs)
    ))
    .with_hint(
        "a change is an agent's only where its turn reported editing the file (its file-edit \
         hook); one not yet recorded by a turn is no one's to take back; nothing was written",
    ))
}

/// The paths of `paths` whose worktree content is not what the newest checkpoint `tip`
/// recorded: changes no turn has recorded yet.
fn unrecorded(store: &Store, tip: &Checkpoint, paths: &BTreeSet<BString>) -> Result<Vec<String>> {
    let list: Vec<BString> = paths.iter().cloned().collect();
    // Hashing the worktree's files keeps their blobs in memory: nothing lands on disk.
    let now = store
        .handle_for_staged_writes()
        .worktree()
        .worktree_entries(&list)?;
    let mut out = vec![];
    for (path, now) in list.iter().zip(now) {
        let recorded = store
            .objects()
            .entry_in_tree(tip.commit.tree, path.as_bytes())?;
        if recorded != now {
            out.push(format!(
                "{} changed since the newest checkpoint {} by no recorded turn",
                agent_rewind_core::quote::text_path(path),
                address(tip)
            ));
        }
    }
    Ok(out)
}
