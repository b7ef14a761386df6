//! Where a new linked worktree goes: the path `--worktree` names, absolute and without `.`
//! or `..`, as git records a worktree's path. It only reads the filesystem, never changes it.

use agent_rewind_core::error::{IoResultExt, Result};
use std::path::{Component, Path, PathBuf};

/// `p` made absolute (relative to the current folder), its longest existing part resolved as
/// git resolves a worktree path (links followed, `..` taken back), and the folders still to
/// be made appended with `.` and `..` resolved lexically (none of them can be a link yet):
/// `scratch/../try-b` is `<cwd>/try-b`.
pub fn resolved(p: &Path) -> Result<PathBuf> {
    let absolute = std::path::absolute(p).at(p)?;
    let mut existing = absolute.as_path();
    let mut rest: Vec<Component> = vec![];
    let base = loop {
        if let Ok(real) = existing.canonicalize() {
            break real;
        }
        match (existing.parent(), existing.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last);
                existing = parent;
            }
            // Not even the root resolves: keep the path as it was made absolute.
            _ => return Ok(absolute),
        }
    };
    let mut out = base;
    for c in rest.into_iter().rev() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    Ok(out)
}
