//! What opening a repository checks beyond gix: formats we cannot read or write (an object
//! format other than SHA-1 and SHA-256, a compatibility object format, ref storage other
//! than files and reftable), refused in one line naming the format, a `GIT_COMMON_DIR` gix does
//! not read, git's rule for the worktree of a `GIT_DIR` given alone, and whether the pack
//! folder names few enough indexes for the default slots. Read-only; never writes anything.

use agent_rewind_core::error::{Error, Result};
use std::path::Path;

/// Whether the repository's object database holds at most `most` pack indexes, counted by
/// name in `objects/pack` (no file is stated): an `.idx` whose pack is missing still counts,
/// so the answer errs towards "more". Alternates (`objects/info/alternates`,
/// `GIT_ALTERNATE_OBJECT_DIRECTORIES`) and a folder that cannot be read mean "more".
pub(super) fn few_packs(repo: &gix::Repository, most: usize) -> bool {
    let objects = repo.objects.store_ref().path();
    if std::env::var_os("GIT_ALTERNATE_OBJECT_DIRECTORIES").is_some()
        || objects.join("info/alternates").exists()
    {
        return false;
    }
    let Ok(entries) = std::fs::read_dir(objects.join("pack")) else {
        // No pack folder at all: no packs.
        return !objects.join("pack").exists();
    };
    let mut indexes = 0;
    for entry in entries {
        let Ok(entry) = entry else {
            return false;
        };
        if entry.file_name().as_encoded_bytes().ends_with(b".idx") {
            indexes += 1;
            if indexes > most {
                return false;
            }
        }
    }
    true
}

/// The repository format this tool cannot read or write (an object format other than SHA-1
/// and SHA-256, a compatibility object format, a ref storage other than files and reftable,
/// whose refs `reftable` reads through git), if any.
pub(super) fn unsupported_format(repo: &gix::Repository) -> Option<String> {
    let config = repo.config_snapshot();
    let value = |k: &str| config.string(k).map(|v| v.to_string().to_ascii_lowercase());
    if let Some(f) = value("extensions.objectFormat").filter(|f| !known_object_format(f)) {
        return Some(format!("{f} object format"));
    }
    if let Some(c) = value("extensions.compatObjectFormat") {
        return Some(compat(&c));
    }
    if let Some(r) = value("extensions.refStorage").filter(|r| r != "files" && r != "reftable") {
        return Some(format!("{r} ref storage"));
    }
    None
}

/// git's `extensions.compatObjectFormat` (a second name, in the other hash, for every object
/// written, kept in `objects/loose-object-idx`): gix 0.90 writes objects without it, so
/// objects we wrote would have no name in that format.
fn compat(format: &str) -> String {
    format!("{format} compatibility object format (extensions.compatObjectFormat)")
}

/// The object formats whose ids and objects this tool reads and writes.
fn known_object_format(f: &str) -> bool {
    f == "sha1" || f == "sha256"
}

/// When opening failed: the unsupported format of the repository `dir` (or `GIT_DIR`) is
/// in, read from its config file as text (gix cannot open it).
pub(super) fn unsupported_format_near(dir: &Path) -> Option<String> {
    let mut candidates: Vec<std::path::PathBuf> = vec![];
    if let Some(d) = std::env::var_os("GIT_DIR") {
        candidates.push(d.into());
    } else {
        for a in dir.ancestors() {
            candidates.push(a.join(".git"));
            candidates.push(a.to_path_buf());
        }
    }
    let git_dir = candidates
        .into_iter()
        .find(|d| d.join("HEAD").is_file() && d.join("config").is_file())?;
    let text = std::fs::read_to_string(git_dir.join("config")).ok()?;
    let mut section = String::new();
    for line in text.lines() {
        let l = line.trim().to_ascii_lowercase();
        if l.starts_with('[') {
            section = l;
            continue;
        }
        if section != "[extensions]" {
            continue;
        }
        let Some((k, v)) = l.split_once('=') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim().trim_matches('"'));
        match k {
            "objectformat" if !known_object_format(v) => return Some(format!("{v} object format")),
            "compatobjectformat" => return Some(compat(v)),
            "refstorage" if v != "files" && v != "reftable" => {
                return Some(format!("{v} ref storage"));
            }
            _ => {}
        }
    }
    None
}

/// A ref storage other than files and reftable (which `reftable` reads through git), an
/// object format other than SHA-1 and SHA-256, and a compatibility object format: refused
/// before anything is read.
pub(super) fn unsupported(format: &str) -> Error {
    let what_to_do = if format.contains("compatibility") {
        "supported: SHA-1 and SHA-256 repositories without extensions.compatObjectFormat; \
         gix 0.90, which writes our objects, cannot add them to git's compatibility object map"
    } else if format.contains("ref storage") {
        "supported: the files and reftable ref backends; convert this repository with \
         `git refs migrate --ref-format=files` (git 2.46+; git before 2.48 refuses while reflogs exist)"
    } else {
        "supported: SHA-1 (git's default) and SHA-256 object ids"
    };
    Error::refused(format!(
        "this repository uses the {format}, which git agent-rewind does not support yet"
    ))
    .with_hint(what_to_do)
}

/// `GIT_COMMON_DIR` (which gix does not read) must name the common directory the opened git
/// dir records; otherwise we would read refs and objects git would not.
pub(super) fn check_common_dir_env(repo: &gix::Repository) -> Result<()> {
    let Some(env) = std::env::var_os("GIT_COMMON_DIR") else {
        return Ok(());
    };
    let canon = |p: &Path| std::fs::canonicalize(p).ok();
    let given = Path::new(&env);
    if canon(given).is_some() && canon(given) == canon(repo.common_dir()) {
        return Ok(());
    }
    Err(Error::refused(format!(
        "GIT_COMMON_DIR={} differs from the common directory of {} ({})",
        given.display(),
        repo.git_dir().display(),
        repo.common_dir().display()
    ))
    .with_hint(
        "unset GIT_COMMON_DIR, or point GIT_DIR at a worktree whose `commondir` file names it",
    ))
}

/// git's rule when `GIT_DIR` is set but neither `GIT_WORK_TREE` nor `core.worktree` is: the
/// current directory `cwd` is the top of the worktree (unless the repository is bare), not
/// the folder holding the git dir, which is what gix assumes.
pub(super) fn worktree_from_git_dir_env(repo: &mut gix::Repository, cwd: &Path) -> Result<()> {
    let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    if !set("GIT_DIR") || set("GIT_WORK_TREE") || repo.workdir().is_none() {
        return Ok(());
    }
    if repo.config_snapshot().string("core.worktree").is_some() {
        return Ok(());
    }
    let cwd = gix::path::realpath(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    repo.set_workdir(Some(cwd.clone())).map_err(|e| {
        Error::refused(format!(
            "cannot use {} as the worktree of GIT_DIR: {}",
            cwd.display(),
            agent_rewind_core::error::one_line(&e.to_string())
        ))
    })?;
    Ok(())
}
