//! Where runs go: `agentRewind.remote` (a remote's name or a URL) is the
//! remote of `push` and `fetch` without one; with nothing configured, `push` names the
//! remote it would use and asks for `--remote`, which it then remembers.

use super::{Bare, clone, js, make_run, result_of, stderr};
use crate::common::{git_in, ok_in, refs, run_in};

#[test]
fn push_without_a_chosen_remote_names_origin_asks_and_then_remembers() {
    let bare = Bare::new();
    let a = clone(&bare.url(), "alice");
    a.git(&["config", "--unset", "agentRewind.remote"]);
    make_run(&a, "r1");
    let before = refs(&bare.path(), "refs/");
    let out = run_in(a.path(), &["push", "r1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("this would push to origin ({})", bare.url())),
        "{err}"
    );
    assert!(err.contains("--remote"), "{err}");
    assert_eq!(refs(&bare.path(), "refs/"), before, "nothing was pushed");
    // The positional remote still works, and is not remembered.
    let pushed = js(a.path(), &["push", "origin", "r1"]);
    assert_eq!(result_of(&pushed, "r1")["result"], "pushed", "{pushed:#}");
    assert!(
        a.git_output(&["config", "agentRewind.remote"])
            .stdout
            .is_empty()
    );
    // --remote is the choice, remembered for the next pushes.
    ok_in(a.path(), &["checkpoint", "more", "--run", "r1"]);
    let out = ok_in(a.path(), &["push", "--remote", "origin", "r1"]);
    assert!(out.contains("runs go to origin from now on"), "{out}");
    assert_eq!(a.git(&["config", "agentRewind.remote"]).trim(), "origin");
    ok_in(a.path(), &["checkpoint", "again", "--run", "r1"]);
    let pushed = js(a.path(), &["push", "r1"]);
    assert_eq!(result_of(&pushed, "r1")["result"], "pushed", "{pushed:#}");
    assert_eq!(
        bare.git(&["rev-parse", "refs/agent-runs/r1/HEAD"]),
        a.git(&["rev-parse", "refs/agent-runs/r1/HEAD"])
    );
    // A fetch reads from origin when nothing is configured.
    let b = clone(&bare.url(), "bob");
    b.git(&["config", "--unset", "agentRewind.remote"]);
    let fetched = js(b.path(), &["fetch"]);
    assert_eq!(result_of(&fetched, "r1")["result"], "new", "{fetched:#}");
}

#[test]
fn agent_rewind_remote_sends_runs_to_a_private_remote_by_name_or_url() {
    let public = Bare::new();
    let private = Bare::new();
    let a = clone(&public.url(), "alice");
    a.git(&["remote", "add", "runs", &private.url()]);
    a.git(&["config", "agentRewind.remote", "runs"]);
    make_run(&a, "r1");
    let pushed = js(a.path(), &["push", "r1"]);
    assert_eq!(pushed["remote"], "runs", "{pushed:#}");
    assert_eq!(result_of(&pushed, "r1")["result"], "pushed", "{pushed:#}");
    assert!(refs(&public.path(), "refs/agent-runs/").is_empty());
    assert!(refs(&public.path(), "refs/notes/").is_empty());
    assert_eq!(refs(&private.path(), "refs/agent-runs/r1/").len(), 3);

    // A URL works as well, without a configured remote.
    a.git(&["config", "agentRewind.remote", &private.url()]);
    make_run(&a, "r2");
    let pushed = js(a.path(), &["push", "--all"]);
    assert_eq!(pushed["remote"], private.url(), "{pushed:#}");
    assert_eq!(result_of(&pushed, "r2")["result"], "pushed", "{pushed:#}");
    assert!(refs(&public.path(), "refs/agent-runs/").is_empty());

    let b = clone(&public.url(), "bob");
    b.git(&["config", "agentRewind.remote", &private.url()]);
    let fetched = js(b.path(), &["fetch"]);
    assert_eq!(result_of(&fetched, "r1")["result"], "new", "{fetched:#}");
    assert_eq!(result_of(&fetched, "r2")["result"], "new", "{fetched:#}");
    let again = js(b.path(), &["fetch", "r2"]);
    assert_eq!(result_of(&again, "r2")["result"], "up to date", "{again:#}");
    // Nothing of ours under refs/remotes/, and the user's remotes are unchanged.
    assert!(
        refs(b.path(), "refs/remotes/")
            .iter()
            .all(|(n, _)| n.starts_with("refs/remotes/origin/"))
    );
    assert_eq!(b.git(&["remote"]).trim(), "origin");
    b.assert_fsck();

    // Bad values: a clear error, nothing changed.
    let before = refs(b.path(), "refs/");
    for (value, code, says) in [
        ("nosuch", 1, "unknown remote \"nosuch\""),
        ("--upload-pack=touch", 2, "is not a remote name or URL"),
    ] {
        b.git(&["config", "agentRewind.remote", value]);
        let out = run_in(b.path(), &["fetch"]);
        assert_eq!(out.status.code(), Some(code), "{value}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{value}: {}", stderr(&out));
    }
    let out = run_in(b.path(), &["push", "--remote", "-x", "r1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(refs(b.path(), "refs/"), before);
    git_in(b.path(), &["config", "--unset", "agentRewind.remote"]);
}

/// `push origin r1` where no remote is called origin says that origin does not exist, and
/// changes nothing.
#[test]
fn push_to_a_remote_that_does_not_exist_says_so() {
    let r = crate::common::Repo::new();
    make_run(&r, "r1");
    let config = std::fs::read(r.path().join(".git/config")).unwrap();
    let out = run_in(r.path(), &["push", "origin", "r1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("no remote origin"), "{err}");
    assert!(!err.contains("no remote chosen"), "{err}");
    assert!(err.contains("git remote"), "{err}");
    assert_eq!(std::fs::read(r.path().join(".git/config")).unwrap(), config);
    // A run of that name is still pushed as a run.
    let out = run_in(r.path(), &["push", "r1"]);
    assert!(
        stderr(&out).contains("no remote chosen"),
        "{}",
        stderr(&out)
    );
}
