//! Pathspecs as git reads them: relative to the directory the command was started in,
//! turned into paths relative to the worktree root; anything outside the worktree (or an
//! empty pathspec) is refused before anything is read or written.

use agent_rewind_core::error::{Error, Result};
use std::path::{Component, Path, PathBuf};

/// `specs` (relative to `cwd`, or absolute) as `/`-separated paths relative to `root` (`.`
/// for the root itself).
pub fn worktree_paths(root: &Path, cwd: &Path, specs: &[String]) -> Result<Vec<String>> {
    let root = canonical(root);
    let cwd = canonical(cwd);
    specs.iter().map(|s| one(&root, &cwd, s)).collect()
}

fn one(root: &Path, cwd: &Path, spec: &str) -> Result<String> {
    if spec.is_empty() {
        return Err(Error::usage("empty string is not a valid pathspec")
            .with_hint("name a file or folder, or `.` for everything here"));
    }
    let outside = || {
        Error::usage(format!(
            "{spec}: '{spec}' is outside the worktree at '{}'",
            root.display()
        ))
        .with_hint("name paths inside the worktree, relative to the current folder")
    };
    let abs = normalize(&cwd.join(spec)).ok_or_else(outside)?;
    let rel = abs.strip_prefix(root).map_err(|_| outside())?;
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.first().is_some_and(|p| p == ".git") {
        return Err(outside());
    }
    Ok(if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    })
}

/// `.` and `..` resolved without touching the filesystem, as git resolves a pathspec;
/// `None` when `..` climbs above `/`.
fn normalize(p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            c => out.push(c),
        }
    }
    Some(out)
}

/// The real path of a folder (symlinks resolved), or the path as given when it cannot be
/// resolved.
fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pathspecs_are_relative_to_the_current_folder_and_stay_inside() {
        let root = Path::new("/w");
        let ok = |cwd: &str, s: &str| one(root, Path::new(cwd), s).unwrap();
        let bad = |cwd: &str, s: &str| one(root, Path::new(cwd), s).unwrap_err().kind;
        assert_eq!(ok("/w/src", "file"), "src/file");
        assert_eq!(ok("/w/src", "."), "src");
        assert_eq!(ok("/w/src", ".."), ".");
        assert_eq!(ok("/w", "./a/../b/"), "b");
        assert_eq!(ok("/w/src", "/w/x/y"), "x/y");
        for (cwd, s) in [
            ("/w/src", "../../etc/passwd"),
            ("/w", "/etc"),
            ("/w", ".."),
            ("/w", ""),
            ("/w", ".git/config"),
            ("/other", "x"),
        ] {
            assert_eq!(
                bad(cwd, s),
                agent_rewind_core::error::ErrorKind::Usage,
                "{cwd} {s}"
            );
        }
    }
}
