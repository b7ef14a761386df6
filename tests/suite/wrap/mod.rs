//! `wrap -- <command>`: any agent run on the user's terminal, its work recorded after each
//! quiet period and at exit. Scripted agents synchronise on the refs the wrapper writes
//! (they wait until a checkpoint appears), never on a clock.

mod signals;

use crate::common::{Repo, bin, bounded, checkpoints, git_in, stderr, tool_cmd};
use std::path::Path;
use std::process::Command;

/// The wrapper in `dir`, with a short quiet time.
pub fn wrap_cmd(dir: &Path, command: &[&str]) -> Command {
    let mut c = tool_cmd(dir);
    c.env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "agentRewind.wrapQuiet")
        .env("GIT_CONFIG_VALUE_0", "200ms")
        .arg("wrap")
        .arg("--")
        .args(command);
    c
}

/// An executable script `name` in `dir`.
pub fn script(dir: &Path, name: &str, body: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p.display().to_string()
}

/// The shell function a scripted agent waits with: until run `$RUN` has `$1` commits.
pub const WAIT_FOR: &str = r#"n() { git rev-list --count "refs/agent-runs/$RUN/HEAD"; }
wait_for() { while [ "$(n)" -lt "$1" ]; do sleep 0.02; done; }
"#;

fn active_run(r: &Repo) -> String {
    r.json(&["status"])["run"].as_str().unwrap().to_string()
}

#[test]
fn bursts_of_edits_make_one_checkpoint_each_and_one_at_exit() {
    let r = Repo::new();
    r.write(".gitignore", "*.log\n");
    r.git(&["add", "-A"]);
    r.git(&["commit", "-qm", "ignore logs"]);
    r.ok(&["start", "--label", "mine"]);
    let run = active_run(&r);
    // Each burst is one rename, so that a burst is never seen half done.
    let stage = tempfile::tempdir().unwrap();
    std::fs::create_dir(stage.path().join("src")).unwrap();
    std::fs::write(stage.path().join("src/a.txt"), "a1\n").unwrap();
    std::fs::write(stage.path().join("src/b.txt"), "b1\n").unwrap();
    std::fs::write(stage.path().join("a.txt"), "a2\n").unwrap();
    let agent = script(
        stage.path(),
        "agent.sh",
        &format!(
            "set -e\n{WAIT_FOR}base=$(n)\n\
             mv \"$STAGE/src\" src\nwait_for $((base+1))\n\
             echo noise > build.log\n\
             mv \"$STAGE/a.txt\" src/a.txt\nwait_for $((base+2))\n\
             rm src/b.txt\nexit 3\n"
        ),
    );
    let mut c = wrap_cmd(r.path(), &[&agent]);
    c.env("STAGE", stage.path()).env("RUN", &run);
    let out = bounded(c, "wrap of a scripted agent");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("agent.sh exited 3"),
        "{}",
        stderr(&out)
    );
    let cps = checkpoints(r.path(), &run);
    assert_eq!(cps.len(), 4, "start + one per burst: {cps:#?}");
    for cp in &cps[1..] {
        assert_eq!(cp["agent"], "agent.sh");
        assert_eq!(cp["step"], "turn");
    }
    let show = |i: usize, path: &str| {
        let cp = cps[i]["checkpoint"].as_str().unwrap();
        let out = r.git_output(&["show", &format!("{cp}:{path}")]);
        out.status
            .success()
            .then(|| String::from_utf8(out.stdout).unwrap())
    };
    assert_eq!(show(1, "src/a.txt").as_deref(), Some("a1\n"));
    assert_eq!(show(1, "src/b.txt").as_deref(), Some("b1\n"));
    assert_eq!(show(2, "src/a.txt").as_deref(), Some("a2\n"));
    assert_eq!(show(2, "src/b.txt").as_deref(), Some("b1\n"));
    assert_eq!(show(3, "src/a.txt").as_deref(), Some("a2\n"));
    assert_eq!(show(3, "src/b.txt"), None, "the removal is recorded");
    for i in 1..4 {
        assert_eq!(show(i, "build.log"), None, "ignored files are not recorded");
    }
    // The run joined is still the active one, with its label.
    assert_eq!(active_run(&r), run);
    r.assert_fsck();
    assert_eq!(
        r.git(&["status", "--porcelain"]),
        "?? src/\n",
        "the user's files are the agent's"
    );
}

#[test]
fn without_an_active_run_one_is_started_labelled_with_the_command() {
    let r = Repo::new();
    let stage = tempfile::tempdir().unwrap();
    let agent = script(stage.path(), "my-agent", "echo hi > hello.txt\n");
    let out = bounded(wrap_cmd(r.path(), &[&agent]), "wrap");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run = active_run(&r);
    let list = r.json(&["list"]);
    let row = list
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["run"] == run.as_str())
        .unwrap_or_else(|| panic!("{list:#}"));
    assert_eq!(row["label"], "wrap: my-agent", "{row:#}");
    let cps = checkpoints(r.path(), &run);
    assert_eq!(cps.len(), 2, "start, then the exit: {cps:#?}");
    assert_eq!(cps[1]["agent"], "my-agent");
    assert_eq!(cps[1]["message"], "my-agent exited 0");
    let cp = cps[1]["checkpoint"].as_str().unwrap();
    assert_eq!(r.git(&["show", &format!("{cp}:hello.txt")]), "hi\n");
    // `status` says what the last checkpoint covered.
    let status = r.ok(&["status"]);
    assert!(status.contains(&cp[..12]), "{status}");
    r.assert_fsck();
}

#[test]
fn nothing_changed_records_nothing() {
    let r = Repo::new();
    r.ok(&["start"]);
    let run = active_run(&r);
    let out = bounded(wrap_cmd(r.path(), &["true"]), "wrap true");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(checkpoints(r.path(), &run).len(), 1, "only the start");
    assert!(stderr(&out).contains("no checkpoint"), "{}", stderr(&out));
}

#[test]
fn a_command_not_found_exits_127_and_records_nothing() {
    let r = Repo::new();
    let out = bounded(wrap_cmd(r.path(), &["no-such-agent-here"]), "wrap");
    assert_eq!(out.status.code(), Some(127));
    assert!(
        stderr(&out).starts_with("error: cannot run no-such-agent-here: command not found"),
        "{}",
        stderr(&out)
    );
    assert_eq!(git_in(r.path(), &["for-each-ref", "refs/agent-runs"]), "");
    let not_exec = r.path().join("not-exec.sh");
    std::fs::write(&not_exec, "#!/bin/sh\n").unwrap();
    let out = bounded(wrap_cmd(r.path(), &["./not-exec.sh"]), "wrap");
    assert_eq!(out.status.code(), Some(126), "{}", stderr(&out));
    assert_eq!(git_in(r.path(), &["for-each-ref", "refs/agent-runs"]), "");
}

#[test]
fn a_bad_quiet_time_is_refused_before_anything_runs() {
    let r = Repo::new();
    let mut c = tool_cmd(r.path());
    c.args(["wrap", "--", "sh", "-c", "echo ran > ran.txt"])
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "agentRewind.wrapQuiet")
        .env("GIT_CONFIG_VALUE_0", "soon");
    let out = bounded(c, "wrap");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("agentRewind.wrapQuiet"),
        "{}",
        stderr(&out)
    );
    assert!(!r.path().join("ran.txt").exists());
    assert_eq!(git_in(r.path(), &["for-each-ref", "refs/agent-runs"]), "");
}

/// Through `script` (util-linux), which gives the wrapper a pseudo-terminal as a person's
/// shell would: the wrapped command sees a terminal on its standard input and output.
#[test]
fn the_command_sees_the_terminal() {
    let r = Repo::new();
    let line = format!(
        "{} wrap -- sh -c 'if test -t 0 -a -t 1; then echo tty > seen.txt; else echo none > seen.txt; fi'",
        bin().display()
    );
    let mut c = Command::new("script");
    c.args(["-qec", &line, "/dev/null"])
        .current_dir(r.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("AGENT_RUN");
    let out = bounded(c, "script -qec wrap");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(r.read("seen.txt"), "tty\n");
    let run = active_run(&r);
    let cps = checkpoints(r.path(), &run);
    let cp = cps.last().unwrap()["checkpoint"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(r.git(&["show", &format!("{cp}:seen.txt")]), "tty\n");
}

/// With `core.fsmonitor` naming a hook, changes are heard through it (a hook that always
/// answers "everything may have changed", as a monitor just started does).
#[test]
fn with_a_filesystem_monitor_changes_are_heard_through_it() {
    let r = Repo::new();
    script(
        &r.path().join(".git/hooks"),
        "query-everything",
        "printf 'token-1\\0/\\0'\n",
    );
    r.git(&["config", "core.fsmonitor", ".git/hooks/query-everything"]);
    r.git(&["config", "core.fsmonitorHookVersion", "2"]);
    r.ok(&["start"]);
    let run = active_run(&r);
    let stage = tempfile::tempdir().unwrap();
    std::fs::write(stage.path().join("one.txt"), "1\n").unwrap();
    let agent = script(
        stage.path(),
        "agent.sh",
        &format!(
            "set -e\n{WAIT_FOR}base=$(n)\nmv \"$STAGE/one.txt\" one.txt\nwait_for $((base+1))\necho 2 > two.txt\n"
        ),
    );
    let mut c = wrap_cmd(r.path(), &[&agent]);
    c.env("STAGE", stage.path())
        .env("RUN", &run)
        .env("AGENT_REWIND_TRACE", "1");
    let out = bounded(c, "wrap with a monitor");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("wrap: watching through the filesystem monitor"),
        "{}",
        stderr(&out)
    );
    let cps = checkpoints(r.path(), &run);
    assert_eq!(cps.len(), 3, "{cps:#?}");
    let first = cps[1]["checkpoint"].as_str().unwrap();
    assert_eq!(r.git(&["show", &format!("{first}:one.txt")]), "1\n");
    let last = cps[2]["checkpoint"].as_str().unwrap();
    assert_eq!(r.git(&["show", &format!("{last}:two.txt")]), "2\n");
    r.assert_fsck();
}

/// Crush has no hook that fires at the end of a turn (docs/HOOKS.md): it is recorded as
/// `wrap -- crush …`, found on PATH as the user would run it; a script named `crush` stands
/// in for it. Each checkpoint's agent is `crush`, and its work is in it.
#[test]
fn crush_is_recorded_through_wrap() {
    let r = Repo::new();
    let stage = tempfile::tempdir().unwrap();
    script(
        stage.path(),
        "crush",
        "[ \"$1\" = run ] || exit 9\necho \"$2\" > notes.txt\n",
    );
    let path = std::env::join_paths(std::iter::once(stage.path().to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let mut c = wrap_cmd(r.path(), &["crush", "run", "write the notes"]);
    c.env("PATH", path);
    let out = bounded(c, "wrap -- crush run");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run = active_run(&r);
    let cps = checkpoints(r.path(), &run);
    let last = cps.last().unwrap();
    assert_eq!(last["agent"], "crush", "{cps:#?}");
    let cp = last["checkpoint"].as_str().unwrap();
    assert_eq!(
        r.git(&["show", &format!("{cp}:notes.txt")]),
        "write the notes\n"
    );
    r.assert_fsck();
}
