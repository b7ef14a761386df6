//! What a worktree holds, as the tests compare it: every file's bytes, mode and symlink
//! target, read with the standard library only (never through the tool or git).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Every file of the worktree (not `.git`) with its bytes, mode and symlink target.
pub fn worktree_state(dir: &Path) -> Vec<(String, String)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            if rel == ".git" {
                continue;
            }
            let md = std::fs::symlink_metadata(&p).unwrap();
            if md.file_type().is_symlink() {
                out.push((
                    rel,
                    format!("-> {}", std::fs::read_link(&p).unwrap().display()),
                ));
            } else if md.is_dir() {
                walk(root, &p, out);
            } else {
                let mode = md.permissions().mode() & 0o111 != 0;
                let bytes = std::fs::read(&p).unwrap();
                out.push((rel, format!("x={mode} {}", String::from_utf8_lossy(&bytes))));
            }
        }
    }
    let mut out = vec![];
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// The `action` a `revert` or `pick` plan (`--json`) gives `path`, if the plan names it.
pub fn file_action(plan: &serde_json::Value, path: &str) -> Option<String> {
    plan["files"]
        .as_array()?
        .iter()
        .find(|f| f["path"] == path)
        .map(|f| {
            f["action"]
                .as_str()
                .expect("every planned file has an action")
                .to_string()
        })
}
