//! Names a case-insensitive file system cannot tell apart. With `core.ignorecase` (git sets
//! it when `git init` or `git clone` finds such a file system, as on macOS and Windows), a
//! checkout that adds `README` where `readme` is, or adds both, would put two paths on one
//! file: one would silently overwrite the other. Such a change is refused before anything is
//! written, naming both paths.
//!
//! Reads only folder listings of the worktree; never writes. A deletion in the same change
//! does not collide: deletions are written first, so a rename by case alone goes through.

use super::Worktree;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::quote::{quote_path, rel_path};
use agent_rewind_scan::TreeChange;
use gix::bstr::{BStr, BString, ByteSlice};
use std::collections::{HashMap, HashSet};

/// A name as a case-insensitive file system compares it: Unicode lower case for UTF-8 names,
/// ASCII lower case for the bytes of others.
fn folded(name: &[u8]) -> Vec<u8> {
    match std::str::from_utf8(name) {
        Ok(text) => text.to_lowercase().into_bytes(),
        Err(_) => name.to_ascii_lowercase(),
    }
}

/// `(folder, name)` of a worktree path.
fn split(path: &[u8]) -> (&[u8], &[u8]) {
    match path.rfind_byte(b'/') {
        Some(i) => (&path[..i], &path[i + 1..]),
        None => (b"", path),
    }
}

fn collision(added: &BStr, there: &[u8]) -> Error {
    Error::refused(format!(
        "the target holds {} and {} is there too: core.ignorecase says this file system does \
         not tell names apart by case, so one would overwrite the other",
        quote_path(added),
        quote_path(there)
    ))
    .with_hint(
        "nothing was changed; rename one of them in a checkout on a file system that tells \
         case apart, or set core.ignorecase=false if this one does",
    )
}

impl Worktree<'_> {
    /// Refuse `changes` that add a path whose name differs only in case from another path
    /// they add, or from a name already in its folder that they do not delete. Checked only
    /// where `core.ignorecase` is true.
    pub fn check_case_collisions(&self, changes: &[TreeChange]) -> Result<()> {
        let added: Vec<&BString> = changes
            .iter()
            .filter(|c| c.old.is_none() && c.new.is_some())
            .map(|c| &c.path)
            .collect();
        if added.is_empty() || !self.ignores_case() {
            return Ok(());
        }
        let deleted: HashSet<&[u8]> = changes
            .iter()
            .filter(|c| c.new.is_none())
            .map(|c| c.path.as_slice())
            .collect();
        let mut seen: HashMap<Vec<u8>, &BString> = HashMap::new();
        for path in &added {
            if let Some(other) = seen.insert(folded(path), path) {
                return Err(collision(path.as_bstr(), other));
            }
        }
        let root = match self.root() {
            Ok(root) => root,
            Err(_) => return Ok(()), // a bare repository has no files to collide with
        };
        let mut listings: HashMap<&[u8], Vec<Vec<u8>>> = HashMap::new();
        for path in added {
            let (folder, name) = split(path);
            let names = listings.entry(folder).or_insert_with(|| {
                let Ok(dir) = std::fs::read_dir(root.join(rel_path(folder))) else {
                    return vec![]; // no such folder: nothing there to collide with
                };
                dir.filter_map(|e| e.ok())
                    .map(|e| gix::path::os_str_into_bstr(&e.file_name()).map(|n| n.to_vec()))
                    .filter_map(|n| n.ok())
                    .collect()
            });
            let want = folded(name);
            for there in names.iter() {
                if there.as_slice() == name || folded(there) != want {
                    continue;
                }
                let there_path = match folder.is_empty() {
                    true => there.clone(),
                    false => [folder, b"/", there].concat(),
                };
                if !deleted.contains(there_path.as_slice()) {
                    return Err(collision(path.as_bstr(), &there_path));
                }
            }
        }
        Ok(())
    }

    /// Whether `core.ignorecase` is true (git's default is false).
    fn ignores_case(&self) -> bool {
        self.store
            .repo
            .config_snapshot()
            .boolean("core.ignorecase")
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fold_by_unicode_case_and_bytes_by_ascii() {
        assert_eq!(folded(b"README.md"), b"readme.md");
        assert_eq!(folded("Ärger".as_bytes()), "ärger".as_bytes());
        assert_eq!(folded(b"A\xff"), b"a\xff");
        assert_eq!(split(b"a/b/C"), (&b"a/b"[..], &b"C"[..]));
        assert_eq!(split(b"C"), (&b""[..], &b"C"[..]));
    }
}
