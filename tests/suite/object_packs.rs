//! A checkpoint's new objects are written as one small pack (store/packwrite.rs), which git
//! must read like its own; with automatic gc off they stay loose, so packs never pile up
//! unfolded; and a reader opened earlier still finds objects in packs added after it opened.

use crate::common;

use common::Repo;
use std::path::Path;

fn packs(repo: &Repo) -> usize {
    std::fs::read_dir(repo.path().join(".git/objects/pack"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().ends_with(".idx"))
                .count()
        })
        .unwrap_or(0)
}

fn loose(repo: &Repo) -> usize {
    let out = repo.git(&["count-objects", "-v"]);
    out.lines()
        .find_map(|l| l.strip_prefix("count: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn edit(path: &Path, i: usize) {
    std::fs::write(path, format!("version {i}\n")).unwrap();
}

#[test]
fn checkpoints_write_one_pack_each_that_git_reads() {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1"]);
    let (packs_before, loose_before) = (packs(&repo), loose(&repo));
    for i in 0..5 {
        edit(&repo.path().join("a.txt"), i);
        repo.write(&format!("dir{i}/new.txt"), "untracked\n");
        repo.ok(&["checkpoint", "work", "--run", "r1"]);
    }
    assert_eq!(packs(&repo), packs_before + 5, "one pack per checkpoint");
    assert_eq!(
        loose(&repo),
        loose_before,
        "no loose objects for checkpoints"
    );
    repo.assert_fsck();
    // git reads every object of the run through its packs.
    let log = repo.git(&["log", "--format=%H %T", "refs/agent-runs/r1/HEAD"]);
    for line in log.lines() {
        let mut it = line.split(' ');
        let (commit, tree) = (it.next().unwrap(), it.next().unwrap());
        repo.git(&["ls-tree", "-r", tree]);
        repo.git(&["cat-file", "-e", commit]);
    }
    let tip = repo.rev("refs/agent-runs/r1/HEAD");
    assert!(
        repo.git(&["notes", "--ref=agent-runs/r1", "show", &tip])
            .contains("\"seq\":5")
    );
    assert_eq!(
        repo.git(&["show", &format!("{tip}:dir4/new.txt")]),
        "untracked\n"
    );
    // And git's own gc folds them like any other pack.
    repo.git(&["gc", "-q"]);
    assert_eq!(packs(&repo), 1);
    repo.assert_fsck();
}

#[test]
fn with_automatic_gc_off_objects_stay_loose() {
    let repo = Repo::new();
    repo.git(&["config", "gc.auto", "0"]);
    repo.ok(&["start", "--run", "r1"]);
    let packs_before = packs(&repo);
    edit(&repo.path().join("a.txt"), 1);
    repo.ok(&["checkpoint", "work", "--run", "r1"]);
    assert_eq!(
        packs(&repo),
        packs_before,
        "no pack that nothing would fold"
    );
    repo.assert_fsck();
}

#[test]
fn a_reader_opened_earlier_finds_objects_in_packs_added_since() {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1"]);
    let store =
        agent_rewind::store::Store::discover(repo.path(), agent_rewind::store::OpenFor::Work)
            .unwrap();
    // More new packs than gix's default number of index slots (32).
    for i in 0..40 {
        edit(&repo.path().join("a.txt"), i);
        repo.ok(&["checkpoint", "work", "--run", "r1"]);
    }
    let run = agent_rewind_core::ids::RunId::new("r1".to_string()).unwrap();
    let tip = store.refs().run_head(&run).unwrap().expect("r1 has a tip");
    let mut catalog = agent_rewind::catalog::Catalog::new(&store);
    let chain = catalog.lineage_chain(tip, usize::MAX).unwrap();
    assert_eq!(
        chain.len(),
        41,
        "every checkpoint readable through the old handle"
    );
}

#[test]
fn writers_and_git_gc_running_at_once_lose_nothing() {
    // gc folds packs (and deletes what it takes for garbage) while checkpoints add them.
    let repo = Repo::new();
    repo.git(&["config", "gc.autoPackLimit", "3"]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let gc = {
        let dir = repo.path().to_path_buf();
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                common::git_cmd(&dir).args(["gc", "-q"]).output().unwrap();
            }
        })
    };
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let dir = repo.path().to_path_buf();
            std::thread::spawn(move || {
                for i in 0..40 {
                    let out = common::run_in(&dir, &["start", "--run", &format!("w{w}-{i}")]);
                    assert!(
                        out.status.success(),
                        "start failed while git gc ran: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    gc.join().unwrap();
    // A fold of small packs a checkpoint started may still be writing its pack: fsck reads
    // the objects once it has ended (it holds the maintenance flock while it runs).
    if let Ok(lock) = std::fs::File::open(repo.path().join(".git/agent-rewind/maintenance.lock")) {
        lock.lock().unwrap();
    }
    repo.assert_fsck();
    assert!(
        repo.git(&["count-objects", "-v"]).contains("garbage: 0"),
        "{}",
        repo.git(&["count-objects", "-v"])
    );
    let listed = repo.json(&["list", "--json"]);
    assert_eq!(listed.as_array().unwrap().len(), 80);
}

/// A checkpoint of a new edit of `a.txt`, with its trace on; returns the trace.
fn traced_checkpoint(repo: &Repo, i: usize) -> String {
    edit(&repo.path().join("a.txt"), i);
    traced(repo, &["checkpoint", "work", "--run", "r1"])
}

#[test]
fn one_background_fold_at_a_time() {
    // Past half of `gc.autoPackLimit` a checkpoint starts a fold of the small packs, unless
    // one it started is still running: that one holds the maintenance flock.
    let repo = Repo::new();
    repo.git(&["config", "gc.autoPackLimit", "6"]);
    repo.ok(&["start", "--run", "r1"]);
    let lock_path = repo.path().join(".git/agent-rewind/maintenance.lock");
    std::fs::create_dir_all(lock_path.parent().unwrap()).unwrap();
    let held = std::fs::File::create(&lock_path).unwrap();
    held.lock().unwrap();
    let mut skipped = 0;
    for i in 0..8 {
        let trace = traced_checkpoint(&repo, i);
        assert!(
            !trace.contains("maintenance: started"),
            "a fold started while one was running:\n{trace}"
        );
        skipped += usize::from(trace.contains("maintenance: one is running"));
    }
    assert!(
        skipped >= 4,
        "checkpoints past the limit saw the running fold"
    );
    let piled = packs(&repo);
    assert!(piled > 6, "nothing folded the packs meanwhile ({piled})");

    // Once it ends, the next checkpoint starts one, which folds them and then lets go.
    drop(held);
    let trace = traced_checkpoint(&repo, 100);
    assert!(
        trace.contains("maintenance: started git repack"),
        "no fold started:\n{trace}"
    );
    let lock = std::fs::File::open(&lock_path).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while lock.try_lock().is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the fold still holds the lock after a minute"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(packs(&repo) < piled, "the fold left {} packs", packs(&repo));
    repo.assert_fsck();
    let tip = repo.rev("refs/agent-runs/r1/HEAD");
    assert!(
        repo.git(&["notes", "--ref=agent-runs/r1", "show", &tip])
            .contains("\"seq\":9")
    );
}

#[test]
fn auto_gc_off_is_read_as_git_reads_a_boolean() {
    // Past half of `gc.autoPackLimit` a checkpoint starts a fold, unless `agentRewind.autoGc`
    // is false, in any of git's spellings of false.
    for (value, folds) in [
        (None, true),
        (Some("off"), false),
        (Some("False"), false),
        (Some("NO"), false),
        (Some("0"), false),
        (Some("yes"), true),
    ] {
        let repo = Repo::new();
        repo.git(&["config", "gc.autoPackLimit", "2"]);
        if let Some(v) = value {
            repo.git(&["config", "agentRewind.autoGc", v]);
        }
        repo.ok(&["start", "--run", "r1"]);
        let started = (0..4).any(|i| traced_checkpoint(&repo, i).contains("maintenance: started"));
        assert_eq!(started, folds, "agentRewind.autoGc = {value:?}");
    }
}

/// A repository with a run `r1` and `blobs` new files, each blob in a pack of its own and no
/// loose copy left: every read goes through a pack index. Automatic gc is off, so no
/// background fold removes packs while the test reads them (or `git fsck` does).
fn repo_of_one_blob_packs(blobs: usize) -> Repo {
    let repo = Repo::new();
    repo.git(&["config", "gc.auto", "0"]);
    repo.git(&["config", "agentRewind.autoGc", "false"]);
    repo.ok(&["start", "--run", "r1"]);
    for i in 0..blobs {
        std::fs::create_dir_all(repo.path().join(format!("d{}", i / 50))).unwrap();
        std::fs::write(
            repo.path().join(format!("d{}/f{i}.txt", i / 50)),
            format!("{i}\n"),
        )
        .unwrap();
    }
    repo.git(&["add", "-A"]);
    for line in repo.git(&["ls-files", "-s"]).lines() {
        let id = line.split_whitespace().nth(1).unwrap();
        common::git_stdin(
            repo.path(),
            &["pack-objects", "-q", ".git/objects/pack/pack"],
            format!("{id}\n").as_bytes(),
        );
    }
    repo.git(&["prune-packed"]);
    assert!(packs(&repo) > blobs, "{} packs", packs(&repo));
    repo
}

/// The trace of `args` run with `AGENT_REWIND_TRACE`, after asserting success.
fn traced(repo: &Repo, args: &[&str]) -> String {
    let out = common::tool_cmd(repo.path())
        .env("AGENT_REWIND_TRACE", "1")
        .args(args)
        .output()
        .unwrap();
    let trace = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}: {trace}");
    trace
}

const SLOTS_COUNTED: &str = "many pack indexes (or alternates): slots counted";

/// The `blobs` one-blob packs of [`repo_of_one_blob_packs`] are all still there and read
/// back: `diff --stat` of run `r1` shows every file, and `git fsck` is clean.
fn assert_every_pack_read(repo: &Repo, blobs: usize) {
    assert!(packs(repo) > blobs, "{} packs", packs(repo));
    let stat = repo.ok(&["diff", "--stat", "r1"]);
    assert!(
        stat.contains(&format!("{blobs} files changed, {blobs} insertions(+)")),
        "{stat}"
    );
    repo.assert_fsck();
}

#[test]
fn a_repository_of_hundreds_of_packs_is_opened_with_a_slot_for_each() {
    // The store opens with 512 index slots unless `objects/pack` names more than 256
    // indexes, and then counts them (crates/agent-rewind-store/src/lib.rs, `discover`).
    let repo = repo_of_one_blob_packs(300);
    let trace = traced(&repo, &["checkpoint", "work", "--run", "r1"]);
    assert!(trace.contains(SLOTS_COUNTED), "{trace}");
    assert_every_pack_read(&repo, 300);
}

#[test]
fn a_brief_read_counts_slots_past_64_packs_where_a_checkpoint_does_not() {
    // A command that only reads for milliseconds (`diff`, `show`, `list`, `log`, `status`)
    // opens with 128 slots, so past 64 indexes it counts them; a checkpoint has 512
    // (`Store::discover` with `OpenFor::BriefRead`).
    let repo = repo_of_one_blob_packs(100);
    let trace = traced(&repo, &["checkpoint", "work", "--run", "r1"]);
    assert!(!trace.contains(SLOTS_COUNTED), "{trace}");
    for args in [
        &["diff", "--stat", "r1"][..],
        &["show", "r1"],
        &["list", "r1"],
    ] {
        let trace = traced(&repo, args);
        assert!(trace.contains(SLOTS_COUNTED), "{args:?}: {trace}");
    }
    assert_every_pack_read(&repo, 100);
}
