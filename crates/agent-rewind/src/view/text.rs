//! The tree of runs as text for a pull request: Mermaid (`flowchart`) and Graphviz (`dot`).
//! Each run is a subgraph (a lane), each checkpoint a node, rewinds and forks dashed edges
//! from the source checkpoint.
//!
//! Identifiers are generated (`r0`, `c12`); labels are escaped for each language so nothing
//! read from a note can end a string, add a node or inject markup.

use crate::ops::view::{EdgeKind, ViewModel};
use std::fmt::Write;

fn status_class(s: Option<crate::model::Status>) -> &'static str {
    s.map_or("none", |s| s.as_str())
}

const COLOURS: &[(&str, &str)] = &[
    ("completed", "#b2f2bb"),
    ("failed", "#ffc9c9"),
    ("running", "#a5d8ff"),
    ("awaiting_approval", "#eebefa"),
    ("interrupted", "#ffd8a8"),
    ("skipped", "#e9ecef"),
    ("pending", "#e9ecef"),
    ("none", "#f1f3f5"),
];

fn node_text(model: &ViewModel, i: usize) -> String {
    let l = model.checkpoints[i].checkpoint.line();
    format!(
        "{} @{}",
        l.step.as_deref().unwrap_or(l.event.as_str()),
        l.seq
    )
}

fn run_text(model: &ViewModel, r: usize) -> String {
    let s = &model.runs[r].summary;
    match &s.label {
        Some(l) => format!("{} · {} · {}", s.run, l, s.status),
        None => format!("{} · {}", s.run, s.status),
    }
}

fn relation(kind: EdgeKind) -> &'static str {
    match kind {
        EdgeKind::Chain => "",
        EdgeKind::Rewound => "rewound",
        EdgeKind::Forked => "forked",
    }
}

/// A Mermaid label: everything but plain letters, digits and a few safe marks becomes an
/// entity code (`#60;`), so quotes, brackets, pipes, backticks and markup stay text.
pub fn mermaid_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_alphanumeric() || " ._:/@-·+,".contains(c) {
            out.push(c);
        } else if c.is_control() {
            out.push(' ');
        } else {
            let _ = write!(out, "#{};", c as u32);
        }
    }
    out
}

pub fn mermaid(model: &ViewModel) -> String {
    let mut out = String::from("flowchart LR\n");
    for (class, colour) in COLOURS {
        let _ = writeln!(out, "  classDef {class} fill:{colour},stroke:#495057");
    }
    for (r, run) in model.runs.iter().enumerate() {
        let _ = writeln!(
            out,
            "  subgraph lane{r}[\"{}\"]\n    direction LR",
            mermaid_escape(&run_text(model, r))
        );
        for &i in &run.checkpoints {
            let _ = writeln!(
                out,
                "    c{i}([\"{}\"]):::{}",
                mermaid_escape(&node_text(model, i)),
                status_class(model.checkpoints[i].checkpoint.status())
            );
        }
        let _ = writeln!(out, "  end");
    }
    for e in &model.edges {
        match e.kind {
            EdgeKind::Chain => {
                let _ = writeln!(out, "  c{} --> c{}", e.from, e.to);
            }
            k => {
                let _ = writeln!(out, "  c{} -. {} .-> c{}", e.from, relation(k), e.to);
            }
        }
    }
    out
}

/// A Graphviz double-quoted string's content.
pub fn dot_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

pub fn dot(model: &ViewModel) -> String {
    let mut out = String::from(
        "digraph agent_runs {\n  rankdir=LR;\n  node [shape=box, style=\"rounded,filled\", fontname=\"sans-serif\", fontsize=10];\n",
    );
    for (r, run) in model.runs.iter().enumerate() {
        let _ = writeln!(
            out,
            "  subgraph cluster_r{r} {{\n    label=\"{}\";",
            dot_escape(&run_text(model, r))
        );
        for &i in &run.checkpoints {
            let class = status_class(model.checkpoints[i].checkpoint.status());
            let colour = COLOURS
                .iter()
                .find(|(c, _)| *c == class)
                .map_or("#f1f3f5", |(_, c)| c);
            let _ = writeln!(
                out,
                "    c{i} [label=\"{}\", fillcolor=\"{colour}\", tooltip=\"{}\"];",
                dot_escape(&node_text(model, i)),
                model.checkpoints[i].checkpoint.id()
            );
        }
        let _ = writeln!(out, "  }}");
    }
    for e in &model.edges {
        match e.kind {
            EdgeKind::Chain => {
                let _ = writeln!(out, "  c{} -> c{};", e.from, e.to);
            }
            k => {
                let _ = writeln!(
                    out,
                    "  c{} -> c{} [style=dashed, label=\"{}\"];",
                    e.from,
                    e.to,
                    relation(k)
                );
            }
        }
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_cannot_escape_their_strings() {
        let hostile = "a\"]) --> x[\"<img src=x onerror=alert(1)>`|\n";
        let m = mermaid_escape(hostile);
        assert!(
            !m.contains(['"', '[', ']', '<', '>', '`', '|', '\n', '(', ')']),
            "{m}"
        );
        let d = dot_escape(hostile);
        assert!(!d.contains('\n'));
        // Every quote is escaped.
        assert_eq!(d.matches("\\\"").count(), hostile.matches('"').count());
    }
}
