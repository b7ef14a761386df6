//! The wrapper and signals: a terminal's Ctrl-C reaches the command (same process group)
//! and the wrapper survives it; SIGTERM sent to the wrapper is passed on; the wrapper exits
//! with the command's status (128 + n for a signal n).

use super::{script, wrap_cmd};
use crate::common::{HANG_TIMEOUT, Repo, checkpoints, stderr};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Output, Stdio};

/// Start the wrapper in a process group of its own (as a shell's job), its output kept.
fn start_wrapped(dir: &Path, command: &[&str]) -> Child {
    let mut c = wrap_cmd(dir, command);
    c.process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c.spawn().expect("spawn the wrapper")
}

/// Wait until the command says it runs (it wrote `ready.txt`).
fn wait_ready(dir: &Path, child: &mut Child) {
    let start = std::time::Instant::now();
    // The whole line, not the file alone: the shell creates the file before it writes it,
    // and a signal between the two would leave it empty.
    while std::fs::read_to_string(dir.join("ready.txt"))
        .ok()
        .as_deref()
        != Some("ready\n")
    {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the wrapper ended early"
        );
        assert!(start.elapsed() < HANG_TIMEOUT, "the command never started");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

fn signal(pid: i32, sig: i32) {
    // SAFETY: kill(2) with plain integers.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "kill {pid} {sig}");
}

fn finish(child: Child) -> Output {
    child.wait_with_output().expect("wait for the wrapper")
}

fn last_checkpoint_file(r: &Repo, path: &str) -> String {
    let run = r.json(&["status"])["run"].as_str().unwrap().to_string();
    let cps = checkpoints(r.path(), &run);
    let cp = cps.last().unwrap()["checkpoint"]
        .as_str()
        .unwrap()
        .to_string();
    r.git(&["show", &format!("{cp}:{path}")])
}

#[test]
fn sigterm_is_passed_on_and_the_exit_status_is_the_commands() {
    let r = Repo::new();
    let stage = tempfile::tempdir().unwrap();
    let agent = script(
        stage.path(),
        "agent.sh",
        "trap 'echo got-term > term.txt; exit 7' TERM\necho ready > ready.txt\nwhile :; do sleep 0.05; done\n",
    );
    let mut child = start_wrapped(r.path(), &[&agent]);
    wait_ready(r.path(), &mut child);
    signal(child.id() as i32, libc::SIGTERM);
    let out = finish(child);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    assert_eq!(r.read("term.txt"), "got-term\n");
    assert_eq!(last_checkpoint_file(&r, "term.txt"), "got-term\n");
    r.assert_fsck();
}

#[test]
fn a_command_ended_by_sigterm_makes_the_wrapper_exit_143() {
    let r = Repo::new();
    let stage = tempfile::tempdir().unwrap();
    let agent = script(
        stage.path(),
        "agent.sh",
        "echo ready > ready.txt\nwhile :; do sleep 0.05; done\n",
    );
    let mut child = start_wrapped(r.path(), &[&agent]);
    wait_ready(r.path(), &mut child);
    signal(child.id() as i32, libc::SIGTERM);
    let out = finish(child);
    assert_eq!(
        out.status.code(),
        Some(128 + libc::SIGTERM),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("ended by SIGTERM"),
        "{}",
        stderr(&out)
    );
    assert_eq!(last_checkpoint_file(&r, "ready.txt"), "ready\n");
}

#[test]
fn the_wrapper_survives_sigint_and_a_terminal_ctrl_c_ends_the_command() {
    // SIGINT to the wrapper alone: it survives, and does not pass it on (at a terminal the
    // command gets its own from the terminal).
    let r = Repo::new();
    let stage = tempfile::tempdir().unwrap();
    let agent = script(
        stage.path(),
        "agent.sh",
        "trap 'echo got-int >> int.txt' INT\necho ready > ready.txt\nwhile [ ! -e done ]; do sleep 0.02; done\nexit 5\n",
    );
    let mut child = start_wrapped(r.path(), &[&agent]);
    wait_ready(r.path(), &mut child);
    signal(child.id() as i32, libc::SIGINT);
    signal(child.id() as i32, libc::SIGQUIT);
    std::fs::write(r.path().join("done"), "").unwrap();
    let out = finish(child);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(!r.path().join("int.txt").exists(), "not passed on");

    // Ctrl-C at a terminal: the whole foreground process group gets SIGINT.
    let r = Repo::new();
    let agent = script(
        stage.path(),
        "agent2.sh",
        "echo ready > ready.txt\nwhile :; do sleep 0.05; done\n",
    );
    let mut child = start_wrapped(r.path(), &[&agent]);
    wait_ready(r.path(), &mut child);
    signal(-(child.id() as i32), libc::SIGINT);
    let out = finish(child);
    assert_eq!(
        out.status.code(),
        Some(128 + libc::SIGINT),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("ended by SIGINT"), "{}", stderr(&out));
    assert_eq!(last_checkpoint_file(&r, "ready.txt"), "ready\n");
    r.assert_fsck();
}
