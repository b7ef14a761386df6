//! A fingerprint of the runs' state: what `view --serve`'s page polls to know that it is out
//! of date. Only reads refs (no object, no note is read, so it stays cheap at any history
//! size); it never writes anything.

use agent_rewind_core::error::Result;
use agent_rewind_store::Store;
use agent_rewind_store::layout;
use sha2::Digest;

/// The SHA-256 (first 128 bits, hex) of the name and target of each ref under
/// `refs/agent-runs/` and `refs/notes/agent-runs/`: every checkpoint, metadata note, archive
/// or removal moves one of them, and every worktree of the repository records there, so a
/// checkpoint recorded in any worktree changes it.
pub fn runs(store: &Store) -> Result<String> {
    let mut refs = store.refs().refs_under(layout::RUNS_PREFIX)?;
    refs.extend(store.refs().refs_under(layout::NOTES_PREFIX)?);
    refs.sort();
    let mut hash = sha2::Sha256::new();
    for (name, id) in refs {
        hash.update(format!("{name} {id}\n").as_bytes());
    }
    Ok(hash
        .finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect())
}
