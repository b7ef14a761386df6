//! `log -S`/`log -G`: the turns that added or removed a string (or a line matching a
//! regex), checked against an independent model, real `git log -S`/`-G --first-parent`
//! over the same commits; the turn's agent, model, prompt id, time and file in the text and
//! in `--json`; one run or every run with `--all`; binary files; no hit is exit 0.

use crate::common::{Repo, checkpoints, stderr, tool_stdin};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// A Claude Code session driven through its hooks: each turn a `Stop` with a prompt id.
struct Session {
    dir: PathBuf,
    id: String,
    transcript: PathBuf,
    run: String,
    _home: tempfile::TempDir,
}

impl Session {
    fn start(dir: &std::path::Path, id: &str, model: &str) -> Session {
        let home = tempfile::tempdir().unwrap();
        let transcript = home.path().join(format!("{id}.jsonl"));
        let line = json!({"type": "assistant", "uuid": format!("{id}-1"),
            "message": {"role": "assistant", "model": model, "content": []}});
        std::fs::write(&transcript, format!("{line}\n")).unwrap();
        let s = Session {
            dir: dir.to_path_buf(),
            id: id.to_string(),
            transcript,
            run: String::new(),
            _home: home,
        };
        let started = s.send(json!({"hook_event_name": "SessionStart", "source": "startup"}));
        Session {
            run: started["run"].as_str().unwrap().to_string(),
            ..s
        }
    }

    fn send(&self, mut event: Value) -> Value {
        let o = event.as_object_mut().unwrap();
        o.insert("session_id".into(), self.id.clone().into());
        o.insert("cwd".into(), self.dir.to_str().unwrap().into());
        o.insert(
            "transcript_path".into(),
            self.transcript.to_str().unwrap().into(),
        );
        let out = tool_stdin(
            &self.dir,
            &["--json", "hook", "claude"],
            event.to_string().as_bytes(),
            &[],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// The files as given (`None`: deleted), then the turn's checkpoint; its id.
    fn turn(&self, prompt: &str, files: &[(&str, Option<&[u8]>)]) -> String {
        for (rel, content) in files {
            let path = self.dir.join(rel);
            match content {
                Some(c) => std::fs::write(&path, c).unwrap(),
                None => std::fs::remove_file(&path).unwrap(),
            }
        }
        let out = self.send(json!({"hook_event_name": "Stop", "stop_hook_active": false,
            "prompt_id": prompt}));
        out["checkpoint"].as_str().unwrap().to_string()
    }

    /// The run this session records.
    fn run(&self, _: &Repo) -> String {
        self.run.clone()
    }
}

/// The independent model: real git's pickaxe over the run's own first-parent chain.
fn git_pickaxe(r: &Repo, run: &str, args: &[&str]) -> BTreeSet<String> {
    let cps = checkpoints(r.path(), run);
    let base = cps[0]["parents"][0].as_str().map(str::to_string);
    let tip = format!("refs/agent-runs/{run}/HEAD");
    let range = match &base {
        Some(b) => format!("{b}..{tip}"),
        None => tip,
    };
    let mut a = vec!["log", "--no-renames", "--first-parent", "--format=%H"];
    a.extend_from_slice(args);
    a.push(&range);
    r.git(&a).lines().map(str::to_string).collect()
}

/// The checkpoints `log` names in `--json`.
fn ours(r: &Repo, args: &[&str]) -> (Vec<Value>, BTreeSet<String>) {
    let mut a = vec!["log"];
    a.extend_from_slice(args);
    let hits = r.json(&a).as_array().unwrap().clone();
    let ids = hits
        .iter()
        .map(|h| h["checkpoint"].as_str().unwrap().to_string())
        .collect();
    (hits, ids)
}

/// One session's turns: the needle added, kept, moved, spread to another file, put in a
/// binary file, and removed from every file.
fn needle_story(r: &Repo) -> (Session, Vec<String>) {
    let s = Session::start(r.path(), "s-1", "model-a");
    let t = vec![
        s.turn("p-1", &[("a.txt", Some(b"one\nthe needle\ntwo\n"))]),
        s.turn(
            "p-2",
            &[
                ("a.txt", Some(b"one\nthe needle\ntwo\nthree\n")),
                ("c.txt", Some(b"other\n")),
            ],
        ),
        s.turn("p-3", &[("a.txt", Some(b"one\ntwo\nthree\nthe needle\n"))]),
        s.turn(
            "p-4",
            &[
                ("b.txt", Some(b"needle needleneedle\n")),
                ("a.txt", Some(b"one\ntwo\nthree\n")),
            ],
        ),
        s.turn("p-5", &[("bin.dat", Some(b"\0\x01needle\0"))]),
        s.turn("p-6", &[("b.txt", None), ("bin.dat", None)]),
    ];
    (s, t)
}

#[test]
fn log_s_names_the_turns_git_log_s_names_with_who_and_which_file() {
    let r = Repo::new();
    let (s, t) = needle_story(&r);
    let run = s.run(&r);
    let want = git_pickaxe(&r, &run, &["-S", "needle"]);
    let (hits, got) = ours(&r, &["-S", "needle"]);
    assert_eq!(got, want, "{hits:#?}");
    // Added (p-1), spread while removed (p-4), in a binary file (p-5), removed (p-6); kept
    // (p-2) and moved (p-3) are not hits.
    let expected: BTreeSet<String> = [0, 3, 4, 5].iter().map(|i| t[*i].clone()).collect();
    assert_eq!(got, expected);
    // Newest first, as git log.
    assert_eq!(hits[0]["checkpoint"], t[5].as_str());
    let p4 = hits
        .iter()
        .find(|h| h["checkpoint"] == t[3].as_str())
        .unwrap();
    assert_eq!(p4["agent"], "claude");
    assert_eq!(p4["model"], "model-a");
    assert_eq!(p4["prompt_id"], "p-4");
    assert_eq!(p4["run"], run.as_str());
    assert!(p4["ts"].as_str().unwrap().ends_with('Z'), "{p4}");
    assert_eq!(
        p4["files"],
        json!([{"path": "a.txt", "before": 1, "after": 0}, {"path": "b.txt", "before": 0, "after": 3}])
    );
    let p5 = hits
        .iter()
        .find(|h| h["checkpoint"] == t[4].as_str())
        .unwrap();
    assert_eq!(
        p5["files"],
        json!([{"path": "bin.dat", "before": 0, "after": 1}])
    );
    // The text says the same.
    let text = r.ok(&["log", "-S", "needle"]);
    assert!(text.contains(&t[3][..12]), "{text}");
    assert!(
        text.contains("agent claude, model model-a, prompt p-4"),
        "{text}"
    );
    assert!(text.contains("b.txt  (0 -> 3)"), "{text}");
    assert!(!text.contains(&t[1][..12]), "{text}");
}

#[test]
fn log_g_names_the_turns_git_log_g_names_and_skips_binary_files() {
    let r = Repo::new();
    let (s, t) = needle_story(&r);
    let run = s.run(&r);
    for re in ["needle", "^the ne+dle$", "e{2}dle ne"] {
        let want = git_pickaxe(&r, &run, &["-G", re]);
        let (hits, got) = ours(&r, &["-G", re]);
        assert_eq!(got, want, "-G {re}: {hits:#?}");
    }
    let (hits, got) = ours(&r, &["-G", "needle"]);
    // The move (p-3) is a hit for -G; the binary file (p-5) is not.
    assert!(got.contains(&t[2]) && !got.contains(&t[4]), "{hits:#?}");
    let p3 = hits
        .iter()
        .find(|h| h["checkpoint"] == t[2].as_str())
        .unwrap();
    assert_eq!(
        p3["files"],
        json!([{"path": "a.txt", "removed": 1, "added": 1}])
    );
    // --pickaxe-regex makes -S's string a regex, as git's.
    let want = git_pickaxe(&r, &run, &["-S", "ne+dle", "--pickaxe-regex"]);
    assert_eq!(ours(&r, &["-S", "ne+dle", "--pickaxe-regex"]).1, want);
}

#[test]
fn log_s_all_searches_every_run_and_one_run_only_its_own() {
    let r = Repo::new();
    let (first, t) = needle_story(&r);
    let first_run = first.run(&r);
    // A second agent in a worktree of its own records a run of its own.
    let elsewhere = tempfile::tempdir().unwrap();
    let wt = elsewhere.path().join("wt");
    r.git(&["worktree", "add", "-q", wt.to_str().unwrap()]);
    let second = Session::start(&wt, "s-2", "model-b");
    let second_run = second.run(&r);
    assert_ne!(first_run, second_run);
    let u = second.turn("q-1", &[("d.txt", Some(b"a needle here\n"))]);
    // No run named: this worktree's active run only.
    let (_, active) = ours(&r, &["-S", "needle"]);
    assert_eq!(active, git_pickaxe(&r, &first_run, &["-S", "needle"]));
    assert!(!active.contains(&u));
    let (_, named) = ours(&r, &["-S", "needle", &second_run]);
    assert_eq!(named, git_pickaxe(&r, &second_run, &["-S", "needle"]));
    assert_eq!(named, BTreeSet::from([u.clone()]));
    let (hits, all) = ours(&r, &["-S", "needle", "--all"]);
    let union: BTreeSet<String> = named.union(&active).cloned().collect();
    assert_eq!(all, union);
    assert!(all.contains(&t[0]));
    // Newest first across runs: the second run's turn came last.
    assert_eq!(hits[0]["checkpoint"], u.as_str());
    assert_eq!(hits[0]["model"], "model-b");
    assert_eq!(hits[0]["prompt_id"], "q-1");
}

#[test]
fn log_s_with_no_hit_says_so_and_exits_0_and_bad_input_is_refused() {
    let r = Repo::new();
    let _ = needle_story(&r);
    let out = r.run(&["log", "-S", "nowhere to be found"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "no checkpoint added or removed it\n"
    );
    assert_eq!(r.json(&["log", "-S", "nowhere"]), json!([]));
    for bad in [
        vec!["log", "-G", "("],
        vec!["log", "-S", ""],
        vec!["log", "-S", "x", "-G", "y"],
        vec!["log", "--pickaxe-regex"],
        vec!["log", "--all"],
        vec!["log", "-S", "x", "--graph"],
    ] {
        let out = r.run(&bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", stderr(&out));
    }
}

#[test]
fn log_s_and_g_over_a_long_run_name_what_git_names_in_git_order() {
    // Long enough for the walk to be split between threads: the stretches' seams must
    // neither lose nor repeat a checkpoint, and the order stays newest first.
    let r = Repo::new();
    let s = Session::start(r.path(), "s-long", "model-l");
    let mut needles: u32 = 0;
    for t in 0..200u32 {
        let mut body = format!("turn {t}\n");
        if t % 7 == 0 {
            needles += 1;
        }
        if t % 11 == 0 {
            needles = needles.saturating_sub(1);
        }
        for n in 0..needles {
            body.push_str(&format!("needle {n}\n"));
        }
        s.turn(&format!("p-{t}"), &[("long.txt", Some(body.as_bytes()))]);
    }
    let run = s.run(&r);
    for flags in [["-S", "needle"], ["-G", "needle [0-9]*[05]$"]] {
        let want = git_pickaxe(&r, &run, &flags);
        let (hits, got) = ours(&r, &flags);
        assert!(want.len() > 5, "{flags:?}: {}", want.len());
        assert_eq!(got, want, "{flags:?}");
        let order: Vec<&str> = hits
            .iter()
            .map(|h| h["checkpoint"].as_str().unwrap())
            .collect();
        let mut a = vec!["log", "--no-renames", "--first-parent", "--format=%H"];
        a.extend_from_slice(&flags);
        let tip = format!("refs/agent-runs/{run}/HEAD");
        a.push(&tip);
        let git_order: Vec<String> = r.git(&a).lines().map(str::to_string).collect();
        assert_eq!(order, git_order, "{flags:?}");
    }
}
