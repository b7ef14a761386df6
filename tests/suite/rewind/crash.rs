//! Crash safety: a rewind killed with SIGKILL at random moments never leaves a half-written
//! file, and undo recovers.

use super::{
    Entry, assert_files_eq, begin, chmod, end, field, git_view, put, ref_exists, rm, start,
    tree_files, worktree_files,
};
use crate::common::{Repo, tool_cmd};
use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::process::Stdio;

// ---------------------------------------------------------------------------------------
// 8. Crash safety: a rewind killed with SIGKILL at random moments.
// ---------------------------------------------------------------------------------------

/// A small deterministic pseudo-random sequence (Knuth's MMIX LCG).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

/// Whether any live (not zombie) process is in process group `pgid`.
fn group_alive(pgid: u32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{name}/stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let mut it = stat[close + 1..].split_whitespace();
        let (state, _ppid, pgrp) = (it.next(), it.next(), it.next());
        if pgrp == Some(pgid.to_string().as_str()) && state != Some("Z") && state != Some("X") {
            return true;
        }
    }
    false
}

/// Whether a worktree path is one of the tool's temporary files (`.name.agent-rewind-PID.tmp`).
fn is_tool_tmp(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.starts_with('.') && name.contains(".agent-rewind-") && name.ends_with(".tmp")
}

/// The crash scenario: a few hundred files; the checkpoint `--to implement` goes back to
/// differs from the current (dirty) worktree in most of them.
fn crash_template() -> Repo {
    let repo = Repo::new();
    let d = repo.path();
    let pad = "0123456789abcdef".repeat(96);
    let n = 260;
    let path = |i: usize| format!("d{:02}/f{i:03}.txt", i % 12);
    for i in 0..n {
        let mode = if i % 25 == 0 { 0o755 } else { 0o644 };
        put(d, &path(i), format!("base {i}\n{pad}\n"), mode);
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "base"]);
    start(d, "r1");
    begin(d, "plan", "S1");
    for i in (0..n).filter(|i| i % 7 != 0) {
        put(d, &path(i), format!("A {i}\n{pad}\n"), 0o644);
    }
    for i in 0..20 {
        put(
            d,
            &format!("plan-new/a{i}.txt"),
            format!("plan new {i}\n"),
            0o644,
        );
    }
    end(d, "plan", "S1");
    begin(d, "implement", "S2");
    for i in 0..n {
        put(d, &path(i), format!("B {i}\n{pad}\n"), 0o644);
    }
    for i in (0..n).filter(|i| i % 11 == 0) {
        rm(d, &path(i));
    }
    for i in 0..30 {
        put(
            d,
            &format!("impl/x{i}.txt"),
            format!("impl {i}\n{pad}\n"),
            0o644,
        );
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "implement"]);
    end(d, "implement", "S2");
    // The dirty state the rewind starts from.
    for i in (0..n).filter(|i| i % 3 != 0 && i % 11 != 0) {
        put(d, &path(i), format!("P {i}\n{pad}\n"), 0o644);
    }
    for i in (0..n).filter(|i| i % 13 == 0 && i % 11 != 0) {
        rm(d, &path(i));
    }
    for i in (0..n).filter(|i| i % 17 == 0 && i % 11 != 0 && i % 13 != 0) {
        chmod(d, &path(i), 0o755);
    }
    for i in 0..15 {
        put(
            d,
            &format!("untracked/u{i}.txt"),
            format!("untracked {i}\n"),
            0o644,
        );
    }
    repo.git(&["add", "impl/x0.txt", "impl/x1.txt"]);
    // Fewer files to copy per iteration.
    repo.git(&["repack", "-a", "-d", "-q"]);
    repo.git(&["prune-packed"]);
    repo
}

/// A fresh copy of the template repository.
fn copy_repo(template: &Repo) -> Repo {
    let dir = tempfile::tempdir().unwrap();
    let st = std::process::Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", template.path().display()))
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(st.success(), "cp -a");
    Repo { dir }
}

const REWIND: [&str; 6] = ["rewind", "r1", "--to", "implement", "--run", "r2"];

#[test]
fn rewind_killed_at_random_moments_never_leaves_half_written_files_and_undo_recovers() {
    let template = crash_template();
    let t = template.path();
    let pre_files = worktree_files(t);
    let pre_view = git_view(t);
    let pre_tree = template.add_all_tree();
    let target = template.rev("refs/agent-runs/r1/plan");
    let target_files = tree_files(t, &format!("{target}^{{tree}}"));
    let differing = pre_files
        .keys()
        .chain(target_files.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|p| pre_files.get(*p) != target_files.get(*p))
        .count();
    assert!(
        differing > 200,
        "the target must differ in most files ({differing})"
    );

    // One uninterrupted rewind: the end state, and how long the whole thing takes (only used
    // to spread the kills over the rewind's lifetime; never asserted on).
    let full = copy_repo(&template);
    let t0 = std::time::Instant::now();
    let out = full.json(&REWIND);
    let full_ms = t0.elapsed().as_millis() as u64;
    assert_eq!(field(&out, "from_checkpoint"), target);
    assert_files_eq(
        &worktree_files(full.path()),
        &target_files,
        "uninterrupted rewind",
    );
    full.json(&["undo"]);
    assert_files_eq(&worktree_files(full.path()), &pre_files, "undo of it");
    assert_eq!(git_view(full.path()), pre_view);
    drop(full);

    let max_delay_ms = full_ms.max(40) + 10;
    let mut rng = Lcg(0x5eed_2026);
    let (mut no_backup, mut midway, mut finished, mut left_tmp) = (0, 0, 0, 0);
    for iter in 0..25 {
        let repo = copy_repo(&template);
        let d = repo.path();
        let delay_us = rng.next() % (max_delay_ms * 1000 + 1);
        let mut child = tool_cmd(d)
            .args(REWIND)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id();
        std::thread::sleep(std::time::Duration::from_micros(delay_us));
        let _ = child.kill();
        child.wait().unwrap();
        // Let git processes the tool had started finish (they are not part of the crash).
        let mut waited = 0;
        while group_alive(pgid) {
            std::thread::sleep(std::time::Duration::from_millis(5));
            waited += 1;
            assert!(
                waited < 12_000,
                "processes of the killed rewind never ended"
            );
        }

        let ctx = format!("iteration {iter} (killed after {delay_us} µs)");
        let mut now = worktree_files(d);
        let tmps: Vec<String> = now.keys().filter(|p| is_tool_tmp(p)).cloned().collect();
        for p in &tmps {
            now.remove(p);
        }
        left_tmp += tmps.len();
        let has_backup = ref_exists(d, "refs/agent-rewind/backups");
        if !has_backup {
            // Nothing may have been overwritten before the backup exists.
            assert!(
                tmps.is_empty(),
                "{ctx}: temp files without a backup: {tmps:?}"
            );
            assert_files_eq(&now, &pre_files, &ctx);
            assert_eq!(git_view(d), pre_view, "{ctx}");
            no_backup += 1;
            continue;
        }
        assert_eq!(
            repo.rev("refs/agent-rewind/backups^{tree}"),
            pre_tree,
            "{ctx}: the backup holds the pre-rewind worktree"
        );
        let paths: BTreeSet<&String> = now
            .keys()
            .chain(pre_files.keys())
            .chain(target_files.keys())
            .collect();
        let mut from_target = 0;
        for p in paths {
            let cur = now.get(p);
            let (old, new) = (pre_files.get(p), target_files.get(p));
            assert!(
                cur == old || cur == new,
                "{ctx}: {p} is {}, neither the backup's {} nor the target's {}",
                Entry::describe(cur),
                Entry::describe(old),
                Entry::describe(new)
            );
            if cur != old {
                from_target += 1;
            }
        }
        if now == target_files {
            finished += 1;
        } else if from_target > 0 {
            midway += 1;
        }

        let undo = repo.run(&["undo"]);
        assert!(
            undo.status.success(),
            "{ctx}: undo failed: {}",
            String::from_utf8_lossy(&undo.stderr)
        );
        assert_files_eq(
            &worktree_files(d),
            &pre_files,
            &format!("{ctx}, after undo"),
        );
        assert_eq!(git_view(d), pre_view, "{ctx}, after undo");
    }
    eprintln!(
        "crash test: rewind takes {full_ms} ms uninterrupted; kills: {no_backup} before the backup, \
         {midway} while writing, {finished} after writing the worktree, {} in between; \
         {left_tmp} temporary file(s) left behind (removed by undo)",
        25 - no_backup - midway - finished
    );
}
