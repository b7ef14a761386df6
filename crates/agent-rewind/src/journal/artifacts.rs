//! `--artifact` arguments: checked before anything is written (a URI carrying a credential
//! is refused and never echoed back; a path must exist in the worktree), then resolved
//! against the snapshot (a path gets its blob id; a `scheme://` URI keeps its digest).

use crate::model::Artifact;
use crate::store::{ObjectId, Store};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::redact;

/// Refuse bad `--artifact` arguments before anything is written.
pub(super) fn check(store: &Store, args: &[String]) -> Result<()> {
    for a in args {
        if a.contains("://") {
            if redact::looks_secret(a) {
                return Err(Error::usage(
                    "an artifact URI contains a credential; refusing to record it",
                )
                .with_hint(
                    "point to the artifact without user:password (use a credential helper)",
                ));
            }
        } else if let Ok(root) = store.worktree().root()
            && std::fs::symlink_metadata(root.join(a.trim_start_matches("./"))).is_err()
        {
            return Err(
                Error::usage(format!("artifact {a:?} does not exist in the worktree"))
                    .with_hint("artifact paths are relative to the current folder"),
            );
        }
    }
    Ok(())
}

/// `path` artifacts get the blob id they have in `tree`; `scheme://` ones are kept as URIs
/// (with `#sha256=…` style digests split off).
pub(super) fn resolve(store: &Store, tree: ObjectId, args: &[String]) -> Result<Vec<Artifact>> {
    let mut out = vec![];
    for a in args {
        if a.contains("://") {
            let (uri, digest) = match a.split_once('#') {
                Some((u, d)) => (u.to_string(), Some(d.to_string())),
                None => (a.clone(), None),
            };
            out.push(Artifact {
                path: None,
                oid: None,
                uri: Some(uri),
                digest,
            });
            continue;
        }
        let path = a.trim_start_matches("./").to_string();
        let oid = store.objects().path_in_tree(tree, &path)?.ok_or_else(|| {
            Error::usage(format!(
                "artifact {path:?} is not in the snapshot (ignored, excluded or a folder)"
            ))
            .with_hint("artifact paths are relative to the current folder")
        })?;
        out.push(Artifact {
            path: Some(path),
            oid: Some(oid.to_string()),
            uri: None,
            digest: None,
        });
    }
    Ok(out)
}
