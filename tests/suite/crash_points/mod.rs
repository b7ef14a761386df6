//! Crash at every write step and no lock that outlives its process blocks.
//! Every write path runs once with `AGENT_REWIND_CRASH_TRACE` to list the
//! crash points it passes (crates/agent-rewind-core/src/crash.rs), then once per point with `AGENT_REWIND_CRASH_AT`,
//! where the process aborts. After each abort: `git fsck --strict` is clean, every run's HEAD
//! has its note, the user's files are as before or as after — or, where an overwrite had
//! started, `undo` brings back the state before byte for byte — and the next commands (which
//! take the same locks: writer flocks, ref locks, `packed-refs.lock`, `index.lock`, the runner
//! lock) succeed. Every command is bounded by a generous timeout that fails the test if hit.

use crate::common;
mod scenarios;
mod state;

use common::{assert_fsck_in, bounded, tool_cmd};
use scenarios::{SCENARIOS, Scenario};
use state::{UserState, assert_runs_have_notes, copy_tree, user_state};
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Output;
use std::time::Instant;

fn tool(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = tool_cmd(dir);
    c.args(args)
        .env_remove("AGENT_REWIND_CRASH_AT")
        .env_remove("AGENT_REWIND_CRASH_TRACE");
    for (k, v) in env {
        c.env(k, v);
    }
    bounded(c, &format!("git-agent-rewind {args:?}"))
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let o = tool(dir, args, &[]);
    assert!(
        o.status.success(),
        "{args:?} failed in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A case's repository: a copy of the template, or set up anew.
fn prepare(sc: &Scenario, template: &Path, case: &Path) {
    if sc.fresh_setup {
        (sc.setup)(&case.join("repo"));
    } else {
        copy_tree(template, case);
    }
}

/// The points a command passes, in order, as `name#n`.
fn trace(dir: &Path, command: &[&str]) -> Vec<String> {
    let o = tool(dir, command, &[("AGENT_REWIND_CRASH_TRACE", "1")]);
    assert!(
        o.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("crash-point: "))
        .map(str::to_string)
        .collect()
}

/// Which occurrences of each point to crash at: the first and the last.
fn chosen(points: &[String]) -> Vec<String> {
    let mut count: BTreeMap<&str, u32> = BTreeMap::new();
    for p in points {
        let (name, _) = p.split_once('#').unwrap();
        *count.entry(name).or_default() += 1;
    }
    points
        .iter()
        .filter(|p| {
            let (name, n) = p.split_once('#').unwrap();
            let n: u32 = n.parse().unwrap();
            n == 1 || n == count[name]
        })
        .cloned()
        .collect()
}

/// Where the command runs inside a case folder (`work/` beside `remote/`, else `repo/`).
fn repo_in(base: &Path) -> std::path::PathBuf {
    if base.join("work").exists() {
        base.join("work")
    } else {
        base.join("repo")
    }
}

/// Crash `sc`'s command at `point` in a fresh copy and check every invariant.
fn crash_case(sc: &Scenario, template: &Path, case: &Path, point: &str, after: &UserState) {
    let ctx = format!("{} crashed at {point}", sc.name);
    prepare(sc, template, case);
    let dir = repo_in(case);
    let before = user_state(&dir);
    let o = tool(&dir, sc.command, &[("AGENT_REWIND_CRASH_AT", point)]);
    assert_eq!(
        o.status.signal(),
        Some(6),
        "{ctx}: the process did not abort there ({:?}): {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    assert_fsck_in(&dir, &ctx);
    assert_runs_have_notes(&dir, &ctx);
    let now = user_state(&dir);
    if now.files != before.files {
        if sc.overwrites {
            // An overwrite had started: undo brings back the state before.
            let u = tool(&dir, &["undo"], &[]);
            assert!(
                u.status.success(),
                "{ctx}: undo failed: {}",
                String::from_utf8_lossy(&u.stderr)
            );
            assert_eq!(user_state(&dir), before, "{ctx}: undo is not exact");
        } else {
            assert!(
                now.files == after.files,
                "{ctx}: the user's files are neither as before nor as after"
            );
        }
    }
    // Nothing left behind blocks the next commands.
    for next in (sc.next)(&dir) {
        let o = tool(&dir, next, &[]);
        assert!(
            o.status.success(),
            "{ctx}: then {next:?} failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert_fsck_in(&dir, &ctx);
    assert_runs_have_notes(&dir, &ctx);
    std::fs::remove_dir_all(case).unwrap();
}

#[test]
fn every_write_path_survives_a_crash_at_every_point() {
    let root = tempfile::tempdir().unwrap();
    let scenarios = SCENARIOS;
    let mut reached: BTreeSet<String> = BTreeSet::new();
    // Set up each path once and trace the points its command passes.
    let mut cases: Vec<(usize, String)> = vec![];
    let mut afters = vec![];
    for (k, sc) in scenarios.iter().enumerate() {
        let template = root.path().join(format!("{}-template", sc.name));
        std::fs::create_dir_all(&template).unwrap();
        // The fetch path sets up `remote/` and `work/` itself.
        if sc.name.starts_with("fetch") {
            (sc.setup)(&template);
        } else if !sc.fresh_setup {
            (sc.setup)(&template.join("repo"));
        }
        let reference = root.path().join(format!("{}-reference", sc.name));
        prepare(sc, &template, &reference);
        let points = trace(&repo_in(&reference), sc.command);
        afters.push(user_state(&repo_in(&reference)));
        assert!(!points.is_empty(), "{}: no crash point passed", sc.name);
        for p in &points {
            let name = p.split_once('#').unwrap().0;
            assert!(
                agent_rewind_core::crash::POINTS.contains(&name),
                "{}: point {name} is not listed in crash::POINTS",
                sc.name
            );
            reached.insert(name.to_string());
        }
        cases.extend(chosen(&points).into_iter().map(|p| (k, p)));
    }
    let listed: BTreeSet<String> = agent_rewind_core::crash::POINTS
        .iter()
        .map(|p| p.to_string())
        .collect();
    let missed: Vec<&String> = listed.difference(&reached).collect();
    assert!(
        missed.is_empty(),
        "points no write path reached: {missed:?}"
    );

    // Crash at each point, a few cases at a time.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((k, point)) = cases.get(i) else {
                        break;
                    };
                    let sc = &scenarios[*k];
                    let template = root.path().join(format!("{}-template", sc.name));
                    let case = root.path().join(format!("case-{i}"));
                    crash_case(sc, &template, &case, point, &afters[*k]);
                }
            });
        }
    });
    eprintln!("{} crash cases in {:?}", cases.len(), started.elapsed());
}
