//! Many writers at once (docs/FORMAT.md "Writing"): N agents checkpointing into the same
//! repository — same run or different runs — lose nothing, keep every chain linear with
//! contiguous sequence numbers, and never leave a checkpoint without its note.

use crate::common;

use common::Repo;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};

const PROCS: usize = 8;
const PER_PROC: usize = 5;

/// A shell running `script` with the tool as `$BIN`, in the test's deterministic environment.
fn spawn_sh(dir: &Path, script: &str, p: usize) -> Child {
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env("BIN", common::bin())
        .env("P", p.to_string())
        .env("N", PER_PROC.to_string())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("NO_COLOR", "1")
        .env_remove("AGENT_RUN")
        .env_remove("AGENT_STEP")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn sh")
}

/// Spawn all processes first, then wait for all; every one must succeed. Returns the JSON
/// documents each process printed, in its order.
fn run_all(dir: &Path, script: &str) -> Vec<Vec<Value>> {
    let children: Vec<Child> = (0..PROCS).map(|p| spawn_sh(dir, script, p)).collect();
    let mut out = vec![];
    let mut failures = vec![];
    for (p, child) in children.into_iter().enumerate() {
        let o = child.wait_with_output().expect("wait");
        let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        if !o.status.success() {
            failures.push(format!("process {p} failed ({:?}): {stderr}", o.status));
        }
        let docs: Vec<Value> = serde_json::Deserializer::from_str(&stdout)
            .into_iter::<Value>()
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("process {p}: bad JSON output ({e}): {stdout}"));
        out.push(docs);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    out
}

fn id(v: &Value) -> String {
    v["checkpoint"]
        .as_str()
        .unwrap_or_else(|| panic!("no checkpoint id in {v}"))
        .to_string()
}

/// Check one run's chain against what the processes reported; returns its checkpoints.
fn assert_run_consistent(repo: &Repo, run: &str, reported: &[Value], expected_len: usize) {
    let list = repo.json(&["list", run]);
    let list = list.as_array().unwrap();
    assert_eq!(
        list.len(),
        expected_len,
        "run {run}: listed {} checkpoints",
        list.len()
    );
    // seqs are 0..n, contiguous, in chain order.
    let seqs: Vec<u64> = list.iter().map(|c| c["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (0..expected_len as u64).collect::<Vec<_>>(),
        "run {run}"
    );
    assert_eq!(list[0]["event"], "start", "run {run}");
    assert_eq!(
        list.iter().filter(|c| c["event"] == "start").count(),
        1,
        "run {run}: exactly one start"
    );
    // Every reported checkpoint is there, with the seq it was reported with.
    let by_id: BTreeMap<String, &Value> = list.iter().map(|c| (id(c), c)).collect();
    assert_eq!(by_id.len(), expected_len, "duplicate ids in run {run}");
    for r in reported {
        let got = by_id
            .get(&id(r))
            .unwrap_or_else(|| panic!("run {run}: reported checkpoint {} is lost", id(r)));
        assert_eq!(got["seq"], r["seq"], "run {run}: seq of {}", id(r));
        assert_eq!(got["meta"], r["meta"], "run {run}: meta of {}", id(r));
    }
    // The chain is linear: first-parent walk = our checkpoints + the user's history.
    let head = format!("refs/agent-runs/{run}/HEAD");
    let user_commits: usize = repo
        .git(&["rev-list", "--count", "HEAD"])
        .trim()
        .parse()
        .unwrap();
    let walked: Vec<String> = repo
        .git(&["rev-list", "--first-parent", &head])
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(walked.len(), expected_len + user_commits, "run {run}");
    let listed_rev: Vec<String> = list.iter().rev().map(id).collect();
    assert_eq!(&walked[..expected_len], &listed_rev[..], "run {run}");
    // Each checkpoint's first parent is the previous one.
    for w in list.windows(2) {
        assert_eq!(w[1]["parents"][0], w[0]["checkpoint"], "run {run}");
    }
    // Every checkpoint has its note, and the notes ref has one commit per checkpoint.
    let notes: BTreeSet<String> = repo
        .git(&["notes", &format!("--ref=agent-runs/{run}"), "list"])
        .lines()
        .map(|l| l.split_whitespace().nth(1).unwrap().to_string())
        .collect();
    for c in list {
        assert!(notes.contains(&id(c)), "run {run}: {} has no note", id(c));
    }
    assert_eq!(notes.len(), expected_len, "run {run}: notes");
    let notes_commits: usize = repo
        .git(&[
            "rev-list",
            "--count",
            &format!("refs/notes/agent-runs/{run}"),
        ])
        .trim()
        .parse()
        .unwrap();
    assert_eq!(notes_commits, expected_len, "run {run}: notes commits");
    // Step refs only ever point into the chain.
    for line in repo
        .git(&[
            "for-each-ref",
            "--format=%(refname)",
            &format!("refs/agent-runs/{run}/"),
        ])
        .lines()
    {
        let ok = repo
            .git_output(&["merge-base", "--is-ancestor", line, &head])
            .status
            .success();
        assert!(ok, "{line} is not an ancestor of {head}");
    }
}

#[test]
fn many_writers_append_to_the_same_run() {
    writers_append_to_the_same_run(Repo::new());
}

/// The same writers on a reftable repository, whose refs go through git's transactions.
#[test]
fn many_writers_append_to_the_same_run_reftable() {
    writers_append_to_the_same_run(Repo::new_reftable());
    assert_eq!(
        Repo::new_reftable()
            .git(&["rev-parse", "--show-ref-format"])
            .trim(),
        "reftable"
    );
}

fn writers_append_to_the_same_run(repo: Repo) {
    repo.ok(&["start", "--run", "shared"]);
    // Each process writes its own file and records several checkpoints with distinct meta,
    // so none of them is deduplicated.
    let script = r#"
        mkdir -p work
        i=0
        while [ $i -lt $N ]; do
            echo "process $P iteration $i" > work/p$P.txt
            "$BIN" --json checkpoint "step-$P" --run shared --meta proc=$P --meta i=$i || exit 1
            i=$((i+1))
        done
    "#;
    let outputs = run_all(repo.path(), script);
    let mut reported = vec![];
    for (p, docs) in outputs.iter().enumerate() {
        assert_eq!(docs.len(), PER_PROC, "process {p} printed {docs:?}");
        for (i, d) in docs.iter().enumerate() {
            assert_eq!(d["unchanged"], false, "process {p}: {d}");
            assert_eq!(d["run"], "shared");
            assert_eq!(d["meta"]["proc"], p.to_string());
            assert_eq!(d["meta"]["i"], i.to_string());
        }
        // A process's own checkpoints are in order in the chain.
        let seqs: Vec<u64> = docs.iter().map(|d| d["seq"].as_u64().unwrap()).collect();
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "process {p}: {seqs:?}"
        );
        // Its step ref points at its last checkpoint.
        assert_eq!(
            repo.rev(&format!("refs/agent-runs/shared/step-{p}")),
            id(docs.last().unwrap())
        );
        reported.extend(docs.iter().cloned());
    }
    let ids: BTreeSet<String> = reported.iter().map(id).collect();
    assert_eq!(ids.len(), PROCS * PER_PROC, "reported ids are distinct");
    assert_run_consistent(&repo, "shared", &reported, 1 + PROCS * PER_PROC);
    repo.assert_fsck();
}

#[test]
fn many_writers_each_with_their_own_run() {
    let repo = Repo::new();
    // The first checkpoint of each run starts it implicitly.
    let script = r#"
        mkdir -p work
        i=0
        while [ $i -lt $N ]; do
            echo "process $P iteration $i" > work/own-$P.txt
            "$BIN" --json checkpoint work --run own-$P --meta i=$i || exit 1
            i=$((i+1))
        done
    "#;
    let outputs = run_all(repo.path(), script);
    for (p, docs) in outputs.iter().enumerate() {
        assert_eq!(docs.len(), PER_PROC, "process {p}");
        let run = format!("own-{p}");
        for (i, d) in docs.iter().enumerate() {
            assert_eq!(d["run"], run.as_str());
            assert_eq!(d["seq"], (i + 1) as u64, "process {p}: {d}");
            assert_eq!(d["unchanged"], false);
        }
        assert_run_consistent(&repo, &run, docs, 1 + PER_PROC);
    }
    let runs = repo.json(&["list"]);
    let names: BTreeSet<String> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_str().unwrap().to_string())
        .collect();
    let want: BTreeSet<String> = (0..PROCS).map(|p| format!("own-{p}")).collect();
    assert_eq!(names, want);
    repo.assert_fsck();
}

#[test]
fn many_writers_racing_to_start_the_same_run() {
    writers_racing_to_start_the_same_run(Repo::new());
}

#[test]
fn many_writers_racing_to_start_the_same_run_reftable() {
    writers_racing_to_start_the_same_run(Repo::new_reftable());
}

fn writers_racing_to_start_the_same_run(repo: Repo) {
    // Nobody has started the run: every process's first checkpoint tries to start it.
    let script = r#"
        i=0
        while [ $i -lt $N ]; do
            "$BIN" --json checkpoint "s-$P" --run fresh --meta proc=$P --meta i=$i || exit 1
            i=$((i+1))
        done
    "#;
    let outputs = run_all(repo.path(), script);
    let reported: Vec<Value> = outputs.into_iter().flatten().collect();
    assert_eq!(reported.len(), PROCS * PER_PROC);
    assert!(reported.iter().all(|d| d["unchanged"] == false));
    assert_run_consistent(&repo, "fresh", &reported, 1 + PROCS * PER_PROC);
    repo.assert_fsck();
}

#[test]
fn readers_of_a_run_being_written_see_each_checkpoint_whole() {
    // rewind --no-checkout, fork and show read a run while four writers append to it: each
    // sees a checkpoint with its note or not at all, never "not an agent-rewind checkpoint".
    let repo = Repo::new();
    repo.ok(&["start", "--run", "busy"]);
    for s in 1..=4 {
        repo.write(&format!("seed{s}.txt"), "seed\n");
        repo.ok(&["checkpoint", &format!("s{s}"), "--run", "busy"]);
    }
    let writers = r#"
        mkdir -p work
        i=0
        while [ $i -lt 12 ]; do
            echo "process $P iteration $i" > work/p$P.txt
            "$BIN" checkpoint "s$P" --run busy --meta i=$i >/dev/null || exit 1
            i=$((i+1))
        done
    "#;
    let readers = r#"
        i=0
        while [ $i -lt 8 ]; do
            "$BIN" rewind busy --to busy@$((i % 4 + 1)) --no-checkout --run r$P-$i >/dev/null || exit 1
            "$BIN" fork busy --to s$((i % 4 + 1)) --no-checkout --run f$P-$i >/dev/null || exit 1
            "$BIN" show busy >/dev/null || exit 1
            i=$((i+1))
        done
    "#;
    let children: Vec<Child> = (1..=4)
        .map(|p| spawn_sh(repo.path(), writers, p))
        .chain((0..2).map(|p| spawn_sh(repo.path(), readers, p)))
        .collect();
    let mut failures = vec![];
    for (p, child) in children.into_iter().enumerate() {
        let o = child.wait_with_output().expect("wait");
        if !o.status.success() {
            failures.push(format!(
                "process {p} failed: {}",
                String::from_utf8_lossy(&o.stderr)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Every new run starts from a checkpoint of busy that has its note.
    let runs = repo.json(&["list", "--all"]);
    assert_eq!(runs.as_array().unwrap().len(), 1 + 2 * 8 * 2);
    repo.assert_fsck();
}
