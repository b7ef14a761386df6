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
    /// `s` in colour `code`, as marks that [`terminal_safe`] turns into the escape sequence
    /// (so that only our own colour codes ever reach the terminal).
    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("{OPEN}{code}{CLOSE}{s}{OPEN}0{CLOSE}")
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

/// A label in double quotes (escaped as [`escape`] does when it holds control characters).
pub fn quoted(s: &str) -> String {
    match escape(s) {
        std::borrow::Cow::Borrowed(s) => format!("\"{s}\""),
        std::borrow::Cow::Owned(q) => q,
    }
}

/// Free text of several lines (a message) for `show`'s `key: value` layout: each line
/// escaped, continuation lines indented under the value so none can pass for a field.
fn multiline(s: &str) -> String {
    s.lines()
        .map(|l| escape(l).into_owned())
        .collect::<Vec<_>>()
        .join(&format!("\n{:14}", ""))
}

/// C0/C1 controls and DEL, the bidirectional overrides that reorder what a terminal shows,
/// and our colour marks.
fn is_control(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | OPEN | CLOSE)
}

/// The marks of a colour code (`OPEN 33 CLOSE`): private-use characters that fields never
/// carry unescaped.
const OPEN: char = '\u{e000}';
const CLOSE: char = '\u{e001}';

/// Text on its way to the terminal: every control character escaped (line breaks and tabs
/// kept), whatever field or library message it came from, and our colour marks made real
/// colour codes. The last guard: fields are escaped (`escape`) where they are rendered too.
pub fn terminal_safe(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if c == OPEN
            && let Some(end) = rest.find(CLOSE)
            && rest[OPEN.len_utf8()..end]
                .chars()
                .all(|d| d.is_ascii_digit() || d == ';')
        {
            out.push_str("\x1b[");
            out.push_str(&rest[OPEN.len_utf8()..end]);
            out.push('m');
            rest = &rest[end + CLOSE.len_utf8()..];
            continue;
        }
        match c {
            '\n' | '\t' => out.push(c),
            c => push_escaped(&mut out, c),
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Colour codes (`ESC [ 1;31 m`) of git's own output as our marks, so that they survive
/// [`terminal_safe`] while every other escape sequence is shown, not obeyed.
pub fn colour_marks(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("\x1b[") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let n = after
            .find(|c: char| !(c.is_ascii_digit() || c == ';'))
            .unwrap_or(after.len());
        if after[n..].starts_with('m') {
            out.push(OPEN);
            out.push_str(&after[..n]);
            out.push(CLOSE);
            rest = &after[n + 1..];
        } else {
            out.push('\x1b');
            rest = &rest[i + 1..];
        }
    }
    out.push_str(rest);
    out
}

/// A warning on stderr, terminal-safe.
pub fn warn(msg: &str) {
    eprintln!("warning: {}", terminal_safe(msg));
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
    kv("writer", escape(&l.writer).into_owned());
    kv(
        "git commit",
        format!(
            "{} {}",
            l.git_commit_sha.as_deref().map(short).unwrap_or("-".into()),
            escape(opt(&l.head_ref))
        ),
    );
    if let Some(x) = &l.sdk_session_id {
        kv(
            "session",
            match &l.agent {
                Some(a) => format!("{} ({a})", escape(x)),
                None => escape(x).into_owned(),
            },
        );
    }
    if !l.touched.is_empty() {
        kv("touched", escape(&l.touched.join(" ")).into_owned());
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
        kv("message", multiline(m));
    }
    if let Some(n) = &l.next_action {
        kv("next action", escape(n).into_owned());
    }
    for (k, v) in &l.meta {
        kv(&format!("meta.{}", escape(k)), escape(v).into_owned());
    }
    for a in &l.artifacts {
        kv(
            "artifact",
            match (&a.path, &a.uri) {
                (Some(p), _) => format!(
                    "{} {}",
                    escape(p),
                    a.oid.as_deref().map(short).unwrap_or_default()
                ),
                (_, Some(u)) => format!(
                    "{} {}",
                    escape(u),
                    escape(a.digest.as_deref().unwrap_or_default())
                ),
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
                .map(|l| format!(" {}", quoted(l)))
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
            .map(|x| format!(" {}", quoted(x)))
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
        s.push_str(&format!(
            "unfinished steps: {}\n",
            escape(&r.unfinished.join(", "))
        ));
    }
    if let Some(r) = &r.resume {
        s.push_str(&format!("resume {}: {}\n", r.agent, escape(&r.command)));
    }
    s.push_str(&format!("next: {}", escape(&r.next_action)));
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
        s.push_str(&format!("  branch    {}\n", escape(b)));
    }
    if let Some(w) = &o.worktree {
        s.push_str(&format!("  worktree  {}\n", escape(w)));
    }
    s.push_str(&format!(
        "  session   {}\n",
        escape(o.sdk_session_id.as_deref().unwrap_or("-"))
    ));
    if let Some(c) = &o.resume_command {
        s.push_str(&format!("  resume    {}\n", escape(c)));
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
        s.push_str(&format!("  edit       {}\n", escape(e)));
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
            Some(r) => s.push_str(&format!("  {what} {} ({r})\n", escape(&f.path))),
            None => s.push_str(&format!("  {what} {}\n", escape(&f.path))),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_as_git_quotes_paths() {
        assert_eq!(escape("plain label"), "plain label");
        assert_eq!(escape("a\"b\\c"), "a\"b\\c");
        assert_eq!(escape("a\tb\"c\\"), "\"a\\tb\\\"c\\\\\"");
        assert_eq!(escape("a\x1b[2Jb"), "\"a\\033[2Jb\"");
        assert_eq!(escape("t\x07\r\n"), "\"t\\a\\r\\n\"");
        assert_eq!(escape("q\"\x1b"), "\"q\\\"\\033\"");
        assert_eq!(escape("\u{202e}x"), "\"\\342\\200\\256x\"");
        assert_eq!(quoted("x"), "\"x\"");
        assert_eq!(quoted("x\x1b"), "\"x\\033\"");
    }

    #[test]
    fn only_our_colour_marks_become_escape_sequences() {
        let st = Style { color: true };
        assert_eq!(terminal_safe(&st.id("r1")), "\x1b[33mr1\x1b[0m");
        assert_eq!(terminal_safe("a\x1b]0;t\x07\nb\tc"), "a\\033]0;t\\a\nb\tc");
        // A mark smuggled in a field is escaped by `escape` before it gets here.
        assert!(!terminal_safe(&escape("\u{e000}31\u{e001}x")).contains('\x1b'));
        let git = "\x1b[1mdiff\x1b[m \x1b[32m+x\x1b]0;t\x07\x1b[m";
        assert_eq!(
            terminal_safe(&colour_marks(git)),
            "\x1b[1mdiff\x1b[m \x1b[32m+x\\033]0;t\\a\x1b[m"
        );
    }
}
