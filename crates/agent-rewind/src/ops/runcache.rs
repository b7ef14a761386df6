//! The summary cache of `list` (`runs.lines`, in the private envelope `RUNS_CACHE`: its
//! header line, the lines, its checksum line): one line per run, sorted by run id, holding what the refs cannot give already as the JSON that
//! `list --json` prints, so a warm `list` neither parses nor serializes a summary. Owns the
//! line format and the JSON of a listed run; never decides whether a line is current (that
//! is `list`'s comparison of the line's HEAD and notes tip with the refs) and never runs git.
//!
//! A line: `<run> TAB <HEAD> TAB <notes tip or -> TAB <last activity, ns since the epoch>
//! TAB <archived: 0 or 1> TAB <A> TAB <B> TAB <C> TAB <the workflow's step order, comma
//! separated, or ->` (step names hold no comma), where A, B and C are the members of a
//! run's JSON object that sit between the ones taken from the refs:
//! `{"run", A = "label","status","archived", "steps", B = "checkpoints","last_activity",
//! "head", C = "rewound_from","forked_from"[,"reverted"], "unique_prefix", "active"}`
//! (the last two are `list`'s, never cached). Compact JSON
//! never holds a raw TAB or newline, so the fields split unambiguously.

use crate::catalog::RunSummary;
use serde::{Deserialize, Serialize};
use std::io::Write;

/// What the cache keeps of a summary (A, B and C together): what cannot be read from the
/// refs (the run id, HEAD, steps and unique prefix can).
#[derive(Serialize, Deserialize)]
struct Cached {
    label: Option<String>,
    status: String,
    archived: bool,
    checkpoints: u64,
    last_activity: agent_rewind_core::time::Timestamp,
    rewound_from: Option<crate::model::LineageLink>,
    forked_from: Option<crate::model::LineageLink>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    reverted: bool,
}

/// A cache line split into its fields (borrowed from the line).
pub(super) struct Fields<'a> {
    pub run: &'a str,
    pub head: &'a str,
    /// `-` when the run has no notes ref.
    pub notes: &'a str,
    pub key: i128,
    pub archived: bool,
    a: &'a str,
    b: &'a str,
    c: &'a str,
    /// The workflow's step names in order, comma separated; `-` without a workflow.
    pub order: &'a str,
}

impl Fields<'_> {
    /// The workflow's step names in order (none without a workflow).
    pub fn step_order(&self) -> impl Iterator<Item = &str> {
        self.order.split(',').filter(|s| !s.is_empty() && *s != "-")
    }
}

/// The fields of one line (without its newline); `None` when malformed.
pub(super) fn split(line: &str) -> Option<Fields<'_>> {
    let mut p = line.split('\t');
    let f = Fields {
        run: p.next()?,
        head: p.next()?,
        notes: p.next()?,
        key: p.next()?.parse().ok()?,
        archived: match p.next()? {
            "0" => false,
            "1" => true,
            _ => return None,
        },
        a: p.next()?,
        b: p.next()?,
        c: p.next()?,
        order: p.next()?,
    };
    (p.next().is_none() && !f.run.is_empty()).then_some(f)
}

/// The sort key of a summary: its last activity in nanoseconds.
fn key(s: &RunSummary) -> i128 {
    s.last_activity.as_nanosecond()
}

/// The line of a freshly computed summary (HEAD and notes tip as hex, notes `-` if none).
pub(super) fn line_of(s: &RunSummary, head: &str, notes: &str) -> String {
    let mut out = Vec::with_capacity(256);
    let _ = write!(
        out,
        "{}\t{head}\t{notes}\t{}\t{}\t",
        s.run,
        key(s),
        u8::from(s.archived)
    );
    out.extend_from_slice(b"\"label\":");
    json(&s.label, &mut out);
    out.extend_from_slice(b",\"status\":");
    json(&s.status, &mut out);
    out.extend_from_slice(b",\"archived\":");
    json(&s.archived, &mut out);
    out.extend_from_slice(b"\t\"checkpoints\":");
    json(&s.checkpoints, &mut out);
    out.extend_from_slice(b",\"last_activity\":");
    json(&s.last_activity, &mut out);
    out.extend_from_slice(b"\t\"rewound_from\":");
    json(&s.rewound_from, &mut out);
    out.extend_from_slice(b",\"forked_from\":");
    json(&s.forked_from, &mut out);
    if s.reverted {
        out.extend_from_slice(b",\"reverted\":true");
    }
    out.push(b'\t');
    if s.step_order.is_empty() {
        out.push(b'-');
    } else {
        out.extend_from_slice(s.step_order.join(",").as_bytes());
    }
    let mut line = String::from_utf8(out).expect("JSON and hex are UTF-8");
    // A first `list` holds 100,000 of these: not at twice their length.
    line.shrink_to_fit();
    line
}

/// `v` as compact JSON at the end of `out`.
fn json<T: Serialize + ?Sized>(v: &T, out: &mut Vec<u8>) {
    // Our summaries always serialize (strings, numbers, plain structs).
    let _ = serde_json::to_writer(out, v);
}

/// The JSON object of a listed run, as `list --json` prints it.
pub(super) fn write_json(
    w: &mut dyn Write,
    f: &Fields<'_>,
    steps: &[String],
    unique_prefix: usize,
    active: bool,
) -> std::io::Result<()> {
    w.write_all(b"{\"run\":")?;
    serde_json::to_writer(&mut *w, f.run)?;
    w.write_all(b",")?;
    w.write_all(f.a.as_bytes())?;
    w.write_all(b",\"steps\":")?;
    serde_json::to_writer(&mut *w, steps)?;
    w.write_all(b",")?;
    w.write_all(f.b.as_bytes())?;
    write!(w, ",\"head\":\"{}\",", f.head)?;
    w.write_all(f.c.as_bytes())?;
    write!(
        w,
        ",\"unique_prefix\":{unique_prefix},\"active\":{active}}}"
    )
}

/// The summary a line holds; `None` when its JSON is not ours.
pub(super) fn summary(
    f: &Fields<'_>,
    steps: &[String],
    unique_prefix: usize,
    active: bool,
) -> Option<RunSummary> {
    let doc = format!("{{{},{},{}}}", f.a, f.b, f.c);
    let c: Cached = serde_json::from_str(&doc).ok()?;
    Some(RunSummary {
        run: f.run.to_string(),
        label: c.label,
        status: c.status,
        archived: c.archived,
        steps: steps.to_vec(),
        checkpoints: c.checkpoints,
        last_activity: c.last_activity,
        head: f.head.to_string(),
        rewound_from: c.rewound_from,
        forked_from: c.forked_from,
        reverted: c.reverted,
        unique_prefix,
        active,
        step_order: f.step_order().map(str::to_string).collect(),
    })
}

/// Whether a line read from the file has the shape this version writes (a line that does
/// not is recomputed). The file is only ever written whole, from [`line_of`]'s lines; its
/// HEAD and notes are checked by the caller against the refs' ids.
pub(super) fn valid(f: &Fields<'_>) -> bool {
    f.a.starts_with("\"label\":")
        && f.b.starts_with("\"checkpoints\":")
        && f.c.starts_with("\"rewound_from\":")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::LineageLink;
    use agent_rewind_core::time::Timestamp;

    fn sample(label: Option<&str>, reverted: bool, lineage: bool) -> RunSummary {
        let link = LineageLink {
            run: "r\"1".into(),
            step: Some("s1".into()),
            checkpoint: "abc".into(),
        };
        RunSummary {
            run: "r2".into(),
            label: label.map(str::to_string),
            status: "waiting".into(),
            archived: true,
            steps: vec!["a".into(), "b".into()],
            checkpoints: 3,
            last_activity: Timestamp::parse("2026-03-01T12:00:00.123Z").unwrap(),
            head: "0123456789012345678901234567890123456789".into(),
            rewound_from: lineage.then(|| link.clone()),
            forked_from: lineage.then_some(link),
            reverted,
            unique_prefix: 2,
            active: reverted,
            step_order: if reverted {
                vec!["b".into(), "a".into()]
            } else {
                vec![]
            },
        }
    }

    #[test]
    fn json_matches_the_summary_serialized() {
        for s in [
            sample(None, false, false),
            sample(Some("tab\there \u{7} \"q\""), true, true),
        ] {
            let line = line_of(&s, &s.head, "-");
            assert!(!line.contains('\n'));
            let f = split(&line).expect("splits");
            assert!(valid(&f));
            let mut out = Vec::new();
            write_json(&mut out, &f, &s.steps, s.unique_prefix, s.active).unwrap();
            // Same members, same values, same order as serde's serialization.
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(&s).unwrap()
            );
            let back = summary(&f, &s.steps, s.unique_prefix, s.active).unwrap();
            assert_eq!(
                serde_json::to_value(&back).unwrap(),
                serde_json::to_value(&s).unwrap()
            );
            assert_eq!(f.key, s.last_activity.as_nanosecond());
            assert!(f.archived);
        }
    }

    #[test]
    fn malformed_lines_do_not_split() {
        assert!(split("r1\tabc").is_none());
        assert!(split("r1\th\t-\tx\t0\ta\tb\tc\t-").is_none());
        assert!(split("r1\th\t-\t1\t2\ta\tb\tc\t-").is_none());
        assert!(split("r1\th\t-\t1\t0\ta\tb\tc").is_none(), "no step order");
        assert!(split("r1\th\t-\t1\t0\ta\tb\tc\t-\td").is_none());
        assert!(split("r1\th\t-\t1\t0\ta\tb\tc\t-").is_some());
    }
}
