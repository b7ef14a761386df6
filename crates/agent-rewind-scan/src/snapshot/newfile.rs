//! What a snapshot takes of one untracked, not ignored file: its blob, or why the policy
//! leaves it out (a secret pattern, a name git refuses, too big, a secret rule fires on its
//! content). Shared
//! by the full pass and the monitored start from the last checkpoint; it writes only the
//! blob.

use super::Policy;
use crate::gixerror::from_gix;
use crate::snapshot::retry_object_write;
use agent_rewind_core::error::Result;
use gix::ObjectId;
use gix::bstr::{BStr, ByteSlice};

/// What the snapshot takes of one untracked, not ignored file.
pub(super) enum NewFile {
    Blob(ObjectId, gix::objs::tree::EntryKind),
    /// Left out by the policy, and why.
    Excluded(String),
    /// Gone meanwhile (or a kind of file a tree cannot hold).
    Gone,
}

/// The untracked, not ignored file `rela`: its blob, unless the policy leaves it out (a
/// secret pattern, a name git refuses, too big, a credential inside).
pub(super) fn new_file(
    policy: &Policy,
    protect: gix::validate::path::component::Options,
    workdir: &std::path::Path,
    pipeline: &mut gix::filter::Pipeline<'_>,
    index: &gix::index::State,
    rela: &BStr,
) -> Result<NewFile> {
    if let Some(p) = policy.excluded_pattern(&rela.to_str_lossy()) {
        return Ok(NewFile::Excluded(format!("matches secret pattern {p}")));
    }
    if let Some(bad) = rela
        .split_str("/")
        .find(|c| gix::validate::path::component(c.as_bstr(), None, protect).is_err())
    {
        // Git refuses such a name too (`core.protectNTFS` and friends).
        return Ok(NewFile::Excluded(format!(
            "{:?} is not a valid name in a git tree",
            bad.as_bstr()
        )));
    }
    let full = workdir.join(gix::path::from_bstr(rela).map_err(from_gix)?);
    if let Ok(md) = std::fs::symlink_metadata(&full)
        && md.is_file()
        && md.len() > policy.max_untracked_size
    {
        return Ok(NewFile::Excluded(format!(
            "untracked file of {} bytes exceeds agentRewind.maxUntrackedSize ({})",
            md.len(),
            policy.max_untracked_size
        )));
    }
    if policy.scan_content
        && let Some(what) = secret_in_content(&full, &rela.to_str_lossy())
    {
        return Ok(NewFile::Excluded(format!("its content holds a {what}")));
    }
    Ok(
        match retry_object_write(|| pipeline.worktree_file_to_object(rela, index))
            .map_err(from_gix)?
        {
            Some((id, kind, _)) => NewFile::Blob(id, kind),
            None => NewFile::Gone,
        },
    )
}

/// How much of a new untracked file is scanned for credentials.
const SCAN_LIMIT: usize = 1024 * 1024;

/// The secret the regular file `full` (at `rela` in the worktree) holds in its first
/// [`SCAN_LIMIT`] bytes, named by its rule and line, if any: the built-in secret rules, as
/// `push` and redaction use them (`agent_rewind_core::redact::content_holds_secret`). Only called for
/// new untracked files, which the snapshot reads right after anyway (so the second read
/// comes from the page cache). Unreadable files are left to the snapshot to report.
pub(super) fn secret_in_content(full: &std::path::Path, rela: &str) -> Option<String> {
    use std::io::Read;
    let md = std::fs::symlink_metadata(full).ok()?;
    if !md.is_file() {
        return None;
    }
    let mut buf = Vec::with_capacity((md.len() as usize).min(SCAN_LIMIT));
    std::fs::File::open(full)
        .ok()?
        .take(SCAN_LIMIT as u64)
        .read_to_end(&mut buf)
        .ok()?;
    agent_rewind_core::redact::content_holds_secret(&buf, SCAN_LIMIT, rela)
}
