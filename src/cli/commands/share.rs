//! Sharing runs: `push`, `fetch`, `export`, `import`. Turns arguments into library calls and
//! outcomes into output; no sharing semantics live here (which word is the remote, what a
//! fetched run means: all in the library).

use crate::cli::output::json;
use crate::cli::render::{Style, escape};
use crate::cli::{Ctx, Output};
use agent_rewind::ops;
use agent_rewind::ops::fetch::FetchOutcome;
use agent_rewind::remote;
use agent_rewind_core::error::{Error, Result};
use clap::Args;
use std::path::PathBuf;

/// The examples ending each command's `-h`.
pub const PUSH_EXAMPLES: &str = "Examples:
  git agent-rewind push --remote runs
      Push the active run (its refs and notes) to the remote runs in one atomic push, never forced, and remember runs as agentRewind.remote; refused when it finds a secret in them.
  git agent-rewind push origin r1 --allow-secret 3f2a…:config/app.yaml:yaml-password:3
      Push run r1 to origin although that finding (its fingerprint, as the refused push printed it) looks like a secret.
  git agent-rewind push --all
      Push every run of this repository.";
pub const FETCH_EXAMPLES: &str = "Examples:
  git agent-rewind fetch
      Fetch every run from agentRewind.remote (else origin) and import it: new runs, fast-forwards, and a forked run where both sides moved on.
  git agent-rewind fetch origin r1
      Fetch only run r1.";
pub const EXPORT_EXAMPLES: &str = "Examples:
  git agent-rewind export r1 -o r1.bundle
      Write run r1 (its chain, refs and notes) to a git bundle file to hand over without a remote.
  git agent-rewind export --format agent-trace main..HEAD
      Print Agent Trace 0.1.0 records (JSON Lines) of the agent lines each commit of the range added.
  git agent-rewind export --format git-ai main..HEAD
      Write a git-ai note (authorship/3.0.0) under refs/notes/ai on each commit of the range that added agent lines, for git-ai's tools.";
pub const IMPORT_EXAMPLES: &str = "Examples:
  git agent-rewind import r1.bundle
      Import the runs of a bundle made by `export`, as fetch imports them.
  git fetch origin refs/notes/ai:refs/notes/ai && git agent-rewind import --format git-ai
      Record the lines git-ai's notes attribute to agents, so blame and stats show them.";

#[derive(Debug, Args)]
pub struct PushArgs {
    /// `[REMOTE] [RUN…]`: the first word is the remote when one of that name exists
    /// (default: agentRewind.remote); the rest are runs (default: the active run of this
    /// worktree).
    #[arg(value_name = "REMOTE|RUN")]
    pub words: Vec<String>,
    /// The remote (a name or a URL) to push to; then every word is a run. Remembered as
    /// agentRewind.remote when that is not set yet.
    #[arg(long, value_name = "NAME|URL")]
    pub remote: Option<String>,
    /// Every run of this repository.
    #[arg(long)]
    pub all: bool,
    /// Push although the secret rules fire on this finding: its fingerprint
    /// (`<commit>:<file or field>:<rule>:<line>`), as the refused push printed it.
    /// Repeatable; each allows exactly one finding, on this push (`git config --add
    /// agentRewind.allowSecret FINGERPRINT` allows it on every push).
    #[arg(long = "allow-secret", value_name = "FINGERPRINT")]
    pub allow_secret: Vec<String>,
}

#[derive(Debug, Args)]
pub struct FetchArgs {
    /// `[REMOTE] [RUN…]`: the first word is the remote when one of that name exists
    /// (default: agentRewind.remote, else origin); the rest are runs (default: every run
    /// of the remote).
    #[arg(value_name = "REMOTE|RUN")]
    pub words: Vec<String>,
    /// The remote (a name or a URL) to fetch from; then every word is a run.
    #[arg(long, value_name = "NAME|URL")]
    pub remote: Option<String>,
    /// Every run of the remote (the default when no run is named).
    #[arg(long)]
    pub all: bool,
    /// Refuse each run to import that holds a new checkpoint or notes commit not signed as
    /// git accepts (`verify`), naming it and why, and take the others; exit 1 when one was
    /// refused. `agentRewind.requireSigned=true` makes it the default.
    #[arg(long = "require-signed")]
    pub require_signed: bool,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The runs to export (bundle); with `--format agent-trace` or `git-ai`, one commit or a
    /// range `A..B` (default: HEAD).
    #[arg(value_name = "RUN|RANGE")]
    pub runs: Vec<String>,
    /// The bundle file to write.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// `bundle` (the default): runs into a git bundle; `agent-trace`: Agent Trace 0.1.0
    /// records of the agent lines of a range of commits, as JSON Lines on stdout; `git-ai`:
    /// git-ai notes (authorship/3.0.0) on the commits of a range that added agent lines.
    #[arg(long, value_name = "FORMAT", value_parser = ["bundle", "agent-trace", "git-ai"], default_value = "bundle")]
    pub format: String,
    /// With `--format git-ai`: the notes ref to write (default: refs/notes/ai, where git-ai
    /// reads them; `ai` means refs/notes/ai).
    #[arg(long = "notes-ref", value_name = "REF")]
    pub notes_ref: Option<String>,
    /// Overwrite FILE when it already exists; with `--format git-ai`, replace a note a
    /// commit already has.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// A bundle file written by `export`; with `--format git-ai`, the notes ref to read
    /// (default: refs/notes/ai; `ai` means refs/notes/ai).
    #[arg(value_name = "FILE|NOTES-REF")]
    pub file: Option<PathBuf>,
    /// `bundle` (the default): runs from a git bundle; `git-ai`: the lines git-ai's notes
    /// attribute to agents, recorded as a run (docs/FORMAT.md).
    #[arg(long, value_name = "FORMAT", value_parser = ["bundle", "git-ai"], default_value = "bundle")]
    pub format: String,
}

pub fn push(a: PushArgs, ctx: &Ctx) -> Result<Output> {
    let store = &ctx.store()?;
    let st = &ctx.style(store)?;
    let chosen = remote::choose(store, &a.words, a.remote.as_deref(), true)?;
    let (remote, runs) = (chosen.remote, chosen.runs);
    if a.all && !runs.is_empty() {
        return Err(Error::usage("name runs or use --all, not both"));
    }
    // Local runs, named as every command names them (full id or unique prefix).
    let runs = runs
        .iter()
        .map(|r| ops::address::run(store, r.as_str()))
        .collect::<Result<Vec<_>>>()?;
    let out = ops::push::push(store, &remote, &runs, a.all, &a.allow_secret)?;
    let mut s = String::new();
    if chosen.first_choice {
        remote::remember(store, &remote)?;
        s.push_str(&format!(
            "runs go to {} from now on (agentRewind.remote; `git config agentRewind.remote` changes it)\n",
            remote.target
        ));
    }
    if !out.skipped_rules.is_empty() {
        s.push_str(&format!(
            "warning: {} of agentRewind.secretRules did not compile and were not used: {}\n",
            agent_rewind_core::words::count(out.skipped_rules.len(), "rule", "rules"),
            out.skipped_rules
                .iter()
                .map(|(id, why)| format!("{id} ({why})"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let (true, Some(n)) = (out.limit_detected, out.refs_per_push) {
        s.push_str(&format!(
            "the remote refused a push for the number of refs it updated: pushed in chunks of at most {n} (`git config agentRewind.pushRefsPerPush {n}` starts that way)\n"
        ));
    }
    let up_to_date = out.count("up to date");
    for r in &out.runs {
        s.push_str(&format!("  {} {}", st.id(&r.run), r.result));
        if let Some(why) = &r.reason {
            s.push_str(&format!(": {why}"));
        }
        s.push('\n');
        for f in &r.secrets {
            s.push_str(&format!("    fingerprint: {}\n", f.fingerprint));
        }
        if let Some(h) = &r.hint {
            s.push_str(&format!("    hint: {h}\n"));
        }
    }
    s.push_str(&super::delete::retired_lines(&out.remote_deleted, st));
    if out.runs.is_empty() {
        s.push_str("no runs to push");
    } else {
        s.push_str(&format!(
            "pushed to {}: {} pushed, {} up to date, {} rejected",
            out.remote,
            out.count("pushed"),
            up_to_date,
            out.count("rejected")
        ));
        if out.deleted_elsewhere > 0 {
            s.push_str(&format!(
                ", {} deleted elsewhere (a tombstone covers it; name it to push it)",
                out.deleted_elsewhere
            ));
        }
        let diverged = out.count("diverged");
        if diverged > 0 {
            s.push_str(&format!(", {diverged} diverged (kept here, see the hint)"));
        }
    }
    let mut o = Output::new(json(&out), s);
    // A diverged run whose remote side is imported does not fail `--all` (it would fail
    // every push from now on); named on the command line, it was not pushed: exit 1.
    if out.count("rejected") > 0 || (!a.all && out.count("diverged") > 0) {
        o.exit_code = 1;
    }
    Ok(o)
}

pub fn fetch(a: FetchArgs, ctx: &Ctx) -> Result<Output> {
    let store = &ctx.store()?;
    let st = &ctx.style(store)?;
    let chosen = remote::choose(store, &a.words, a.remote.as_deref(), false)?;
    let (remote, runs) = (chosen.remote, chosen.runs);
    if a.all && !runs.is_empty() {
        return Err(Error::usage("name runs or use --all, not both"));
    }
    let out = ops::fetch::fetch(store, &remote, &runs, a.require_signed)?;
    after_import(store, &out);
    Ok(fetch_output(
        &out,
        st,
        &format!("fetched from {}", out.remote),
    ))
}

/// A diverged run's continuation is imported as a new run whose root is recorded here:
/// maintenance follows, as after any other record.
fn after_import(store: &agent_rewind::store::Store, out: &FetchOutcome) {
    if out.runs.iter().any(|r| r.imported_as.is_some()) {
        crate::cli::maintenance::after_recording(store);
    }
}

/// Exit status 1 when a run could not be imported, or was refused for its signatures, so
/// that a script notices (invalid remote runs only warn).
fn with_status(mut o: Output, out: &FetchOutcome) -> Output {
    if out.count("failed") > 0 || out.count("refused") > 0 {
        o.exit_code = 1;
    }
    o
}

pub fn import(a: ImportArgs, ctx: &Ctx) -> Result<Output> {
    let store = &ctx.store()?;
    let st = &ctx.style(store)?;
    if a.format == "git-ai" {
        let notes_ref = a.file.as_ref().map(|f| f.to_string_lossy().into_owned());
        return super::gitai::import(store, notes_ref.as_deref(), st);
    }
    let Some(name) = &a.file else {
        return Err(Error::usage("name the bundle file to import")
            .with_hint("git agent-rewind import FILE"));
    };
    let file = ctx.path(name);
    let out = ops::bundle::import(store, &file)?;
    after_import(store, &out);
    Ok(fetch_output(
        &out,
        st,
        &format!("imported {}", name.display()),
    ))
}

fn fetch_output(out: &FetchOutcome, st: &Style, what: &str) -> Output {
    for w in &out.warnings {
        crate::cli::render::warn(w);
    }
    let mut s = String::new();
    for r in &out.runs {
        // Skipped, refused and failed runs are reported as warnings on stderr.
        if matches!(r.result, "skipped" | "refused" | "failed") {
            continue;
        }
        s.push_str(&format!("  {} {}", st.id(&r.run), r.result));
        if let Some(n) = &r.imported_as {
            s.push_str(&format!(" → imported as {}", st.bold(n)));
        }
        if let Some(n) = r.notes {
            s.push_str(&format!(" (notes {n})"));
        }
        if let Some(d) = &r.detail {
            s.push_str(&format!(": {d}"));
        }
        s.push('\n');
    }
    let counts: Vec<String> = [
        "new",
        "fast-forwarded",
        "diverged",
        "up to date",
        "local is ahead",
        "deleted here",
        "deleted elsewhere",
        "not on remote",
        "skipped",
        "refused",
        "failed",
    ]
    .into_iter()
    .filter_map(|r| match out.count(r) {
        0 => None,
        n => Some(format!("{n} {r}")),
    })
    .collect();
    if counts.is_empty() {
        s.push_str(&format!("{what}: no runs"));
    } else {
        s.push_str(&format!("{what}: {}", counts.join(", ")));
    }
    with_status(Output::new(json(out), s), out)
}

pub fn export(a: ExportArgs, ctx: &Ctx) -> Result<Output> {
    let store = &ctx.store()?;
    let style = ctx.style(store)?;
    if a.format == "agent-trace" {
        return export_trace(store, &a);
    }
    if a.notes_ref.is_some() && a.format != "git-ai" {
        return Err(Error::usage("--notes-ref goes with --format git-ai"));
    }
    if a.format == "git-ai" {
        if a.output.is_some() {
            return Err(Error::usage("--format git-ai writes notes, not a file")
                .with_hint("choose the notes ref with --notes-ref REF"));
        }
        if a.runs.len() > 1 {
            return Err(
                Error::usage("--format git-ai takes one commit or one range")
                    .with_hint("e.g. main..HEAD"),
            );
        }
        let range = a.runs.first().map(String::as_str);
        return super::gitai::export(store, range, a.notes_ref.as_deref(), a.force, &style);
    }
    if a.runs.is_empty() {
        return Err(Error::usage("name the runs to export")
            .with_hint("git agent-rewind export <run>… -o FILE"));
    }
    let Some(output) = &a.output else {
        return Err(Error::usage("name the bundle file to write with -o FILE")
            .with_hint("git agent-rewind export <run>… -o FILE"));
    };
    let runs = a
        .runs
        .iter()
        .map(|r| ops::address::run(store, r))
        .collect::<Result<Vec<_>>>()?;
    let out = ops::bundle::export(store, &runs, &ctx.path(output), a.force)?;
    // The file as the user named it: relative to where they stand, so the hint works there.
    let shown = escape(&output.to_string_lossy()).into_owned();
    let s = format!(
        "wrote {shown} ({}, {}); `git agent-rewind import {shown}` reads it back",
        agent_rewind_core::words::count(out.runs.len(), "run", "runs"),
        agent_rewind_core::words::count(out.refs.len(), "ref", "refs"),
    );
    Ok(Output::new(json(&out), s))
}

/// `export --format agent-trace [<range>]`: one record per line on stdout (`--json`: an array).
fn export_trace(store: &agent_rewind::store::Store, a: &ExportArgs) -> Result<Output> {
    if a.output.is_some() || a.force {
        return Err(Error::usage("--format agent-trace prints its records on stdout")
            .with_hint("redirect it: git agent-rewind export --format agent-trace main..HEAD > trace.jsonl"));
    }
    if a.runs.len() > 1 {
        return Err(
            Error::usage("--format agent-trace takes one commit or one range")
                .with_hint("e.g. main..HEAD"),
        );
    }
    let records = ops::trace::agent_trace(store, a.runs.first().map(String::as_str))?;
    let mut lines = String::new();
    for r in &records {
        lines.push_str(&serde_json::to_string(r).expect("json"));
        lines.push('\n');
    }
    Ok(Output::raw(
        serde_json::Value::Array(records),
        lines.into_bytes(),
    ))
}
