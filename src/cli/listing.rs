//! `list`'s table of runs: one line per run, cut to the terminal's width (labels, steps and
//! lineage are cut, never the run id), the active run of this worktree marked `*` as `git
//! branch` marks the branch checked out, times relative to now, and how many archived runs
//! are hidden.

use super::render::{Style, escape, link};
use agent_rewind::catalog::RunSummary;
use agent_rewind_core::error::Result;
use agent_rewind_core::time::Timestamp;
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
    let date = || ts.utc_date();
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

/// Seconds since the epoch now.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// What starts each line: `* ` for the active run of this worktree, else two spaces.
const MARK_WIDTH: usize = 2;
const MARK_GAP: &str = " ";
const NO_MARK: &str = "  ";

/// `s` cut to `w` characters, with `…` as the last one when cut.
pub fn cut(s: &str, w: usize) -> String {
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
/// Columns that may be cut, in the order they give way, with the width they keep: the
/// label and the steps first, then the lineage down to what names its kind and the start
/// of the run it came from; only a terminal too narrow even for that loses the lineage.
const FLEXIBLE: [(usize, usize); 4] = [(5, 8), (3, 8), (6, LINEAGE_KEEP), (6, 0)];
/// `forked from 01j…`: wide enough to tell the kind and the start of the source run.
const LINEAGE_KEEP: usize = 17;

/// The seven cells of a run's line, escaped for the terminal, before any cutting.
fn cells(r: &RunSummary, now: i64) -> [std::borrow::Cow<'_, str>; 7] {
    use std::borrow::Cow;
    let lineage = match (&r.rewound_from, &r.forked_from) {
        (Some(l), _) => Cow::Owned(escape(&format!("rewound from {}", link(l))).into_owned()),
        (_, Some(l)) => Cow::Owned(escape(&format!("forked from {}", link(l))).into_owned()),
        _ => Cow::Borrowed("-"),
    };
    [
        escape(&r.run),
        if r.reverted {
            Cow::Owned(format!("{}, reverted", r.status))
        } else {
            Cow::Borrowed(r.status.as_str())
        },
        Cow::Owned(r.checkpoints.to_string()),
        if r.steps.is_empty() {
            Cow::Borrowed("-")
        } else {
            Cow::Owned(escape(&r.steps.join(",")).into_owned())
        },
        Cow::Owned(ago(&r.last_activity, now)),
        r.label.as_deref().map_or(Cow::Borrowed("-"), escape),
        lineage,
    ]
}

/// Where the next cell starts in the table's buffer of cells.
fn offset(text: &str) -> Result<u32> {
    u32::try_from(text.len()).map_err(|_| {
        agent_rewind_core::error::Error::other("the table of runs is larger than 4 GiB")
    })
}

/// The table of `runs`.
pub fn runs_table<I>(runs: I, hidden: usize, width: Option<usize>, st: &Style) -> Result<String>
where
    I: Iterator<Item = Result<RunSummary>>,
{
    let footer = match hidden {
        0 => String::new(),
        n => format!(
            "{n} archived run{} hidden (`git agent-rewind list --all` shows {})",
            if n == 1 { "" } else { "s" },
            if n == 1 { "it" } else { "them" }
        ),
    };
    let now = now();
    // Each run's cells are made once, their widths taken, and kept in one buffer for the
    // lines (a String per cell would hold several times the memory with 100,000 runs;
    // making them again would parse every summary twice).
    let mut w: Vec<usize> = HEADER.iter().map(|h| h.chars().count()).collect();
    let mut text = String::new();
    let mut starts: Vec<u32> = Vec::new();
    let mut prefixes: Vec<u16> = Vec::new();
    let mut active: Option<usize> = None;
    for r in runs {
        let r = r?;
        for (i, c) in cells(&r, now).iter().enumerate() {
            starts.push(offset(&text)?);
            text.push_str(c);
            w[i] = w[i].max(c.chars().count());
        }
        if r.active {
            active = Some(prefixes.len());
        }
        prefixes.push(u16::try_from(r.unique_prefix).unwrap_or(u16::MAX));
    }
    let count = prefixes.len();
    starts.push(offset(&text)?);
    if count == 0 {
        let none = "no runs (start one with `git agent-rewind start`)".to_string();
        return Ok(if footer.is_empty() {
            none
        } else {
            format!("no active runs; {footer}")
        });
    }
    if let Some(max) = width.map(|m| m.saturating_sub(MARK_WIDTH)) {
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
    // One buffer for the whole table: with 100,000 runs, a String per cell and per line
    // costs more than everything else `list` does.
    let mut out = String::with_capacity((count + 2) * 96);
    let cell = |out: &mut String, i: usize, text: &str, style: Option<&dyn Fn(&str) -> String>| {
        if w[i] == 0 {
            return;
        }
        // The run id, first, is never dropped: every other cell follows one.
        if i > 0 {
            out.push_str("  ");
        }
        let n = text.chars().count();
        let cut_text;
        let (plain, n) = if n > w[i] {
            cut_text = cut(text, w[i]);
            (cut_text.as_str(), w[i])
        } else {
            (text, n)
        };
        match style {
            Some(paint) => out.push_str(&paint(plain)),
            None => out.push_str(plain),
        }
        out.extend(std::iter::repeat_n(' ', w[i] - n));
    };
    let end_line = |out: &mut String| {
        let kept = out.trim_end_matches(' ').len();
        out.truncate(kept);
        out.push('\n');
    };
    out.push_str(NO_MARK);
    for (i, h) in HEADER.iter().enumerate() {
        cell(&mut out, i, h, None);
    }
    end_line(&mut out);
    for (k, prefix) in prefixes.iter().enumerate() {
        let prefix = usize::from(*prefix);
        let run_id = |p: &str| st.run_id(p, prefix);
        let status = |p: &str| st.status(p);
        let at = |i: usize| starts[k * HEADER.len() + i] as usize;
        if active == Some(k) {
            out.push_str(&st.paint("32", "*"));
            out.push_str(MARK_GAP);
        } else {
            out.push_str(NO_MARK);
        }
        for i in 0..HEADER.len() {
            let c = &text[at(i)..at(i + 1)];
            let style: Option<&dyn Fn(&str) -> String> = match i {
                0 => Some(&run_id),
                1 => Some(&status),
                _ => None,
            };
            cell(&mut out, i, c, style);
        }
        end_line(&mut out);
    }
    if footer.is_empty() {
        out.pop();
    } else {
        out.push_str(&footer);
    }
    Ok(out)
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
