//! `git diff <tree> <tree>` rendered in-process, for the common case only: this module
//! decides when its text is certain to equal git's (no diff or attribute config, no global
//! attributes files, worktree `.gitattributes` whose `diff` attribute it can follow
//! (`diffattr`), regular files, binary ones as `Binary files … differ` in a patch, no pair git
//! could call a rename, paths git prints unquoted) and says `None` for anything else, so the
//! caller runs git.
//!
//! It must never print something git would not: when in doubt, it answers `None`.

use crate::diffattr::DiffAttr;
use crate::repository::Store;
use agent_rewind_core::error::Result;
use agent_rewind_scan::gixerror::from_gix;
use agent_rewind_scan::{ChangeKind, TreeChange};
use gix::ObjectId;
use gix::objs::tree::EntryKind;
use std::path::Path;

/// Larger blobs go to git (its heuristics are reproduced, but a big file's diff is where a
/// divergence would hide longest, and git's own time dominates there anyway).
const MAX_BLOB: usize = 1 << 20;
/// All blobs of one diff together.
const MAX_TOTAL: usize = 16 << 20;

/// Environment variables that change what `git diff` prints or which config it reads.
const ENV_FALLBACK: &[&str] = &[
    "GIT_DIFF_OPTS",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG",
    "GIT_ATTR_SOURCE",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_REPLACE_REF_BASE",
];

/// Where git may find a system-wide attributes file (`$(prefix)/etc/gitattributes`).
const SYSTEM_ATTRIBUTES: &[&str] = &[
    "/etc/gitattributes",
    "/usr/local/etc/gitattributes",
    "/usr/etc/gitattributes",
    "/opt/homebrew/etc/gitattributes",
];

impl Store {
    /// [`crate::Diff::text_inprocess`].
    pub(crate) fn diff_text_inprocess(
        &self,
        from: &str,
        to: &str,
        stat: bool,
    ) -> Result<Option<Vec<u8>>> {
        let (Ok(from), Ok(to)) = (
            ObjectId::from_hex(from.as_bytes()),
            ObjectId::from_hex(to.as_bytes()),
        ) else {
            return Ok(None);
        };
        let Some(workdir) = self.repo.workdir() else {
            return Ok(None);
        };
        let Some(hex_len) = self.fast_diff_setup(stat)? else {
            return Ok(None);
        };
        let changes = self.objects().diff_trees(from, to)?;
        if !changes_are_plain(&changes) {
            return Ok(None);
        }
        let Some(attributes) = self.diff_attributes(workdir, &changes)? else {
            return Ok(None);
        };
        // `--stat`'s width: git's `term_columns()` with its output a pipe.
        let columns = match std::env::var("COLUMNS") {
            Err(std::env::VarError::NotPresent) => 80,
            Ok(c) if !c.is_empty() && c.len() < 6 && c.bytes().all(|b| b.is_ascii_digit()) => {
                match c.parse::<i64>() {
                    Ok(n) if n > 0 => n,
                    _ => return Ok(None),
                }
            }
            _ => return Ok(None),
        };
        // The handle for abbreviated ids, made at the first patch: `--stat` prints no ids,
        // so it makes none (each has a decompressor of ~47 KB).
        let mut odb = None;
        let mut out = Vec::new();
        let mut stats = Vec::new();
        let mut total = 0;
        for (c, attribute) in changes.iter().zip(attributes) {
            let old = match c.old {
                Some((id, _)) => self.repo.find_blob(id).map_err(from_gix)?.data.clone(),
                None => vec![],
            };
            let new = match c.new {
                Some((id, _)) => self.repo.find_blob(id).map_err(from_gix)?.data.clone(),
                None => vec![],
            };
            total += old.len() + new.len();
            if old.len() > MAX_BLOB || new.len() > MAX_BLOB || total > MAX_TOTAL {
                return Ok(None);
            }
            // git's `buffer_is_binary`: a NUL in the first 8000 bytes.
            let looks_binary = |b: &[u8]| b[..b.len().min(8000)].contains(&0);
            let binary = attribute == DiffAttr::Binary || looks_binary(&old) || looks_binary(&new);
            if (!binary && (old.contains(&0) || new.contains(&0))) || (binary && stat) {
                return Ok(None);
            }
            if stat {
                let (added, deleted) = crate::unified::counts(&old, &new);
                stats.push(crate::diffstat::StatLine {
                    path: c.path.as_slice(),
                    added,
                    deleted,
                });
                continue;
            }
            // Every pack index is loaded by now (the object count read them all): a prefix
            // lookup need not look for new packs on disk each time, as git does not.
            let odb = &*odb.get_or_insert_with(|| {
                let mut odb = self.repo.objects.clone();
                odb.refresh_never();
                odb
            });
            let abbrev = |side: Option<(ObjectId, EntryKind)>| match side {
                Some((id, _)) => abbrev(odb, id, hex_len),
                None => abbrev(odb, ObjectId::null(id_kind(c)), hex_len),
            };
            let (Some(a), Some(b)) = (abbrev(c.old)?, abbrev(c.new)?) else {
                return Ok(None);
            };
            let path = c.path.as_slice();
            let line = |out: &mut Vec<u8>, parts: &[&[u8]]| {
                parts.iter().for_each(|p| out.extend_from_slice(p));
                out.push(b'\n');
            };
            line(&mut out, &[b"diff --git a/", path, b" b/", path]);
            match (c.old, c.new) {
                (None, Some((_, kind))) => line(&mut out, &[b"new file mode ", mode(kind)]),
                (Some((_, kind)), None) => line(&mut out, &[b"deleted file mode ", mode(kind)]),
                _ => {}
            }
            match (c.old, c.new) {
                (Some((_, kind)), Some(_)) => {
                    line(&mut out, &[b"index ", &a, b"..", &b, b" ", mode(kind)]);
                }
                _ => line(&mut out, &[b"index ", &a, b"..", &b]),
            }
            if binary {
                let side = |present: bool, prefix: &[u8]| -> Vec<u8> {
                    match present {
                        true => [prefix, path].concat(),
                        false => b"/dev/null".to_vec(),
                    }
                };
                let (a, b) = (side(c.old.is_some(), b"a/"), side(c.new.is_some(), b"b/"));
                line(&mut out, &[b"Binary files ", &a, b" and ", &b, b" differ"]);
                continue;
            }
            let mut hunks = Vec::new();
            crate::unified::hunks(&mut hunks, &old, &new);
            if !hunks.is_empty() {
                match c.old {
                    Some(_) => line(&mut out, &[b"--- a/", path]),
                    None => line(&mut out, &[b"--- /dev/null"]),
                }
                match c.new {
                    Some(_) => line(&mut out, &[b"+++ b/", path]),
                    None => line(&mut out, &[b"+++ /dev/null"]),
                }
                out.extend_from_slice(&hunks);
            }
        }
        if stat {
            out = crate::diffstat::stat_text(&stats, columns);
        }
        Ok(Some(out))
    }

    /// The `index` line's abbreviation length (`core.abbrev`, or git's automatic one from
    /// the packed object count; 0 for `--stat`) when nothing in the environment, config or repository
    /// layout could make git print other than what we render; `None` otherwise.
    fn fast_diff_setup(&self, stat: bool) -> Result<Option<usize>> {
        if ENV_FALLBACK.iter().any(|k| std::env::var_os(k).is_some()) {
            return Ok(None);
        }
        let config = self.repo.config_snapshot();
        let file = config.plumbing();
        if ["diff", "attr"].iter().any(|s| {
            file.sections_by_name(s)
                .is_some_and(|mut i| i.next().is_some())
        }) {
            return Ok(None);
        }
        if ["core.attributesFile", "core.bigFileThreshold"]
            .iter()
            .any(|k| config.string(k).is_some())
        {
            return Ok(None);
        }
        // The default per-user attributes file, read whatever the config says.
        let xdg = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(|x| Path::new(&x).join("git/attributes"));
        let home = std::env::var_os("HOME").map(|h| Path::new(&h).join(".config/git/attributes"));
        let common = self.repo.common_dir();
        let files = [
            xdg,
            home,
            Some(common.join("info/attributes")),
            Some(common.join("objects/info/alternates")),
            Some(common.join("objects/pack/multi-pack-index")),
        ];
        if files.iter().flatten().any(|p| p.symlink_metadata().is_ok())
            || SYSTEM_ATTRIBUTES
                .iter()
                .any(|p| Path::new(p).symlink_metadata().is_ok())
        {
            return Ok(None);
        }
        let replaced = if self.reftable() {
            self.refs()
                .refs_under("refs/replace/")
                .map_or(true, |r| !r.is_empty())
        } else {
            self.repo
                .references()
                .ok()
                .and_then(|r| {
                    r.prefixed("refs/replace/")
                        .ok()
                        .map(|mut i| i.next().is_some())
                })
                .unwrap_or(true)
        };
        if replaced {
            return Ok(None);
        }
        if stat {
            return Ok(Some(0)); // `--stat` prints no ids
        }
        // Loads every pack index, which the prefix lookups (that never refresh) rely on.
        let Ok(count) = self.repo.objects.packed_object_count() else {
            return Ok(None);
        };
        let hex_len = match config.string("core.abbrev") {
            // git: `msb(count) + 1` bits, half of them rounded up, at least 7.
            None => ((64 - count.leading_zeros()).div_ceil(2) as usize).max(7),
            Some(v) => match v.to_string().trim().parse::<usize>() {
                Ok(n) if (4..=self.repo.object_hash().len_in_hex()).contains(&n) => n,
                _ => return Ok(None),
            },
        };
        Ok(Some(hex_len))
    }
}

/// Regular files only (same mode on both sides), no pair git could call a rename or copy
/// (additions and deletions together), no `.gitattributes` among them, and paths git prints
/// as they are (printable ASCII without space, `"` or `\`).
fn changes_are_plain(changes: &[TreeChange]) -> bool {
    let regular = |k: EntryKind| matches!(k, EntryKind::Blob | EntryKind::BlobExecutable);
    let added = changes.iter().any(|c| c.change == ChangeKind::Added);
    let deleted = changes.iter().any(|c| c.change == ChangeKind::Deleted);
    if added && deleted {
        return false;
    }
    changes.iter().all(|c| {
        let kinds_ok = match (c.old, c.new) {
            (Some((_, a)), Some((_, b))) => a == b && regular(a),
            (Some((_, k)), None) | (None, Some((_, k))) => regular(k),
            (None, None) => false,
        };
        let path = c.path.as_slice();
        kinds_ok
            && !path.is_empty()
            && path
                .iter()
                .all(|&b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\')
            && path.rsplit(|&b| b == b'/').next() != Some(b".gitattributes")
    })
}

fn mode(kind: EntryKind) -> &'static [u8] {
    match kind {
        EntryKind::BlobExecutable => b"100755",
        _ => b"100644",
    }
}

fn id_kind(c: &TreeChange) -> gix::hash::Kind {
    c.old
        .or(c.new)
        .map_or(gix::hash::Kind::Sha1, |(id, _)| id.kind())
}

/// `id` abbreviated as git's `find_unique_abbrev` does: `hex_len`, longer until no
/// other object shares the prefix. For the null id: zeros, or `None` if some object's
/// id starts with them.
fn abbrev(odb: &gix::OdbHandle, id: ObjectId, hex_len: usize) -> Result<Option<Vec<u8>>> {
    use gix::odb::store::prefix::disambiguate::Candidate;
    let candidate = Candidate::new(id, hex_len).map_err(|e| {
        agent_rewind_core::error::Error::git(format!("cannot abbreviate {id} to {hex_len}: {e}"))
    })?;
    if id.is_null() {
        let taken = odb
            .lookup_prefix(candidate.to_prefix(), None)
            .map_err(|e| {
                agent_rewind_core::error::Error::git(format!("cannot look up ids: {e}"))
            })?;
        return Ok(taken.is_none().then(|| vec![b'0'; hex_len]));
    }
    let prefix = odb.disambiguate_prefix(candidate).map_err(|e| {
        agent_rewind_core::error::Error::git(format!("cannot abbreviate {id}: {e}"))
    })?;
    Ok(prefix.map(|p| p.to_string().into_bytes()))
}
