//! Commits: writing checkpoint commits with the user's identity (or a fixed fallback, never
//! touching config), reading them back with their `Agent-*` trailers, trees and blobs.

use crate::blame::RunningBlame;
use crate::merge::MergedBlob;
use crate::repository::Store;
use crate::sign::SignatureCheck;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::RunId;
use agent_rewind_scan::gixerror::from_gix;
use agent_rewind_scan::{TreeChange, retry_object_write};
use gix::ObjectId;
use gix::bstr::{BString, ByteSlice};
use std::ffi::OsStr;
use std::path::Path;

/// The store's objects: blobs, trees and commits, read and written.
#[derive(Clone, Copy)]
pub struct Objects<'s> {
    pub(crate) store: &'s Store,
}

/// The `Agent-*` trailers of a checkpoint commit message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trailers {
    pub run: Option<String>,
    pub step: Option<String>,
    pub attempt: Option<u32>,
    pub event: Option<String>,
    pub schema: Option<u32>,
}

impl Trailers {
    /// Render as trailer lines (ends with a newline).
    pub fn render(&self) -> String {
        let mut s = String::new();
        if let Some(r) = &self.run {
            s.push_str(&format!("Agent-Run: {r}\n"));
        }
        if let Some(st) = &self.step {
            s.push_str(&format!("Agent-Step: {st}\n"));
        }
        if let Some(a) = self.attempt {
            s.push_str(&format!("Agent-Attempt: {a}\n"));
        }
        if let Some(e) = &self.event {
            s.push_str(&format!("Agent-Event: {e}\n"));
        }
        if let Some(v) = self.schema {
            s.push_str(&format!("Agent-Schema: {v}\n"));
        }
        s
    }

    /// Parse `Agent-*` trailers from the trailer block of a message, as git finds it
    /// (gix's parser follows `git interpret-trailers`).
    pub fn parse(message: &str) -> Trailers {
        let mut t = Trailers::default();
        let parsed = gix::objs::commit::MessageRef::from_bytes(message.as_bytes());
        let Some(body) = parsed.body() else {
            return t;
        };
        for trailer in body.trailers() {
            // Tokens compared as bytes: only our five trailers' values become strings.
            let value = || trailer.value.to_string();
            let token: &[u8] = trailer.token.as_ref();
            match token {
                b"Agent-Run" => t.run = Some(value()),
                b"Agent-Step" => t.step = Some(value()),
                b"Agent-Attempt" => t.attempt = value().parse().ok(),
                b"Agent-Event" => t.event = Some(value()),
                b"Agent-Schema" => t.schema = value().parse().ok(),
                _ => {}
            }
        }
        t
    }
}

/// A decoded commit.
#[derive(Debug, Clone)]
pub struct CommitInfo {
    pub id: ObjectId,
    pub tree: ObjectId,
    pub parents: Vec<ObjectId>,
    pub message: String,
    pub trailers: Trailers,
    /// Committer time, seconds since the epoch.
    pub time: i64,
}

impl Store {
    fn find_commit(&self, id: ObjectId) -> Result<gix::Commit<'_>> {
        self.repo.find_commit(id).map_err(|e| {
            Error::not_found(format!(
                "{id} is not a commit in this repository ({})",
                agent_rewind_core::error::one_line(&e.to_string())
            ))
        })
    }
}

impl Objects<'_> {
    /// Write the objects staged by a [`Store::handle_for_staged_writes`] handle as one pack.
    /// Must return before any ref may point at them. Returns how many were written.
    pub fn persist_staged(&self) -> Result<usize> {
        let Some(mut staged) = self.store.repo.objects.reset_object_memory() else {
            return Ok(0);
        };
        let objects: Vec<crate::packwrite::PackEntry> = std::mem::take(&mut *staged)
            .into_iter()
            .map(|(id, (kind, data))| (id, kind, data))
            .collect();
        let n = objects.len();
        self.write_as_pack(objects)?;
        Ok(n)
    }

    /// Write `objects` into this repository as one pack, compressed as git packs
    /// ([`crate::Config::pack_compression`]). Must return before any ref may point at them.
    pub(crate) fn write_as_pack(&self, objects: Vec<crate::packwrite::PackEntry>) -> Result<()> {
        crate::packwrite::write_pack(
            self.store.repo.objects.store_ref().path(),
            self.store.repo.object_hash(),
            self.store.config().pack_compression(),
            objects,
        )
    }

    /// `base` with `edits` applied (`None` removes the path): the new tree's id.
    pub fn edit_tree(
        &self,
        base: ObjectId,
        edits: &[(
            gix::bstr::BString,
            Option<(ObjectId, gix::objs::tree::EntryKind)>,
        )],
    ) -> Result<ObjectId> {
        agent_rewind_scan::edit_tree(&self.store.repo, base, edits)
    }

    /// Add `trailers` (`Key: value` lines) to the commit message in `file`, as `git
    /// interpret-trailers --in-place` places them (after the message, before git's comment
    /// lines), each only when the message does not already end with it.
    pub fn add_trailers(&self, file: &Path, trailers: &[String]) -> Result<()> {
        let dir = self.store.git_run_dir();
        let mut args = vec![
            "interpret-trailers",
            "--in-place",
            "--if-exists",
            "addIfDifferent",
        ];
        for t in trailers {
            args.push("--trailer");
            args.push(t);
        }
        let out = self
            .store
            .git_command(dir, &args)
            .arg("--")
            .arg(crate::gitprocess::absolute(file))
            .output()
            .map_err(crate::gitprocess::could_not_run)?;
        crate::gitprocess::stdout_of(&args, out).map(|_| ())
    }

    /// Write a commit without moving any ref; signed when `agentRewind.sign` says so
    /// ([`crate::Config::signer`]).
    pub fn write_commit(
        &self,
        tree: ObjectId,
        parents: &[ObjectId],
        message: &str,
    ) -> Result<ObjectId> {
        self.write_commit_at(tree, parents, message, None)
    }

    /// [`Objects::write_commit`] dated `time` (seconds since the epoch, UTC) instead of now:
    /// for commits written again with new parents, which keep the time they record.
    pub fn write_commit_at(
        &self,
        tree: ObjectId,
        parents: &[ObjectId],
        message: &str,
        time: Option<i64>,
    ) -> Result<ObjectId> {
        if tree == self.empty_tree() {
            // git reads the empty tree without its object, but `git fsck` wants the object
            // of every tree a commit names (a backup of an unborn branch's empty index).
            retry_object_write(|| self.store.repo.write_object(gix::objs::Tree::empty()))
                .map_err(from_gix)?;
        }
        let mut sig = self.store.config().signature();
        if let Some(t) = time {
            sig.time = gix::date::Time::new(t, 0);
        }
        let mut commit = gix::objs::Commit {
            message: message.into(),
            tree,
            author: sig.clone(),
            committer: sig,
            encoding: None,
            parents: parents.iter().copied().collect(),
            extra_headers: Default::default(),
        };
        // Signed as git signs (`commit -S`): the commit without the header is the payload,
        // the signature goes into a header after the others.
        if let Some(signer) = self.store.config().signer()? {
            let mut payload = Vec::new();
            gix::objs::WriteTo::write_to(&commit, &mut payload)
                .map_err(|e| Error::other(format!("cannot encode a commit: {e}")))?;
            let signature = signer.sign(&payload)?;
            commit.extra_headers.push((
                crate::sign::signature_header(self.store.repo.object_hash()).into(),
                signature.into(),
            ));
        }
        Ok(retry_object_write(|| self.store.repo.write_object(&commit))
            .map_err(from_gix)?
            .detach())
    }

    /// The id `data` would have as a blob, without writing it.
    pub fn blob_id(&self, data: &[u8]) -> Result<ObjectId> {
        gix::objs::compute_hash(self.store.repo.object_hash(), gix::objs::Kind::Blob, data)
            .map_err(from_gix)
    }

    pub fn write_blob(&self, data: &[u8]) -> Result<ObjectId> {
        Ok(retry_object_write(|| self.store.repo.write_blob(data))
            .map_err(from_gix)?
            .detach())
    }

    pub fn read_commit(&self, id: ObjectId) -> Result<CommitInfo> {
        let commit = self.store.find_commit(id)?;
        let decoded = commit.decode().map_err(from_gix)?;
        let message = decoded.message.to_str_lossy().into_owned();
        Ok(CommitInfo {
            id,
            tree: decoded.tree(),
            parents: decoded.parents().collect(),
            trailers: Trailers::parse(&message),
            time: decoded
                .committer()
                .map_err(from_gix)?
                .time()
                .map_err(from_gix)?
                .seconds,
            message,
        })
    }

    /// Whether `id` is a commit of the object database, from the object's header (a packed
    /// object is not inflated). False when it is missing or unreadable.
    pub fn is_commit(&self, id: ObjectId) -> bool {
        self.store
            .repo
            .find_header(id)
            .is_ok_and(|h| h.kind() == gix::objs::Kind::Commit)
    }

    /// Whether the object exists in the object database.
    pub fn has_object(&self, id: ObjectId) -> bool {
        self.store.repo.has_object(id)
    }

    pub fn read_blob(&self, id: ObjectId) -> Result<Vec<u8>> {
        Ok(self
            .store
            .repo
            .find_blob(id)
            .map_err(from_gix)?
            .data
            .clone())
    }

    /// The tree of a commit (its message and trailers are not parsed).
    pub fn commit_tree(&self, id: ObjectId) -> Result<ObjectId> {
        Ok(self
            .store
            .find_commit(id)?
            .tree_id()
            .map_err(from_gix)?
            .detach())
    }

    /// The id of the file (not folder) at `path` in `tree`, if any.
    pub fn path_in_tree(&self, tree: ObjectId, path: impl AsRef<[u8]>) -> Result<Option<ObjectId>> {
        Ok(self
            .entry_in_tree(tree, path.as_ref())?
            .filter(|(_, kind)| *kind != gix::objs::tree::EntryKind::Tree)
            .map(|(id, _)| id))
    }

    /// The entry (file, folder, link or submodule) at `path` (bytes, `/`-separated) in `tree`.
    pub fn entry_in_tree(
        &self,
        tree: ObjectId,
        path: &[u8],
    ) -> Result<Option<(ObjectId, gix::objs::tree::EntryKind)>> {
        let tree = self.store.repo.find_tree(tree).map_err(from_gix)?;
        Ok(tree
            .lookup_entry(path.split_str("/"))
            .map_err(from_gix)?
            .map(|e| (e.object_id(), e.mode().kind())))
    }

    /// All blob paths of a tree with their ids and modes, sorted by path.
    pub fn tree_entries(
        &self,
        tree: ObjectId,
    ) -> Result<Vec<(BString, ObjectId, gix::objs::tree::EntryMode)>> {
        let tree = self.store.repo.find_tree(tree).map_err(from_gix)?;
        let mut rec = gix::traverse::tree::Recorder::default();
        tree.traverse().breadthfirst(&mut rec).map_err(from_gix)?;
        let mut out: Vec<_> = rec
            .records
            .into_iter()
            .filter(|e| !e.mode.is_tree())
            .map(|e| (e.filepath, e.oid, e.mode))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// The best common ancestor of two commits, if they have one.
    pub fn merge_base(&self, a: ObjectId, b: ObjectId) -> Result<Option<ObjectId>> {
        match self.store.repo.merge_base(a, b) {
            Ok(base) => Ok(base.map(|b| b.detach())),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(from_gix(e)),
        }
    }

    /// Whether `ancestor` is reachable from `descendant` (or equal).
    pub fn is_ancestor(&self, ancestor: ObjectId, descendant: ObjectId) -> Result<bool> {
        if ancestor == descendant {
            return Ok(true);
        }
        match self.store.repo.merge_base(ancestor, descendant) {
            Ok(base) => Ok(base.map(|b| b.detach()) == Some(ancestor)),
            Err(_) => Ok(false),
        }
    }
}

/// The repository's objects with every write retried as by [`retry_object_write`], for gix
/// plumbing that writes many objects and drops all its edits when one write fails (the
/// notes tree): retrying around it would write the tree without the edits.
pub(crate) struct RetryingWrites<'r>(pub &'r gix::Repository);

impl gix::objs::Find for RetryingWrites<'_> {
    fn try_find<'a>(
        &self,
        id: &gix::hash::oid,
        buffer: &'a mut Vec<u8>,
    ) -> gix::Result<Option<gix::objs::Data<'a>>> {
        gix::objs::Find::try_find(self.0, id, buffer)
    }
}

impl gix::objs::Write for RetryingWrites<'_> {
    fn write_buf_with_known_id(
        &self,
        kind: gix::objs::Kind,
        from: &[u8],
        id: ObjectId,
    ) -> gix::Result<ObjectId> {
        retry_object_write(|| gix::objs::Write::write_buf_with_known_id(self.0, kind, from, id))
    }

    fn write_stream(
        &self,
        kind: gix::objs::Kind,
        size: u64,
        from: &mut dyn std::io::Read,
    ) -> gix::Result<ObjectId> {
        let buf = read_stream(size, from)?;
        retry_object_write(|| gix::objs::Write::write_buf(self.0, kind, &buf))
    }

    fn write_stream_with_known_id(
        &self,
        kind: gix::objs::Kind,
        size: u64,
        from: &mut dyn std::io::Read,
        id: ObjectId,
    ) -> gix::Result<ObjectId> {
        let buf = read_stream(size, from)?;
        retry_object_write(|| gix::objs::Write::write_buf_with_known_id(self.0, kind, &buf, id))
    }
}

/// A stream's bytes, so a write of them can be repeated.
fn read_stream(size: u64, from: &mut dyn std::io::Read) -> gix::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(size as usize);
    std::io::Read::read_to_end(from, &mut buf).map_err(gix::Error::from_error)?;
    Ok(buf)
}

impl Objects<'_> {
    /// The paths that differ between two trees, sorted; identical subtrees are skipped
    /// without being read.
    ///
    /// gix's plumbing tree diff, not `Repository::diff_tree_to_tree`: that one first builds a
    /// blob-diff resource cache, whose attribute stack reads the whole index (30 ms of a
    /// `show` on 30k files) for a result that never looks at a blob.
    pub fn diff_trees(&self, from: ObjectId, to: ObjectId) -> Result<Vec<TreeChange>> {
        Ok(self
            .diff_trees_at_most(from, to, usize::MAX)?
            .unwrap_or_default())
    }

    /// [`Store::diff_trees`], or `None` as soon as more than `limit` entries that are not
    /// trees differ (the rest is not read).
    pub fn diff_trees_at_most(
        &self,
        from: ObjectId,
        to: ObjectId,
        limit: usize,
    ) -> Result<Option<Vec<TreeChange>>> {
        agent_rewind_scan::diff_trees_at_most(&self.store.repo, from, to, limit)
    }

    pub fn object_hash(&self) -> gix::hash::Kind {
        self.store.repo.object_hash()
    }

    pub fn empty_tree(&self) -> ObjectId {
        ObjectId::empty_tree(self.store.repo.object_hash())
    }

    /// Expand an abbreviated commit id (at least 4 hex digits) to a full one. Objects of
    /// other kinds sharing the prefix do not count (as git's `<prefix>^{commit}`); two
    /// commits do: an error listing them. The prefix is of the repository's object format
    /// (up to 40 hex digits, 64 in a SHA-256 repository; 40 there is still a prefix).
    pub fn resolve_commit_prefix(&self, hex: &str) -> Result<Option<ObjectId>> {
        let kind = self.store.repo.object_hash();
        let Some(zeros) = kind.len_in_hex().checked_sub(hex.len()) else {
            return Ok(None);
        };
        let padded = format!("{hex}{}", "0".repeat(zeros));
        let Ok(id) = ObjectId::from_hex(padded.as_bytes()) else {
            return Ok(None);
        };
        let Ok(prefix) = gix::hash::Prefix::new(&id, hex.len()) else {
            return Ok(None);
        };
        let mut candidates = std::collections::HashSet::new();
        self.store
            .repo
            .objects
            .lookup_prefix(prefix, Some(&mut candidates))
            .map_err(|e| Error::git(format!("could not look up {hex}: {e}")))?;
        let mut commits: Vec<ObjectId> = candidates
            .into_iter()
            .filter(|id| {
                self.store
                    .repo
                    .find_header(*id)
                    .is_ok_and(|h| h.kind() == gix::object::Kind::Commit)
            })
            .collect();
        commits.sort();
        match commits.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(*one)),
            many => Err(Error::usage(format!(
                "commit id prefix {hex} is ambiguous: {}",
                many.iter()
                    .map(|c| c.to_hex_with_len(hex.len() + 4).to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .with_hint("give more hex digits")),
        }
    }

    /// The size in bytes of an object, without reading its content.
    pub fn object_size(&self, id: ObjectId) -> Result<u64> {
        Ok(self.store.repo().find_header(id).map_err(from_gix)?.size())
    }

    /// Merge `theirs` into `ours` with `base` as the common ancestor, line by line, as
    /// `git merge-file` does; `labels` name ours, base and theirs in conflict markers.
    pub fn merge_blobs(
        &self,
        ours: ObjectId,
        base: ObjectId,
        theirs: ObjectId,
        labels: [&str; 3],
    ) -> Result<MergedBlob> {
        crate::merge::merge_blobs(self.store, ours, base, theirs, labels)
    }

    /// `git blame -w -M -C --porcelain [-L <range>]… [<rev>] -- <path>`, run in `cwd` (so a
    /// relative path and `-L /regex/` are read as git reads them there): the worktree's file
    /// when `rev` is `None`. Its stdout as git wrote it.
    pub fn blame_porcelain(
        &self,
        cwd: &Path,
        rev: Option<&str>,
        path: &OsStr,
        ranges: &[String],
    ) -> Result<Vec<u8>> {
        crate::blame::blame_porcelain(self.store, cwd, rev, path, ranges)
    }

    /// [`Self::blame_porcelain`] started: the caller works while git blames, then
    /// [`RunningBlame::finish`] waits for it.
    pub fn blame_porcelain_start(
        &self,
        cwd: &Path,
        rev: Option<&str>,
        path: &OsStr,
        ranges: &[String],
    ) -> Result<RunningBlame> {
        crate::blame::blame_porcelain_start(self.store, cwd, rev, path, ranges)
    }

    /// The [`crate::linemap::key`] of every line of the blob `id`, read in place (no copy of
    /// its bytes); `None` when it is bigger than `max` bytes.
    pub fn blob_line_keys(&self, id: ObjectId, max: usize) -> Result<Option<Vec<u64>>> {
        crate::blame::blob_line_keys(self.store, id, max)
    }

    /// The commit `spec` names (`HEAD`, a branch, a tag, an id), as git resolves it.
    pub fn resolve_commit(&self, spec: &str) -> Result<ObjectId> {
        crate::blame::resolve_commit(self.store, spec)
    }

    /// The commits of `range` as `git rev-list --no-merges <range>` lists them (a single
    /// revision `X` means `X^!`: that commit alone), newest first, each with its author
    /// (`Name <email>`).
    pub fn rev_list(&self, range: &str) -> Result<Vec<(ObjectId, String)>> {
        crate::blame::rev_list(self.store, range)
    }

    /// git's check of the signature of each of `commits`, in that order, with one `git log`
    /// process: `gpg.ssh.allowedSignersFile`, the gpg keyring and `gpg.*.program` of the
    /// user's config decide, as for `git verify-commit`.
    pub fn check_signatures(&self, commits: &[ObjectId]) -> Result<Vec<SignatureCheck>> {
        crate::sign::check_signatures(self.store, commits)
    }

    /// Whether the commit `id` carries a signature (read from its headers, no process).
    pub fn is_signed(&self, id: ObjectId) -> Result<bool> {
        crate::sign::is_signed(self.store, id)
    }

    /// The commits of `tip`'s history that are not in `hidden`'s (`git rev-list tip
    /// ^hidden`), newest first: the notes commits a fetched notes ref adds.
    pub fn commits_between(
        &self,
        tip: ObjectId,
        hidden: Option<ObjectId>,
    ) -> Result<Vec<ObjectId>> {
        crate::sign::commits_between(self.store, tip, hidden)
    }

    /// The bytes on disk of the objects the refs of `runs` (their checkpoints and notes)
    /// reach and no branch, tag or remote-tracking branch does, as `git rev-list --objects
    /// --disk-usage` counts them (each object once, however many runs share it).
    pub fn runs_disk_usage(&self, runs: &[RunId]) -> Result<u64> {
        crate::usage::runs_disk_usage(self.store, runs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailers_round_trip() {
        let t = Trailers {
            run: Some("r1".into()),
            step: Some("plan".into()),
            attempt: Some(2),
            event: Some("finish".into()),
            schema: Some(1),
        };
        let msg = format!("subject\n\nbody text\n\n{}", t.render());
        assert_eq!(Trailers::parse(&msg), t);
        assert_eq!(Trailers::parse("no trailers"), Trailers::default());
    }
}
