//! The hash of bytes themselves, with no object header: the trailing checksums of pack,
//! pack index and index files, and the digest that recognises content written into the
//! worktree. Must never be used for an object id (those hash a header too).

use agent_rewind_core::error::{Error, Result};
use gix::ObjectId;

/// The hash of `bytes` themselves (no object header): the checksums of pack, pack index and
/// index files, and the digest that recognises content written into the worktree.
pub(crate) fn digest(kind: gix::hash::Kind, bytes: &[u8]) -> Result<ObjectId> {
    let mut h = gix::hash::hasher(kind);
    h.update(bytes);
    h.try_finalize()
        .map_err(|e| Error::other(format!("hashing failed: {e}")))
}
