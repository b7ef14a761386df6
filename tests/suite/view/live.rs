//! `view --serve` is live: a checkpoint recorded by another process, in a linked worktree,
//! appears on the open page without a reload; a running step's duration is counted on the
//! page; the page's fingerprint endpoint keeps the server's token rule. The page is driven in
//! headless Chromium over the DevTools protocol on a pipe (`--remote-debugging-pipe`: the
//! browser reads commands on fd 3 and writes answers on fd 4, each ending in a NUL byte).

use super::serve::{get, http, serve};
use crate::common::{HANG_TIMEOUT, Repo, ok_in};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A headless Chromium with one page open, stopped (by its own process id) when dropped.
struct Browser {
    child: Child,
    commands: ChildStdin,
    answers: mpsc::Receiver<Value>,
    session: String,
    next_id: u64,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Browser {
    fn open(url: &str) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let cmd = super::browser(profile.path());
        // fd 3 and 4 are the protocol's: the shell moves our pipes there.
        let program = cmd.get_program().to_owned();
        let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
        let mut sh = std::process::Command::new("sh");
        sh.arg("-c")
            .arg("exec \"$0\" \"$@\" --remote-debugging-pipe 3<&0 4>&1 </dev/null >/dev/null")
            .arg(program)
            .args(args)
            .env("HOME", profile.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        drop(cmd);
        let mut child = sh.spawn().expect("run chromium");
        let commands = child.stdin.take().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let (tx, answers) = mpsc::channel();
        std::thread::spawn(move || {
            let mut msg = Vec::new();
            while out.read_until(0, &mut msg).is_ok_and(|n| n > 0) {
                msg.pop();
                if let Ok(v) = serde_json::from_slice(&msg)
                    && tx.send(v).is_err()
                {
                    return;
                }
                msg.clear();
            }
        });
        let mut b = Browser {
            child,
            commands,
            answers,
            session: String::new(),
            next_id: 0,
            _profile: profile,
        };
        let target = b.call("Target.createTarget", json!({"url": url}), false);
        let target = target["targetId"].as_str().unwrap().to_string();
        let attached = b.call(
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
            false,
        );
        b.session = attached["sessionId"].as_str().unwrap().to_string();
        b
    }

    /// One protocol command, its result (a bounded wait: a browser that never answers fails).
    fn call(&mut self, method: &str, params: Value, in_page: bool) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if in_page {
            msg["sessionId"] = self.session.clone().into();
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.commands.write_all(&bytes).unwrap();
        let deadline = Instant::now() + HANG_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .answers
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no answer to {method}"));
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
        }
    }

    /// The value of a JavaScript expression in the page.
    fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true}),
            true,
        );
        r["result"]["value"].clone()
    }

    /// Wait until `expr` is true in the page; the wait is bounded only so that a page that
    /// never gets there fails the test instead of hanging it.
    fn wait_for(&mut self, expr: &str, what: &str) {
        let deadline = Instant::now() + HANG_TIMEOUT;
        while self.eval(expr) != Value::Bool(true) {
            let dom = self.eval("document.body ? document.body.outerHTML : ''");
            assert!(Instant::now() < deadline, "{what}: never; the page: {dom}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[test]
fn a_checkpoint_from_another_worktree_appears_on_the_open_page_without_a_reload() {
    let r = Repo::new();
    r.ok(&["start", "--run", "first"]);
    r.write("a.txt", "a\n");
    r.ok(&["checkpoint", "edit"]);
    let sv = serve(&r);
    let mut page = Browser::open(&sv.url);
    page.wait_for(
        "document.body.getAttribute('data-ready') === 'true'",
        "the page is built",
    );
    // A mark that a reload would wipe out.
    page.eval("window.stillTheSamePage = true");
    assert_eq!(
        page.eval("!!document.querySelector('g[data-run=\"other\"]')"),
        Value::Bool(false)
    );
    // Another process, in a linked worktree of the same repository, records a checkpoint.
    let elsewhere = tempfile::tempdir().unwrap();
    let wt = elsewhere.path().join("linked");
    r.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "linked",
        wt.to_str().unwrap(),
    ]);
    ok_in(&wt, &["start", "--run", "other"]);
    crate::common::write_in(&wt, "b.txt", "b\n");
    ok_in(&wt, &["checkpoint", "from-the-other-worktree"]);
    page.wait_for(
        "!!document.querySelector('g[data-run=\"other\"] circle.node')",
        "the other worktree's run is drawn",
    );
    assert_eq!(
        page.eval("window.stillTheSamePage === true"),
        Value::Bool(true),
        "the page was not reloaded"
    );
}

#[test]
fn the_fingerprint_endpoint_needs_the_token_and_changes_with_a_checkpoint() {
    let r = Repo::new();
    r.ok(&["start", "--run", "first"]);
    let sv = serve(&r);
    let (status, head, body) = get(&sv, "version");
    assert_eq!(status, 200, "{head}{body}");
    assert!(head.contains("Content-Type: application/json"), "{head}");
    let before: Value = serde_json::from_str(&body).unwrap();
    assert!(before["version"].as_str().is_some_and(|v| v.len() == 32));
    // The same refusal as every other path without the token (or with another one).
    let port = sv.port;
    for path in [
        "/version".to_string(),
        format!("/{}/version", "0".repeat(32)),
        "/version?token=".to_string(),
    ] {
        let (status, _, body) = http(
            port,
            &format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"),
        );
        assert_eq!((status, body.as_str()), (404, "not found\n"), "{path}");
    }
    let token_path = &sv.url[format!("http://127.0.0.1:{port}").len()..];
    let (status, _, _) = http(
        port,
        &format!("GET {token_path}version HTTP/1.1\r\nHost: attacker.example:{port}\r\n\r\n"),
    );
    assert_eq!(status, 403, "another host name");
    // A checkpoint changes it; nothing else ran in between.
    r.write("a.txt", "a\n");
    r.ok(&["checkpoint", "edit"]);
    let (_, _, body) = get(&sv, "version");
    let after: Value = serde_json::from_str(&body).unwrap();
    assert_ne!(before["version"], after["version"]);
    let (_, _, again) = get(&sv, "version");
    assert_eq!(serde_json::from_str::<Value>(&again).unwrap(), after);
}

/// An instant `when` (as `date -d` reads it), in RFC 3339 UTC.
fn utc(when: &str) -> String {
    let out = std::process::Command::new("date")
        .args(["-u", "-d", when, "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn a_running_step_shows_how_long_it_has_run_and_the_count_advances() {
    let r = Repo::new();
    r.ok(&["start", "--run", "busy"]);
    // Begun two hours ago, still running.
    let two_hours_ago = utc("2 hours ago");
    r.ok(&["step", "begin", "build", "--started-at", &two_hours_ago]);
    let sv = serve(&r);
    let mut page = Browser::open(&sv.url);
    let since = "document.querySelector('.timeline [data-since]')";
    page.wait_for(
        &format!("!!{since} && {since}.textContent.indexOf('running for 2:00:') === 3"),
        "the running step's duration is shown",
    );
    let first = page.eval(&format!("{since}.textContent"));
    page.wait_for(
        &format!("{since}.textContent !== {}", first),
        "the duration advances",
    );
    let later = page.eval(&format!("{since}.textContent"));
    assert!(
        later.as_str().unwrap() > first.as_str().unwrap(),
        "{first} then {later}"
    );
    // The step ends: the count stops (the bar is no longer running).
    r.ok(&["step", "end", "build", "--status", "completed"]);
    page.wait_for(&format!("!{since}"), "the ended step has no running count");
    // A step begun in the future is refused, and nothing is written.
    let tip = r.rev("refs/agent-runs/busy/HEAD");
    let future = utc("1 hour");
    let out = r.run(&["step", "begin", "x", "--started-at", &future]);
    assert!(
        !out.status.success() && out.status.code() != Some(101),
        "{out:?}"
    );
    assert!(
        crate::common::stderr(&out).contains("in the future"),
        "{out:?}"
    );
    assert_eq!(r.rev("refs/agent-runs/busy/HEAD"), tip);
}
