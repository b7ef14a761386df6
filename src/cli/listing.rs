//! `list`'s table of runs: one line per run, cut to the terminal's width (labels, steps and
//! lineage are cut, never the run id), times relative to now, and how many archived runs
//! are hidden.

use super::render::{Style, escape, link};
use agent_rewind::catalog::RunSummary;
use agent_rewind::time::Timestamp;
use std::io::IsTerminal;

/// The width to fit: `COLUMNS`, else the terminal's (stdout); `None` when not a terminal.
pub fn terminal_width() -> Option<usize> {
    if let Some(n) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
    {
        return Some(n);
    }
    if !std::io::stdout().is_terminal() {
        return None;
    }
    #[cfg(unix)]
    {
        rustix::termios::tcgetwinsize(std::io::stdout())
            .ok()
            .map(|w| w.ws_col as usize)
            .filter(|n| *n > 0)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// `3 min ago`, `2 hours ago`, `5 days ago`; the date beyond ~2 months or in the future.
pub fn ago(ts: &Timestamp, now: i64) -> String {
    let date = || ts.to_string().chars().take(10).collect::<String>();
    let d = now - ts.as_second();
    let plural = |n: i64, unit: &str| format!("{n} {unit}{} ago", if n == 1 { "" } else { "s" });
    match d {
        d if d < -60 => date(),
        d if d < 45 => "just now".into(),
        d if d < 90 => "1 min ago".into(),
        d if d < 3600 => format!("{} min ago", (d + 30) / 60),
        d if d < 2 * 3600 => "1 hour ago".into(),
        d if d < 36 * 3600 => plural((d + 1800) / 3600, "hour"),
        d if d < 14 * 86_400 => plural((d + 43_200) / 86_400, "day"),
        d if d < 60 * 86_400 => plural((d + 302_400) / 604_800, "week"),
        _ => date(),
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// `s` cut to `w` characters, with `…` as the last one when cut.
fn cut(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n <= w {
        return s.to_string();
    }
    if w == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(w - 1).collect();
    out.push('…');
    out
}

const HEADER: [&str; 7] = [
    "RUN", "STATUS", "CKPTS", "STEPS", "ACTIVITY", "LABEL", "LINEAGE",
];
/// Columns that may be cut, in the order they give way, with the width they keep.
const FLEXIBLE: [(usize, usize); 3] = [(6, 0), (3, 8), (5, 8)];

pub fn runs_table(runs: &[RunSummary], hidden: usize, width: Option<usize>, st: &Style) -> String {
    let footer = match hidden {
        0 => String::new(),
        n => format!(
            "{n} archived run{} hidden (`git agent-rewind list --all` shows {})",
            if n == 1 { "" } else { "s" },
            if n == 1 { "it" } else { "them" }
        ),
    };
    if runs.is_empty() {
        let none = "no runs (start one with `git agent-rewind start`)".to_string();
        return if footer.is_empty() {
            none
        } else {
            format!("no active runs; {footer}")
        };
    }
    let now = now();
    let rows: Vec<[String; 7]> = runs
        .iter()
        .map(|r| {
            let lineage = match (&r.rewound_from, &r.forked_from) {
                (Some(l), _) => format!("rewound from {}", link(l)),
                (_, Some(l)) => format!("forked from {}", link(l)),
                _ => "-".into(),
            };
            [
                escape(&r.run).into_owned(),
                if r.reverted {
                    format!("{}, reverted", r.status)
                } else {
                    r.status.clone()
                },
                r.checkpoints.to_string(),
                if r.steps.is_empty() {
                    "-".into()
                } else {
                    escape(&r.steps.join(",")).into_owned()
                },
                ago(&r.last_activity, now),
                r.label
                    .as_deref()
                    .map(|l| escape(l).into_owned())
                    .unwrap_or_else(|| "-".into()),
                escape(&lineage).into_owned(),
            ]
        })
        .collect();
    let mut w: Vec<usize> = HEADER.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    if let Some(max) = width {
        let total = |w: &[usize]| {
            w.iter().filter(|x| **x > 0).sum::<usize>()
                + 2 * (w.iter().filter(|x| **x > 0).count() - 1)
        };
        for (col, keep) in FLEXIBLE {
            let over = total(&w).saturating_sub(max);
            if over == 0 {
                break;
            }
            if keep == 0 && w[col] <= over + 2 {
                w[col] = 0; // the whole column goes
            } else {
                w[col] = w[col].saturating_sub(over).max(keep.min(w[col]));
            }
        }
    }
    let line = |cells: Vec<(String, String)>| {
        let mut s = String::new();
        for (i, (plain, shown)) in cells.into_iter().enumerate() {
            if w[i] == 0 {
                continue;
            }
            if !s.is_empty() {
                s.push_str("  ");
            }
            s.push_str(&shown);
            s.push_str(&" ".repeat(w[i].saturating_sub(plain.chars().count())));
        }
        s.trim_end().to_string()
    };
    let mut out = vec![line(
        HEADER
            .iter()
            .enumerate()
            .map(|(i, h)| (cut(h, w[i]), cut(h, w[i])))
            .collect(),
    )];
    let prefixes: Vec<usize> = runs.iter().map(|r| r.unique_prefix).collect();
    for (row, r) in rows.into_iter().enumerate() {
        let cells = r
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                let plain = cut(&c, w[i]);
                let shown = match i {
                    0 => st.run_id(&plain, prefixes[row]),
                    1 => st.status(&plain),
                    _ => plain.clone(),
                };
                (plain, shown)
            })
            .collect();
        out.push(line(cells));
    }
    if !footer.is_empty() {
        out.push(footer);
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_times() {
        let ts = Timestamp::parse("2026-03-01T12:00:00Z").unwrap();
        let at = |secs: i64| ago(&ts, ts.as_second() + secs);
        assert_eq!(at(10), "just now");
        assert_eq!(at(180), "3 min ago");
        assert_eq!(at(3 * 3600), "3 hours ago");
        assert_eq!(at(86_400 * 3), "3 days ago");
        assert_eq!(at(86_400 * 21), "3 weeks ago");
        assert_eq!(at(86_400 * 400), "2026-03-01");
        assert_eq!(at(-3600), "2026-03-01");
    }

    #[test]
    fn cut_keeps_the_width() {
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
        assert_eq!(cut("abc", 0), "");
    }
}
