//! Bad input (DESIGN.md §3.1, §4): every invalid name, unknown address, unusable repository
//! or malformed value is refused with one clear `error:` line on stderr (plus a `hint:`),
//! exit 2 for usage errors and 1 for failures — and nothing at all is written.

mod common;

use common::{Repo, run_in};
use std::path::{Path, PathBuf};
use std::process::Output;

/// Everything a failed command must leave exactly as it was: all refs (with reflogs'
/// existence), every file name under the git dir, and the active-run file.
#[derive(Debug, PartialEq, Eq)]
struct State {
    refs: String,
    files: Vec<String>,
    active_run: Option<String>,
}

fn files_under(root: &Path) -> Vec<String> {
    fn walk(p: &Path, base: &Path, out: &mut Vec<String>) {
        let Ok(rd) = std::fs::read_dir(p) else {
            return;
        };
        for e in rd {
            let e = e.unwrap();
            let path = e.path();
            if e.file_type().unwrap().is_dir() {
                walk(&path, base, out);
            } else {
                out.push(path.strip_prefix(base).unwrap().display().to_string());
            }
        }
    }
    let mut out = vec![];
    walk(root, root, &mut out);
    // `list` keeps a summary cache; it is not state (deleting it changes no result).
    out.retain(|f| !f.starts_with("agent-rewind/cache/"));
    out.sort();
    out
}

fn state_of(git_dir: &Path) -> State {
    State {
        refs: common::git_in(
            git_dir,
            &[
                "for-each-ref",
                "--format=%(refname) %(objectname) %(symref)",
            ],
        ),
        files: files_under(git_dir),
        active_run: std::fs::read_to_string(git_dir.join("agent-rewind/active-run")).ok(),
    }
}

fn state(repo: &Repo) -> State {
    state_of(&repo.path().join(".git"))
}

/// The error contract: exit `code`, nothing on stdout (with `--json`: only the error
/// document, carrying the same message), exactly one `error:` line on stderr, optionally
/// followed by `hint:` lines, nothing else. Returns the error line.
fn assert_error(out: &Output, code: i32, what: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}: exit code (stderr: {stderr})"
    );
    if what.contains("\"--json\"") {
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{what}: stdout is not the JSON error document ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        });
        let message = doc["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(
            stderr.lines().next(),
            Some(format!("error: {message}").as_str()),
            "{what}: {doc:#}"
        );
    } else {
        assert!(
            out.stdout.is_empty(),
            "{what}: unexpected stdout: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(!lines.is_empty(), "{what}: empty stderr");
    assert!(
        lines[0].starts_with("error: ") && lines[0].len() > "error: ".len(),
        "{what}: first stderr line is not an error: {stderr}"
    );
    for l in &lines[1..] {
        assert!(
            l.starts_with("hint: "),
            "{what}: stderr is not one error line plus hints:\n{stderr}"
        );
    }
    lines[0].to_string()
}

/// Run the tool in `repo`, assert the error contract and that nothing changed.
fn refused(repo: &Repo, args: &[&str], code: i32) -> String {
    let before = state(repo);
    let out = repo.run(args);
    let line = assert_error(&out, code, &format!("{args:?}"));
    assert_eq!(state(repo), before, "{args:?} wrote something");
    line
}

/// A repository with one run `r1` (start, plan, implement) and a dirty worktree.
fn repo_with_run() -> Repo {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1"]);
    repo.write("plan.md", "plan\n");
    repo.ok(&["checkpoint", "plan", "--run", "r1"]);
    repo.write("code.rs", "fn main() {}\n");
    repo.ok(&["checkpoint", "implement", "--run", "r1"]);
    repo.write("uncommitted.txt", "the worktree is dirty\n");
    repo
}

const BAD_NAMES: &[&str] = &[
    "..",
    "a..b",
    "a/b",
    "x.lock",
    "x.",
    ".hidden",
    "_x",
    "a b",
    "a\u{7}b",
    "a\nb",
    "tab\there",
    "naïve",
    "",
];

fn long_name() -> String {
    "a".repeat(200)
}

#[test]
fn invalid_run_names_are_refused_by_start() {
    let repo = repo_with_run();
    let long = long_name();
    let mut names: Vec<&str> = BAD_NAMES.to_vec();
    names.push(&long);
    for name in names {
        let line = refused(&repo, &["start", "--run", name], 2);
        assert!(
            line.contains("run id"),
            "start --run {name:?}: the error should say what is wrong: {line}"
        );
        // The same names are refused wherever a run is named.
        refused(&repo, &["checkpoint", "plan", "--run", name], 2);
        refused(&repo, &["step", "begin", "plan", "--run", name], 2);
        refused(
            &repo,
            &[
                "step",
                "end",
                "plan",
                "--run",
                name,
                "--status",
                "completed",
            ],
            2,
        );
        if !name.is_empty() && !name.contains('/') && !name.contains('@') {
            refused(&repo, &["list", name], 2);
            refused(&repo, &["log", name], 2);
        }
    }
    // A 200-character name is cut in the message, which stays one line.
    let line = refused(&repo, &["start", "--run", &long], 2);
    assert!(line.len() < 300, "{line}");
    // A control character is shown escaped, never raw.
    let line = refused(&repo, &["start", "--run", "a\u{7}b"], 2);
    assert!(!line.contains('\u{7}'), "{line:?}");
}

#[test]
fn invalid_step_names_are_refused() {
    let repo = repo_with_run();
    let long = long_name();
    let mut names: Vec<&str> = BAD_NAMES.to_vec();
    names.push(&long);
    names.push("HEAD");
    for name in names {
        let line = refused(&repo, &["checkpoint", name, "--run", "r1"], 2);
        assert!(line.contains("step"), "checkpoint {name:?}: {line}");
        refused(&repo, &["checkpoint", name], 2);
        refused(&repo, &["step", "begin", name], 2);
        refused(&repo, &["step", "end", name, "--status", "completed"], 2);
        // Also when the run does not exist yet: it is not started half-way.
        refused(&repo, &["checkpoint", name, "--run", "brand-new"], 2);
    }
    let line = refused(&repo, &["checkpoint", "HEAD", "--run", "r1"], 2);
    assert!(line.contains("HEAD"), "{line}");
}

#[test]
fn unknown_runs_and_checkpoints_are_not_found() {
    let repo = repo_with_run();
    let user_head = repo.rev("HEAD");
    let cases: Vec<Vec<String>> = vec![
        vec!["show".into(), "nope".into()],
        vec!["show".into(), "nope/plan".into()],
        vec!["show".into(), "nope@0".into()],
        vec!["show".into(), "r1/nostep".into()],
        vec!["show".into(), "r1@99".into()],
        vec!["show".into(), "deadbeef".into()],
        vec!["show".into(), "0".repeat(40)],
        // A commit that exists but is not a checkpoint.
        vec!["show".into(), user_head.clone()],
        vec!["show".into(), user_head[..10].to_string()],
        vec!["list".into(), "nope".into()],
        vec!["log".into(), "nope".into()],
        vec!["log".into(), "nope".into(), "--graph".into()],
        vec!["diff".into(), "nope".into()],
        vec!["diff".into(), "r1".into(), "nope".into()],
        vec!["diff".into(), "nope".into(), "r1".into()],
        vec!["diff".into(), "r1@1".into(), "r1@42".into()],
        vec!["diff".into(), "r1/nostep".into()],
    ];
    for args in cases {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let line = refused(&repo, &a, 1);
        let mut json = vec!["--json"];
        json.extend_from_slice(&a);
        refused(&repo, &json, 1);
        assert!(!line.to_lowercase().contains("panick"), "{args:?}: {line}");
    }
    // The message names what was not found.
    let line = refused(&repo, &["show", "nope"], 1);
    assert!(line.contains("nope"), "{line}");
    let line = refused(&repo, &["show", "r1@99"], 1);
    assert!(line.contains("99"), "{line}");
    let line = refused(&repo, &["show", "r1/nostep"], 1);
    assert!(line.contains("nostep"), "{line}");
}

#[test]
fn malformed_addresses_are_usage_errors() {
    let repo = repo_with_run();
    // (`r1@-1` and `@3` are addresses: from the end, and in the active run.)
    for addr in [
        "r1@x", "r1@-0", "r1@--1", "r1/head", "a/b/c", "r1@", "@-x", "../r1",
    ] {
        refused(&repo, &["show", addr], 2);
        refused(&repo, &["diff", addr], 2);
    }
}

#[test]
fn a_bare_repository_is_refused_for_writes() {
    let holder = tempfile::tempdir().unwrap();
    let bare = holder.path().join("bare.git");
    common::git_in(
        holder.path(),
        &["init", "-q", "--bare", bare.to_str().unwrap()],
    );
    let cases: &[&[&str]] = &[
        &["start"],
        &["start", "--run", "r1"],
        &["checkpoint", "plan"],
        &["checkpoint", "plan", "--run", "r1"],
        &["step", "begin", "plan", "--run", "r1"],
        &[
            "step",
            "end",
            "plan",
            "--run",
            "r1",
            "--status",
            "completed",
        ],
    ];
    for args in cases {
        let before = state_of(&bare);
        let out = run_in(&bare, args);
        let line = assert_error(&out, 1, &format!("bare: {args:?}"));
        assert!(line.contains("bare"), "bare: {args:?}: {line}");
        assert_eq!(state_of(&bare), before, "bare: {args:?} wrote something");
    }
}

/// A directory that is in no repository, with git discovery stopped at its parent.
struct Outside {
    _holder: tempfile::TempDir,
    dir: PathBuf,
}

fn outside() -> Outside {
    let holder = tempfile::tempdir().unwrap();
    let dir = holder.path().join("plain");
    std::fs::create_dir(&dir).unwrap();
    Outside {
        _holder: holder,
        dir,
    }
}

#[test]
fn a_directory_outside_any_repository_is_refused() {
    let o = outside();
    let cases: &[&[&str]] = &[
        &["init"],
        &["start"],
        &["start", "--run", "r1"],
        &["checkpoint", "plan"],
        &["step", "begin", "plan"],
        &["list"],
        &["list", "r1"],
        &["show", "r1"],
        &["log", "r1"],
        &["diff", "r1"],
        &["status"],
        &["--json", "status"],
    ];
    for args in cases {
        let out = common::tool_cmd(&o.dir)
            .env("GIT_CEILING_DIRECTORIES", o.dir.parent().unwrap())
            .args(*args)
            .output()
            .unwrap();
        let line = assert_error(&out, 1, &format!("outside: {args:?}"));
        assert!(
            line.contains("not a git repository"),
            "outside: {args:?}: {line}"
        );
        assert!(
            files_under(o.dir.parent().unwrap()).is_empty(),
            "outside: {args:?} created files: {:?}",
            files_under(o.dir.parent().unwrap())
        );
    }
}

#[test]
fn malformed_meta_and_unknown_enum_values_are_usage_errors() {
    let repo = repo_with_run();
    let cases: &[&[&str]] = &[
        &["checkpoint", "plan", "--meta", "novalue"],
        &["checkpoint", "plan", "--meta", "=value"],
        &["checkpoint", "plan", "--meta", "two words=x"],
        &["checkpoint", "plan", "--meta", "ok=1", "--meta", "bad"],
        &["start", "--run", "r2", "--meta", "novalue"],
        &["step", "begin", "plan", "--meta", "novalue"],
        &["checkpoint", "plan", "--kind", "robot"],
        &["checkpoint", "plan", "--kind", "Agent"],
        &["checkpoint", "plan", "--status", "done"],
        &["checkpoint", "plan", "--status", ""],
        &["checkpoint", "plan", "--event", "bogus"],
        // `start` and `root` are recorded by start/rewind/fork only.
        &["checkpoint", "plan", "--event", "start"],
        &["checkpoint", "plan", "--event", "root"],
        &["step", "begin", "plan", "--kind", "robot"],
        &["step", "end", "plan", "--status", "done"],
        // `step end` needs an outcome.
        &["step", "end", "plan"],
        &["step", "end", "plan", "--status", "running"],
        // Validation happens before a new run would be started implicitly.
        &[
            "checkpoint",
            "plan",
            "--run",
            "brand-new",
            "--kind",
            "robot",
        ],
        &["checkpoint", "plan", "--run", "brand-new", "--meta", "x"],
        &[
            "checkpoint",
            "plan",
            "--run",
            "brand-new",
            "--status",
            "nope",
        ],
    ];
    for args in cases {
        let line = refused(&repo, args, 2);
        assert!(!line.contains('\n'));
    }
    let line = refused(&repo, &["checkpoint", "plan", "--meta", "novalue"], 2);
    assert!(line.contains("novalue"), "{line}");
    let line = refused(&repo, &["checkpoint", "plan", "--kind", "robot"], 2);
    assert!(line.contains("robot"), "{line}");
    let line = refused(&repo, &["checkpoint", "plan", "--status", "done"], 2);
    assert!(line.contains("done"), "{line}");
}

/// `r-good` and `r-bad`; the note of r-bad's tip is overwritten with garbage.
fn repo_with_garbage_note() -> (Repo, String) {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r-good"]);
    repo.ok(&["checkpoint", "plan", "--run", "r-good"]);
    repo.ok(&["start", "--run", "r-bad"]);
    repo.ok(&["checkpoint", "plan", "--run", "r-bad", "--meta", "x=1"]);
    let bad_tip = repo.rev("refs/agent-runs/r-bad/HEAD");
    repo.git(&[
        "notes",
        "--ref=agent-runs/r-bad",
        "add",
        "-f",
        "-m",
        "garbage{",
        &bad_tip,
    ]);
    (repo, bad_tip)
}

#[test]
fn a_garbage_note_is_reported_without_hiding_other_runs() {
    let (repo, bad_tip) = repo_with_garbage_note();
    let before = state(&repo);

    // `list` still lists r-good (exit 0) and warns about r-bad on stderr.
    for json in [false, true] {
        let mut args = vec![];
        if json {
            args.push("--json");
        }
        args.push("list");
        let out = repo.run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(stdout.contains("r-good"), "{args:?}: {stdout}");
        assert!(
            stderr.lines().any(|l| l.contains("r-bad")),
            "{args:?}: no warning about r-bad: {stderr}"
        );
        if json {
            let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
            let runs: Vec<&str> = v
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["run"].as_str().unwrap())
                .collect();
            assert_eq!(runs, vec!["r-good"]);
        }
    }

    // `show r-bad` fails naming the malformed note.
    for addr in ["r-bad", "r-bad/plan", &bad_tip[..]] {
        let out = repo.run(&["show", addr]);
        let line = assert_error(&out, 1, &format!("show {addr}"));
        assert!(line.contains("malformed"), "show {addr}: {line}");
        assert!(
            line.contains("refs/notes/agent-runs/r-bad") || line.contains(&bad_tip[..12]),
            "show {addr}: the error should name the note: {line}"
        );
    }
    let out = repo.run(&["list", "r-bad"]);
    assert_error(&out, 1, "list r-bad");
    let out = repo.run(&["diff", "r-bad"]);
    assert_error(&out, 1, "diff r-bad");
    // r-good is unaffected.
    assert_eq!(repo.json(&["show", "r-good"])["run"], "r-good");
    assert_eq!(repo.json(&["list", "r-good"]).as_array().unwrap().len(), 2);
    assert_eq!(state(&repo), before, "reading wrote something");

    // Appending to the corrupt run is refused; nothing is written over the garbage.
    let line = refused(&repo, &["checkpoint", "plan", "--run", "r-bad"], 1);
    assert!(line.contains("r-bad"), "{line}");
    assert_eq!(
        repo.git(&["notes", "--ref=agent-runs/r-bad", "show", &bad_tip]),
        "garbage{\n"
    );
}

#[test]
fn a_notes_ref_that_is_not_a_notes_commit_is_reported() {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r-good"]);
    repo.ok(&["start", "--run", "r-blob"]);
    let junk = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(junk.path(), "not a notes tree").unwrap();
    let blob = repo
        .git(&["hash-object", "-w", junk.path().to_str().unwrap()])
        .trim()
        .to_string();
    repo.git(&["update-ref", "refs/notes/agent-runs/r-blob", &blob]);
    let before = state(&repo);
    let out = repo.run(&["--json", "list"]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_str().unwrap())
        .collect();
    assert_eq!(runs, vec!["r-good"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("r-blob"));
    let out = repo.run(&["show", "r-blob"]);
    let line = assert_error(&out, 1, "show r-blob");
    assert!(line.contains("refs/notes/agent-runs/r-blob"), "{line}");
    refused(&repo, &["checkpoint", "plan", "--run", "r-blob"], 1);
    assert_eq!(state(&repo), before);
}

/// DESIGN.md §4: "1 failure with a one-line cause on stderr plus a hint".
#[test]
fn failures_carry_a_hint() {
    let repo = repo_with_run();
    let o = outside();
    let holder = tempfile::tempdir().unwrap();
    let bare = holder.path().join("bare.git");
    common::git_in(
        holder.path(),
        &["init", "-q", "--bare", bare.to_str().unwrap()],
    );
    let (garbage, _) = repo_with_garbage_note();

    let mut outputs: Vec<(String, Output)> = vec![];
    for args in [
        vec!["show", "nope"],
        vec!["show", "r1/nostep"],
        vec!["show", "r1@99"],
        vec!["show", "deadbeef"],
        vec!["log", "nope"],
        vec!["diff", "nope"],
    ] {
        outputs.push((format!("{args:?}"), repo.run(&args)));
    }
    outputs.push((
        "bare checkpoint".into(),
        run_in(&bare, &["checkpoint", "plan"]),
    ));
    outputs.push((
        "outside start".into(),
        common::tool_cmd(&o.dir)
            .env("GIT_CEILING_DIRECTORIES", o.dir.parent().unwrap())
            .args(["start"])
            .output()
            .unwrap(),
    ));
    outputs.push(("show r-bad".into(), garbage.run(&["show", "r-bad"])));
    outputs.push((
        "checkpoint on r-bad".into(),
        garbage.run(&["checkpoint", "plan", "--run", "r-bad"]),
    ));
    let mut missing = vec![];
    for (what, out) in &outputs {
        assert_error(out, 1, what);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !stderr
            .lines()
            .any(|l| l.starts_with("hint: ") && l.len() > 6)
        {
            missing.push(format!("{what}: {}", stderr.trim()));
        }
    }
    assert!(
        missing.is_empty(),
        "failures without a hint:\n{}",
        missing.join("\n")
    );
}

#[test]
fn bad_artifacts_are_refused_before_anything_is_written() {
    let repo = repo_with_run();
    let cases: &[(&str, &str)] = &[
        ("missing.txt", "missing.txt"),
        ("https://user:hunter2@example.com/log.txt", "credential"),
    ];
    for (i, (artifact, needle)) in cases.iter().enumerate() {
        // New content, so a snapshot taken before validating would have to write objects.
        repo.write(&format!("fresh-{i}.txt"), &format!("fresh content {i}\n"));
        let before = state(&repo);
        let out = repo.run(&["checkpoint", "plan", "--run", "r1", "--artifact", artifact]);
        let line = assert_error(&out, 2, &format!("--artifact {artifact}"));
        assert!(line.contains(needle), "--artifact {artifact}: {line}");
        let after = state(&repo);
        assert_eq!(after.refs, before.refs, "--artifact {artifact}: refs moved");
        assert_eq!(after.active_run, before.active_run);
        let new_files: Vec<&String> = after
            .files
            .iter()
            .filter(|f| !before.files.contains(f))
            .collect();
        assert!(
            new_files.is_empty(),
            "--artifact {artifact}: a refused checkpoint wrote {new_files:?}"
        );
    }
}

/// DESIGN.md §3.3: secret-looking values are never written; an error message that repeats a
/// password would put it in terminal scrollback and CI logs all the same.
#[test]
fn a_credential_in_an_artifact_uri_is_not_echoed_back() {
    let repo = repo_with_run();
    let before = state(&repo);
    let out = repo.run(&[
        "checkpoint",
        "plan",
        "--run",
        "r1",
        "--artifact",
        "https://user:hunter2@example.com/log.txt",
    ]);
    let line = assert_error(&out, 2, "--artifact with a credential");
    assert!(line.contains("credential"), "{line}");
    assert_eq!(state(&repo).refs, before.refs);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("hunter2"),
        "the password is echoed back: {line}"
    );
}

/// An I/O failure names the file it concerns (errors keep their path, issue 11): our private
/// folder is a file, so the writer lock under it cannot be made.
#[test]
fn io_errors_name_their_path() {
    let r = Repo::new();
    std::fs::write(r.path().join(".git/agent-rewind"), "not a folder").unwrap();
    let out = r.run(&["start", "--run", "r1"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let first = stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("error: ") && first.contains(".git/agent-rewind"),
        "the error names the path: {stderr}"
    );
    assert!(r.git(&["for-each-ref", "refs/agent-runs/"]).is_empty());
}
