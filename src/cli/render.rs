//! Human rendering: tables and summaries, colour only on a terminal without `NO_COLOR`.

use agent_rewind::catalog::Checkpoint;
use agent_rewind::journal::Recorded;
use agent_rewind::model::NoteLine;
use agent_rewind::ops;
use agent_rewind::store::ChangeKind;
use std::io::IsTerminal;

pub struct Style {
    color: bool,
}

impl Style {
    /// No colour.
    pub fn plain() -> Style {
        Style { color: false }
    }
    pub fn detect() -> Style {
        Style {
            color: std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        }
    }
    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    pub fn id(&self, s: &str) -> String {
        self.paint("33", s)
    }
    /// A run id with its shortest unique prefix marked (bold magenta, the rest dim), as jj
    /// marks change ids; plain without colour.
    pub fn run_id(&self, id: &str, prefix: usize) -> String {
        if !self.color || prefix == 0 || prefix >= id.len() || !id.is_char_boundary(prefix) {
            return self.paint("1;35", id);
        }
        let (p, rest) = id.split_at(prefix);
        format!("{}{}", self.paint("1;35", p), self.paint("2", rest))
    }
    pub fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }
    pub fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }
    pub fn status(&self, s: &str) -> String {
        let code = match s {
            "completed" => "32",
            "failed" | "interrupted" => "31",
            "running" | "awaiting_approval" => "36",
            "archived" => "2",
            _ => "0",
        };
        self.paint(code, s)
    }
}

/// A field that came from a user or a remote (label, writer, session, message, path, ...)
/// made safe for a terminal the way git quotes paths (`core.quotePath`): unchanged when it
/// holds no control character, else in double quotes with C escapes (`\t`, `\n`, `\033`,
/// `\\`, `\"`), so an ESC/OSC sequence is shown, never obeyed.
pub fn escape(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(is_control) {
        return s.into();
    }
    let mut out = String::with_capacity(s.len() + 8);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => push_escaped(&mut out, c),
        }
    }
    out.push('"');
    out.into()
}

/// Free text of several lines (a message): line breaks and tabs kept, every other control
/// character escaped as `escape` does, without the quotes.
pub fn escape_text(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(|c| is_control(c) && c != '\n' && c != '\t') {
        return s.into();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            c => push_escaped(&mut out, c),
        }
    }
    out.into()
}

/// C0/C1 controls and DEL, and the bidirectional overrides that reorder what a terminal shows.
fn is_control(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\x07' => out.push_str("\\a"),
        '\x08' => out.push_str("\\b"),
        '\t' => out.push_str("\\t"),
        '\n' => out.push_str("\\n"),
        '\x0b' => out.push_str("\\v"),
        '\x0c' => out.push_str("\\f"),
        '\r' => out.push_str("\\r"),
        c if is_control(c) => {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\{b:03o}"));
            }
        }
        c => out.push(c),
    }
}

pub fn short(id: &str) -> String {
    id.chars().take(12).collect()
}

fn opt(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("-")
}

/// Left-align columns to their widths (ignoring colour codes).
fn table(header: &[&str], rows: Vec<Vec<(String, String)>>) -> String {
    let n = header.len();
    let mut w: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (i, (plain, _)) in r.iter().enumerate() {
            w[i] = w[i].max(plain.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cells: Vec<(String, String)>, out: &mut String| {
        let mut s = String::new();
        for (i, (plain, shown)) in cells.into_iter().enumerate() {
            s.push_str(&shown);
            if i + 1 < n {
                s.push_str(&" ".repeat(w[i] - plain.chars().count() + 2));
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(
        header
            .iter()
            .map(|h| (h.to_string(), h.to_string()))
            .collect(),
        &mut out,
    );
    for r in rows {
        line(r, &mut out);
    }
    out.trim_end().to_string()
}

fn cell(s: impl Into<String>) -> (String, String) {
    let s = s.into();
    (s.clone(), s)
}

fn styled(plain: impl Into<String>, f: impl Fn(&str) -> String) -> (String, String) {
    let p = plain.into();
    let s = f(&p);
    (p, s)
}

pub fn link(l: &agent_rewind::model::LineageLink) -> String {
    match &l.step {
        Some(s) => format!("{}/{} ({})", l.run, s, short(&l.checkpoint)),
        None => format!("{} ({})", l.run, short(&l.checkpoint)),
    }
}

pub fn checkpoints_table(cps: &[Checkpoint], st: &Style) -> String {
    let rows = cps
        .iter()
        .map(|c| {
            let l = c.line();
            vec![
                cell(l.seq.to_string()),
                cell(opt(&l.step)),
                cell(l.attempt.to_string()),
                cell(l.event.to_string()),
                styled(
                    c.status()
                        .map(|s| s.to_string())
                        .unwrap_or_else(|| "-".into()),
                    |s| st.status(s),
                ),
                cell(
                    l.step_kind
                        .map(|k| k.to_string())
                        .unwrap_or_else(|| "-".into()),
                ),
                styled(short(&c.id().to_string()), |s| st.id(s)),
                cell(l.ts.to_string()),
            ]
        })
        .collect();
    table(
        &[
            "SEQ", "STEP", "ATTEMPT", "EVENT", "STATUS", "KIND", "COMMIT", "TIME",
        ],
        rows,
    )
}

pub fn recorded(r: &Recorded, st: &Style) -> String {
    let l = &r.line;
    let mut s = format!(
        "{} {}@{} {} {}{}",
        if r.unchanged { "unchanged" } else { "recorded" },
        l.run,
        l.seq,
        opt(&l.step),
        l.event,
        l.status
            .map(|x| format!(" ({})", st.status(x.as_str())))
            .unwrap_or_default()
    );
    s.push_str(&format!(
        "\n  checkpoint {}",
        st.id(&short(&r.checkpoint.to_string()))
    ));
    for e in &l.excluded {
        s.push_str(&format!(
            "\n  excluded {} ({})",
            agent_rewind::quote::display_text_path(&e.path),
            e.reason
        ));
    }
    if !r.redacted.is_empty() {
        s.push_str(&format!("\n  redacted {}", r.redacted.join(", ")));
    }
    s
}

pub fn shown(sh: &ops::show::Shown, st: &Style) -> String {
    let c = &sh.checkpoint;
    let l = c.line();
    let mut s = format!("checkpoint {}\n", st.id(&c.id().to_string()));
    let mut kv = |k: &str, v: String| s.push_str(&format!("{:<14}{}\n", format!("{k}:"), v));
    kv("run", format!("{} @{}", l.run, l.seq));
    kv("step", format!("{} (attempt {})", opt(&l.step), l.attempt));
    kv("event", l.event.to_string());
    kv(
        "status",
        c.status()
            .map(|x| st.status(x.as_str()))
            .unwrap_or_else(|| "-".into()),
    );
    if let Some(k) = l.step_kind {
        kv("kind", k.to_string());
    }
    kv("time", l.ts.to_string());
    kv("writer", l.writer.clone());
    kv(
        "git commit",
        format!(
            "{} {}",
            l.git_commit_sha.as_deref().map(short).unwrap_or("-".into()),
            opt(&l.head_ref)
        ),
    );
    if let Some(x) = &l.sdk_session_id {
        kv(
            "session",
            match &l.agent {
                Some(a) => format!("{x} ({a})"),
                None => x.clone(),
            },
        );
    }
    if !l.touched.is_empty() {
        kv("touched", l.touched.join(" "));
    }
    if let Some((lk, rewound)) = l.origin() {
        kv(
            if rewound {
                "rewound from"
            } else {
                "forked from"
            },
            link(lk),
        );
    }
    if let Some(m) = &l.message {
        kv("message", m.clone());
    }
    if let Some(n) = &l.next_action {
        kv("next action", n.clone());
    }
    for (k, v) in &l.meta {
        kv(&format!("meta.{k}"), v.clone());
    }
    for a in &l.artifacts {
        kv(
            "artifact",
            match (&a.path, &a.uri) {
                (Some(p), _) => format!("{p} {}", a.oid.as_deref().map(short).unwrap_or_default()),
                (_, Some(u)) => format!("{u} {}", a.digest.clone().unwrap_or_default()),
                _ => "?".into(),
            },
        );
    }
    for e in &l.excluded {
        kv(
            "excluded",
            format!(
                "{} ({})",
                agent_rewind::quote::display_text_path(&e.path),
                e.reason
            ),
        );
    }
    // Every line but the checkpoint line (a merged note's lines are sorted, so it need not
    // be the first).
    let records = c
        .note
        .lines
        .iter()
        .filter(|l| !matches!(l, NoteLine::Checkpoint(_)));
    for r in records {
        match rewrite_lines(r) {
            Some(lines) => lines.into_iter().for_each(|l| kv("rewritten", l)),
            None => kv("record", r.to_line()),
        }
    }
    s.push_str(&format!(
        "\nfiles changed vs {}:\n",
        sh.parent
            .map(|p| short(&p.to_string()))
            .unwrap_or("(empty)".into())
    ));
    if sh.files.is_empty() {
        s.push_str("  (none)\n");
    }
    for f in &sh.files {
        s.push_str(&format!("  {} {}\n", f.change, f.path));
    }
    s.trim_end().to_string()
}

/// A `rewrite` record (post-rewrite hook) as one line per commit: `old → new (kind, from
/// checkpoint X)`.
fn rewrite_lines(r: &agent_rewind::model::NoteLine) -> Option<Vec<String>> {
    let v = r.to_json();
    if v.get("type")?.as_str()? != "rewrite" {
        return None;
    }
    let kind = v.get("kind").and_then(|k| k.as_str()).unwrap_or("rewrite");
    let s = |m: &serde_json::Value, k: &str| {
        m.get(k)
            .and_then(|x| x.as_str())
            .map(short)
            .unwrap_or_else(|| "?".into())
    };
    Some(
        v.get("mapping")?
            .as_array()?
            .iter()
            .map(|m| {
                let from = match m.get("checkpoint").and_then(|x| x.as_str()) {
                    Some(cp) => format!(", from checkpoint {}", short(cp)),
                    None => String::new(),
                };
                format!("{} → {} ({kind}{from})", s(m, "old"), s(m, "new"))
            })
            .collect(),
    )
}

pub fn lineage(chain: &[Checkpoint], st: &Style) -> String {
    let mut s = String::new();
    let mut current_run = String::new();
    for c in chain {
        let l = c.line();
        if l.run != current_run {
            current_run = l.run.clone();
            s.push_str(&format!("run {}\n", st.bold(&l.run)));
        }
        s.push_str(&format!(
            "  {} @{:<3} {:<12} {:<7} {:<10} {}\n",
            st.id(&short(&c.id().to_string())),
            l.seq,
            opt(&l.step),
            l.event.to_string(),
            c.status()
                .map(|x| x.to_string())
                .unwrap_or_else(|| "-".into()),
            st.dim(&l.ts.to_string())
        ));
        if let Some((lk, rewound)) = l.origin() {
            s.push_str(&format!(
                "  └─ {} {}\n",
                if rewound {
                    "rewound from"
                } else {
                    "forked from"
                },
                link(lk)
            ));
        }
    }
    s.trim_end().to_string()
}

pub fn graph(node: &ops::log::LineageNode, st: &Style) -> String {
    fn walk(
        n: &ops::log::LineageNode,
        prefix: &str,
        last: bool,
        top: bool,
        st: &Style,
        out: &mut String,
    ) {
        let s = &n.summary;
        let from = s.rewound_from.as_ref().or(s.forked_from.as_ref());
        let rel = match (n.relation, from) {
            (Some(r), Some(l)) => format!(" {} at {}", r, link(l)),
            _ => String::new(),
        };
        let branch = if top {
            ""
        } else if last {
            "└─ "
        } else {
            "├─ "
        };
        out.push_str(&format!(
            "{prefix}{branch}{} [{}]{}{}\n",
            st.bold(&s.run),
            st.status(&s.status),
            rel,
            s.label
                .as_ref()
                .map(|l| format!(" \"{l}\""))
                .unwrap_or_default()
        ));
        let child_prefix = if top {
            String::new()
        } else {
            format!("{prefix}{}", if last { "   " } else { "│  " })
        };
        for (i, c) in n.children.iter().enumerate() {
            walk(c, &child_prefix, i + 1 == n.children.len(), false, st, out);
        }
    }
    let mut out = String::new();
    walk(node, "", true, true, st, &mut out);
    out.trim_end().to_string()
}

pub fn status(r: &ops::status::RunStatus, st: &Style) -> String {
    let l = r.last.line();
    let mut s = format!(
        "active run {} [{}]{}\n",
        st.run_id(&r.summary.run, r.summary.unique_prefix),
        st.status(&r.summary.status),
        r.summary
            .label
            .as_ref()
            .map(|x| format!(" \"{x}\""))
            .unwrap_or_default()
    );
    s.push_str(&format!(
        "last checkpoint {} @{} {} {} at {}\n",
        st.id(&short(&r.last.id().to_string())),
        l.seq,
        opt(&l.step),
        l.event,
        l.ts
    ));
    if !r.unfinished.is_empty() {
        s.push_str(&format!("unfinished steps: {}\n", r.unfinished.join(", ")));
    }
    if let Some(r) = &r.resume {
        s.push_str(&format!("resume {}: {}\n", r.agent, r.command));
    }
    s.push_str(&format!("next: {}", r.next_action));
    s
}

/// Most paths listed one by one in human output (`--json` lists them all).
const MAX_LISTED: usize = 50;

/// The paths a checkout changed, one a line: what was removed, replaced (the previous
/// content set aside in the backup), added.
pub fn file_changes(files: &[agent_rewind::materialize::PathChange]) -> String {
    let mut s = String::new();
    for f in files.iter().take(MAX_LISTED) {
        let what = match f.change {
            ChangeKind::Deleted => "removed ",
            ChangeKind::Added => "added   ",
            ChangeKind::Modified | ChangeKind::TypeChanged => "replaced",
        };
        s.push_str(&format!("  {what}  {}\n", f.path));
    }
    if files.len() > MAX_LISTED {
        s.push_str(&format!(
            "  … and {} more (`--json` lists them all)\n",
            files.len() - MAX_LISTED
        ));
    }
    s
}

pub fn rewound(o: &ops::rewind::RewindOutcome, st: &Style) -> String {
    let mut s = format!(
        "{} run {} from {}{} ({})\n",
        o.relation,
        st.bold(&o.run),
        o.source_run,
        o.from_step
            .as_ref()
            .map(|x| format!("/{x}"))
            .unwrap_or_default(),
        st.id(&short(&o.from_checkpoint))
    );
    if let Some(b) = &o.branch {
        s.push_str(&format!("  branch    {b}\n"));
    }
    if let Some(w) = &o.worktree {
        s.push_str(&format!("  worktree  {w}\n"));
    }
    s.push_str(&format!(
        "  session   {}\n",
        o.sdk_session_id.as_deref().unwrap_or("-")
    ));
    if let Some(c) = &o.resume_command {
        s.push_str(&format!("  resume    {c}\n"));
    }
    if !o.inherited_steps.is_empty() {
        s.push_str(&format!("  inherited {}\n", o.inherited_steps.join(", ")));
    }
    if o.source_archived {
        s.push_str(&format!("  archived  {}\n", o.source_run));
    }
    if let Some(b) = &o.backup {
        if !o.files.is_empty() {
            s.push_str(&format!(
                "files changed in this worktree ({}):\n",
                o.files.len()
            ));
            s.push_str(&file_changes(&o.files));
        }
        s.push_str(&format!(
            "  backup    {} (`git agent-rewind undo` brings the previous state back)\n",
            short(&b.commit)
        ));
        s.push_str(&left_in_place(&b.left_in_place));
    }
    s.trim_end().to_string()
}

/// One line per file an overwrite left as it was (`Backup::left_in_place`).
pub fn left_in_place(files: &[agent_rewind::model::Excluded]) -> String {
    files
        .iter()
        .map(|e| {
            format!(
                "  left in place {} ({})\n",
                agent_rewind::quote::display_text_path(&e.path),
                e.reason
            )
        })
        .collect()
}

pub fn run_report(r: &agent_rewind::workflow::runner::RunReport, st: &Style) -> String {
    let mut s = format!("run {} ({})\n", st.bold(&r.run), r.workflow);
    if let Some(h) = &r.took_over_from {
        s.push_str(&format!("  took over a stale runner lock ({h})\n"));
    }
    if let Some(f) = &r.workflow_file_changed {
        s.push_str(&format!(
            "  note: {f} changed since the run stored it; using the stored copy (`resume --workflow {f}` uses the file)\n"
        ));
    } else if r.workflow_changed {
        s.push_str("  note: the workflow changed since this run last recorded it\n");
    }
    for step in &r.reconciled {
        s.push_str(&format!(
            "  reconciled {step}: its runner died mid-step (interrupted)\n"
        ));
    }
    for x in &r.steps {
        s.push_str(&format!(
            "  {:<14} {:<15} {}{}\n",
            x.step,
            x.action,
            x.reason,
            x.exit_code
                .map(|c| format!(" (exit {c})"))
                .unwrap_or_default()
        ));
    }
    match &r.stopped {
        Some(why) => s.push_str(&format!("stopped: {why}\nnext: {}", r.next_action)),
        None => s.push_str(&st.status("completed")),
    }
    s
}

pub fn steer(o: &ops::steer::SteerOutcome, st: &Style) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "{} {}\n",
        if o.applied { "steered" } else { "would steer" },
        st.bold(&o.run)
    ));
    for e in &o.edits {
        s.push_str(&format!("  edit       {e}\n"));
    }
    for i in &o.invalidated {
        s.push_str(&format!("  invalidate {i}\n"));
    }
    s.push_str("blast radius (re-run by the next resume):\n");
    if o.blast_radius.is_empty() {
        s.push_str("  (nothing)\n");
    }
    for i in &o.blast_radius {
        s.push_str(&format!("  {:<14} {}\n", i.step, i.reason));
    }
    match &o.checkpoint {
        Some(c) => s.push_str(&format!("recorded steer checkpoint {}", short(c))),
        None => s.push_str("nothing changed; add --yes to apply"),
    }
    s
}

/// The plan or result of `revert`: one line per file, then what was written.
pub fn reverted(out: &agent_rewind::ops::revert::RevertOutcome) -> String {
    use agent_rewind::ops::revert::{Action, PathRule};
    let mut s = format!(
        "{} {} of run {} ({}..{}; paths: {})\n",
        if out.dry_run {
            "would revert"
        } else {
            "reverted"
        },
        out.scope,
        out.run,
        short(&out.from),
        short(&out.to),
        match out.rule {
            PathRule::Touched => "the ones its agent touched",
            PathRule::Diff => "every path that differs",
        }
    );
    for f in &out.files {
        let what = match f.action {
            Action::Revert => "revert  ",
            Action::Merge => "merge   ",
            Action::Keep => "keep    ",
            Action::Conflict => "conflict",
            Action::Markers => "markers ",
        };
        match &f.reason {
            Some(r) => s.push_str(&format!("  {what} {} ({r})\n", f.path)),
            None => s.push_str(&format!("  {what} {}\n", f.path)),
        }
    }
    if out.files.is_empty() {
        s.push_str("  nothing to revert\n");
    }
    if let Some(b) = &out.backup {
        s.push_str(&format!(
            "  backup {} (`git agent-rewind undo` brings the previous state back)\n",
            short(&b.commit)
        ));
    }
    s.trim_end().to_string()
}

pub fn undone(o: &ops::undo::UndoOutcome) -> String {
    let mut s = format!("restored the state before: {}\n", o.restored.reason);
    if o.active_restored && o.active_run != o.active_run_before {
        s.push_str(&format!(
            "  active run: {} (was {})\n",
            o.active_run.as_deref().unwrap_or("none"),
            o.active_run_before.as_deref().unwrap_or("none")
        ));
    }
    for r in &o.unarchived {
        s.push_str(&format!("  run {r} is no longer archived\n"));
    }
    for r in &o.archived {
        s.push_str(&format!(
            "  run {r} archived, not deleted (`git agent-rewind delete {r}` removes it)\n"
        ));
    }
    if let Some(b) = &o.branch_left {
        s.push_str(&format!(
            "  branch {b} kept (`git branch -D {b}` removes it)\n"
        ));
    }
    s.push_str(&format!(
        "  backup of the state just replaced: {} (`git agent-rewind undo` brings it back)",
        short(&o.backup.commit)
    ));
    let left = left_in_place(&o.backup.left_in_place);
    if !left.is_empty() {
        s.push('\n');
        s.push_str(left.trim_end());
    }
    s
}
