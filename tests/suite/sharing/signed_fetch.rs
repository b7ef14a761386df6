//! `fetch --require-signed` / `agentRewind.requireSigned` and `import` of a bundle with it:
//! the runs whose every new checkpoint and notes commit is signed by an allowed key are
//! taken; each other run is refused by name with its reason (unsigned, unknown key, bad
//! signature, notes changed after signing), nothing of it is imported, and the command
//! exits 1. Real `ssh-keygen` keys, checked by git against an allowed-signers file.

use super::signing::{Keys, record};
use super::{Bare, clone, result_of, stderr};
use crate::common::{git_in, git_stdin, refs};
use serde_json::Value;
use std::path::Path;

/// The tip of run `run`, changed after it was signed (its subject), with the same note, in
/// place of the signed one: a valid run, but git's verdict on its tip is a bad signature.
fn forge_tip(dir: &Path, run: &str) {
    let head = git_in(dir, &["rev-parse", &format!("refs/agent-runs/{run}/HEAD")]);
    let head = head.trim();
    let raw = git_in(dir, &["cat-file", "commit", head]);
    let changed = raw.replacen("\n\nagent-rewind:", "\n\nAgent-rewind:", 1);
    assert_ne!(raw, changed);
    let forged = git_stdin(
        dir,
        &["hash-object", "-t", "commit", "-w", "--stdin"],
        changed.as_bytes(),
    );
    let notes = format!("--ref=agent-runs/{run}");
    let note = git_in(dir, &["notes", &notes, "show", head]);
    git_in(
        dir,
        &["notes", &notes, "add", "-m", note.trim_end(), &forged],
    );
    // HEAD and the step ref of that checkpoint move to it.
    for (name, id) in refs(dir, &format!("refs/agent-runs/{run}/")) {
        if id == head {
            git_in(dir, &["update-ref", &name, &forged, head]);
        }
    }
}

/// A clone whose remote holds `good` (alice's, signed), `forged` (mallory's: a key the
/// allowed signers do not list), `plain` (unsigned), `tampered` (alice's, its tip changed
/// after signing) and `renoted` (alice's, a notes commit added by plain git after).
fn remote_of_mixed_runs(k: &Keys, bare: &Bare) {
    let a = clone(&bare.url(), "alice");
    k.use_ssh(a.path(), "alice");
    record(k, a.path(), "good");
    record(k, a.path(), "tampered");
    forge_tip(a.path(), "tampered");
    record(k, a.path(), "renoted");
    let head = a.rev("refs/agent-runs/renoted/HEAD");
    let note = a.git(&["notes", "--ref=agent-runs/renoted", "show", &head]);
    git_in(
        a.path(),
        &[
            "-c",
            "commit.gpgSign=false",
            "notes",
            "--ref=agent-runs/renoted",
            "add",
            "-f",
            "-m",
            note.trim_end(),
            &head,
        ],
    );
    k.use_ssh(a.path(), "mallory");
    record(k, a.path(), "forged");
    git_in(a.path(), &["config", "agentRewind.sign", "false"]);
    record(k, a.path(), "plain");
    k.ok(a.path(), &["push", "--all"]);
}

/// Each refused run and the reason it is refused for.
const REFUSED: [(&str, &str); 4] = [
    ("forged", "unknown key"),
    ("plain", "unsigned"),
    ("tampered", "bad signature"),
    ("renoted", "notes changed after signing"),
];

/// `fetch`/`import` output (`--json` in `v`, the human form's stderr in `err`): `good` is
/// taken and every other run refused by name with its reason, nothing of it imported.
fn assert_only_good_taken(dir: &Path, v: &Value, err: &str) {
    assert_eq!(result_of(v, "good")["result"], "new", "{v:#}");
    for (run, why) in REFUSED {
        let r = result_of(v, run);
        assert_eq!(r["result"], "refused", "{v:#}");
        let detail = r["detail"].as_str().unwrap();
        assert!(detail.starts_with(why), "{run}: {detail}");
        assert!(
            err.contains(&format!("run {run:?}")) && err.contains(&format!("refused: {why}")),
            "{run}: {err}"
        );
        assert!(refs(dir, &format!("refs/agent-runs/{run}/")).is_empty());
        assert!(
            !refs(dir, "refs/notes/agent-runs/")
                .iter()
                .any(|(n, _)| n.ends_with(&format!("/{run}"))),
            "{run}"
        );
    }
    assert!(!err.contains("run \"good\""), "{err}");
    assert_eq!(refs(dir, "refs/agent-runs/good/").len(), 3);
}

#[test]
fn fetch_require_signed_takes_the_signed_runs_and_refuses_each_other_one_by_name() {
    let k = Keys::new();
    let bare = Bare::new();
    remote_of_mixed_runs(&k, &bare);

    let b = clone(&bare.url(), "bob");
    k.trust_signers(b.path());
    let out = k.run(b.path(), &["fetch", "--require-signed"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(summary.contains("1 new, 4 refused"), "{summary}");
    let again = k.run(b.path(), &["--json", "fetch", "--require-signed"]);
    assert_eq!(again.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&again.stdout).unwrap();
    // The first fetch took good; the second finds it up to date and refuses the others.
    assert_eq!(v["up_to_date"], 1, "{v:#}");
    let err = stderr(&out);
    for (run, why) in REFUSED {
        assert_eq!(result_of(&v, run)["result"], "refused", "{v:#}");
        assert!(
            err.contains(&format!("run {run:?} from origin refused: {why}")),
            "{err}"
        );
    }
    assert_eq!(refs(b.path(), "refs/agent-runs/good/").len(), 3);
    assert_eq!(
        b.rev("refs/agent-runs/good/HEAD"),
        git_in(&bare.path(), &["rev-parse", "refs/agent-runs/good/HEAD"]).trim()
    );
    b.assert_fsck();

    // agentRewind.requireSigned makes it the default, for a fresh clone as well.
    let c = clone(&bare.url(), "carol");
    k.trust_signers(c.path());
    git_in(c.path(), &["config", "agentRewind.requireSigned", "true"]);
    let out = k.run(c.path(), &["--json", "fetch"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let human = k.run(c.path(), &["fetch"]);
    assert_only_good_taken(c.path(), &v, &stderr(&human));
    // Without it, everything comes.
    git_in(c.path(), &["config", "agentRewind.requireSigned", "false"]);
    let v = k.json(c.path(), &["fetch"]);
    for (run, _) in REFUSED {
        assert_eq!(result_of(&v, run)["result"], "new", "{v:#}");
    }
    c.assert_fsck();
}

#[test]
fn import_of_a_bundle_with_require_signed_takes_the_signed_runs_and_refuses_the_others() {
    let k = Keys::new();
    let bare = Bare::new();
    remote_of_mixed_runs(&k, &bare);
    let a = clone(&bare.url(), "alice2");
    k.ok(a.path(), &["fetch"]);
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("runs.bundle");
    let mut args = vec!["export", "-o", file.to_str().unwrap()];
    args.extend(["good", "forged", "plain", "tampered", "renoted"]);
    k.ok(a.path(), &args);

    let b = clone(&bare.url(), "bob");
    k.trust_signers(b.path());
    git_in(b.path(), &["config", "agentRewind.requireSigned", "true"]);
    let out = k.run(b.path(), &["--json", "import", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_only_good_taken(b.path(), &v, &stderr(&out));
    // Nothing of the bundle stays staged.
    assert!(refs(b.path(), "refs/agent-runs-remote/").is_empty());
    b.assert_fsck();
}
