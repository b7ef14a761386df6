//! The git-ai side of `import` and `export` (`--format git-ai`): outcomes into output and
//! exit codes. What is read, written and why is `ops::gitai`'s.

use crate::cli::Output;
use crate::cli::output::json;
use crate::cli::render::{Style, escape, short, warn};
use agent_rewind::ops::gitai;
use agent_rewind::store::Store;
use agent_rewind_core::error::Result;

/// `import --format git-ai [<notes-ref>]`. Exit status 1 when a note was skipped whole.
pub fn import(store: &Store, notes_ref: Option<&str>, st: &Style) -> Result<Output> {
    let out = gitai::import::import(store, notes_ref)?;
    if out.run.is_some() {
        crate::cli::maintenance::after_recording(store);
    }
    for s in &out.skipped {
        warn(&format!(
            "note on {} skipped: {}",
            short(&s.commit),
            escape(&s.reason)
        ));
    }
    let mut text = String::new();
    for c in &out.imported {
        text.push_str(&format!(
            "  {} {} by {}\n",
            st.id(&short(&c.commit)),
            agent_rewind_core::words::count(c.lines, "agent line", "agent lines"),
            agent_rewind_core::words::count(c.sessions, "session", "sessions")
        ));
    }
    let mut counts = vec![format!("{} imported", out.imported.len())];
    for (n, what) in [
        (out.up_to_date, "up to date"),
        (out.people_only, "people's lines only"),
    ] {
        if n > 0 {
            counts.push(format!("{n} {what}"));
        }
    }
    let whole_skips = out
        .skipped
        .iter()
        .filter(|s| !out.imported.iter().any(|c| c.commit == s.commit))
        .count();
    if whole_skips > 0 {
        counts.push(format!("{whole_skips} skipped"));
    }
    text.push_str(&format!(
        "git-ai notes of {}: {}",
        out.notes_ref,
        counts.join(", ")
    ));
    if let Some(run) = &out.run {
        text.push_str(&format!(
            "\nrecorded as run {} (`git agent-rewind blame FILE` shows the lines)",
            st.id(run)
        ));
    }
    let mut o = Output::new(json(&out), text);
    if whole_skips > 0 {
        o.exit_code = 1;
    }
    Ok(o)
}

/// `export --format git-ai [<range>]`. Exit status 1 when a commit kept another note.
pub fn export(
    store: &Store,
    range: Option<&str>,
    notes_ref: Option<&str>,
    force: bool,
    st: &Style,
) -> Result<Output> {
    let out = gitai::export::export(store, range, notes_ref, force)?;
    for p in &out.skipped_paths {
        warn(&format!(
            "{}: a git-ai note cannot name this path (a quote or a line break in it); its lines are left out",
            escape(p)
        ));
    }
    let mut text = String::new();
    for n in &out.notes {
        text.push_str(&format!(
            "  {} {}: {} by {}\n",
            st.id(&short(&n.commit)),
            n.result,
            agent_rewind_core::words::count(n.lines, "agent line", "agent lines"),
            agent_rewind_core::words::count(n.sessions, "session", "sessions")
        ));
    }
    let kept = out.count("kept");
    text.push_str(&format!(
        "{}: {} written, {} up to date, {kept} kept",
        out.notes_ref,
        out.count("written"),
        out.count("up to date"),
    ));
    if kept > 0 {
        warn("a commit kept the note it had; --force replaces it");
    }
    let mut o = Output::new(json(&out), text);
    if kept > 0 {
        o.exit_code = 1;
    }
    Ok(o)
}
