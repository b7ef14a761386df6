//! git-ai's notes (`refs/notes/ai`, authorship/3.0.0), both ways: `import` records the
//! lines they attribute to agents as a run of this repository; `export` writes the lines
//! our runs attribute as git-ai notes on the commits of a range. The note text itself is
//! `crate::attribution::gitai`'s. Neither prints.

pub mod export;
pub mod import;

use agent_rewind_core::error::{Error, Result};

/// The value of `imported_from` on what `import` records.
pub const GITAI: &str = "git-ai";
/// `meta` keys of an imported checkpoint: the commit and the note blob it came from, and
/// (on a turn) the git-ai session or prompt key.
pub const META_COMMIT: &str = "git-ai.commit";
pub const META_NOTE: &str = "git-ai.note";
pub const META_KEY: &str = "git-ai.key";
/// Where git-ai keeps its notes.
pub const DEFAULT_REF: &str = "refs/notes/ai";

/// The notes ref as `git notes --ref` reads it (`ai` is `refs/notes/ai`), checked before use.
pub fn notes_ref_name(given: Option<&str>) -> Result<String> {
    let given = given.unwrap_or(DEFAULT_REF);
    let name = if given.starts_with("refs/") {
        given.to_string()
    } else {
        format!("refs/notes/{given}")
    };
    let ok = name.split('/').all(|c| {
        !c.is_empty()
            && !c.starts_with('.')
            && !c.ends_with(".lock")
            && c.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    }) && !name.contains("..")
        && name.starts_with("refs/notes/");
    if !ok {
        return Err(Error::usage(format!("{given:?} is not a notes ref"))
            .with_hint("name one under refs/notes/, e.g. refs/notes/ai"));
    }
    Ok(name)
}
