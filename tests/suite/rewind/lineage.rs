//! The lineage and refs a rewind writes (archive status, inherited steps) and what rewind and
//! fork report: the new run, branch, worktree and the session at the point.

use super::{begin, end, field, git_view, is_ancestor, json_in, put, ref_exists, start};
use crate::common::{Repo, git_in, refs};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn same_path(a: &str, b: &Path) -> bool {
    let ca = std::fs::canonicalize(a).unwrap_or_else(|_| PathBuf::from(a));
    let cb = std::fs::canonicalize(b).unwrap_or_else(|_| b.to_path_buf());
    ca == cb
}

/// The runs of `list --json [--all]`, by id.
fn listed(dir: &Path, all: bool) -> BTreeMap<String, Value> {
    let v = if all {
        json_in(dir, &["list", "--all"])
    } else {
        json_in(dir, &["list"])
    };
    v.as_array()
        .unwrap_or_else(|| panic!("list --json is not an array: {v}"))
        .iter()
        .map(|r| (field(r, "run"), r.clone()))
        .collect()
}

// ---------------------------------------------------------------------------------------
// 2. Lineage, refs, archive status, inherited steps.
// ---------------------------------------------------------------------------------------

#[test]
fn rewound_run_continues_the_source_lineage_without_moving_its_refs() {
    let repo = Repo::new();
    let d = repo.path();
    let user_base = repo.rev("HEAD");
    let c_start = start(d, "r1");
    let c_plan_b = begin(d, "plan", "S1");
    put(d, "PLAN.md", "plan\n", 0o644);
    let c_plan_e = end(d, "plan", "S1");
    let c_impl_b = begin(d, "implement", "S2");
    put(d, "code.rs", "fn main() {}\n", 0o644);
    let c_impl_e = end(d, "implement", "S2");
    let c_test_b = begin(d, "test", "S3");
    let c_test_e = end(d, "test", "S3");
    let src_refs = refs(d, "refs/agent-runs/r1/");
    assert_eq!(src_refs.len(), 4, "{src_refs:?}");

    let out = repo.json(&["rewind", "r1", "--to", "implement", "--run", "r2"]);
    assert_eq!(field(&out, "run"), "r2");
    assert_eq!(field(&out, "source_run"), "r1");
    assert_eq!(field(&out, "from_checkpoint"), c_plan_e);
    assert_eq!(field(&out, "from_step"), "implement");
    assert_eq!(out["source_archived"], Value::Bool(true));
    assert_eq!(out["inherited_steps"], serde_json::json!(["plan"]));
    let root = field(&out, "checkpoint");
    assert_eq!(repo.rev(&format!("{root}^1")), c_plan_e);
    assert_eq!(repo.rev("refs/agent-runs/r2/HEAD"), root);

    // More work in the new run (the active run of this worktree now).
    let n_impl_b = begin(d, "implement", "S4");
    put(d, "code.rs", "fn main() { println!(\"again\"); }\n", 0o644);
    let n_impl_e = end(d, "implement", "S4");
    assert_eq!(repo.rev("refs/agent-runs/r2/HEAD"), n_impl_e);
    let r2_tip = "refs/agent-runs/r2/HEAD";

    for c in [&c_start, &c_plan_b, &c_plan_e, &root, &n_impl_b] {
        assert!(is_ancestor(d, c, r2_tip), "{c} should be an ancestor of r2");
    }
    for c in [&c_impl_b, &c_impl_e, &c_test_b, &c_test_e] {
        assert!(
            !is_ancestor(d, c, r2_tip),
            "{c} (after the rewind point) must not be in r2's history"
        );
    }
    let first_parent: Vec<String> = repo
        .git(&["log", "--first-parent", "--format=%H", r2_tip])
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(
        first_parent,
        vec![
            n_impl_e.clone(),
            n_impl_b.clone(),
            root.clone(),
            c_plan_e.clone(),
            c_plan_b.clone(),
            c_start.clone(),
            user_base.clone(),
        ],
        "first-parent history of r2"
    );

    // The source run's refs did not move.
    assert_eq!(refs(d, "refs/agent-runs/r1/"), src_refs);

    // Inherited step refs point at the source's commits; later steps are not inherited.
    assert_eq!(repo.rev("refs/agent-runs/r2/plan"), c_plan_e);
    assert_eq!(
        repo.rev("refs/agent-runs/r2/plan"),
        repo.rev("refs/agent-runs/r1/plan")
    );
    assert_eq!(repo.rev("refs/agent-runs/r2/implement"), n_impl_e);
    assert!(!ref_exists(d, "refs/agent-runs/r2/test"));

    // list hides the archived source; --all shows it archived.
    let active = listed(d, false);
    assert!(
        active.contains_key("r2") && !active.contains_key("r1"),
        "{active:?}"
    );
    let all = listed(d, true);
    assert_eq!(all["r1"]["status"], "archived", "{:#}", all["r1"]);
    assert_ne!(all["r2"]["status"], "archived");
    let r2_root = &json_in(d, &["list", "r2"])[0];
    assert_eq!(r2_root["event"], "root");
    assert_eq!(r2_root["rewound_from"]["run"], "r1");
    assert_eq!(r2_root["rewound_from"]["checkpoint"], c_plan_e.as_str());

    // Fork keeps its source active and does not touch it or the worktree.
    let r2_refs = refs(d, "refs/agent-runs/r2/");
    let r2_notes = repo.rev("refs/notes/agent-runs/r2");
    let view = git_view(d);
    let heads = refs(d, "refs/heads/");
    let f = repo.json(&[
        "fork",
        "r2",
        "--to",
        "implement",
        "--run",
        "r3",
        "--no-checkout",
    ]);
    assert_eq!(f["source_archived"], Value::Bool(false));
    assert_eq!(field(&f, "from_checkpoint"), root);
    assert!(f["backup"].is_null());
    assert_eq!(refs(d, "refs/agent-runs/r2/"), r2_refs);
    assert_eq!(repo.rev("refs/notes/agent-runs/r2"), r2_notes);
    assert_eq!(git_view(d), view);
    assert_eq!(refs(d, "refs/heads/"), heads);
    assert_eq!(repo.rev("refs/agent-runs/r3/plan"), c_plan_e);
    let active = listed(d, false);
    assert!(
        active.contains_key("r2") && active.contains_key("r3"),
        "{active:?}"
    );
    assert_ne!(active["r2"]["status"], "archived");
    let r3_root = &json_in(d, &["list", "r3"])[0];
    assert_eq!(r3_root["forked_from"]["run"], "r2");
    assert!(r3_root["rewound_from"].is_null());

    // `log` walks back through the source run.
    let log_runs: BTreeSet<String> = json_in(d, &["log", "r2"])
        .as_array()
        .unwrap()
        .iter()
        .map(|c| field(c, "run"))
        .collect();
    assert_eq!(log_runs, BTreeSet::from(["r1".into(), "r2".into()]));
    repo.assert_fsck();
}

// ---------------------------------------------------------------------------------------
// 4. The output names the new run, branch, worktree and the session id at that point.
// ---------------------------------------------------------------------------------------

#[test]
fn rewind_and_fork_report_run_branch_worktree_and_the_session_at_the_point() {
    let repo = Repo::new();
    let d = repo.path();
    let c_start = start(d, "r1");
    begin(d, "plan", "S-plan");
    put(d, "PLAN.md", "plan\n", 0o644);
    let plan_e = end(d, "plan", "S-plan");
    let impl_b = begin(d, "implement", "S-impl");
    put(d, "code.rs", "code\n", 0o644);
    let impl_e = end(d, "implement", "S-impl");
    begin(d, "test", "S-test");
    put(d, "results.txt", "ok\n", 0o644);
    let test_e = end(d, "test", "S-test");

    let cases: [(&[&str], &str, Option<&str>); 6] = [
        (&["--to", "plan"], c_start.as_str(), None),
        (&["--to", "implement"], plan_e.as_str(), Some("S-plan")),
        (&["--to", "test"], impl_e.as_str(), Some("S-impl")),
        (
            &["--after", "--to", "test"],
            test_e.as_str(),
            Some("S-test"),
        ),
        (
            &["--after", "--to", "plan"],
            plan_e.as_str(),
            Some("S-plan"),
        ),
        (&["--to", impl_b.as_str()], impl_b.as_str(), Some("S-impl")),
    ];
    let view = git_view(d);
    for (i, (flags, from, session)) in cases.iter().enumerate() {
        let id = format!("f{i}");
        let mut args = vec!["fork", "r1", "--no-checkout", "--run", &id];
        args.extend_from_slice(flags);
        let out = repo.json(&args);
        assert_eq!(field(&out, "run"), id, "{flags:?}");
        assert_eq!(field(&out, "from_checkpoint"), *from, "{flags:?}");
        assert_eq!(
            out["sdk_session_id"].as_str(),
            *session,
            "session for {flags:?}: {out:#}"
        );
        assert!(
            out["branch"].is_null() && out["worktree"].is_null(),
            "{out:#}"
        );
        // The new run's root records it too.
        assert_eq!(
            json_in(d, &["list", &id])[0]["sdk_session_id"].as_str(),
            *session
        );
    }
    // --no-checkout with --branch only creates the branch, at the point's user commit.
    let out = repo.json(&[
        "fork",
        "r1",
        "--to",
        "test",
        "--no-checkout",
        "--branch",
        "nb",
        "--run",
        "f9",
    ]);
    assert_eq!(field(&out, "branch"), "nb");
    assert_eq!(repo.rev("refs/heads/nb"), field(&out, "git_commit_sha"));
    assert!(
        out["worktree"].is_null() && out["backup"].is_null(),
        "{out:#}"
    );
    assert_eq!(git_view(d), view, "--no-checkout touched the worktree");

    // In place, with a generated run id and a chosen branch.
    let out = repo.json(&["rewind", "r1", "--to", "test", "--branch", "try-again"]);
    let new_run = field(&out, "run");
    assert!(!new_run.is_empty() && new_run != "r1");
    assert!(ref_exists(d, &format!("refs/agent-runs/{new_run}/HEAD")));
    assert!(listed(d, false).contains_key(&new_run));
    assert_eq!(field(&out, "branch"), "try-again");
    assert_eq!(
        repo.git(&["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/try-again"
    );
    assert!(same_path(&field(&out, "worktree"), d), "{out:#}");
    assert_eq!(field(&out, "sdk_session_id"), "S-impl");
    assert_eq!(json_in(d, &["status"])["run"], new_run.as_str());

    // Human output says the same.
    let human = repo.ok(&["rewind", "r1", "--to", "implement", "--run", "r9"]);
    assert!(human.contains("r9"), "{human}");
    assert!(human.contains("agent-runs/r9"), "{human}");
    assert!(human.contains("S-plan"), "{human}");
    let canon = std::fs::canonicalize(d).unwrap();
    assert!(
        human.contains(&d.display().to_string()) || human.contains(&canon.display().to_string()),
        "{human}"
    );

    // Into a new linked worktree.
    let tmp = tempfile::tempdir().unwrap();
    let wt = tmp.path().join("wt");
    let wt_s = wt.to_str().unwrap();
    let out = repo.json(&[
        "fork",
        "r1",
        "--after",
        "--to",
        "test",
        "--worktree",
        wt_s,
        "--run",
        "w1",
    ]);
    assert_eq!(field(&out, "run"), "w1");
    assert_eq!(field(&out, "branch"), "agent-runs/w1");
    assert!(same_path(&field(&out, "worktree"), &wt), "{out:#}");
    assert_eq!(field(&out, "sdk_session_id"), "S-test");
    assert_eq!(
        git_in(&wt, &["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/agent-runs/w1"
    );
    let human = repo.ok(&[
        "fork",
        "r1",
        "--to",
        "test",
        "--worktree",
        &format!("{wt_s}2"),
        "--run",
        "w2",
    ]);
    assert!(
        human.contains("w2") && human.contains(&format!("{wt_s}2")) && human.contains("S-impl"),
        "{human}"
    );
}
