//! Presentation of the view model (`ops::view`): one self-contained HTML page, and the tree of
//! runs as Mermaid or Graphviz text ([`text`]).
//!
//! Pure functions from data to text: this module never runs git, never touches the store or
//! the file system, and never trusts the data. The page embeds the model as JSON inside
//! `<script type="application/json">` (every `<`, `>` and `&` escaped, so neither `</script>`
//! nor `<!--` can appear), its own script (`page.js`) builds the DOM with `textContent` only,
//! and a Content-Security-Policy admits exactly that script and stylesheet (by hash) and
//! nothing else — no network, no other code. The page `view --serve` serves may also ask
//! the server that served it (`connect-src 'self'`) for a file's attribution.

pub mod text;

use crate::ops::view::{EdgeKind, ViewModel};
use base64::Engine;
use maud::{DOCTYPE, PreEscaped, html};
use serde_json::{Map, Value, json};
use sha2::Digest;
use std::collections::HashMap;

const SCRIPT: &str = include_str!("page.js");
const STYLE: &str = include_str!("page.css");

/// The `'sha256-…'` source of an inline script or style.
fn csp_hash(text: &str) -> String {
    let digest = sha2::Sha256::digest(text.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// The Content-Security-Policy of the page: only its own inline script and style.
pub fn content_security_policy() -> String {
    format!(
        "default-src 'none'; script-src {}; style-src {}; img-src 'none'; base-uri 'none'; form-action 'none'",
        csp_hash(SCRIPT),
        csp_hash(STYLE)
    )
}

/// The policy of the page `view --serve` serves: the same, and requests to the server that
/// served it (the blame of a file, asked for by a click), nowhere else.
pub fn served_content_security_policy() -> String {
    format!("{}; connect-src 'self'", content_security_policy())
}

/// JSON that is safe inside a `<script>` element: no `<`, `>` or `&` at all (escaped as
/// `\u003c` …, which JSON.parse reads back), so no `</script>` and no `<!--`.
pub fn script_json(v: &Value) -> String {
    let s = serde_json::to_string(v).expect("serializable");
    let mut out = String::with_capacity(s.len() + 64);
    for ch in s.chars() {
        match ch {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// The whole page. `title` names the repository.
pub fn page(model: &ViewModel, title: &str) -> String {
    page_with(model, title, None)
}

/// The page `view --serve` serves for the state whose fingerprint is `version`: its server
/// answers the page's requests for the attribution of a checkpoint's file
/// (`blame?c=<checkpoint>&p=<path>`, relative to the page) and for the state's fingerprint
/// now (`version`), which the page polls to fetch itself again when it changed.
pub fn served_page(model: &ViewModel, title: &str, version: &str) -> String {
    page_with(model, title, Some(version))
}

fn page_with(model: &ViewModel, title: &str, served: Option<&str>) -> String {
    let mut data = page_data(model, title);
    data["blame"] = served.is_some().into();
    data["live"] = served.map_or(Value::Null, |v| v.into());
    let served = served.is_some();
    let data = script_json(&data);
    let csp = if served {
        served_content_security_policy()
    } else {
        content_security_policy()
    };
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="Content-Security-Policy" content=(csp);
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="no-referrer";
                title { "agent runs — " (title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                header {
                    h1 { "agent runs — " (title) }
                    input #q type="search" placeholder="search runs, labels, steps, session ids  ( / )" autocomplete="off";
                    label #archived-toggle { input #archived type="checkbox"; " " span #archived-label { "show archived runs" } }
                    span #stats {}
                    span.keys { "keys: ←/→ along a run · ↑/↓ between runs · / search · a archived" }
                }
                ul #problems {}
                nav #results {}
                div #graph {}
                main #detail {}
                script #data type="application/json" { (PreEscaped(data)) }
                script { (PreEscaped(SCRIPT)) }
            }
        }
    }
    .into_string()
}

/// A table of the strings that repeat across checkpoints (steps, writers, statuses …).
#[derive(Default)]
struct Strings {
    list: Vec<String>,
    index: HashMap<String, usize>,
}

impl Strings {
    fn id(&mut self, s: Option<&str>) -> i64 {
        let Some(s) = s else { return -1 };
        if let Some(&i) = self.index.get(s) {
            return i as i64;
        }
        self.list.push(s.to_string());
        self.index.insert(s.to_string(), self.list.len() - 1);
        (self.list.len() - 1) as i64
    }
}

/// Fields of a checkpoint's JSON that the compact row already carries (or that are implied).
const IN_ROW: &[&str] = &[
    "type",
    "schema",
    "checkpoint",
    "run",
    "seq",
    "step",
    "attempt",
    "event",
    "step_kind",
    "status",
    "ts",
    "sdk_session_id",
    "writer",
    "git_commit_sha",
    "head_ref",
    "run_root",
    "started_at",
    "finished_at",
    "parents",
    "tree",
];

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// The compact JSON the page's script reads (see the row layout at the top of page.js).
fn page_data(model: &ViewModel, title: &str) -> Value {
    let base = model
        .checkpoints
        .iter()
        .map(|c| c.checkpoint.line().ts.as_millisecond())
        .min()
        .unwrap_or(0);
    let rel = |t: agent_rewind_core::time::Timestamp| t.as_millisecond() - base;
    let mut strings = Strings::default();
    let mut cps = Vec::with_capacity(model.checkpoints.len());
    let mut extra = Map::new();
    let mut files = Map::new();
    for (i, c) in model.checkpoints.iter().enumerate() {
        let cp = &c.checkpoint;
        let l = cp.line();
        let status = cp.status();
        cps.push(json!([
            cp.id().to_string(),
            c.run,
            l.seq,
            strings.id(l.step.as_deref()),
            l.attempt,
            strings.id(Some(l.event.as_str())),
            strings.id(l.step_kind.map(|k| k.as_str())),
            strings.id(status.map(|s| s.as_str())),
            rel(l.ts),
            c.parent.map_or(-1, |p| p as i64),
            strings.id(l.sdk_session_id.as_deref()),
            strings.id(Some(&l.writer)),
            strings.id(l.git_commit_sha.as_deref()),
            strings.id(l.head_ref.as_deref()),
            l.started_at.map(rel),
            l.finished_at.map(rel),
        ]));
        let mut full = cp.to_json();
        let mut x = Map::new();
        if let Some(o) = full.as_object_mut() {
            for (k, v) in std::mem::take(o) {
                if !IN_ROW.contains(&k.as_str()) && !is_empty(&v) {
                    x.insert(k, v);
                }
            }
        }
        if let Some(signed) = &c.signed {
            x.insert("signed".into(), signed.as_str().into());
        }
        if let Some(cost) = crate::model::usage::cost_of(&l.usage, &model.prices) {
            x.insert("cost".into(), serde_json::to_value(cost).expect("json"));
        }
        if l.status != status {
            x.insert(
                "recorded_status".into(),
                l.status.map(|s| s.as_str()).into(),
            );
        }
        if let Some(f) = &c.files {
            x.insert("tree".into(), cp.commit.tree.to_string().into());
            x.insert(
                "parents".into(),
                cp.commit.parents.iter().map(|p| p.to_string()).collect(),
            );
            files.insert(i.to_string(), serde_json::to_value(f).expect("json"));
        }
        if !x.is_empty() {
            extra.insert(i.to_string(), Value::Object(x));
        }
    }
    let runs: Vec<Value> = model
        .runs
        .iter()
        .map(|r| {
            let s = &r.summary;
            let steps: Vec<Value> = r
                .steps
                .iter()
                .map(|p| {
                    let w = p.waiting.as_ref();
                    json!([
                        strings.id(Some(&p.step)),
                        p.attempt,
                        strings.id(p.kind.map(|k| k.as_str())),
                        strings.id(p.status.map(|s| s.as_str())),
                        rel(p.begin),
                        p.end.map(rel),
                        p.first,
                        p.last,
                        w.map(|w| rel(w.since)),
                        w.and_then(|w| w.until).map(rel),
                        strings.id(w.and_then(|w| w.decision.as_deref())),
                    ])
                })
                .collect();
            // The tokens of the run's own turns, and their cost when priced.
            let mut used = crate::model::Usage::default();
            for &i in &r.checkpoints {
                used.merge(&model.checkpoints[i].checkpoint.line().usage);
            }
            let cost = crate::model::usage::cost_of(&used, &model.prices);
            json!({
                "id": s.run,
                "tokens": (!used.is_empty()).then(|| used.total()),
                "cost": cost.map(|c| c.amount),
                "label": s.label,
                "status": s.status,
                "archived": s.archived,
                "folded": r.folded,
                "agent": r.agent,
                "sessions": r.sessions,
                "first": r.checkpoints.first().copied().unwrap_or(0),
                "count": r.checkpoints.len(),
                "last": s.last_activity.as_millisecond(),
                "origin": r.origin.as_ref().map(|o| json!({
                    "kind": match o.kind {
                        EdgeKind::Rewound => "rewound",
                        EdgeKind::Forked => "forked",
                        EdgeKind::Chain => "chain",
                    },
                    "run": o.run,
                    "step": o.step,
                    "checkpoint": o.checkpoint,
                    "from": o.index.map_or(-1, |i| i as i64),
                })),
                "steps": steps,
            })
        })
        .collect();
    json!({
        "v": 1,
        "title": title,
        "generated": model.generated_at.as_millisecond(),
        "base": base,
        "diffs": files.len(),
        "strings": strings.list,
        "runs": runs,
        "cps": cps,
        "extra": extra,
        "files": files,
        "problems": model.problems,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_json_cannot_close_the_script() {
        let v = json!({"label": "</script><!-- <img src=x onerror=alert(1)> & \u{2028}"});
        let s = script_json(&v);
        assert!(
            !s.contains('<') && !s.contains('>') && !s.contains('&'),
            "{s}"
        );
        let back: Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn own_script_and_style_are_inert_in_html_and_hashed() {
        for text in [SCRIPT, STYLE] {
            assert!(!text.to_ascii_lowercase().contains("</script"));
            assert!(!text.to_ascii_lowercase().contains("</style"));
            assert!(!text.contains("innerHTML") && !text.contains("outerHTML"));
            assert!(!text.contains("insertAdjacentHTML") && !text.contains("eval("));
        }
        let csp = content_security_policy();
        assert!(csp.starts_with("default-src 'none';"));
        assert_eq!(csp.matches("'sha256-").count(), 2);
        assert!(!csp.contains("unsafe"));
    }
}
