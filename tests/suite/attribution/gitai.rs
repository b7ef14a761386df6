//! git-ai's notes both ways: `import --format git-ai` records the lines
//! git-ai's `refs/notes/ai` attribute so `blame`/`stats` show them, and `export --format
//! git-ai` writes ours as git-ai notes. The example notes are git-ai's own, written out
//! inline in `gitai_notes.rs`: the three complete examples of its standard
//! (git-ai-project/git-ai `specs/git_ai_standard_v3.0.0.md` §1.2.5-1.2.7) and the expected
//! output of its serializer test `test_file_names_with_spaces`
//! (`src/authorship/snapshots/…__file_names_with_spaces.snap`).

use super::gitai_notes::{LEGACY_EXAMPLE, MIXED_EXAMPLE, SESSIONS_EXAMPLE, SPACES_EXAMPLE};
use super::{Agent, commit, repo_with};
use crate::common::{Repo, git_in, git_stdin, json_in, ok_in, refs, run_in};
use serde_json::Value;
use std::path::Path;

/// `n` numbered lines `<tag> <i>`.
fn numbered(tag: &str, n: usize) -> String {
    (1..=n).map(|i| format!("{tag} {i}\n")).collect()
}

/// Attach a note to `rev` under `refs/notes/ai` (git's own `git notes`).
fn add_note(dir: &Path, rev: &str, note: &[u8]) {
    git_stdin(
        dir,
        &["notes", "--ref=ai", "add", "-f", "-F", "-", rev],
        note,
    );
}

/// Per line of `file` at `rev` (run in `cwd`): `tool/model/session/source` or `person`.
fn whos(cwd: &Path, file: &str, rev: &str) -> Vec<String> {
    json_in(cwd, &["blame", file, rev])["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| match l["origin"].as_str().unwrap() {
            "agent" => {
                let a = &l["agent"];
                let s = |k: &str| a[k].as_str().unwrap_or("-").to_string();
                format!(
                    "{}/{}/{}/{}",
                    s("agent"),
                    s("model"),
                    s("session"),
                    s("source")
                )
            }
            o => o.to_string(),
        })
        .collect()
}

/// `n` lines, all `person` but those in `ranges` (1-based, inclusive), which are `who`.
fn expected(n: usize, parts: &[(&[(usize, usize)], &str)]) -> Vec<String> {
    let mut out = vec!["person".to_string(); n];
    for (ranges, who) in parts {
        for &(a, b) in *ranges {
            for slot in &mut out[a - 1..b] {
                *slot = who.to_string();
            }
        }
    }
    out
}

#[test]
fn git_ai_example_notes_import_into_blame_and_stats() {
    let r = Repo::new();
    let d = r.path();
    let mut revs = vec![];
    for (tag, note) in [
        ("one", SESSIONS_EXAMPLE),
        ("two", LEGACY_EXAMPLE),
        ("three", MIXED_EXAMPLE),
    ] {
        r.write("src/main.rs", &numbered(&format!("main {tag}"), 50));
        r.write("src/lib.rs", &numbered(&format!("lib {tag}"), 50));
        r.git(&["add", "-A"]);
        r.git(&["commit", "-q", "-m", tag]);
        add_note(d, "HEAD", note.as_bytes());
        revs.push(r.rev("HEAD"));
    }
    r.write("src/my file.rs", &numbered("spaced", 12));
    r.write("docs/README (copy).md", &numbered("readme", 6));
    r.write("test/file-with-dashes.js", &numbered("js", 30));
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "spaces"]);
    add_note(d, "HEAD", SPACES_EXAMPLE.as_bytes());
    let notes_before = r.rev("refs/notes/ai");

    let out = r.json(&["import", "--format", "git-ai"]);
    assert_eq!(out["imported"].as_array().unwrap().len(), 4, "{out}");
    assert_eq!(out["skipped"], serde_json::json!([]), "{out}");
    let run = out["run"].as_str().unwrap().to_string();

    let cursor = "cursor/claude-sonnet-4-5-20250514/6ef2299e-a67f-432b-aa80-3d2fb4d28999/git-ai";
    let claude = "claude/claude-sonnet-4-5-20250514/conv_abc123def456/git-ai";
    assert_eq!(
        whos(d, "src/main.rs", &revs[0]),
        expected(50, &[(&[(1, 10), (15, 20), (25, 25), (30, 35)], cursor)])
    );
    assert_eq!(
        whos(d, "src/lib.rs", &revs[0]),
        expected(50, &[(&[(1, 50)], claude)])
    );
    // Legacy prompts: two sessions of one tool, told apart by their records.
    let opus = "cursor/claude-4.5-opus/6ef2299e-a67f-432b-aa80-3d2fb4d28999/git-ai";
    let sonnet = "cursor/claude-3-sonnet/a1b2c3d4-e5f6-7890-abcd-ef1234567890/git-ai";
    assert_eq!(
        whos(d, "src/main.rs", &revs[1]),
        expected(
            50,
            &[
                (&[(1, 10), (15, 20)], opus),
                (&[(25, 25), (30, 35)], sonnet)
            ]
        )
    );
    assert_eq!(
        whos(d, "src/lib.rs", &revs[1]),
        expected(50, &[(&[(1, 50)], opus)])
    );
    // Mixed: a session, a known human (a person's lines), a legacy prompt.
    let conv = "claude/claude-sonnet-4-5-20250514/conv_abc123/git-ai";
    assert_eq!(
        whos(d, "src/main.rs", &revs[2]),
        expected(50, &[(&[(1, 10)], conv)])
    );
    let gpt = "cursor/gpt-4/old_session_id/git-ai";
    assert_eq!(
        whos(d, "src/lib.rs", &revs[2]),
        expected(50, &[(&[(1, 50)], gpt)])
    );
    // Quoted paths, from a subfolder with a path relative to it (as git blame takes it).
    let spaced = "cursor/claude-3-sonnet/session_123/git-ai";
    assert_eq!(
        whos(&d.join("src"), "my file.rs", "HEAD"),
        expected(12, &[(&[(1, 10)], spaced)])
    );
    assert_eq!(
        whos(d, "docs/README (copy).md", "HEAD"),
        expected(6, &[(&[(5, 5)], spaced)])
    );
    assert_eq!(
        whos(d, "test/file-with-dashes.js", "HEAD"),
        expected(30, &[(&[(20, 25)], spaced)])
    );
    // --porcelain and the human layout say where the line's attribution came from.
    let porcelain = r.ok(&["blame", "src/lib.rs", &revs[0], "--porcelain", "-L", "1,1"]);
    assert!(porcelain.contains("agent-source git-ai\n"), "{porcelain}");
    assert!(
        porcelain.contains(&format!("agent-run {run}\n")),
        "{porcelain}"
    );
    let human = r.ok(&["blame", "src/lib.rs", &revs[0], "-L", "1,1"]);
    assert!(human.contains("claude:sonnet-4-5 via git-ai"), "{human}");
    // stats counts them per agent and model.
    let stats = r.json(&["stats", &revs[0]]);
    let rows = stats["rows"].as_array().unwrap();
    let added = |name: &str| {
        rows.iter()
            .find(|x| x["origin"] == "agent" && x["name"] == name)
            .map(|x| x["added"].as_u64().unwrap())
    };
    assert_eq!(added("cursor"), Some(23), "{stats}");
    assert_eq!(added("claude"), Some(50), "{stats}");

    // Importing again records nothing; git-ai's notes and the user's files are untouched.
    let again = r.json(&["import", "--format", "git-ai", "ai"]);
    assert_eq!(again["run"], Value::Null, "{again}");
    assert_eq!(again["up_to_date"], 4, "{again}");
    assert_eq!(refs(d, "refs/agent-runs/").len(), 1);
    assert_eq!(r.rev("refs/notes/ai"), notes_before);
    assert_eq!(r.git(&["status", "--porcelain"]), "");
    r.assert_fsck();
}

/// git-ai notes that must each be skipped, with the words its reason says; `meta` is a
/// valid metadata part for the notes whose fault lies elsewhere.
fn hostile_notes(meta: &str) -> Vec<(Vec<u8>, &'static str)> {
    vec![
        (b"a.txt\n  abcdabcdabcdabcd 1\n".to_vec(), "no `---` line"),
        (
            b"a.txt\n  abcdabcdabcdabcd 1\n---\n{not json".to_vec(),
            "metadata is not valid",
        ),
        (
            format!(
                "a.txt\n  abcdabcdabcdabcd 1\n---\n{}",
                meta.replace("3.0.0", "2.0.0")
            )
            .into_bytes(),
            "schema",
        ),
        (
            format!("a.txt\n  abcdabcdabcdabcd 1-4294967295\n---\n{meta}").into_bytes(),
            "past the end",
        ),
        (
            format!("a.txt\n  abcdabcdabcdabcd 0-2\n---\n{meta}").into_bytes(),
            "not a line range",
        ),
        (
            format!("a.txt\n  abcdabcdabcdabcd 9999999999999\n---\n{meta}").into_bytes(),
            "not a line range",
        ),
        (
            format!("../../etc/passwd\n  abcdabcdabcdabcd 1\n---\n{meta}").into_bytes(),
            "not a path inside",
        ),
        (
            format!(".git/config\n  abcdabcdabcdabcd 1\n---\n{meta}").into_bytes(),
            "not a path inside",
        ),
        (
            [
                &b"a.txt\n  abcdabcdabcdabcd 1\n---\n"[..],
                &[0xff, 0xfe][..],
            ]
            .concat(),
            "not UTF-8",
        ),
        (
            format!("  abcdabcdabcdabcd 1\n---\n{meta}").into_bytes(),
            "before any file",
        ),
    ]
}

#[test]
fn git_ai_hostile_notes_are_skipped_by_name_and_errors_change_nothing() {
    let r = Repo::new();
    let d = r.path();
    // Before any note: a clear error naming the ref and how to get it.
    let none = r.run(&["import", "--format", "git-ai"]);
    assert_eq!(none.status.code(), Some(1));
    let err = String::from_utf8_lossy(&none.stderr);
    assert!(
        err.contains("no notes at refs/notes/ai") && err.contains("git fetch"),
        "{err}"
    );
    let bad_ref = r.run(&["import", "--format", "git-ai", "bad..ref"]);
    assert_eq!(bad_ref.status.code(), Some(2));

    r.write("a.txt", "x\ny\nz\n");
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "a"]);
    let meta = r#"{"schema_version":"authorship/3.0.0","base_commit_sha":"","prompts":{"abcdabcdabcdabcd":{"agent_id":{"tool":"t","id":"i","model":"m"}}}}"#;
    let bad = hostile_notes(meta);
    let mut commits = vec![];
    for (i, (note, _)) in bad.iter().enumerate() {
        r.git(&["commit", "-q", "--allow-empty", "-m", &format!("n{i}")]);
        add_note(d, "HEAD", note);
        commits.push(r.rev("HEAD"));
    }
    // Ranges naming the same lines over and over (a small note, hours of work): refused.
    r.write("big.txt", &numbered("big", 100_000));
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "big"]);
    let many = vec!["1-100000"; 200].join(",");
    add_note(
        d,
        "HEAD",
        format!("big.txt\n  abcdabcdabcdabcd {many}\n---\n{meta}").as_bytes(),
    );
    let big = r.rev("HEAD");
    // A note on a blob, not a commit.
    let blob = git_stdin(d, &["hash-object", "-w", "--stdin"], b"blob\n");
    add_note(
        d,
        blob.trim(),
        format!("a.txt\n  abcdabcdabcdabcd 1\n---\n{meta}").as_bytes(),
    );
    let notes_before = r.rev("refs/notes/ai");

    let out = r.run(&["--json", "import", "--format", "git-ai"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["run"], Value::Null);
    let skipped = doc["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), bad.len() + 2, "{doc}");
    for (c, (_, why)) in commits.iter().zip(&bad) {
        let s = skipped.iter().find(|s| s["commit"] == c.as_str()).unwrap();
        assert!(s["reason"].as_str().unwrap().contains(why), "{s} vs {why}");
    }
    let s = skipped
        .iter()
        .find(|s| s["commit"] == big.as_str())
        .unwrap();
    assert!(
        s["reason"].as_str().unwrap().contains("name more lines"),
        "{s}"
    );
    let s = skipped.iter().find(|s| s["commit"] == blob.trim()).unwrap();
    assert!(
        s["reason"].as_str().unwrap().contains("not on a commit"),
        "{s}"
    );
    // Each skip is named on stderr too; nothing was recorded, git-ai's notes are as they were.
    let human = r.run(&["import", "--format", "git-ai"]);
    let err = String::from_utf8_lossy(&human.stderr);
    assert_eq!(err.matches("skipped:").count(), bad.len() + 2, "{err}");
    assert!(refs(d, "refs/agent-runs/").is_empty());
    assert!(refs(d, "refs/notes/agent-runs/").is_empty());
    assert_eq!(r.rev("refs/notes/ai"), notes_before);

    // One usable note among them is imported; a key without a record is named, its lines left.
    r.write("a.txt", "x\nagent\nz\n");
    r.git(&["commit", "-q", "-am", "good"]);
    let good =
        format!("a.txt\n  abcdabcdabcdabcd 2\n  s_00000000000000::t_00000000000000 3\n---\n{meta}");
    add_note(d, "HEAD", good.as_bytes());
    let out = r.run(&["--json", "import", "--format", "git-ai"]);
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["imported"].as_array().unwrap().len(), 1, "{doc}");
    assert!(
        doc["skipped"]
            .to_string()
            .contains("s_00000000000000::t_00000000000000 has no record"),
        "{doc}"
    );
    assert_eq!(
        whos(d, "a.txt", "HEAD"),
        vec!["person", "t/m/i/git-ai", "person"]
    );
    // A notes ref that is not a notes commit: an error, nothing recorded.
    r.git(&["update-ref", "refs/notes/broken", blob.trim()]);
    let broken = r.run(&["import", "--format", "git-ai", "refs/notes/broken"]);
    assert_eq!(broken.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&broken.stderr).contains("not a notes ref"));
    assert_eq!(refs(d, "refs/agent-runs/").len(), 1);
    assert_eq!(r.git(&["status", "--porcelain"]), "");
    r.assert_fsck();
}

/// git-ai's parser rules (its `deserialize_from_string` and the standard's §1.2), applied
/// to a note we wrote: what its tools require to read it.
fn assert_git_ai_accepts(note: &str, commit: &str) -> Value {
    let lines: Vec<&str> = note.lines().collect();
    let divider = lines.iter().position(|l| *l == "---").expect("divider");
    let meta: Value = serde_json::from_str(&lines[divider + 1..].join("\n")).unwrap();
    assert_eq!(meta["schema_version"], "authorship/3.0.0");
    assert_eq!(meta["base_commit_sha"], commit);
    assert!(meta["prompts"].is_object());
    let hex14 = |s: &str| s.len() == 14 && s.bytes().all(|b| b.is_ascii_hexdigit());
    let mut file_seen = false;
    for l in &lines[..divider] {
        if let Some(entry) = l.strip_prefix("  ") {
            assert!(file_seen, "{note}");
            let (key, ranges) = entry.split_once(' ').unwrap();
            let (s, t) = key.split_once("::").unwrap();
            assert!(s.starts_with("s_") && hex14(&s[2..]), "{key}");
            assert!(t.starts_with("t_") && hex14(&t[2..]), "{key}");
            let rec = &meta["sessions"][s]["agent_id"];
            for k in ["tool", "id", "model"] {
                assert!(rec[k].is_string(), "{s}: {meta}");
            }
            let mut last = 0;
            for part in ranges.split(',') {
                let (a, b) = part.split_once('-').unwrap_or((part, part));
                let (a, b): (u32, u32) = (a.parse().unwrap(), b.parse().unwrap());
                assert!(a > last && b >= a, "{ranges}");
                last = b;
            }
        } else {
            assert!(!l.starts_with(' ') && !l.is_empty(), "{note}");
            file_seen = true;
        }
    }
    meta
}

#[test]
fn git_ai_export_round_trips_through_import_and_travels_with_the_run() {
    let r = repo_with("one\ntwo\n");
    r.git(&["checkout", "-q", "-b", "feature"]);
    let a = Agent::start(r.path(), "s-gitai-a", "claude-sonnet-4-5");
    a.write("app.txt", "one\nagent a\nagent b\ntwo\nagent c\n");
    a.turn();
    let b = Agent::start(r.path(), "s-gitai-b", "claude-opus-4-1");
    b.write("lib.txt", "lib by b\nmore by b\n");
    b.turn();
    commit(&r, "agent lines");
    r.write("app.txt", "one\nagent a\nagent b\ntwo\nagent c\nperson d\n");
    commit(&r, "person line");
    let d = r.path();
    let out = r.json(&["export", "--format", "git-ai", "main..feature"]);
    let notes = out["notes"].as_array().unwrap();
    // Only the commit that added agent lines gets a note.
    assert_eq!(notes.len(), 1, "{out}");
    assert_eq!(notes[0]["result"], "written");
    assert_eq!(notes[0]["lines"], 5);
    let agent_commit = r.rev("feature~1");
    let note = r.git(&["notes", "--ref=ai", "show", &agent_commit]);
    let meta = assert_git_ai_accepts(&note, &agent_commit);
    assert_eq!(meta["sessions"].as_object().unwrap().len(), 2, "{note}");
    assert!(
        note.contains("app.txt\n  s_") && note.contains(" 2-3,5\n"),
        "{note}"
    );
    assert!(
        !r.git_output(&["notes", "--ref=ai", "list", "feature"])
            .status
            .success()
    );
    // Again: up to date. A commit holding another note keeps it unless --force.
    let again = r.json(&["export", "--format", "git-ai", "main..feature"]);
    assert_eq!(again["notes"][0]["result"], "up to date");
    add_note(d, &agent_commit, b"someone else's\n");
    let kept = r.run(&["export", "--format", "git-ai", "main..feature"]);
    assert_eq!(kept.status.code(), Some(1));
    assert_eq!(
        r.git(&["notes", "--ref=ai", "show", &agent_commit]),
        "someone else's\n"
    );
    r.ok(&["export", "--format", "git-ai", "--force", "main..feature"]);
    assert_eq!(r.git(&["notes", "--ref=ai", "show", &agent_commit]), note);
    let bad = r.run(&["export", "--format", "git-ai", "-o", "x", "main..feature"]);
    assert_eq!(bad.status.code(), Some(2));

    // A clone with the commits and git-ai's notes but none of our runs.
    let home = tempfile::tempdir().unwrap();
    let clone = home.path().join("clone");
    git_in(
        home.path(),
        &["clone", "-q", d.to_str().unwrap(), clone.to_str().unwrap()],
    );
    git_in(
        &clone,
        &["fetch", "-q", "origin", "refs/notes/ai:refs/notes/ai"],
    );
    let imported = json_in(&clone, &["import", "--format", "git-ai"]);
    let run = imported["run"].as_str().unwrap().to_string();
    let strip = |v: Vec<String>| -> Vec<String> {
        v.into_iter()
            .map(|w| {
                w.trim_end_matches("/git-ai")
                    .trim_end_matches("/-")
                    .to_string()
            })
            .collect()
    };
    for file in ["app.txt", "lib.txt"] {
        let ours = whos(d, file, "feature");
        let theirs = whos(&clone, file, "origin/feature");
        assert!(theirs.iter().any(|w| w.ends_with("/git-ai")), "{theirs:?}");
        assert_eq!(strip(theirs), strip(ours), "{file}");
    }
    assert_eq!(
        strip(whos(&clone, "app.txt", "origin/feature")),
        vec![
            "person",
            "claude/claude-sonnet-4-5/s-gitai-a",
            "claude/claude-sonnet-4-5/s-gitai-a",
            "person",
            "claude/claude-sonnet-4-5/s-gitai-a",
            "person"
        ]
    );
    // The imported run travels like any run: pushed, then fetched into a third clone.
    let bare = home.path().join("runs.git");
    git_in(
        home.path(),
        &["init", "-q", "--bare", bare.to_str().unwrap()],
    );
    ok_in(&clone, &["push", "--remote", bare.to_str().unwrap(), &run]);
    let third = home.path().join("third");
    git_in(
        home.path(),
        &["clone", "-q", d.to_str().unwrap(), third.to_str().unwrap()],
    );
    let fetched = run_in(&third, &["fetch", "--remote", bare.to_str().unwrap(), &run]);
    assert!(
        fetched.status.success(),
        "{}",
        String::from_utf8_lossy(&fetched.stderr)
    );
    assert_eq!(
        whos(&third, "lib.txt", "origin/feature"),
        whos(&clone, "lib.txt", "origin/feature")
    );
    for dir in [d, clone.as_path(), third.as_path()] {
        assert_eq!(git_in(dir, &["status", "--porcelain"]), "");
        crate::common::assert_fsck_in(dir, "after the round trip");
    }
}

#[test]
fn git_ai_export_refuses_every_notes_ref_of_ours_and_writes_nothing() {
    let r = repo_with("one\n");
    r.git(&["checkout", "-q", "-b", "feature"]);
    let a = Agent::start(r.path(), "s-gitai-own", "claude-sonnet-4-5");
    a.write("app.txt", "one\nagent a\n");
    a.turn();
    commit(&r, "agent lines");
    let run = r.json(&["list"])[0]["run"].as_str().unwrap().to_string();
    let before = refs(r.path(), "refs/");
    let objects = r.git(&["count-objects", "-v"]);
    for notes_ref in [
        format!("refs/notes/agent-runs/{run}"),
        format!("agent-runs/{run}"),
        "refs/notes/agent-runs/other".to_string(),
        "refs/notes/agent-runs".to_string(),
        "refs/notes/agent-runs-remote/origin/r1".to_string(),
        format!("refs/notes/Agent-Runs/{run}"),
    ] {
        let out = r.run(&[
            "export",
            "--format",
            "git-ai",
            "--notes-ref",
            &notes_ref,
            "main..feature",
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{notes_ref}: {err}");
        assert!(
            err.contains("git agent-rewind") && err.contains("refs/notes/ai"),
            "{notes_ref}: {err}"
        );
        assert_eq!(refs(r.path(), "refs/"), before, "{notes_ref}");
        assert_eq!(r.git(&["count-objects", "-v"]), objects, "{notes_ref}");
    }
    // The run's own notes still read as ours; a notes ref of git-ai's own still takes them.
    assert_eq!(r.json(&["show", &run])["run"], run.as_str());
    let out = r.json(&[
        "export",
        "--format",
        "git-ai",
        "--notes-ref",
        "refs/notes/ai-team",
        "main..feature",
    ]);
    assert_eq!(out["notes"][0]["result"], "written", "{out}");
    r.assert_fsck();
}
