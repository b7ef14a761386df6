//! The view page's tokens in headless Chromium: turns recorded through `hook claude` with a
//! real Claude Code transcript (fixtures/usage/claude.jsonl, whose last turn made two model
//! calls) show their tokens per model in their details, and their cost once
//! `agentRewind.price.<model>` prices the model; the run's totals are in its lane's caption
//! and in the details of each of its checkpoints.

use super::{dump_dom, write_page};
use crate::common::{Repo, tool_stdin};
use serde_json::{Value, json};
use std::path::Path;

/// `hook claude` fed `payload` (from outside the repository: the payload's cwd decides).
fn hook_claude(payload: &Value) {
    let elsewhere = tempfile::tempdir().unwrap();
    let out = tool_stdin(
        elsewhere.path(),
        &["hook", "claude"],
        payload.to_string().as_bytes(),
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A Claude Code turn that wrote `file`: its edit hook, then its Stop with the transcript.
fn claude_turn(repo: &Repo, file: &str) {
    let cwd = repo.path().to_str().unwrap();
    repo.write(file, "a line\n");
    hook_claude(
        &json!({"hook_event_name": "PostToolUse", "session_id": "s-view", "cwd": cwd,
        "tool_name": "Write", "tool_input": {"file_path": repo.path().join(file)}}),
    );
    let transcript = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/usage/claude.jsonl");
    hook_claude(
        &json!({"hook_event_name": "Stop", "session_id": "s-view", "cwd": cwd,
        "transcript_path": transcript}),
    );
}

/// The text of the detail panel's row `key` (`<th>key</th><td …>text</td>`), if it has one.
fn row<'a>(dom: &'a str, key: &str) -> Option<&'a str> {
    let (_, rest) = dom.split_once(&format!("<th>{key}</th><td"))?;
    let (_, rest) = rest.split_once('>')?;
    rest.split_once("</td>").map(|(text, _)| text)
}

/// The row `key`, which the page writes as JSON.
fn json_row(dom: &str, key: &str) -> Value {
    let text = row(dom, key).unwrap_or_else(|| panic!("no {key} row: {dom}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{key} is not JSON ({e}): {text}"))
}

/// The tooltip of the run's caption: its label, then the line under it in whole.
fn caption(dom: &str) -> &str {
    let (_, rest) = dom.split_once("class=\"run-name\"").expect("a lane");
    let (_, rest) = rest.split_once("<title>").expect("a tooltip");
    rest.split_once("</title>").unwrap().0
}

#[test]
fn a_turns_tokens_and_cost_and_its_runs_totals_are_on_the_page() {
    let repo = Repo::new();
    claude_turn(&repo, "one.txt");
    claude_turn(&repo, "two.txt");
    let run = repo.json(&["list"])[0]["run"].as_str().unwrap().to_string();
    let cps = repo.json(&["list", &run]);
    let ids: Vec<&str> = cps
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["checkpoint"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 3, "a start and two turns: {cps:#}");
    let turn_tokens = json!({"claude-opus-4-8":
        {"input": 2000, "output": 400, "cache_read": 800, "cache_write": 60}});
    assert_eq!(repo.json(&["show", ids[2]])["usage"], turn_tokens);

    // No price: the turn's tokens and the run's, no cost anywhere.
    let (page, _) = write_page(&repo, &[]);
    let dom = dump_dom(&page, ids[2]);
    assert!(dom.contains("data-ready=\"true\""), "script did not finish");
    assert_eq!(json_row(&dom, "usage"), turn_tokens, "{dom}");
    assert_eq!(row(&dom, "cost"), None, "a cost with no price: {dom}");
    assert_eq!(row(&dom, "run tokens"), Some("6520 tokens"), "{dom}");
    assert!(caption(&dom).contains(" · 6520 tokens · "), "{dom}");
    // The start carries no tokens of its own, and still the run's.
    let dom = dump_dom(&page, ids[0]);
    assert_eq!(row(&dom, "usage"), None, "{dom}");
    assert_eq!(row(&dom, "run tokens"), Some("6520 tokens"), "{dom}");

    // Priced: 2000×3 + 400×15 + 800×0.3 + 60×3.75 per million for each turn.
    repo.git(&[
        "config",
        "agentRewind.price.claude-opus-4-8",
        "input=3,output=15,cache_read=0.3,cache_write=3.75",
    ]);
    let (page, html) = write_page(&repo, &[]);
    assert!(
        !html.contains("WRITE /"),
        "the transcript's text is in the page"
    );
    let dom = dump_dom(&page, ids[1]);
    assert_eq!(json_row(&dom, "usage"), turn_tokens, "{dom}");
    assert_eq!(json_row(&dom, "cost"), json!({"amount": 0.012465}), "{dom}");
    assert_eq!(
        row(&dom, "run tokens"),
        Some("6520 tokens (cost 0.02493)"),
        "{dom}"
    );
    assert!(
        caption(&dom).contains(" · 6520 tokens (cost 0.02493) · "),
        "{dom}"
    );
}
