//! Output into a pipe nobody reads any more (`git agent-rewind show x 2>&1 >/dev/null | true`,
//! `… | head` that has exited): the command ends quietly with its own exit code, as git
//! does, never with a panic (exit 101). Each case starts the binary with stdout or stderr
//! as the write end of a pipe whose read end is already closed, and reads the other
//! stream.

use crate::common::{Repo, tool_cmd};
use std::io::Read;
use std::process::{Command, Stdio};

/// Which standard stream is the closed pipe.
#[derive(Debug, Clone, Copy)]
enum Closed {
    Stdout,
    Stderr,
}

/// Run `args` with `closed` as a pipe whose read end is gone and stdin `input`; the exit
/// code and what the other stream said.
fn run_closed(repo: &Repo, args: &[&str], closed: Closed, input: &[u8]) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut cmd: Command = tool_cmd(repo.path());
    cmd.args(args).stdin(Stdio::piped());
    match closed {
        Closed::Stdout => cmd.stdout(writer).stderr(Stdio::piped()),
        Closed::Stderr => cmd.stderr(writer).stdout(Stdio::piped()),
    };
    let mut child = cmd.spawn().expect("spawn");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        let _ = stdin.write_all(input);
    }
    let mut other = String::new();
    let stream: Option<Box<dyn Read>> = match closed {
        Closed::Stdout => child.stderr.take().map(|s| Box::new(s) as Box<dyn Read>),
        Closed::Stderr => child.stdout.take().map(|s| Box::new(s) as Box<dyn Read>),
    };
    if let Some(mut s) = stream {
        s.read_to_string(&mut other).expect("read the open stream");
    }
    let status = child.wait().expect("wait");
    (status.code(), other)
}

#[test]
fn a_closed_stdout_or_stderr_ends_the_command_with_its_own_exit_code_never_a_panic() {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "pipes"]);
    repo.write("a.txt", "a\n");
    repo.ok(&["checkpoint", "one"]);
    let malformed_hook: &[u8] = b"not json";
    // (arguments, stdin, the exit code the command has with both streams open)
    let cases: [(&[&str], &[u8], i32); 9] = [
        (&["show", "nosuch"], b"", 1),
        (&["--json", "show", "nosuch"], b"", 1),
        (&["list"], b"", 0),
        (&["--json", "list"], b"", 0),
        (&["log", "pipes"], b"", 0),
        (&["--help"], b"", 0),
        (&["show", "-h"], b"", 0),
        (&["show", "--no-such-flag"], b"", 2),
        (&["hook", "claude"], malformed_hook, 0),
    ];
    for (args, input, open_code) in cases {
        let open = tool_cmd(repo.path())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run");
        assert_eq!(
            open.status.code(),
            Some(open_code),
            "{args:?} with open streams"
        );
        for closed in [Closed::Stdout, Closed::Stderr] {
            let (code, other) = run_closed(&repo, args, closed, input);
            assert!(
                !other.contains("panicked"),
                "{args:?} with a closed {closed:?}: {other}"
            );
            // Its own exit code, or git's for a write into a closed pipe (128 + SIGPIPE).
            assert!(
                code == Some(open_code) || code == Some(141),
                "{args:?} with a closed {closed:?} exited {code:?}, not {open_code}: {other}"
            );
        }
    }
}
