//! Notes read whatever wrote them: a notes commit's message is never read (the tool's used to
//! say `agent-rewind: note for <run> <step> #<seq> <event>`, now it is empty, `git notes`
//! writes its own), and a checkpoint line that leaves out its null, `[]` and `{}` fields
//! reads as the line that spells them out (docs/FORMAT.md). A run whose notes are rewritten
//! so, through `git notes`, shows, lists, views and resumes exactly as before.

use crate::common;

use common::{Repo, tool_cmd};
use serde_json::{Map, Value};
use std::path::Path;
use std::process::Output;

/// The steps of fixtures/workflows/feature.toml, in order.
const STEPS: [&str; 4] = ["plan", "implement", "test", "open-pr"];
const WORKFLOW: &str = "fixtures/feature.toml";

/// A checkpoint line without its null, `[]` and `{}` fields.
fn compact_line(line: &Map<String, Value>) -> String {
    let kept: Map<String, Value> = line
        .iter()
        .filter(|(_, v)| {
            !(v.is_null()
                || v.as_array().is_some_and(|a| a.is_empty())
                || v.as_object().is_some_and(|o| o.is_empty()))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    serde_json::to_string(&Value::Object(kept)).unwrap()
}

/// Rewrite every checkpoint line of `run` compact (one `git notes add -f -C` per note, so the
/// notes commits are git's own). Returns how many checkpoint lines changed.
fn rewrite_notes_compact(r: &Repo, run: &str) -> usize {
    let notes_ref = format!("agent-runs/{run}");
    let mut changed = 0;
    let list = r.git(&["notes", &format!("--ref={notes_ref}"), "list"]);
    for l in list.lines() {
        let (blob, commit) = l.split_once(' ').unwrap();
        let body = r.git(&["cat-file", "blob", blob]);
        let mut body2 = String::new();
        for line in body.lines().filter(|l| !l.trim().is_empty()) {
            let v: Value = serde_json::from_str(line).unwrap();
            if v["type"] == "checkpoint" {
                let o = compact_line(v.as_object().unwrap());
                changed += usize::from(o != line);
                body2.push_str(&o);
            } else {
                body2.push_str(line);
            }
            body2.push('\n');
        }
        let id = common::git_stdin(
            r.path(),
            &["hash-object", "-w", "--stdin"],
            body2.as_bytes(),
        );
        r.git(&[
            "notes",
            &format!("--ref={notes_ref}"),
            "add",
            "-f",
            "-C",
            id.trim(),
            commit,
        ]);
    }
    changed
}

fn fixture(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

/// The tool with the fake agent's counter folder and no failure switch unless given.
fn tool(r: &Repo, counts: &Path, args: &[&str], fail: Option<&str>) -> Output {
    let mut c = tool_cmd(r.path());
    c.env("COUNT_DIR", counts)
        .env_remove("SLEEP_STEP")
        .env_remove("FAIL_STEP");
    if let Some(step) = fail {
        c.env("FAIL_STEP", step);
    }
    c.args(args).output().unwrap()
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {} {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn count(counts: &Path, step: &str) -> usize {
    std::fs::read_to_string(counts.join(step))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// The data `view` embeds in its page, without the time the page was made.
fn page_data(r: &Repo, file: &str) -> Value {
    let html = std::fs::read_to_string(r.path().join(file)).unwrap();
    let start = r#"<script id="data" type="application/json">"#;
    let from = html.find(start).expect("the page's data") + start.len();
    let len = html[from..].find("</script>").unwrap();
    let mut data: Value = serde_json::from_str(&html[from..from + len]).unwrap();
    data.as_object_mut().unwrap().remove("generated");
    data
}

#[test]
fn a_run_with_rewritten_notes_shows_lists_views_and_resumes() {
    let r = Repo::new();
    for entry in std::fs::read_dir(fixture("agents")).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        r.write(
            &format!("fixtures/agents/{name}"),
            &std::fs::read_to_string(entry.path()).unwrap(),
        );
    }
    r.write(
        WORKFLOW,
        &std::fs::read_to_string(fixture("workflows/feature.toml")).unwrap(),
    );
    r.write("TASK.md", "task v1\n");
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "workflow"]);
    let counts = tempfile::tempdir().unwrap();

    // A run that stops at a failing step, plus a manual checkpoint with metadata.
    let out = tool(
        &r,
        counts.path(),
        &["--json", "run", WORKFLOW, "--run", "r1"],
        Some("test"),
    );
    assert_eq!(json_of(&out)["finished"], false);
    let chain: Vec<String> = r
        .git(&["rev-list", "--first-parent", "refs/agent-runs/r1/HEAD"])
        .lines()
        .map(str::to_string)
        .collect();
    let runs_json = |r: &Repo| r.json(&["list"]);
    let checkpoints = |r: &Repo| r.json(&["list", "r1"]);
    let shows = |r: &Repo| -> Vec<Value> {
        r.json(&["list", "r1"])
            .as_array()
            .unwrap()
            .iter()
            .map(|c| r.json(&["show", c["checkpoint"].as_str().unwrap()]))
            .collect()
    };
    let status = |r: &Repo| r.json(&["log", "r1"]);
    let before = (runs_json(&r), checkpoints(&r), shows(&r), status(&r));
    r.ok(&["view", "-o", "before.html"]);

    // The same notes, compact: no empty field spelled out.
    let changed = rewrite_notes_compact(&r, "r1");
    let lines = chain
        .iter()
        .filter(|c| {
            r.git_output(&["notes", "--ref=agent-runs/r1", "show", c])
                .status
                .success()
        })
        .count();
    assert!(changed >= lines && lines > 4, "{changed} of {lines}");
    let tip_note = r.git(&["notes", "--ref=agent-runs/r1", "show", &chain[0]]);
    assert!(!tip_note.contains("null"), "{tip_note}");
    assert!(!tip_note.contains("\"meta\":{}"), "{tip_note}");

    // Read as before, field for field.
    let after = (runs_json(&r), checkpoints(&r), shows(&r), status(&r));
    assert_eq!(before.0, after.0, "list");
    assert_eq!(before.1, after.1, "list r1");
    assert_eq!(before.2, after.2, "show");
    assert_eq!(before.3, after.3, "status");
    r.ok(&["view", "-o", "after.html"]);
    assert_eq!(
        page_data(&r, "before.html"),
        page_data(&r, "after.html"),
        "view"
    );

    // Resume goes on from the failed step: the completed ones are not run again.
    let out = tool(&r, counts.path(), &["--json", "resume", "r1"], None);
    let report = json_of(&out);
    assert_eq!(report["finished"], true, "{report:#}");
    let counted: Vec<usize> = STEPS.iter().map(|s| count(counts.path(), s)).collect();
    assert_eq!(counted, [1, 1, 2, 1]);
    // New lines after rewritten ones: the run reads on, both kinds together.
    let list = r.json(&["list", "r1"]);
    let had = before.1.as_array().unwrap().len();
    assert_eq!(list.as_array().unwrap().len(), had + 4, "{list:#}");
    r.assert_fsck();
}
