//! A fetch of every run in chunks of at most `agentRewind.fetchRefsPerFetch` refs: `git
//! ls-remote` lists the remote's runs, several `git fetch` processes stage them, then one
//! import takes them all, as a fetch of everything does. It never imports anything itself
//! before every chunk is staged, and never fetches a name that is not a valid run id.

use super::{FetchOutcome, Select, import_staged};
use crate::remote::{self, Remote};
use crate::store::Store;
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::RunId;

/// `agentRewind.fetchRefsPerFetch`: the most refs one `git fetch` of everything asks for
/// (unset or 0: one fetch).
pub fn refs_per_fetch(store: &Store) -> Result<Option<usize>> {
    remote::refs_limit(
        store,
        "agentRewind.fetchRefsPerFetch",
        "a positive number, like 10000 (0 or unset: one fetch)",
    )
}

/// A fetch of every run in several `git fetch` processes of at most `limit` refs each
/// (`git ls-remote` lists the remote's runs first), all staged before anything is
/// imported; then one import of them all, as a fetch of everything imports.
pub(super) fn fetch_in_chunks(
    store: &Store,
    remote: &Remote,
    limit: usize,
    require_signed: bool,
) -> Result<FetchOutcome> {
    let (listed, invalid) = remote::remote_runs(store, remote)?;
    let mut chunk: Vec<RunId> = vec![];
    let mut refs = 0;
    let mut all: Vec<RunId> = Vec::with_capacity(listed.len());
    for (run, n) in listed {
        if !chunk.is_empty() && refs + n > limit {
            remote::fetch_into_staging(store, remote, Some(&chunk))?;
            all.append(&mut chunk);
            refs = 0;
        }
        refs += n;
        chunk.push(run);
    }
    if !chunk.is_empty() {
        remote::fetch_into_staging(store, remote, Some(&chunk))?;
        all.append(&mut chunk);
    }
    remote::fetch_tombstones(store, remote)?;
    let skipped = crate::ops::tombstones::take_staged(store, &remote.name, require_signed)?;
    agent_rewind_core::trace::mark("fetch: chunked git fetches done");
    let mut out = import_staged(store, &remote.name, Select::Listed(&all), require_signed)?;
    out.remote = remote.target.clone();
    out.warnings.extend(skipped);
    for name in invalid {
        out.warnings.push(format!(
            "run {name:?} from {} skipped: not a valid run name",
            remote.target
        ));
    }
    super::midpush::refetch_caught_mid_push(store, remote, &mut out, require_signed)?;
    Ok(out)
}
