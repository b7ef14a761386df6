//! The `diff` attribute of each path of an in-process `git diff <tree> <tree>` (`patch.rs`),
//! read as git reads it there: from the worktree's `.gitattributes` files, from the root down
//! to the path's folder (the global sources — `core.attributesFile`, `info/attributes`, the
//! system file, `[attr]` config — already send the diff to git).
//!
//! git reads neither the trees' nor the index's `.gitattributes` there (checked against git
//! 2.47: a file deleted in the worktree only no longer applies).
//!
//! It decides only what git would do with a path (`Auto`: its content decides; `Binary`);
//! where the renderer could not be certain — a builtin or configured diff driver, a forced
//! `diff` — it answers `None`.

use crate::repository::Store;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_scan::TreeChange;
use gix::bstr::ByteSlice;
use std::collections::HashSet;
use std::path::Path;

/// What `git diff` does with one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DiffAttr {
    /// No `diff` attribute (or a driver git does not know): binary when either side has a NUL
    /// in its first 8000 bytes, else a text patch with the default function-name context.
    Auto,
    /// `-diff` (or the `binary` macro): `Binary files … differ`.
    Binary,
}

/// git's builtin diff drivers (`userdiff.c`): each has its own function-name patterns, so
/// a path with one goes to git. The list is generous: an unknown name costs only speed.
const BUILTIN_DRIVERS: &[&str] = &[
    "ada", "bash", "bibtex", "cpp", "csharp", "css", "dts", "elixir", "fortran", "fountain",
    "golang", "html", "ini", "java", "kotlin", "markdown", "matlab", "objc", "pascal", "perl",
    "php", "python", "r", "ruby", "rust", "scheme", "tex", "default",
];

impl Store {
    /// The [`DiffAttr`] of each change, in order; `None` when git must render.
    pub(super) fn diff_attributes(
        &self,
        workdir: &Path,
        changes: &[TreeChange],
    ) -> Result<Option<Vec<DiffAttr>>> {
        if !attributes_files_near(workdir, changes) {
            return Ok(Some(vec![DiffAttr::Auto; changes.len()]));
        }
        // The worktree's files only, as git reads them here: an empty index, no fallback.
        let no_index = gix::index::State::new(self.repo.object_hash());
        let mut stack = self
            .repo
            .attributes_only(
                &no_index,
                gix::worktree::stack::state::attributes::Source::WorktreeThenIdMapping,
            )
            .map_err(|e| Error::git(format!("reading .gitattributes: {e}")))?;
        let mut outcome = stack.selected_attribute_matches(["diff"]);
        let mut out = Vec::with_capacity(changes.len());
        for c in changes {
            let entry = stack
                .at_entry(c.path.as_bstr(), None)
                .map_err(|e| Error::git(format!("reading .gitattributes: {e}")))?;
            outcome.reset();
            entry.matching_attributes(&mut outcome);
            let state = outcome.iter_selected().next().map(|m| m.assignment.state);
            out.push(match state {
                None | Some(gix::attrs::StateRef::Unspecified) => DiffAttr::Auto,
                Some(gix::attrs::StateRef::Unset) => DiffAttr::Binary,
                // A forced text diff of content git would call binary: git renders it.
                Some(gix::attrs::StateRef::Set) => return Ok(None),
                Some(gix::attrs::StateRef::Value(v)) => {
                    let name = v.as_bstr();
                    if BUILTIN_DRIVERS.iter().any(|d| name == d.as_bytes()) {
                        return Ok(None);
                    }
                    // A driver with no configuration (`[diff]` config goes to git): git
                    // uses its defaults.
                    DiffAttr::Auto
                }
            });
        }
        Ok(Some(out))
    }
}

/// Whether a `.gitattributes` file in the worktree could apply to a changed path: one in
/// any folder from the root down to the path's.
fn attributes_files_near(workdir: &Path, changes: &[TreeChange]) -> bool {
    let mut seen = HashSet::new();
    for c in changes {
        let path = c.path.as_slice();
        let folders = std::iter::once(0).chain(
            path.iter()
                .enumerate()
                .filter(|&(_, &b)| b == b'/')
                .map(|(i, _)| i),
        );
        for end in folders {
            let dir = &path[..end];
            if !seen.insert(dir) {
                continue;
            }
            // A folder name git would not print as it is never reaches here
            // (`changes_are_plain`); anything else counts as having a file.
            let Ok(dir) = std::str::from_utf8(dir) else {
                return true;
            };
            if workdir
                .join(dir)
                .join(".gitattributes")
                .symlink_metadata()
                .is_ok()
            {
                return true;
            }
        }
    }
    false
}
