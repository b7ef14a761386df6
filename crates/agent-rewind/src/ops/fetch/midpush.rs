//! Runs a fetch caught in the middle of someone's push: git updates the
//! refs of one atomic push one after the other, a run's `HEAD` before its notes ref, so a
//! fetch whose ref advertisement fell between the two stages a `HEAD` without its note.
//! Such runs (and only those) are fetched again by name, at most [`REFETCHES`] times, a
//! moment apart; what still fails is skipped as any invalid run is, and the next fetch takes
//! it. It never imports a run validation refuses and never changes the other runs' reports.

use super::{FetchOutcome, Select, import_staged};
use crate::journal::backoff;
use crate::remote::{self, Remote, staged};
use crate::store::Store;
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::RunId;

/// The most times one fetch fetches again the runs it caught mid-push.
pub const REFETCHES: u32 = 3;

/// Fetch again, by name, the runs of `out` skipped because they were caught mid-push, and
/// put their new reports (and warnings) in place of the old ones.
pub(super) fn refetch_caught_mid_push(
    store: &Store,
    remote: &Remote,
    out: &mut FetchOutcome,
    require_signed: bool,
) -> Result<()> {
    for attempt in 1..=REFETCHES {
        let mut caught: Vec<RunId> = vec![];
        for r in out.runs.iter().filter(|r| r.result == "skipped") {
            let Ok(run) = RunId::new(r.run.clone()) else {
                continue;
            };
            if staged::caught_mid_push(store, &remote.name, &run)? {
                caught.push(run);
            }
        }
        if caught.is_empty() {
            return Ok(());
        }
        agent_rewind_core::trace::mark(&format!("fetch: {} runs caught mid-push", caught.len()));
        backoff(attempt + 3); // 4-12 ms, 8-24 ms, 16-48 ms: a push's refs land within that
        out.refetches += 1;
        remote::fetch_into_staging(store, remote, Some(&caught))?;
        let again = import_staged(store, &remote.name, Select::Named(&caught), require_signed)?;
        let names: Vec<&str> = caught.iter().map(RunId::as_str).collect();
        out.runs.retain(|r| !names.contains(&r.run.as_str()));
        out.warnings.retain(|w| {
            !names
                .iter()
                .any(|n| w.starts_with(&format!("run {n:?} from ")))
        });
        out.runs.extend(again.runs);
        out.warnings.extend(again.warnings);
    }
    Ok(())
}
