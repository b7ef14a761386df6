//! `view` (the HTML page, checked in headless Chromium) and `log --graph --format`.
//!
//! The browser tests need Debian's `chromium` on PATH (`scripts/test` installs it when missing).

mod live;
mod look;
mod serve;
mod tokens;

use crate::common;

use common::{Repo, tool_cmd};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const HOSTILE: &str = "<img src=x onerror=alert(1)>";

struct Fixture {
    repo: Repo,
    /// r1's failed `implement` finish.
    failed: String,
    /// r2's completed `implement` finish (it changed code.rs).
    fixed: String,
    /// r2's gate checkpoint, approved.
    gate: String,
}

/// r1 (label: an HTML injection attempt): plan completed, implement failed; rewound into r2
/// (implement completed, a gate approved); forked into r3 from r1's plan.
fn fixture() -> Fixture {
    let repo = Repo::new();
    let head = |r: &Repo, what: &str| r.rev(what);
    repo.ok(&["start", "--run", "r1", "--label", HOSTILE]);
    repo.ok(&[
        "step",
        "begin",
        "plan",
        "--kind",
        "agent",
        "--session-id",
        "sess-plan",
    ]);
    repo.write("plan.md", "one\ntwo\n");
    repo.ok(&["step", "end", "plan", "--status", "completed"]);
    repo.ok(&["step", "begin", "implement", "--kind", "agent"]);
    repo.write("code.rs", "fn main() {}\n");
    repo.ok(&[
        "step",
        "end",
        "implement",
        "--status",
        "failed",
        "-m",
        "did not compile",
    ]);
    let failed = head(&repo, "refs/agent-runs/r1/HEAD");
    repo.ok(&[
        "rewind",
        "r1",
        "--to",
        "implement",
        "--run",
        "r2",
        "--label",
        "retry",
    ]);
    repo.ok(&["step", "begin", "implement", "--kind", "agent"]);
    repo.write("code.rs", "fn main() { println!(\"fixed\"); }\n");
    repo.ok(&["step", "end", "implement", "--status", "completed"]);
    let fixed = head(&repo, "refs/agent-runs/r2/HEAD");
    repo.ok(&["step", "begin", "review", "--kind", "gate"]);
    repo.ok(&["step", "end", "review", "--status", "awaiting_approval"]);
    let gate = head(&repo, "refs/agent-runs/r2/HEAD");
    repo.ok(&["approve", "r2/review", "-m", "looks good"]);
    repo.ok(&[
        "fork",
        "r1",
        "--to",
        "plan",
        "--after",
        "--run",
        "r3",
        "--no-checkout",
    ]);
    Fixture {
        repo,
        failed,
        fixed,
        gate,
    }
}

fn chromium() -> PathBuf {
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        for name in ["chromium", "chromium-browser"] {
            let p = dir.join(name);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!(
        "these tests need Debian's `chromium` on PATH (apt-get install -y chromium; scripts/test does it)"
    );
}

/// Headless Chromium with no network, no sync, a throw-away profile.
pub(crate) fn browser(profile: &Path) -> Command {
    let mut c = Command::new(chromium());
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1200,900",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .env("HOME", profile);
    c
}

/// The DOM after the page's script ran.
fn dump_dom(page: &Path, fragment: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = browser(profile.path())
        .arg("--dump-dom")
        .arg(format!("file://{}#{fragment}", page.display()))
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn write_page(repo: &Repo, extra: &[&str]) -> (PathBuf, String) {
    let mut args = vec!["view", "-o", "page.html", "--force"];
    args.extend_from_slice(extra);
    let printed = repo.ok(&args);
    let path = repo.path().join("page.html");
    assert_eq!(printed.trim(), path.display().to_string());
    let html = std::fs::read_to_string(&path).unwrap();
    (path, html)
}

/// Like `export`, `view -o FILE` never overwrites an existing file unless
/// told to with `--force`; the default page (in the git directory) is ours to replace.
#[test]
fn view_output_refuses_an_existing_file_without_force() {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1"]);
    repo.write("notes.html", "my own page\n");
    let out = repo.run(&["view", "-o", "notes.html"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("notes.html") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(repo.read("notes.html"), "my own page\n");
    repo.ok(&["view", "-o", "notes.html", "--force"]);
    assert!(repo.read("notes.html").contains("<html"));
    // The default page is replaced freely.
    repo.ok(&["view"]);
    repo.ok(&["view"]);
}

/// One repository for the page's checks (each builds it anew otherwise: a dozen processes).
#[test]
fn page_in_the_browser() {
    let f = fixture();
    page_is_self_contained_and_inert(&f);
    page_renders_runs_edges_diff_and_timeline_in_chromium(&f);
    screenshot_is_not_blank(&f);
}

#[test]
fn options_and_text_graphs() {
    let f = fixture();
    diffs_option_and_default_path(&f);
    bad_input_is_refused_without_writing(&f);
    open_uses_the_browser_and_never_fails(&f);
    log_graph_as_mermaid_dot_and_json(&f);
}

fn page_is_self_contained_and_inert(f: &Fixture) {
    let (_, html) = write_page(&f.repo, &[]);
    // The hostile label never appears as markup in the file, only JSON-escaped.
    assert!(!html.contains("<img"), "raw label in the page");
    assert!(html.contains("\\u003cimg src=x onerror=alert(1)\\u003e"));
    // No reference to anything outside the file; only our own script and style may run.
    assert!(html.contains("http-equiv=\"Content-Security-Policy\""));
    assert!(html.contains("default-src 'none'; script-src 'sha256-"));
    for needle in ["src=\"", "href=\"", "<link", "@import", "url(", "https://"] {
        assert!(
            !html.contains(needle),
            "page refers outside itself: {needle}"
        );
    }
    assert_eq!(html.matches("<script").count(), 2);
}

fn page_renders_runs_edges_diff_and_timeline_in_chromium(f: &Fixture) {
    let (page, _) = write_page(&f.repo, &[]);

    // Selected: r2's fixed implement step.
    let dom = dump_dom(&page, &f.fixed);
    assert!(dom.contains("data-ready=\"true\""), "script did not finish");
    // No element made from the label; the label is visible as text.
    assert!(
        !dom.contains("<img"),
        "an element was created from the label"
    );
    assert!(dom.contains("&lt;img src=x onerror=alert(1)&gt;"));
    // Lanes: r1 archived, with no lane until asked for; r2 and r3 drawn with their checkpoints.
    for run in ["r2", "r3"] {
        assert!(dom.contains(&format!("data-run=\"{run}\"")), "lane {run}");
    }
    assert!(!dom.contains("data-run=\"r1\""), "r1 shown");
    let r2 = f.repo.json(&["list", "r2"]);
    let r3 = f.repo.json(&["list", "r3"]);
    let nodes = r2.as_array().unwrap().len() + r3.as_array().unwrap().len();
    assert_eq!(dom.matches("data-id=\"").count(), nodes, "{dom}");
    for cp in r2.as_array().unwrap() {
        let id = cp["checkpoint"].as_str().unwrap();
        assert!(dom.contains(&format!("data-id=\"{id}\"")), "node {id}");
    }
    // The selected checkpoint's diff, folded or not, and its metadata.
    assert!(dom.contains("node st-completed sel"), "selected node");
    assert!(dom.contains("code.rs"));
    assert!(
        dom.contains("<span class=\"meta\">+++ b/code.rs"),
        "diff: {dom}"
    );
    assert!(dom.contains("<span class=\"add\">+fn main() { println!(\"fixed\"); }"));
    // r2's timeline: the gate waited and was approved.
    assert!(dom.contains("Timeline of r2"));
    assert!(dom.contains("gate waited"), "gate in timeline");
    assert!(dom.contains("(approved)"));

    // The gate checkpoint: its approval record.
    let dom = dump_dom(&page, &f.gate);
    assert!(dom.contains("looks good") && dom.contains(">approved</span>"));

    // r1's failed step: selecting it shows the archived runs, and the edges from r1.
    let dom = dump_dom(&page, &f.failed);
    assert!(dom.contains("data-run=\"r1\""), "r1 shown");
    // Edges from the source checkpoints: the rewind and the fork.
    let root = |run: &str| f.repo.json(&["list", run])[0].clone();
    for (run, kind) in [("r2", "rewound"), ("r3", "forked")] {
        let r = root(run);
        let from = r[format!("{kind}_from")]["checkpoint"].as_str().unwrap();
        let to = r["checkpoint"].as_str().unwrap();
        assert!(
            dom.contains(&format!(
                "data-from=\"{from}\" data-to=\"{to}\" class=\"edge {kind}\""
            )),
            "{kind} edge {from} -> {to}"
        );
    }
    assert!(dom.contains("node st-failed sel"));
    assert!(dom.contains("did not compile"));
    assert!(dom.contains("sess-plan"));
}

fn screenshot_is_not_blank(f: &Fixture) {
    let (page, _) = write_page(&f.repo, &[]);
    let profile = tempfile::tempdir().unwrap();
    let shot = profile.path().join("shot.png");
    let out = browser(profile.path())
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    assert!(out.status.success());
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = info.color_type.samples();
    let colours: std::collections::HashSet<&[u8]> = buf[..info.buffer_size()].chunks(px).collect();
    assert!(
        colours.len() > 20,
        "only {} colours in the screenshot",
        colours.len()
    );
    if let Some(dir) = std::env::var_os("AGENT_REWIND_SCREENSHOT") {
        std::fs::copy(&shot, PathBuf::from(dir)).unwrap();
    }
}

fn diffs_option_and_default_path(f: &Fixture) {
    let all: Value = f.repo.json(&["view", "-o", "a.html", "--diffs", "all"]);
    let total = all["checkpoints"].as_u64().unwrap();
    assert_eq!(all["diffs"], total);
    let none = f.repo.json(&["view", "-o", "n.html", "--diffs", "none"]);
    assert_eq!(none["diffs"], 0);
    let two = f.repo.json(&["view", "-o", "t.html", "--diffs", "2"]);
    assert_eq!(two["diffs"], 2);
    // Only the runs linked to r3 (all three here) … and the default path in the git dir.
    let out = f.repo.json(&["view", "r3"]);
    assert_eq!(out["runs"], 3);
    let path = PathBuf::from(out["path"].as_str().unwrap());
    assert!(path.ends_with(".git/agent-rewind/view.html"), "{path:?}");
    assert!(path.is_file());
    // A relative -o is relative to the current directory.
    std::fs::create_dir(f.repo.path().join("sub")).unwrap();
    let out = tool_cmd(&f.repo.path().join("sub"))
        .args(["view", "-o", "p.html"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(f.repo.path().join("sub/p.html").is_file());
}

fn bad_input_is_refused_without_writing(f: &Fixture) {
    let out = f.repo.run(&["view", "-o", "x.html", "--diffs", "many"]);
    assert_eq!(out.status.code(), Some(2));
    let out = f.repo.run(&["view", "nope", "-o", "x.html"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown run nope"));
    assert!(!f.repo.path().join("x.html").exists());
    let out = f.repo.run(&["log", "r1", "--format", "dot"]);
    assert_eq!(out.status.code(), Some(2), "--format needs --graph");
}

fn open_uses_the_browser_and_never_fails(f: &Fixture) {
    let bin = tempfile::tempdir().unwrap();
    let seen = bin.path().join("seen");
    let script = bin.path().join("xdg-open");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho \"$1\" > '{}'\n", seen.display()),
    )
    .unwrap();
    agent_rewind_core::platform::mode::set_path_permission_bits(&script, 0o755).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap()
    );
    let out = tool_cmd(f.repo.path())
        .args(["view", "-o", "o.html", "--open", "--json"])
        .env("PATH", &path)
        .env_remove("BROWSER")
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["opened"], true);
    let opened = std::fs::read_to_string(&seen).unwrap();
    assert_eq!(
        opened.trim(),
        f.repo.path().join("o.html").display().to_string()
    );
    // No browser at all: a warning, the page is still written, exit 0.
    let out = tool_cmd(f.repo.path())
        .args(["view", "-o", "p.html", "--open"])
        .env("BROWSER", bin.path().join("no-such-browser"))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("could not open a browser"));
    assert!(f.repo.path().join("p.html").is_file());
}

fn log_graph_as_mermaid_dot_and_json(f: &Fixture) {
    let g = f.repo.json(&["log", "r3", "--graph"]);
    let runs: Vec<&str> = g["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_str().unwrap())
        .collect();
    assert_eq!(runs, ["r1", "r2", "r3"]);
    let nodes = g["nodes"].as_array().unwrap();
    let edges = g["edges"].as_array().unwrap();
    // Every node but the three roots' has one incoming edge; r1's root has none.
    assert_eq!(edges.len(), nodes.len() - 1);
    let kinds = |k: &str| edges.iter().filter(|e| e["kind"] == k).count();
    assert_eq!((kinds("rewound"), kinds("forked")), (1, 1));
    assert_eq!(
        f.repo.json(&["log", "r3", "--graph", "--format", "json"]),
        g
    );

    let m = f.repo.ok(&["log", "r3", "--graph", "--format", "mermaid"]);
    assert!(m.starts_with("flowchart LR"));
    assert!(m.contains("-. rewound .->") && m.contains("-. forked .->"));
    assert!(!m.contains("<img"), "{m}");
    assert!(m.contains("#60;img src#61;x onerror#61;alert#40;1#41;#62;"));
    let d = f.repo.ok(&["log", "r3", "--graph", "--format", "dot"]);
    assert!(d.starts_with("digraph agent_runs {") && d.trim_end().ends_with('}'));
    assert!(d.contains("[style=dashed, label=\"rewound\"]"));
    assert_eq!(d.matches("subgraph cluster_").count(), 3);
    // The text tree is unchanged.
    assert!(f.repo.ok(&["log", "r1", "--graph"]).contains("└─ r3"));
}

/// A checkpoint that adds a nested repository, moves a submodule, or holds a linked worktree
/// `fork --worktree ../x` made inside the repository (from a subfolder): `view`, `diff` and
/// `diff --json` show each as git does, `Subproject commit <id>`.
#[test]
fn view_and_diff_show_submodules_and_nested_repositories() {
    let repo = Repo::new();
    let sub_origin = Repo::new();
    repo.add_submodule(sub_origin.path(), "sub");
    repo.ok(&["start", "--run", "r1"]);
    // The submodule moves on, and a nested repository appears.
    let sub = repo.path().join("sub");
    common::write_in(&sub, "more.txt", "more\n");
    common::commit_all_in(&sub, "more");
    let nested = repo.path().join("nested");
    std::fs::create_dir(&nested).unwrap();
    common::git_in(&nested, &["init", "-q", "-b", "main"]);
    common::write_in(&nested, "x", "x\n");
    common::commit_all_in(&nested, "n");
    repo.ok(&["checkpoint", "nested"]);
    // A fork into a worktree inside the repository, from a subfolder.
    repo.write("deep/keep.txt", "k\n");
    let out = common::run_in(
        &repo.path().join("deep"),
        &[
            "fork",
            "r1",
            "--to",
            "r1@1",
            "--run",
            "r2",
            "--worktree",
            "../inside",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        repo.path().join("inside/.git").exists(),
        "the fork's worktree is inside"
    );
    repo.ok(&["checkpoint", "with-worktree"]);

    let sub_new = common::git_in(&sub, &["rev-parse", "HEAD"]);
    let nested_head = common::git_in(&nested, &["rev-parse", "HEAD"]);
    let json = repo.json(&["diff", "r1@0", "r1@2"]);
    let diff = repo.ok(&["diff", "r1@0", "r1@2"]);
    let (from, to) = (json["from"].as_str().unwrap(), json["to"].as_str().unwrap());
    let git_diff = repo.git(&["diff", from, to, "--", "sub", "nested"]);
    for id in [&sub_new, &nested_head] {
        let line = format!("+Subproject commit {}", id.trim());
        assert!(diff.contains(&line), "diff shows {line}:\n{diff}");
        assert!(git_diff.contains(&line), "as git diff does:\n{git_diff}");
    }
    let patches: Vec<&str> = json["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["patch"].as_str())
        .collect();
    assert!(
        patches
            .iter()
            .any(|p| p.contains(&format!("+Subproject commit {}", sub_new.trim()))),
        "{json}"
    );
    let out_dir = tempfile::tempdir().unwrap();
    let page = out_dir.path().join("page.html");
    let out = repo.run(&["view", "r1", "-o", page.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "view: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains(nested_head.trim()),
        "the page shows the nested repository's commit"
    );
    repo.assert_fsck();
}
