//! CLI glue for sharing and retention: `push`, `fetch`, `delete`, `gc`, `export`, `import`.
//! Turns arguments into library calls and outcomes into output; no sharing semantics live
//! here (which word is the remote, what a fetched run means: all in the library).

use super::Output;
use super::args::{DeleteArgs, ExportArgs, FetchArgs, GcArgs, ImportArgs, PushArgs};
use super::render::{Style, short};
use agent_rewind::error::{Error, Result};
use agent_rewind::ids::RunId;
use agent_rewind::ops;
use agent_rewind::ops::fetch::FetchOutcome;
use agent_rewind::remote;
use agent_rewind::store::Store;

fn json<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).expect("json")
}

pub fn push(store: &Store, a: PushArgs, st: &Style) -> Result<Output> {
    let (remote, runs) = remote::split_remote_and_runs(store, &a.words)?;
    if a.all && !runs.is_empty() {
        return Err(Error::usage("name runs or use --all, not both"));
    }
    let out = ops::push::push(store, &remote, &runs, a.all)?;
    let mut s = String::new();
    let up_to_date = out.count("up to date");
    for r in &out.runs {
        s.push_str(&format!("  {} {}", st.id(&r.run), r.result));
        if let Some(why) = &r.reason {
            s.push_str(&format!(": {why}"));
        }
        s.push('\n');
        if let Some(h) = &r.hint {
            s.push_str(&format!("    hint: {h}\n"));
        }
    }
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
    }
    let mut o = Output::new(json(&out), s);
    if out.count("rejected") > 0 {
        o.exit_code = 1;
    }
    Ok(o)
}

pub fn fetch(store: &Store, a: FetchArgs, st: &Style) -> Result<Output> {
    let (remote, runs) = remote::split_remote_and_runs(store, &a.words)?;
    if a.all && !runs.is_empty() {
        return Err(Error::usage("name runs or use --all, not both"));
    }
    let out = ops::fetch::fetch(store, &remote, &runs)?;
    Ok(fetch_output(
        &out,
        st,
        &format!("fetched from {}", out.remote),
    ))
}

/// Exit status 1 when a run could not be imported (invalid remote runs only warn).
fn with_status(mut o: Output, out: &FetchOutcome) -> Output {
    if out.count("failed") > 0 {
        o.exit_code = 1;
    }
    o
}

pub fn import(store: &Store, a: ImportArgs, st: &Style) -> Result<Output> {
    let out = ops::bundle::import(store, &a.file)?;
    Ok(fetch_output(
        &out,
        st,
        &format!("imported {}", a.file.display()),
    ))
}

fn fetch_output(out: &FetchOutcome, st: &Style, what: &str) -> Output {
    for w in &out.warnings {
        eprintln!("warning: {w}");
    }
    let mut s = String::new();
    for r in &out.runs {
        // Skipped and failed runs are reported as warnings on stderr.
        if matches!(r.result, "skipped" | "failed") {
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
        "not on remote",
        "skipped",
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

pub fn delete(store: &Store, a: DeleteArgs) -> Result<Output> {
    let run = RunId::new(a.run)?;
    let out = ops::delete::delete(store, &run, a.force)?;
    let mut s = format!(
        "deleted run {} ({} refs; tip {})",
        out.run,
        out.refs_deleted,
        out.head.as_deref().map(short).unwrap_or_else(|| "-".into())
    );
    if !out.lineage_of.is_empty() {
        s.push_str(&format!(
            "\n  the lineage of {} passed through it: their history before their root now shows plain commits",
            out.lineage_of.join(", ")
        ));
    }
    Ok(Output::new(json(&out), s))
}

pub fn gc(store: &Store, a: GcArgs, st: &Style) -> Result<Output> {
    let older_than = a
        .older_than
        .as_deref()
        .map(agent_rewind::time::parse_age)
        .transpose()?;
    let out = ops::gc::gc(
        store,
        &ops::gc::GcOptions {
            older_than,
            keep: a.keep,
            dry_run: a.dry_run,
        },
    )?;
    for p in &out.problems {
        eprintln!("warning: {p}");
    }
    let mut s = format!(
        "{} {} of {} run(s){}\n",
        if out.dry_run {
            "would delete"
        } else {
            "deleted"
        },
        out.deleted.len(),
        out.runs_before,
        if out.deleted.is_empty() { "" } else { ":" }
    );
    for d in &out.deleted {
        s.push_str(&format!(
            "  {}  {}{}\n",
            st.id(&d.run),
            d.last_activity,
            d.label
                .as_ref()
                .map(|l| format!("  \"{l}\""))
                .unwrap_or_default()
        ));
    }
    for k in &out.kept {
        s.push_str(&format!("  kept {}: {}\n", st.id(&k.run), k.reason));
    }
    if let Some(b) = &out.backups
        && b.dropped > 0
    {
        s.push_str(&format!(
            "{} {} of {} safety backup(s) by age (the newest of each worktree stays)\n",
            if out.dry_run { "would drop" } else { "dropped" },
            b.dropped,
            b.before
        ));
    }
    if out.dry_run {
        s.push_str("nothing changed (--dry-run)");
    } else if out.deleted.is_empty() {
        s.push_str("refs packed");
    } else {
        s.push_str("refs packed; `git gc` frees the objects of deleted runs");
    }
    Ok(Output::new(json(&out), s))
}

pub fn export(store: &Store, a: ExportArgs) -> Result<Output> {
    let runs = a
        .runs
        .into_iter()
        .map(RunId::new)
        .collect::<Result<Vec<_>>>()?;
    let out = ops::bundle::export(store, &runs, &a.output, a.force)?;
    let s = format!(
        "wrote {} ({} run(s), {} refs); `git agent-rewind import {}` reads it back",
        out.file,
        out.runs.len(),
        out.refs.len(),
        out.file
    );
    Ok(Output::new(json(&out), s))
}
