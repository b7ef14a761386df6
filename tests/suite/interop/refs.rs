//! Our refs under git's own handling: every address form resolves to the same checkpoint,
//! `git gc` and packed refs are survived, reflogs record every move.

use super::{RUN, lines, parents, scenario};
use std::collections::BTreeSet;

#[test]
fn every_address_form_resolves_to_the_same_checkpoint() {
    let s = scenario();
    let tip = s.cps.last().unwrap().id().to_string();
    let busy = s.cps[3].id().to_string();
    let cases: Vec<(String, &str)> = vec![
        (RUN.to_string(), &tip),
        (format!("{RUN}/test"), &tip),
        (format!("{RUN}@5"), &tip),
        (tip.clone(), &tip),
        (tip[..8].to_string(), &tip),
        (tip[..8].to_ascii_uppercase(), &tip),
        (format!("{RUN}@3"), &busy),
        (busy.clone(), &busy),
        (busy[..8].to_string(), &busy),
        (format!("{RUN}/plan"), s.cps[2].id()),
        (format!("{RUN}/implement"), s.cps[4].id()),
        (format!("{RUN}@0"), s.cps[0].id()),
    ];
    for (addr, want) in &cases {
        let shown = s.repo.json(&["show", addr]);
        assert_eq!(shown["checkpoint"], *want, "show {addr}");
        assert_eq!(shown["run"], RUN, "show {addr}");
    }
    // `show` lists the same paths plain git sees changing against the first parent.
    let shown = s.repo.json(&["show", &busy]);
    let files: BTreeSet<String> = shown["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect();
    let git_files: BTreeSet<String> = s
        .repo
        .git(&[
            "diff-tree",
            "-r",
            "--no-renames",
            "--name-only",
            &format!("{busy}^1"),
            &busy,
        ])
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(files, git_files);
    // `diff` between two addresses agrees too.
    let d = s
        .repo
        .json(&["diff", &format!("{RUN}@2"), &format!("{RUN}@3")]);
    assert_eq!(d["from"], s.cps[2].id());
    assert_eq!(d["to"], busy.as_str());
    let dfiles: BTreeSet<String> = d["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(dfiles, git_files);
}

#[test]
fn survives_git_gc_and_packed_refs() {
    let s = scenario();
    let before = s.repo.json(&["list", RUN]);
    s.repo.git(&["pack-refs", "--all"]);
    s.repo.git(&["gc", "-q", "--prune=now"]);
    assert!(
        !s.repo
            .path()
            .join(format!(".git/refs/agent-runs/{RUN}/HEAD"))
            .exists(),
        "refs were not packed"
    );
    assert_eq!(s.repo.json(&["list", RUN]), before);
    // Appending compares against the packed value and writes on top of it.
    s.repo.write("after-gc.txt", "x\n");
    let cp = s.repo.json(&["checkpoint", "test", "--meta", "after=gc"]);
    assert_eq!(cp["seq"], s.cps.len() as u64);
    let id = cp["checkpoint"].as_str().unwrap();
    assert_eq!(s.repo.rev(&format!("refs/agent-runs/{RUN}/HEAD")), id);
    assert_eq!(s.repo.rev(&format!("refs/agent-runs/{RUN}/test")), id);
    assert_eq!(parents(&s.repo, id)[0], s.cps.last().unwrap().id());
    let note = s
        .repo
        .git(&["notes", &format!("--ref=agent-runs/{RUN}"), "show", id]);
    assert!(note.contains("\"after\":\"gc\""), "{note}");
    // Older notes survived the notes ref moving on from its packed value.
    for cp in &s.cps {
        s.repo
            .git(&["notes", &format!("--ref=agent-runs/{RUN}"), "show", cp.id()]);
    }
    s.repo.assert_fsck();
}

#[test]
fn reflogs_record_every_move_of_our_refs() {
    let s = scenario();
    // No `init` was run: reflogs are written for our refs regardless of core.logAllRefUpdates.
    let moves = lines(&s.repo.git(&[
        "reflog",
        "show",
        "--format=%H",
        &format!("refs/agent-runs/{RUN}/HEAD"),
    ]));
    let ids: Vec<String> = s.cps.iter().rev().map(|c| c.id().to_string()).collect();
    assert_eq!(moves, ids);
    let step_moves = lines(&s.repo.git(&[
        "reflog",
        "show",
        "--format=%H",
        &format!("refs/agent-runs/{RUN}/implement"),
    ]));
    assert_eq!(
        step_moves,
        vec![s.cps[4].id().to_string(), s.cps[3].id().to_string()]
    );
    let notes_moves = lines(&s.repo.git(&[
        "reflog",
        "show",
        "--format=%H",
        &format!("refs/notes/agent-runs/{RUN}"),
    ]));
    assert_eq!(notes_moves.len(), s.cps.len());
}
