//! Retention (`agentRewind.retain`): the policy's syntax, its clock, what it selects and
//! the report of what it deleted. The limits a person set (an age, a number of runs, a
//! size); whether a day has passed since the policy was last applied; the runs that are in
//! use and so never deleted; how many of the oldest runs a size limit takes; and what the
//! policy deleted, kept for the next command a person runs.
//!
//! Deleting is `gc`'s, and applying the policy after a write is `maintenance`'s: this module
//! never deletes a run, never selects one that is in use, and never starts a process.

use crate::catalog::RunSummary;
use crate::store::{Store, Trailers};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::RunId;
use agent_rewind_core::private::envelope::{RETENTION_REPORT, RETENTION_STATE};
use agent_rewind_core::private::read_if_exists;
use agent_rewind_core::time::Timestamp;
use std::collections::BTreeMap;
use std::path::Path;

/// The configuration key.
pub const KEY: &str = "agentRewind.retain";
/// The policy when nothing is configured (docs/design/retention.md).
pub const DEFAULT: &str = "5GiB";
/// How often automatic maintenance applies the policy.
pub const EVERY_SECONDS: i64 = 86_400;

/// The limits; a run past any of them is deleted (unless it is in use).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Policy {
    /// The policy as configured.
    pub text: String,
    /// Runs whose last activity is older than this many seconds.
    pub max_age: Option<i64>,
    /// Runs beyond the newest N.
    pub max_runs: Option<usize>,
    /// Oldest runs first until what the runs alone hold on disk is at most this.
    pub max_bytes: Option<u64>,
}

/// `agentRewind.retain` (every value; each may list several limits separated by commas or
/// spaces), else [`DEFAULT`]. `None`: `never`.
pub fn policy(store: &Store) -> Result<Option<Policy>> {
    let values = store.config().strings(KEY);
    let text = if values.is_empty() {
        DEFAULT.to_string()
    } else {
        values.join(", ")
    };
    parse(&text).map_err(|e| e.context(KEY))
}

/// A policy's text: `never`, or limits such as `30.days`, `500.runs`, `2GiB`.
pub fn parse(text: &str) -> Result<Option<Policy>> {
    let bad = |t: &str| {
        Error::usage(format!("{t:?} is not a retention limit")).with_hint(
            "use an age (30.days, 2.weeks, 12h), a number of runs (500.runs) or a size \
             (2GiB, 500MiB, 800m), or never",
        )
    };
    let tokens: Vec<&str> = text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .collect();
    if tokens.is_empty() {
        return Err(bad(text));
    }
    if tokens
        .iter()
        .any(|t| matches!(t.to_ascii_lowercase().as_str(), "never" | "off" | "false"))
    {
        if tokens.len() > 1 {
            return Err(bad(text));
        }
        return Ok(None);
    }
    let mut p = Policy {
        text: tokens.join(", "),
        ..Policy::default()
    };
    for t in tokens {
        if let Some(n) = t.strip_suffix(".runs").or_else(|| t.strip_suffix(".run")) {
            let n: usize = n.parse().map_err(|_| bad(t))?;
            p.max_runs = Some(p.max_runs.map_or(n, |m| m.min(n)));
        } else if let Some(b) = size(t) {
            p.max_bytes = Some(p.max_bytes.map_or(b, |m| m.min(b)));
        } else {
            let secs = age(t).ok_or_else(|| bad(t))?;
            p.max_age = Some(p.max_age.map_or(secs, |m| m.min(secs)));
        }
    }
    Ok(Some(p))
}

/// `30.days` (git's approxidate style: a number, a dot, a unit) or `30d`/`1d12h`.
fn age(t: &str) -> Option<i64> {
    if let Some((n, unit)) = t.split_once('.') {
        let n: i64 = n.parse().ok()?;
        let unit = unit.trim_end_matches('s');
        let secs = match unit {
            "second" => 1,
            "minute" => 60,
            "hour" => 3600,
            "day" => 86_400,
            "week" => 7 * 86_400,
            "month" => 30 * 86_400,
            "year" => 365 * 86_400,
            _ => return None,
        };
        return n.checked_mul(secs).filter(|s| *s >= 0);
    }
    agent_rewind_core::time::parse_age(t).ok()
}

/// `2GiB`, `500MiB`, `64KiB`, `100B`, or git's `k`/`m`/`g` suffixes (`800m`).
fn size(t: &str) -> Option<u64> {
    let lower = t.to_ascii_lowercase();
    let (n, mult) = [
        ("gib", 1u64 << 30),
        ("mib", 1 << 20),
        ("kib", 1 << 10),
        ("g", 1 << 30),
        ("m", 1 << 20),
        ("k", 1 << 10),
        ("b", 1),
    ]
    .into_iter()
    .find_map(|(suffix, mult)| Some((lower.strip_suffix(suffix)?, mult)))?;
    n.parse::<u64>().ok()?.checked_mul(mult)
}

/// Whether the policy is due: it was last applied a day ago or more, or at a time still to
/// come. When it is, the clock restarts now, so that of the writers that ask at once only
/// one is told to apply it. The first call only starts the clock, and only in a repository
/// where the tool keeps state already (a hook that ignored its payload writes nothing).
/// Never fails the caller: what cannot be read or written is skipped until the next call.
pub fn take_due(store: &Store) -> bool {
    let path = store.private().retention_state();
    if !path.parent().is_some_and(Path::exists) || !matches!(policy(store), Ok(Some(_))) {
        return false;
    }
    let now = Timestamp::now().as_second();
    let last = RETENTION_STATE
        .read_state(&path)
        .ok()
        .flatten()
        .and_then(|b| String::from_utf8_lossy(&b).trim().parse::<i64>().ok());
    let write_now = || RETENTION_STATE.write(&path, format!("{now}\n").as_bytes());
    match last {
        None => {
            let _ = write_now();
            false
        }
        // A time in the future (a clock that ran ahead, then was set right) counts as due:
        // waiting for the clock to catch up could stop retention for years.
        Some(t) if t <= now && now - t < EVERY_SECONDS => false,
        Some(_) => write_now().is_ok(),
    }
}

/// The runs no policy deletes, with why: the active run of every worktree, a run a
/// worktree's HEAD is a checkpoint of, and a run waiting at a gate or running a step.
pub fn in_use(store: &Store, runs: &[RunSummary]) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    if let Some(run) = crate::journal::active_run(store)? {
        out.insert(run.to_string(), "the active run of this worktree".into());
    }
    for w in store.worktree().uses()? {
        if let Ok(Some(run)) = crate::journal::active_run_in(&w.active_run_file) {
            out.entry(run.to_string())
                .or_insert_with(|| "the active run of a worktree".into());
        }
        if let Some(head) = w.head
            && let Ok(commit) = store.objects().read_commit(head)
            && let Some(run) = Trailers::parse(&commit.message).run
        {
            out.entry(run)
                .or_insert_with(|| "a worktree has one of its checkpoints checked out".into());
        }
    }
    for r in runs {
        let why = match r.status.as_str() {
            "awaiting_approval" | "approved" => "a gate is pending",
            "running" => "a step is running",
            _ => continue,
        };
        out.entry(r.run.clone()).or_insert_with(|| why.into());
    }
    Ok(out)
}

/// How many of `oldest_first` (deletable runs, oldest first) must go so that what the runs
/// left hold on disk (`kept` are staying anyway) is at most `max_bytes`: the fewest that do,
/// or all of them when even that is not enough. Binary search: each probe is one `git
/// rev-list --disk-usage` of the runs that would be left.
pub fn past_size(
    store: &Store,
    oldest_first: &[RunId],
    kept: &[RunId],
    max_bytes: u64,
) -> Result<usize> {
    let usage = |k: usize| -> Result<u64> {
        let left: Vec<RunId> = kept
            .iter()
            .chain(oldest_first[k..].iter())
            .cloned()
            .collect();
        store.objects().runs_disk_usage(&left)
    };
    let (mut lo, mut hi) = (0, oldest_first.len());
    if usage(0)? <= max_bytes {
        return Ok(0);
    }
    // usage(lo) > max_bytes; find the smallest hi with usage(hi) <= max_bytes (or the end).
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        if usage(mid)? <= max_bytes {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// One run the policy deleted, as the report tells it.
pub struct DeletedRun<'a> {
    pub run: &'a str,
    pub last_activity: Timestamp,
    pub label: Option<&'a str>,
}

/// Keep, for the next command a person runs, what the policy deleted.
pub fn report<'a>(
    store: &Store,
    policy: &Policy,
    deleted: impl IntoIterator<Item = DeletedRun<'a>>,
) -> Result<()> {
    let lines: Vec<String> = deleted
        .into_iter()
        .map(|d| {
            format!(
                "retention ({KEY}={}) deleted run {} (last active {}{})",
                policy.text,
                d.run,
                d.last_activity,
                d.label.map(|l| format!(", {l:?}")).unwrap_or_default()
            )
        })
        .collect();
    if lines.is_empty() {
        return Ok(());
    }
    RETENTION_REPORT.append(&store.private().retention_report(), &lines)
}

/// What the policy deleted since it was last told, told once: the report is removed. A
/// damaged report is told by name and removed (it held only what was to be told).
pub fn take_report(store: &Store) -> Vec<String> {
    let path = store.private().retention_report();
    let Ok(Some(bytes)) = read_if_exists(&path) else {
        return vec![];
    };
    let lines = match RETENTION_REPORT.records(&path, &bytes) {
        Ok(lines) => lines.into_iter().filter(|l| !l.is_empty()).collect(),
        Err(e) => vec![e.to_string()],
    };
    let _ = agent_rewind_core::private::remove_if_exists(&path);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_and_bad_ones_are_refused() {
        let p = parse("30.days, 500.runs 2GiB").unwrap().unwrap();
        assert_eq!(p.max_age, Some(30 * 86_400));
        assert_eq!(p.max_runs, Some(500));
        assert_eq!(p.max_bytes, Some(2 << 30));
        assert_eq!(p.text, "30.days, 500.runs, 2GiB");
        let p = parse("2.weeks,1.week,800m,12h").unwrap().unwrap();
        assert_eq!(p.max_age, Some(12 * 3600));
        assert_eq!(p.max_bytes, Some(800 << 20));
        assert_eq!(parse("never").unwrap(), None);
        assert_eq!(parse(DEFAULT).unwrap().unwrap().max_bytes, Some(5 << 30));
        for bad in [
            "",
            "never 30.days",
            "x.runs",
            "-1.days",
            "30.fortnights",
            "GiB",
            "lots",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
