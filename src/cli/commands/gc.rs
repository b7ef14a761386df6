//! `gc`: delete old runs, trim safety backups, pack refs.

use crate::cli::output::json;
use crate::cli::{Ctx, Output};
use agent_rewind::ops;
use agent_rewind_core::error::Result;
use clap::Args;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind gc --dry-run
      List what the retention policy (agentRewind.retain, default 5GiB) would delete.
  git agent-rewind gc --keep 20
      Delete every run but the newest 20, then pack the refs.
  git agent-rewind gc --remote origin --dry-run
      What origin holds (its runs; what only they hold on disk, estimated here) and what the policy would delete there.";

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Only runs whose last activity is older than this (e.g. 30d, 12h, 2w, 1d12h).
    #[arg(long, value_name = "DUR")]
    pub older_than: Option<String>,
    /// Always keep the newest N runs.
    #[arg(long, value_name = "N")]
    pub keep: Option<usize>,
    /// Only list what would be deleted.
    #[arg(long)]
    pub dry_run: bool,
    /// Automatic maintenance (started in the background once a day): apply the policy,
    /// print nothing, and keep what it deleted for the next command a person runs.
    #[arg(long, hide = true, conflicts_with_all = ["older_than", "keep", "dry_run", "remote"])]
    pub auto: bool,
    /// With --dry-run: what this remote (a name or a URL) holds and what the policy (or
    /// --older-than/--keep) would delete there; nothing is fetched or deleted.
    #[arg(long, value_name = "NAME|URL")]
    pub remote: Option<String>,
}

pub fn run(a: GcArgs, ctx: &Ctx) -> Result<Output> {
    if a.auto {
        // Background work: what it deleted is kept for the next command a person runs.
        let out = ops::maintenance::apply_retention(&ctx.store()?)?;
        return Ok(Output::new(
            out.as_ref()
                .map_or_else(|| serde_json::json!({"policy": null, "deleted": []}), json),
            String::new(),
        ));
    }
    // A person's gc tells what background work left to tell.
    let store = &ctx.store_for_person()?;
    let st = &ctx.style(store)?;
    let older_than = a
        .older_than
        .as_deref()
        .map(agent_rewind_core::time::parse_age)
        .transpose()?;
    let policy = if older_than.is_none() && a.keep.is_none() {
        match ops::retention::policy(store)? {
            Some(p) => Some(p),
            None if a.remote.is_some() => None,
            None => {
                let s = format!(
                    "retention is off ({}=never): nothing to delete",
                    ops::retention::KEY
                );
                return Ok(Output::new(
                    serde_json::json!({"policy": null, "deleted": []}),
                    s,
                ));
            }
        }
    } else {
        None
    };
    if let Some(r) = &a.remote {
        let opts = ops::gc::GcOptions {
            older_than,
            // Retention off: nothing is selected.
            keep: a.keep.or(match (&policy, older_than) {
                (None, None) => Some(usize::MAX),
                _ => None,
            }),
            policy,
            dry_run: true,
        };
        return remote_dry_run(store, st, r, a.dry_run, &opts);
    }
    let out = ops::gc::gc(
        store,
        &ops::gc::GcOptions {
            older_than,
            keep: a.keep,
            policy,
            dry_run: a.dry_run,
        },
    )?;
    for p in &out.problems {
        crate::cli::render::warn(p);
    }
    let mut s = match &out.policy {
        Some(p) => format!("retention policy {}={}\n", ops::retention::KEY, p.text),
        None => String::new(),
    };
    s.push_str(&format!(
        "{} {} of {}{}\n",
        if out.dry_run {
            "would delete"
        } else {
            "deleted"
        },
        out.deleted.len(),
        agent_rewind_core::words::count(out.runs_before, "run", "runs"),
        if out.deleted.is_empty() { "" } else { ":" }
    ));
    for d in &out.deleted {
        s.push_str(&format!(
            "  {}  {}{}\n",
            st.id(&d.run),
            d.last_activity,
            d.label
                .as_ref()
                .map(|l| format!("  {}", crate::cli::render::quoted(l)))
                .unwrap_or_default()
        ));
    }
    for k in &out.kept {
        s.push_str(&format!("  kept {}: {}\n", st.id(&k.run), k.reason));
    }
    if let Some(b) = &out.backups
        && b.dropped > 0
    {
        s.push_str(&format!(
            "{} {} of {} by age (the newest of each worktree stays)\n",
            if out.dry_run { "would drop" } else { "dropped" },
            b.dropped,
            agent_rewind_core::words::count(b.before, "safety backup", "safety backups")
        ));
    }
    if out.tombstones_written > 0 {
        s.push_str(&format!(
            "left {}: the next push carries them, so other clones do not bring the runs back\n",
            agent_rewind_core::words::count(out.tombstones_written, "tombstone", "tombstones")
        ));
    }
    if out.dry_run {
        s.push_str("nothing changed (--dry-run)");
    } else if out.deleted.is_empty() {
        s.push_str("refs packed");
    } else {
        s.push_str("refs packed; `git gc` frees the objects of deleted runs");
    }
    Ok(Output::new(json(&out), s))
}

/// `gc --remote R --dry-run`: what the remote holds and what `opts` would delete there.
/// Without `--dry-run` it is refused before anything is read: deleting on a remote is
/// `delete --remote`, or `gc` here then `push` (docs/design/retention.md).
fn remote_dry_run(
    store: &agent_rewind::store::Store,
    st: &crate::cli::render::Style,
    word: &str,
    dry_run: bool,
    opts: &ops::gc::GcOptions,
) -> Result<Output> {
    if !dry_run {
        return Err(agent_rewind_core::error::Error::usage(
            "gc --remote only reports what the remote holds and what would be deleted there: add --dry-run",
        )
        .with_hint(
            "to delete on the remote, run `gc` here and then `push` (a push deletes there the runs this clone's tombstones cover), or `delete RUN --remote REMOTE`",
        ));
    }
    let remote = agent_rewind::remote::resolve_name_or_url(store, word, "--remote")?;
    let out = ops::gc::gc_remote_dry_run(store, &remote, opts)?;
    let mut s = match &out.policy {
        Some(p) => format!("retention policy {}={}\n", ops::retention::KEY, p.text),
        None => String::new(),
    };
    s.push_str(&format!(
        "{} holds {}; those held here at the same tip hold about {} on disk (estimated here; {} not here at that tip: not estimated, never selected)\n",
        out.remote,
        agent_rewind_core::words::count(out.runs.len(), "run", "runs"),
        bytes(out.bytes_estimate),
        out.not_judged
    ));
    for r in &out.runs {
        s.push_str(&format!(
            "  {}  {} refs  {}\n",
            st.id(&r.run),
            r.refs,
            match (&r.last_activity, r.bytes) {
                (Some(t), Some(b)) => format!("{t}  ~{}", bytes(b)),
                _ => "not here at that tip".into(),
            }
        ));
    }
    s.push_str(&format!(
        "would delete {} there{}\n",
        agent_rewind_core::words::count(out.would_delete.len(), "run", "runs"),
        if out.would_delete.is_empty() { "" } else { ":" }
    ));
    for d in &out.would_delete {
        s.push_str(&format!("  {}  {}\n", st.id(&d.run), d.last_activity));
    }
    for k in &out.kept {
        s.push_str(&format!("  kept {}: {}\n", st.id(&k.run), k.reason));
    }
    if !out.covered_by_tombstones.is_empty() {
        s.push_str("covered by this clone's tombstones (the next push deals with them):\n");
        s.push_str(&super::delete::retired_lines(
            &out.covered_by_tombstones,
            st,
        ));
    }
    s.push_str("nothing changed (--dry-run)");
    Ok(Output::new(json(&out), s))
}

/// A size as people read it: bytes, KiB, MiB or GiB.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    if n < 1024 {
        return format!("{n} bytes");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = UNITS[0];
    for u in &UNITS[1..] {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    format!("{v:.1} {unit}")
}
