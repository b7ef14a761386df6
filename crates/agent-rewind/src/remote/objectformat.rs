//! Runs between repositories of different object formats (SHA-1 and SHA-256): git cannot
//! convert objects between them, so a remote or bundle of the other format is refused in one
//! line saying so, from the ids it lists or from git's own refusal. Reads what it is given;
//! never runs git and never writes anything.

use crate::store::Store;
use agent_rewind_core::error::{Error, Result};

/// `what` (a remote, a bundle) has the other object format than this repository.
pub fn other(store: &Store, what: &str) -> Error {
    let ours = store.objects().object_hash();
    Error::refused(format!(
        "{what} has another object format than this repository ({ours} here): \
         git cannot move runs between SHA-1 and SHA-256 repositories"
    ))
    .with_hint(
        "share runs only between repositories of the same object format \
         (`git rev-parse --show-object-format`)",
    )
}

/// The ids `what` lists (`git ls-remote`, a bundle's heads) are all of this repository's
/// length (40 hex digits, 64 in a SHA-256 repository).
pub(super) fn check_ids<'a>(
    store: &Store,
    what: &str,
    ids: impl IntoIterator<Item = &'a str>,
) -> Result<()> {
    let hex_len = store.objects().object_hash().len_in_hex();
    if ids.into_iter().any(|id| id.len() != hex_len) {
        return Err(other(store, what));
    }
    Ok(())
}

/// git's own words for a remote of the other object format, on a push ("the receiving end
/// does not support this repository's hash algorithm") or a fetch ("mismatched algorithms:
/// client sha1; server sha256" over protocol v2, "does not support this repository's object
/// format" over v0): that refusal, named as such, instead of a failure to reach the remote.
pub(super) fn refused_by_git(store: &Store, what: &str, stderr: &str) -> Result<()> {
    const WORDS: [&str; 3] = [
        "does not support this repository's hash algorithm",
        "mismatched algorithms",
        "does not support this repository's object format",
    ];
    if WORDS.iter().any(|w| stderr.contains(w)) {
        return Err(other(store, what));
    }
    Ok(())
}
