//! Creating many refs at once (the runs a `fetch` of everything brings that are new here):
//! one rewrite of `packed-refs` under `packed-refs.lock`, git's own protocol for that file,
//! instead of a lock file, a loose file and a reflog per ref (minutes at 100,000 runs).
//! The mirror of `packdelete`; both are free functions over the ref files' paths.
//!
//! A group (one run's refs) is created whole or not at all, and only when none of its refs
//! exists: not loose, not being written (`<ref>.lock`), not packed. A group that cannot be
//! created this way is left to the caller (who uses [`crate::Refs::publish`]). A loose file that
//! appears for a created ref while the new file is written (a writer that read the old
//! `packed-refs`) wins: the group is then reported as [`PackedCreate::Raced`]. No reflogs are
//! written for these refs (git's fetch writes none under `refs/agent-runs/` either).
//!
//! Must never write `packed-refs` except by renaming its lock, never leave the lock behind,
//! and never create a ref that exists.

use crate::packedrefs::{PackedRefsEdit, ref_line};
use crate::reffiles::RefFiles;
use agent_rewind_core::error::Result;
use gix::ObjectId;
use std::collections::HashSet;

/// What happened to one group of [`crate::Refs::create_packed_groups`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackedCreate {
    Created,
    /// Some ref of the group exists (or is being written): create it another way.
    Exists,
    /// Written, but a loose ref of the group appeared meanwhile and shadows ours: the caller
    /// looks at the run again.
    Raced,
}

/// The header git writes (and we keep when the file has one).
const HEADER: &[u8] = b"# pack-refs with: peeled fully-peeled sorted \n";

/// [`Refs::create_packed_groups`].
pub(crate) fn create_packed_groups(
    files: &RefFiles,
    groups: &[Vec<(String, ObjectId)>],
) -> Result<Vec<PackedCreate>> {
    let mut edit = PackedRefsEdit::begin(files)?;
    let text = std::mem::take(&mut edit.text);
    let has_loose = |name: &str| edit.has_loose(name);
    let (header, records) = split_records(&text);
    let existing: HashSet<&[u8]> = records.iter().map(|r| r.0).collect();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut out: Vec<PackedCreate> = groups
        .iter()
        .map(|g| {
            let free = g
                .iter()
                .all(|(n, _)| !existing.contains(n.as_bytes()) && !has_loose(n) && seen.insert(n));
            if free {
                PackedCreate::Created
            } else {
                PackedCreate::Exists
            }
        })
        .collect();
    let mut new: Vec<(Vec<u8>, Vec<u8>)> = groups
        .iter()
        .zip(&out)
        .filter(|(_, r)| **r == PackedCreate::Created)
        .flat_map(|(g, _)| {
            g.iter()
                .map(|(n, id)| (n.as_bytes().to_vec(), format!("{id} {n}\n").into_bytes()))
        })
        .collect();
    if new.is_empty() {
        return Ok(out);
    }
    new.sort();
    let sorted = header.is_none_or(|h| {
        h.split(|b| *b == b' ')
            .any(|w| w == b"sorted" || w == b"sorted\n")
    });
    let mut body = Vec::with_capacity(text.len() + new.len() * 80);
    body.extend_from_slice(header.unwrap_or(HEADER));
    if sorted {
        // Merge the two sorted lists.
        let mut old = records.iter().peekable();
        let mut add = new.iter().peekable();
        loop {
            match (old.peek(), add.peek()) {
                (Some(o), Some(a)) if o.0 <= a.0.as_slice() => {
                    body.extend_from_slice(o.1);
                    old.next();
                }
                (_, Some(a)) => {
                    body.extend_from_slice(&a.1);
                    add.next();
                }
                (Some(o), None) => {
                    body.extend_from_slice(o.1);
                    old.next();
                }
                (None, None) => break,
            }
        }
    } else {
        for r in &records {
            body.extend_from_slice(r.1);
        }
        for a in &new {
            body.extend_from_slice(&a.1);
        }
    }
    let common = edit.commit(&body, || {
        agent_rewind_core::crash_point!("import:packed-written");
    })?;
    for (g, r) in groups.iter().zip(out.iter_mut()) {
        if *r == PackedCreate::Created
            && g.iter()
                .any(|(n, _)| common.join(n).symlink_metadata().is_ok())
        {
            *r = PackedCreate::Raced;
        }
    }
    Ok(out)
}

/// One ref of a `packed-refs` text: its name, and its bytes (its line plus a following `^`
/// peeled line).
type Record<'a> = (&'a [u8], &'a [u8]);

/// The header line of a `packed-refs` text (when it has one) and its records, in file order.
fn split_records(text: &[u8]) -> (Option<&[u8]>, Vec<Record<'_>>) {
    let mut header = None;
    let mut records: Vec<Record<'_>> = vec![];
    let mut pos = 0;
    let mut start: Option<(usize, &[u8])> = None;
    for line in text.split_inclusive(|b| *b == b'\n') {
        let at = pos;
        pos += line.len();
        if line.starts_with(b"#") {
            if at == 0 {
                header = Some(line);
            }
            continue;
        }
        if line.starts_with(b"^") {
            continue;
        }
        if let Some((s, name)) = start.take() {
            records.push((name, &text[s..at]));
        }
        if let Some((name, _)) = ref_line(line) {
            start = Some((at, name));
        }
    }
    if let Some((s, name)) = start {
        records.push((name, &text[s..]));
    }
    (header, records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_keep_their_peeled_lines() {
        let text = b"# pack-refs with: peeled fully-peeled sorted \n\
            0123456789abcdef0123456789abcdef01234567 refs/tags/v1\n\
            ^89abcdef0123456789abcdef0123456789abcdef\n\
            89abcdef0123456789abcdef0123456789abcdef refs/z\n";
        let (h, r) = split_records(text);
        assert!(h.is_some());
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].0, b"refs/tags/v1");
        assert!(r[0].1.ends_with(b"cdef\n") && r[0].1.contains(&b'^'));
        assert_eq!(r[1].0, b"refs/z");
    }
}
