//! Crash safety (docs/FORMAT.md "Writing"): a checkpoint process killed at any instant leaves
//! either the old state or the new state — never a ref pointing at a missing object, a step
//! ref ahead of its run's HEAD, or a checkpoint without its note — and the next checkpoint
//! works.

use crate::common;

use common::{Repo, tool_cmd};
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

const RUN: &str = "crashy";
const ITERATIONS: u64 = 40;
const DIRS: usize = 10;
const FILES_PER_DIR: usize = 30;

/// A small deterministic generator (no rand crate): an LCG seeded by the loop index.
struct Lcg(u64);

impl Lcg {
    fn new(seed: u64) -> Lcg {
        let mut l = Lcg(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x2545_F491_4F6C_DD1D);
        l.next();
        l
    }
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn file_content(d: usize, f: usize, version: u64) -> String {
    let mut s = format!("dir {d} file {f} version {version}\n");
    for l in 0..40 {
        s.push_str(&format!(
            "line {l} of a reasonably sized source file {d}/{f}\n"
        ));
    }
    s
}

/// A worktree of a few hundred files, committed.
fn big_repo() -> Repo {
    let repo = Repo::new();
    for d in 0..DIRS {
        for f in 0..FILES_PER_DIR {
            repo.write(&format!("src/m{d}/f{f}.rs"), &file_content(d, f, 0));
        }
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "big"]);
    repo
}

fn all_our_refs(repo: &Repo) -> Vec<(String, String)> {
    let mut refs = common::refs(repo.path(), "refs/agent-runs/");
    refs.extend(common::refs(repo.path(), "refs/notes/agent-runs/"));
    refs
}

/// The invariants that must hold whatever instant the writer died at.
fn check_invariants(repo: &Repo, iteration: u64, old_head: &str) {
    let ctx = |what: &str| format!("iteration {iteration}: {what}");
    let refs = all_our_refs(repo);
    assert!(!refs.is_empty(), "{}", ctx("no refs at all"));
    // Every ref points at an existing object…
    for (name, id) in &refs {
        let ok = repo.git_output(&["cat-file", "-e", id]).status.success();
        assert!(ok, "{}", ctx(&format!("{name} points at missing {id}")));
    }
    // …and everything reachable from them is complete.
    if let Some(err) = repo.missing_objects_under_our_refs() {
        panic!("{}", ctx(&format!("incomplete objects: {err}")));
    }

    let head_ref = format!("refs/agent-runs/{RUN}/HEAD");
    let head = repo.rev(&head_ref);
    // HEAD is the old tip or one new checkpoint on top of it.
    if head != old_head {
        let first_parent = repo.rev(&format!("{head}^1"));
        assert_eq!(first_parent, old_head, "{}", ctx("HEAD jumped"));
    }
    // Step refs never run ahead of HEAD.
    for (name, _) in common::refs(repo.path(), &format!("refs/agent-runs/{RUN}/")) {
        let ok = repo
            .git_output(&["merge-base", "--is-ancestor", &name, &head_ref])
            .status
            .success();
        assert!(ok, "{}", ctx(&format!("{name} is not an ancestor of HEAD")));
    }
    // Every commit of the run on its first-parent chain has its note, with the right seq.
    let noted: BTreeSet<String> = repo
        .git(&["notes", &format!("--ref=agent-runs/{RUN}"), "list"])
        .lines()
        .map(|l| l.split_whitespace().nth(1).unwrap().to_string())
        .collect();
    let chain = repo.git(&[
        "log",
        "--first-parent",
        "--format=%H %(trailers:key=Agent-Run,valueonly,separator=%x2C)",
        &head_ref,
    ]);
    let ours: Vec<&str> = chain
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, run)| run.trim() == RUN)
        .map(|(id, _)| id)
        .collect();
    for id in &ours {
        assert!(
            noted.contains(*id),
            "{}",
            ctx(&format!("checkpoint {id} has no note"))
        );
    }
    let tip_note = repo.git(&["notes", &format!("--ref=agent-runs/{RUN}"), "show", &head]);
    let line: Value = serde_json::from_str(
        tip_note
            .lines()
            .find(|l| l.contains("\"type\":\"checkpoint\""))
            .unwrap_or_else(|| panic!("{}", ctx("tip note has no checkpoint line"))),
    )
    .unwrap();
    assert_eq!(
        line["seq"].as_u64(),
        Some(ours.len() as u64 - 1),
        "{}",
        ctx("tip seq vs chain length")
    );
}

#[test]
fn killed_writers_never_leave_a_broken_run() {
    let repo = big_repo();
    repo.ok(&["start", "--run", RUN]);
    // How long an undisturbed checkpoint took last time (updated every iteration).
    let mut last_duration_ms: u64 = 30;
    let mut completed_before_kill = 0;
    for it in 0..ITERATIONS {
        let mut rng = Lcg::new(it);
        // Some changes so the writer has real work: modified, new, deleted files.
        for _ in 0..(5 + rng.below(20)) {
            let (d, f) = (
                rng.below(DIRS as u64) as usize,
                rng.below(FILES_PER_DIR as u64) as usize,
            );
            repo.write(&format!("src/m{d}/f{f}.rs"), &file_content(d, f, it + 1));
        }
        repo.write(
            &format!("notes/iteration-{it}.md"),
            &format!("iteration {it}\n"),
        );
        if it % 7 == 3 {
            let _ =
                std::fs::remove_file(repo.path().join(format!("notes/iteration-{}.md", it - 1)));
        }

        let old_head = repo.rev(&format!("refs/agent-runs/{RUN}/HEAD"));
        let index_before = repo.index_bytes();
        let step = format!("step{}", it % 3);
        // Kill points: immediately (every tenth), early (0–30 ms, while snapshotting), or
        // around the end of an undisturbed run (where objects are written and refs published).
        let delay = Duration::from_millis(match it % 10 {
            0 => 0,
            n if n % 2 == 1 => rng.below(31),
            _ => last_duration_ms * 7 / 10 + rng.below(last_duration_ms * 4 / 10 + 1),
        });
        let mut child = tool_cmd(repo.path())
            .args([
                "--json",
                "checkpoint",
                &step,
                "--run",
                RUN,
                "--meta",
                &format!("killed={it}"),
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        std::thread::sleep(delay);
        child.kill().ok(); // SIGKILL; fails only if it already exited
        let status = child.wait().expect("wait");
        if status.success() {
            completed_before_kill += 1;
        }
        assert!(
            repo.index_bytes() == index_before,
            "iteration {it}: the user's index changed"
        );
        check_invariants(&repo, it, &old_head);

        // The next checkpoint succeeds and lands right on top of the current tip.
        let tip = repo.rev(&format!("refs/agent-runs/{RUN}/HEAD"));
        let tip_seq = repo.json(&["show", RUN])["seq"].as_u64().unwrap();
        let started = Instant::now();
        let next = repo.json(&[
            "checkpoint",
            &step,
            "--run",
            RUN,
            "--meta",
            &format!("after={it}"),
        ]);
        last_duration_ms = started.elapsed().as_millis() as u64;
        assert_eq!(next["unchanged"], false, "iteration {it}");
        assert_eq!(next["seq"].as_u64(), Some(tip_seq + 1), "iteration {it}");
        let next_id = next["checkpoint"].as_str().unwrap();
        assert_eq!(repo.rev(&format!("{next_id}^1")), tip, "iteration {it}");
        assert_eq!(
            repo.rev(&format!("refs/agent-runs/{RUN}/{step}")),
            next_id,
            "iteration {it}: step ref"
        );
        let want_tree = common::add_all_tree_in(repo.path());
        assert_eq!(
            repo.rev(&format!("{next_id}^{{tree}}")),
            want_tree,
            "iteration {it}: snapshot differs from `git add -A`: {}",
            repo.git(&["diff-tree", "-r", "--stat", &want_tree, next_id])
        );
        check_invariants(&repo, it, &tip);
    }
    // The whole history is readable by the tool and by git.
    let list = repo.json(&["list", RUN]);
    let seqs: Vec<u64> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
    assert!(seqs.len() as u64 > ITERATIONS, "{} checkpoints", seqs.len());
    // Not every kill landed after the process finished (the test really interrupts writers).
    assert!(
        completed_before_kill < ITERATIONS,
        "every writer finished before being killed"
    );
    let out = repo.git_output(&["fsck", "--no-progress", "--no-dangling"]);
    assert!(
        out.status.success(),
        "git fsck: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
