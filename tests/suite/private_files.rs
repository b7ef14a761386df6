//! The private files under `.git/agent-rewind/` (docs/FORMAT.md, "Local state outside
//! refs"): each in the envelope (a header naming its format and version, a checksum). A
//! state file that is damaged is refused with an error naming it and nothing changes; one
//! of the previous version (no header) is read, and written in the envelope next time. A
//! damaged cache is rebuilt, and what is recorded still equals what git says.

use crate::common;
use crate::common::agent_fixtures::{fixture, hook, payload, retarget};
use common::{Repo, checkpoints, tool_stdin};
use serde_json::json;

/// `bytes` with one bit of the byte at `at` flipped.
fn flipped(bytes: &[u8], at: usize) -> Vec<u8> {
    let mut b = bytes.to_vec();
    b[at] ^= 0x01;
    b
}

/// Runs `args`, which must fail because the private file `rel` is damaged: the error names
/// it and nothing changed (the file, our refs, the worktree's status).
fn refused(repo: &Repo, args: &[&str], rel: &str) {
    let path = repo.path().join(rel);
    let file = std::fs::read(&path).unwrap();
    let refs = repo.git(&["for-each-ref"]);
    let status = repo.git(&["status", "--porcelain"]);
    let out = repo.run(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} used a damaged {rel}");
    assert!(
        stderr.contains(&format!("{} is damaged", path.display())),
        "{args:?}: the error names {rel}: {stderr}"
    );
    assert!(
        stderr.contains("remove it"),
        "says how to recover: {stderr}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), file, "{rel} left as it was");
    assert_eq!(repo.git(&["for-each-ref"]), refs, "no ref moved");
    assert_eq!(repo.git(&["status", "--porcelain"]), status);
}

#[test]
fn active_run_damaged_is_refused_and_the_previous_version_is_read() {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1"]);
    let rel = ".git/agent-rewind/active-run";
    let good = std::fs::read(repo.path().join(rel)).unwrap();
    assert_eq!(common::envelope_body(&good, "active-run", 1), b"r1\n");
    for at in [0, good.len() / 2, good.len() - 3] {
        std::fs::write(repo.path().join(rel), flipped(&good, at)).unwrap();
        refused(&repo, &["status"], rel);
        refused(&repo, &["checkpoint", "manual"], rel);
    }
    // The previous version: the bare run id.
    std::fs::write(repo.path().join(rel), "r1\n").unwrap();
    assert!(repo.ok(&["status"]).contains("r1"));
    repo.write("a.txt", "a\n");
    repo.ok(&["checkpoint", "manual"]);
    assert_eq!(checkpoints(repo.path(), "r1").len(), 2);
    repo.ok(&["start", "--run", "r2"]);
    let now = std::fs::read(repo.path().join(rel)).unwrap();
    assert_eq!(common::envelope_body(&now, "active-run", 1), b"r2\n");
    repo.assert_fsck();
}

#[test]
fn deleted_runs_damaged_is_refused_and_the_previous_version_is_read() {
    let repo = Repo::new();
    for run in ["r1", "r2", "r3"] {
        repo.ok(&["start", "--run", run]);
    }
    let tips: Vec<String> = ["r1", "r2", "r3"]
        .iter()
        .map(|r| repo.rev(&format!("refs/agent-runs/{r}/HEAD")))
        .collect();
    repo.ok(&["delete", "r1", "--force"]);
    let rel = ".git/agent-rewind/deleted-runs";
    let path = repo.path().join(rel);
    let good = std::fs::read(&path).unwrap();
    assert_eq!(
        common::envelope_body(&good, "deleted-runs", 1),
        format!("r1 {}\n", tips[0]).as_bytes()
    );
    std::fs::write(&path, flipped(&good, 5)).unwrap();
    refused(&repo, &["delete", "r2", "--force"], rel);
    // The previous version, without a header: read, and written back in the envelope.
    std::fs::write(&path, format!("r1 {}\n", tips[0])).unwrap();
    repo.ok(&["delete", "r2", "--force"]);
    let now = std::fs::read(&path).unwrap();
    assert_eq!(
        common::envelope_body(&now, "deleted-runs", 1),
        format!("r1 {}\nr2 {}\n", tips[0], tips[1]).as_bytes()
    );
    repo.assert_fsck();
}

const FLOW: &str = r#"[workflow]
name = "private"

[[steps]]
name = "a"
kind = "deterministic"
run = "test -f go.txt"
"#;

#[test]
fn trusted_workflows_and_the_runner_lock_damaged_are_refused_and_old_ones_read() {
    let repo = Repo::new();
    repo.write("flow.toml", FLOW);
    let out = repo.run(&["run", "flow.toml", "--run", "w1"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    std::fs::remove_file(repo.path().join("flow.toml")).unwrap();
    repo.write("go.txt", "go\n");
    let rel = ".git/agent-rewind/trusted-workflows";
    let path = repo.path().join(rel);
    let good = std::fs::read(&path).unwrap();
    let body = common::envelope_body(&good, "trusted-workflows", 1).to_vec();
    assert!(body.starts_with(b"git-blob:"), "{body:?}");
    // Damaged: not trusted, refused by name.
    std::fs::write(&path, flipped(&good, good.len() - 20)).unwrap();
    refused(&repo, &["resume", "w1"], rel);

    // The runner lock's content (not held by any runner): damaged, refused by name.
    std::fs::write(&path, &body).unwrap();
    let lock_rel = ".git/agent-rewind/runners/w1.lock";
    let lock = repo.path().join(lock_rel);
    let holder = b"pid 1\nhost elsewhere\nsince 2020-01-01T00:00:00.000Z\n";
    std::fs::write(
        &lock,
        flipped(&common::envelope("runner-lock", 1, holder), 30),
    )
    .unwrap();
    refused(&repo, &["resume", "w1"], lock_rel);
    // Of the previous version: read (taken over from that holder).
    std::fs::write(&lock, holder).unwrap();
    // The trusted list of the previous version (no header) is read too: the stored
    // workflow runs though its file is gone.
    let out = repo.run(&["resume", "w1"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        stdout.contains("took over a stale runner lock (pid 1, host elsewhere"),
        "{stdout}"
    );
    let cps = checkpoints(repo.path(), "w1");
    assert_eq!(cps.last().unwrap()["status"], "completed");
    // The runner left the lock empty; the trusted list is as it was (nothing new to trust).
    assert_eq!(std::fs::read(&lock).unwrap(), b"");
    assert_eq!(std::fs::read(&path).unwrap(), body);
    repo.assert_fsck();
}

#[test]
fn touched_damaged_is_refused_and_the_previous_version_is_read() {
    let repo = Repo::new();
    let dir = repo.path().to_path_buf();
    let t = dir.join("none");
    let start = hook(
        "claude",
        &payload("claude", "session-start.json", &dir, &t),
        &[],
    );
    let run = start["run"].as_str().unwrap().to_string();
    let edit = |name: &str| {
        let mut v = fixture("claude", "post-tool-use-edit.json");
        retarget(&mut v, &dir);
        v["tool_input"]["file_path"] = format!("{}/{name}", dir.display()).into();
        let out = tool_stdin(&dir, &["hook", "claude"], v.to_string().as_bytes(), &[]);
        assert_eq!(out.status.code(), Some(0));
    };
    edit("f0.txt");
    repo.write("f0.txt", "x\n");
    let rel = format!(".git/agent-rewind/touched/{run}");
    let path = dir.join(&rel);
    let good = std::fs::read(&path).unwrap();
    let body = common::envelope_body_log(&good, "touched", 1);
    assert_eq!(body, ["f0.txt"]);

    // Damaged: the turn is not recorded, the hook says why (naming the file), and the
    // list stays for the user to look at.
    let damaged = flipped(&good, good.len() - 4);
    std::fs::write(&path, &damaged).unwrap();
    let n = checkpoints(&dir, &run).len();
    let stop = payload("claude", "stop.json", &dir, &t);
    let out = tool_stdin(&dir, &["--json", "hook", "claude"], &stop, &[]);
    assert_eq!(out.status.code(), Some(0), "a hook never fails");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{} is damaged", path.display())),
        "{stderr}"
    );
    assert_eq!(checkpoints(&dir, &run).len(), n, "no turn recorded");
    assert_eq!(std::fs::read(&path).unwrap(), damaged);

    // The previous version (bare lines), and a line appended to it by this version.
    std::fs::write(&path, "old.txt\n").unwrap();
    edit("f1.txt");
    repo.write("f1.txt", "y\n");
    let out = hook("claude", &stop, &[]);
    assert_eq!(out["run"], run.as_str());
    let turn = checkpoints(&dir, &run).last().unwrap().clone();
    assert_eq!(turn["touched"], json!(["f1.txt", "old.txt"]));
    assert!(!path.exists(), "taken");
    repo.assert_fsck();
}

#[test]
fn post_commit_report_and_pending_are_read_in_either_version_and_damaged_ones_named() {
    let repo = Repo::new();
    let dir = repo.path();
    let report = dir.join(".git/agent-rewind/post-commit.report");
    let pending = dir.join(".git/agent-rewind/post-commit.pending");
    std::fs::create_dir_all(report.parent().unwrap()).unwrap();
    let head = repo.rev("HEAD");
    let warned = |what: &str| {
        let out = repo.run(&["list"]);
        assert!(out.status.success(), "{what}: {out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // The previous version: bare lines, a bare id.
    std::fs::write(&report, "the old report\n").unwrap();
    std::fs::write(&pending, format!("{head}\n")).unwrap();
    let stderr = warned("previous version");
    assert!(stderr.contains("warning: the old report"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "the post-commit checkpoint of commit {} was not recorded",
            &head[..12]
        )),
        "{stderr}"
    );
    assert!(!report.exists() && !pending.exists(), "told once");
    // This version.
    let line = "the new report";
    let record = format!("{line}\t{:08x}\n", crc32fast::hash(line.as_bytes()));
    let good = [
        &b"agent-rewind/post-commit-report v1\n"[..],
        record.as_bytes(),
    ]
    .concat();
    std::fs::write(&report, &good).unwrap();
    std::fs::write(
        &pending,
        common::envelope("post-commit-pending", 1, format!("{head}\n").as_bytes()),
    )
    .unwrap();
    let stderr = warned("this version");
    assert!(stderr.contains("warning: the new report"), "{stderr}");
    assert!(stderr.contains(&head[..12]), "{stderr}");
    // Damaged: named, never shown as if it were a report.
    std::fs::write(&report, flipped(&good, good.len() - 20)).unwrap();
    std::fs::write(
        &pending,
        flipped(
            &common::envelope("post-commit-pending", 1, format!("{head}\n").as_bytes()),
            40,
        ),
    )
    .unwrap();
    let stderr = warned("damaged");
    for p in [&report, &pending] {
        assert!(
            stderr.contains(&format!("{} is damaged", p.display())),
            "{stderr}"
        );
    }
    assert!(!stderr.contains("the new report"), "{stderr}");
    assert!(stderr.contains("(unreadable id)"), "{stderr}");
}

/// The caches of a checkpoint and of `list`, each damaged (a flipped byte) or of an older
/// version: rebuilt, and what is recorded is what git says.
#[test]
fn damaged_caches_are_rebuilt_and_the_result_is_gits() {
    let repo = Repo::new();
    repo.git(&["config", "agentRewind.untrackedCache", "true"]);
    for i in 0..6 {
        repo.write(&format!("d{i}/f.txt"), "f\n");
    }
    repo.ok(&["start", "--run", "r1"]);
    repo.ok(&["checkpoint", "manual"]);
    repo.ok(&["list"]);
    let dirwalk = repo.path().join(".git/agent-rewind/cache/dirwalk");
    let runs = repo.path().join(".git/agent-rewind/cache/runs.lines");
    common::envelope_body(&std::fs::read(&dirwalk).unwrap(), "dirwalk", 4);
    common::envelope_body(&std::fs::read(&runs).unwrap(), "runs-cache", 7);
    for (round, damage) in [
        |b: &[u8]| flipped(b, b.len() / 2),
        |b: &[u8]| flipped(b, 3),
        |b: &[u8]| b[..b.len() - 1].to_vec(),
    ]
    .iter()
    .enumerate()
    {
        let listed = repo.json(&["list"]);
        for cache in [&dirwalk, &runs] {
            let bytes = std::fs::read(cache).unwrap();
            std::fs::write(cache, damage(&bytes)).unwrap();
        }
        repo.write(&format!("d{round}/new.txt"), "new\n");
        assert_eq!(
            repo.json(&["list"]),
            listed,
            "round {round}: list as before"
        );
        repo.ok(&["checkpoint", "manual"]);
        let tip = repo.rev("refs/agent-runs/r1/HEAD^{tree}");
        assert_eq!(tip, repo.add_all_tree(), "round {round}: git add -A's tree");
        common::envelope_body(&std::fs::read(&dirwalk).unwrap(), "dirwalk", 4);
        common::envelope_body(&std::fs::read(&runs).unwrap(), "runs-cache", 7);
    }
    assert!(
        repo.git(&["status", "--porcelain", "--untracked-files=all"])
            .contains("?? d0/new.txt"),
        "the user's status is untouched"
    );
    repo.assert_fsck();
}
