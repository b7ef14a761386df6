//! What plain git shows of a run: `fsck --strict` is clean, `notes show` prints our JSON
//! lines, the first-parent log walks the chain, `log --notes` shows the metadata, the second
//! parent is the user's HEAD, identity trailers are in the message.

use super::{RUN, lines, parents, scenario};
use serde_json::Value;
use std::collections::BTreeSet;

#[test]
fn fsck_strict_is_clean_after_a_run() {
    let s = scenario();
    s.repo.assert_fsck();
    // Every object our refs reach is present (connectivity, not just existence).
    if let Some(err) = s.repo.missing_objects_under_our_refs() {
        panic!("{err}");
    }
}

#[test]
fn git_notes_show_prints_our_json_lines() {
    let s = scenario();
    let notes_ref = format!("agent-runs/{RUN}");
    // `git notes list` knows exactly our checkpoints.
    let listed: BTreeSet<String> = s
        .repo
        .git(&["notes", "--ref", &notes_ref, "list"])
        .lines()
        .map(|l| l.split_whitespace().nth(1).unwrap().to_string())
        .collect();
    let ids: BTreeSet<String> = s.cps.iter().map(|c| c.id().to_string()).collect();
    assert_eq!(listed, ids);

    let steps = [
        None,
        Some("plan"),
        Some("plan"),
        Some("implement"),
        Some("implement"),
        Some("test"),
    ];
    let events = ["start", "begin", "finish", "manual", "commit", "manual"];
    for (i, cp) in s.cps.iter().enumerate() {
        let body = s.repo.git(&["notes", "--ref", &notes_ref, "show", cp.id()]);
        let parsed: Vec<Value> = body
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("note line not JSON ({e}): {l}"))
            })
            .collect();
        assert!(!parsed.is_empty(), "empty note for {}", cp.id());
        for v in &parsed {
            assert!(v["type"].is_string(), "a line without type: {v}");
        }
        let cl: Vec<&Value> = parsed
            .iter()
            .filter(|v| v["type"] == "checkpoint")
            .collect();
        assert_eq!(cl.len(), 1, "one checkpoint line in {body}");
        let cl = cl[0];
        assert_eq!(cl["schema"], "agent-rewind/checkpoint/v1");
        assert_eq!(cl["run"], RUN);
        assert_eq!(cl["seq"], i as u64);
        assert_eq!(cl["step"].as_str(), steps[i], "step of seq {i}");
        assert_eq!(cl["event"], events[i], "event of seq {i}");
        // The note agrees with what the command printed.
        assert_eq!(cl["seq"], cp.json["seq"]);
        assert_eq!(cl["ts"], cp.json["ts"]);
    }
}

#[test]
fn first_parent_log_walks_the_chain() {
    let s = scenario();
    let listed = s.repo.json(&["list", RUN]);
    let listed_ids: Vec<String> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["checkpoint"].as_str().unwrap().to_string())
        .collect();
    let recorded_ids: Vec<String> = s.cps.iter().map(|c| c.id().to_string()).collect();
    assert_eq!(listed_ids, recorded_ids);
    let seqs: Vec<u64> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (0..recorded_ids.len() as u64).collect::<Vec<_>>());

    let walked = lines(&s.repo.git(&[
        "log",
        "--first-parent",
        "--format=%H",
        &format!("refs/agent-runs/{RUN}/HEAD"),
    ]));
    let mut expected: Vec<String> = recorded_ids.iter().rev().cloned().collect();
    expected.extend(lines(&s.repo.git(&[
        "rev-list",
        "--first-parent",
        &s.base_head,
    ])));
    assert_eq!(walked, expected);
    assert_eq!(walked[recorded_ids.len()], s.base_head);
}

#[test]
fn git_log_with_notes_glob_shows_the_metadata() {
    let s = scenario();
    let tip = s.cps.last().unwrap();
    let out = s.repo.git(&[
        "log",
        "--notes=agent-runs/*",
        "-1",
        &format!("refs/agent-runs/{RUN}/HEAD"),
    ]);
    assert!(out.contains(&format!("commit {}", tip.id())), "{out}");
    assert!(out.contains(&format!("Notes (agent-runs/{RUN}):")), "{out}");
    let note_line = out
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with('{') && l.contains("\"type\":\"checkpoint\""))
        .unwrap_or_else(|| panic!("no checkpoint line in git log output:\n{out}"));
    let v: Value = serde_json::from_str(note_line).unwrap();
    assert_eq!(v["run"], RUN);
    assert_eq!(v["step"], "test");
    assert_eq!(v["seq"], (s.cps.len() - 1) as u64);
    assert_eq!(v["status"], "completed");

    // After `init`, plain `git log` shows them without being asked (notes.displayRef).
    s.repo.ok(&["init"]);
    let out = s
        .repo
        .git(&["log", "-1", &format!("refs/agent-runs/{RUN}/HEAD")]);
    assert!(out.contains(&format!("Notes (agent-runs/{RUN}):")), "{out}");
}

#[test]
fn second_parent_is_the_users_head_when_it_differs() {
    let s = scenario();
    let ids: Vec<&str> = s.cps.iter().map(|c| c.id()).collect();
    // A fresh run's first checkpoint: first parent = the user's HEAD, nothing else.
    assert_eq!(parents(&s.repo, ids[0]), vec![s.base_head.clone()]);
    for i in 1..=3 {
        assert_eq!(
            parents(&s.repo, ids[i]),
            vec![ids[i - 1].to_string(), s.base_head.clone()],
            "seq {i}"
        );
    }
    for i in 4..=5 {
        assert_eq!(
            parents(&s.repo, ids[i]),
            vec![ids[i - 1].to_string(), s.agent_commit.clone()],
            "seq {i}"
        );
        assert_eq!(s.cps[i].json["git_commit_sha"], s.agent_commit.as_str());
    }
    assert_eq!(s.cps[0].json["git_commit_sha"], s.base_head.as_str());
    assert_eq!(s.cps[0].json["head_ref"], "refs/heads/main");
    // The agent's commit stays reachable from the run even if the branch goes away.
    s.repo.git(&["checkout", "-q", "--detach", &s.base_head]);
    s.repo.git(&["branch", "-q", "-D", "main"]);
    s.repo.git(&["reflog", "expire", "--expire=now", "--all"]);
    s.repo.git(&["gc", "-q", "--prune=now"]);
    assert_eq!(
        s.repo.git(&["cat-file", "-t", &s.agent_commit]).trim(),
        "commit"
    );
    s.repo.assert_fsck();
}

#[test]
fn identity_trailers_are_in_the_commit_message() {
    let s = scenario();
    let expected = [
        (None, 1, "start"),
        (Some("plan"), 1, "begin"),
        (Some("plan"), 1, "finish"),
        (Some("implement"), 1, "manual"),
        (Some("implement"), 1, "commit"),
        (Some("test"), 1, "manual"),
    ];
    for (cp, (step, attempt, event)) in s.cps.iter().zip(expected) {
        let body = s.repo.git(&["log", "-1", "--format=%B", cp.id()]);
        let mut want = format!("Agent-Run: {RUN}\n");
        if let Some(st) = step {
            want.push_str(&format!("Agent-Step: {st}\n"));
        }
        want.push_str(&format!(
            "Agent-Attempt: {attempt}\nAgent-Event: {event}\nAgent-Schema: 1\n"
        ));
        assert!(body.contains(&want), "trailers missing in:\n{body}");
        // …and git itself parses them as trailers.
        let parsed = s
            .repo
            .git(&["log", "-1", "--format=%(trailers:only,unfold)", cp.id()]);
        assert_eq!(parsed.trim_end(), want.trim_end(), "git's trailer parse");
        let run = s.repo.git(&[
            "log",
            "-1",
            "--format=%(trailers:key=Agent-Run,valueonly)",
            cp.id(),
        ]);
        assert_eq!(run.trim(), RUN);
    }
}
