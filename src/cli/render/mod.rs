//! Human rendering: tables and summaries, coloured when the command decided so (git's
//! rules: `crate::cli::color`).

use agent_rewind::catalog::Checkpoint;
use agent_rewind::journal::Recorded;
use agent_rewind::model::NoteLine;
use agent_rewind::ops;

mod runreport;
mod terminal;
pub mod usage;
mod writes;

pub use runreport::run_report;
pub use terminal::*;
use terminal::{CLOSE, OPEN, multiline};
pub use writes::*;

pub struct Style {
    pub(super) color: bool,
}

impl Style {
    /// No colour.
    pub fn plain() -> Style {
        Style { color: false }
    }
    /// Colour as the command decided (`--color`, git config: `crate::cli::color`).
    pub fn colored(color: bool) -> Style {
        Style { color }
    }
    /// `s` in colour `code`, as marks that [`terminal_safe`] turns into the escape sequence
    /// (so that only our own colour codes ever reach the terminal).
    pub fn paint(&self, code: &str, s: &str) -> String {
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

/// A time as `list` shows it: relative to now ("3 min ago"), the date when far (`--json`
/// keeps the instant).
fn ago(ts: &agent_rewind_core::time::Timestamp) -> String {
    super::listing::ago(ts, super::listing::now())
}

pub fn short(id: &str) -> String {
    id.chars().take(12).collect()
}

fn opt(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("-")
}

/// Left-align columns to their widths (ignoring colour codes).
pub fn table(header: &[&str], rows: Vec<Vec<(String, String)>>) -> String {
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
    // A TOKENS column (all four counts of a turn's usage) only for a run that has usage.
    let tokens = cps.iter().any(|c| !c.line().usage.is_empty());
    let rows = cps
        .iter()
        .map(|c| {
            let l = c.line();
            let used = (!l.usage.is_empty()).then(|| l.usage.total().total().to_string());
            let mut row = vec![
                cell(l.seq.to_string()),
                cell(opt(&l.step)),
                cell(l.attempt.to_string()),
                cell(l.event.to_string()),
                styled(
                    c.status()
                        .map(|s| s.to_string())
                        .unwrap_or_else(|| "-".into())
                        + if c.note.worker_exited() {
                            " (worker exited)"
                        } else {
                            ""
                        },
                    |s| st.status(s),
                ),
                cell(
                    l.step_kind
                        .map(|k| k.to_string())
                        .unwrap_or_else(|| "-".into()),
                ),
                styled(short(&c.id().to_string()), |s| st.id(s)),
                cell(ago(&l.ts)),
            ];
            if tokens {
                row.push(cell(used.unwrap_or_else(|| "-".into())));
            }
            row
        })
        .collect();
    let mut header = vec![
        "SEQ", "STEP", "ATTEMPT", "EVENT", "STATUS", "KIND", "COMMIT", "TIME",
    ];
    if tokens {
        header.push("TOKENS");
    }
    table(&header, rows)
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
            agent_rewind_core::quote::display_text_path(&e.path),
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
    kv("time", format!("{} ({})", ago(&l.ts), l.ts));
    kv("writer", escape(&l.writer).into_owned());
    kv(
        "signed",
        match &sh.signature {
            None => "no".into(),
            Some(g) => escape(&g.summary()).into_owned(),
        },
    );
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
    for (k, v) in sh.usage.iter().flat_map(usage::shown) {
        kv(&k, v);
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
                agent_rewind_core::quote::display_text_path(&e.path),
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
            st.dim(&ago(&l.ts))
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
        if let Some(p) = &l.picked_from {
            s.push_str(&format!(
                "  └─ picked from run {}{} ({}..{})\n",
                p.run,
                p.step
                    .as_ref()
                    .map(|step| format!(", step {step}"))
                    .unwrap_or_default(),
                short(&p.from),
                short(&p.to)
            ));
        }
    }
    s.trim_end().to_string()
}

/// How a tree of runs is drawn.
#[derive(Clone, Copy)]
pub struct GraphShape {
    /// Subtrees of archived runs only are folded into one line that counts them.
    pub fold_archived: bool,
}

/// One tree of runs (`log --graph`): each run with its state and where it came from, the
/// active run of this worktree marked `*`.
pub fn graph(node: &ops::log::LineageNode, shape: GraphShape, st: &Style) -> String {
    let mut out = String::new();
    graph_walk(node, "", true, true, shape, st, &mut out);
    out.trim_end().to_string()
}

/// Every tree of runs (`log --graph` with no run named), as `git log --graph --all`: the
/// trees one after the other, and how many archived runs were folded.
pub fn forest(trees: &[ops::log::LineageNode], shape: GraphShape, st: &Style) -> String {
    if trees.is_empty() {
        return "no runs (start one with `git agent-rewind start`)".into();
    }
    let mut out = String::new();
    let mut folded = 0;
    for t in trees {
        if shape.fold_archived && t.all_archived() {
            folded += t.runs();
            continue;
        }
        graph_walk(t, "", true, true, shape, st, &mut out);
    }
    if folded > 0 {
        out.push_str(&format!(
            "{}\n",
            st.dim(&format!(
                "{folded} archived run{} in trees of their own folded (`git agent-rewind log --graph --all` shows {})",
                if folded == 1 { "" } else { "s" },
                if folded == 1 { "it" } else { "them" }
            ))
        ));
    }
    out.trim_end().to_string()
}

fn graph_walk(
    n: &ops::log::LineageNode,
    prefix: &str,
    last: bool,
    top: bool,
    shape: GraphShape,
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
    let mark = if s.active {
        format!(" {}", st.paint("32", "*"))
    } else {
        String::new()
    };
    out.push_str(&format!(
        "{prefix}{branch}{}{mark} [{}]{}{}\n",
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
    let (shown, folded): (Vec<_>, Vec<_>) = n
        .children
        .iter()
        .partition(|c| !(shape.fold_archived && c.all_archived()));
    let folded: usize = folded.iter().map(|c| c.runs()).sum();
    for (i, c) in shown.iter().enumerate() {
        let last = i + 1 == shown.len() && folded == 0;
        graph_walk(c, &child_prefix, last, false, shape, st, out);
    }
    if folded > 0 {
        out.push_str(&format!(
            "{child_prefix}└─ {}\n",
            st.dim(&format!(
                "{folded} archived run{} folded",
                if folded == 1 { "" } else { "s" }
            ))
        ));
    }
}

pub fn status(r: &ops::status::RunStatus, st: &Style) -> String {
    let l = r.last.line();
    let mut s = format!(
        "active run {} [{}]{}\n",
        st.run_id(&r.summary.run, r.summary.unique_prefix),
        if r.runner_gone {
            format!("{} (runner gone)", st.status(&r.summary.status))
        } else {
            st.status(&r.summary.status)
        },
        r.summary
            .label
            .as_ref()
            .map(|x| format!(" {}", quoted(x)))
            .unwrap_or_default()
    );
    s.push_str(&format!(
        "last checkpoint {} @{} {} {} {}\n",
        st.id(&short(&r.last.id().to_string())),
        l.seq,
        opt(&l.step),
        l.event,
        ago(&l.ts)
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
