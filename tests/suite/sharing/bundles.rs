//! export and import as a git bundle reproduce a run bit for bit.

use super::{Bare, clone, js, make_run, open_gate, result_of, run_refs, stderr};
use crate::common::{git_in, ok_in, refs, run_in};

// ---------------------------------------------------------------------------------------
// Bundles
// ---------------------------------------------------------------------------------------

#[test]
fn export_and_import_reproduce_the_run_bit_for_bit() {
    let bare = Bare::new();
    let a = clone(&bare.url(), "alice");
    make_run(&a, "r1");
    open_gate(a.path(), "r1", "review");
    ok_in(a.path(), &["approve", "r1/review", "--by", "alice"]);
    let files = tempfile::tempdir().unwrap();
    let file = files.path().join("r1.bundle");
    let out = js(a.path(), &["export", "r1", "-o", file.to_str().unwrap()]);
    assert_eq!(out["runs"][0], "r1");
    // Plain git accepts the bundle.
    let fresh = clone(&bare.url(), "bob");
    git_in(
        fresh.path(),
        &["bundle", "verify", "-q", file.to_str().unwrap()],
    );

    let imported = js(fresh.path(), &["import", file.to_str().unwrap()]);
    assert_eq!(result_of(&imported, "r1")["result"], "new", "{imported:#}");
    assert_eq!(run_refs(a.path(), "r1"), run_refs(fresh.path(), "r1"));
    assert_eq!(
        a.git(&[
            "log",
            "--notes=agent-runs/*",
            "--format=%H %N",
            "refs/agent-runs/r1/HEAD"
        ]),
        fresh.git(&[
            "log",
            "--notes=agent-runs/*",
            "--format=%H %N",
            "refs/agent-runs/r1/HEAD"
        ])
    );
    // No staged copies are left behind; importing again is a no-op.
    assert!(refs(fresh.path(), "refs/agent-runs-remote/").is_empty());
    let again = js(fresh.path(), &["import", file.to_str().unwrap()]);
    assert_eq!(again["up_to_date"], 1, "{again:#}");
    fresh.assert_fsck();
    // Not a bundle: a clear error.
    let junk = files.path().join("junk");
    std::fs::write(&junk, "junk").unwrap();
    let out = run_in(fresh.path(), &["import", junk.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("not a valid bundle"),
        "{}",
        stderr(&out)
    );
}
