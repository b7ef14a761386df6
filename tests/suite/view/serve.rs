//! `view --serve`: a checkpoint's changed files show, when a person asks (a "who wrote each
//! line" button, or the `#<checkpoint>:<path>` address it leaves), the attribution of each
//! line, fetched from the server on 127.0.0.1. Checked over plain HTTP (the endpoint, the
//! server's safety rules, a stalled client) and in headless Chromium.

use crate::attribution::{Agent, repo_with};
use crate::common::{Repo, tool_cmd};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};

const HOSTILE: &str = "<img src=x onerror=alert(1)>";

/// The server, stopped (by its own process id) when dropped.
pub(super) struct Serving {
    child: Child,
    pub(super) url: String,
    pub(super) port: u16,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(super) fn serve(r: &Repo) -> Serving {
    let mut child = tool_cmd(r.path())
        .args(["view", "--serve"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let port = url["http://127.0.0.1:".len()..]
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    Serving { child, url, port }
}

/// One raw request; `(status, head, body)`.
pub(super) fn http(port: u16, request: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_string(), body.to_string())
}

pub(super) fn get(sv: &Serving, path: &str) -> (u16, String, String) {
    let token_path = &sv.url[format!("http://127.0.0.1:{}", sv.port).len()..];
    http(
        sv.port,
        &format!(
            "GET {token_path}{path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n",
            sv.port
        ),
    )
}

/// A repository whose agent turn wrote lines of app.txt (one of them an HTML injection
/// attempt); the turn's checkpoint.
fn fixture() -> (Repo, String) {
    let r = repo_with("one\ntwo\n");
    let a = Agent::start(r.path(), "s-view", "claude-sonnet-4-5");
    a.write("app.txt", &format!("one\nagent a\n{HOSTILE}\ntwo\n"));
    let cp = a.turn();
    assert_eq!(cp.len(), 40, "{cp}");
    (r, cp)
}

#[test]
fn served_blame_endpoint_answers_per_line_and_keeps_the_rules() {
    let (r, cp) = fixture();
    let status_before = r.git(&["status", "--porcelain"]);
    let index_before = r.index_bytes();
    let sv = serve(&r);
    let (status, head, body) = get(&sv, &format!("blame?c={cp}&p=app.txt"));
    assert_eq!(status, 200, "{head}{body}");
    assert!(head.contains("Content-Type: application/json"), "{head}");
    assert!(
        !head.to_ascii_lowercase().contains("access-control-allow"),
        "{head}"
    );
    let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
    let lines: Vec<(String, String)> = doc["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let who = match l["agent"]["model"].as_str() {
                Some(m) => format!("agent:{m}:{}", l["agent"]["session"].as_str().unwrap()),
                None => l["origin"].as_str().unwrap().to_string(),
            };
            (l["content"].as_str().unwrap().to_string(), who)
        })
        .collect();
    let agent = "agent:claude-sonnet-4-5:s-view".to_string();
    assert_eq!(
        lines,
        vec![
            ("one".into(), "person".into()),
            ("agent a".into(), agent.clone()),
            (HOSTILE.into(), agent),
            ("two".into(), "person".into()),
        ]
    );
    // The page itself, with a policy that lets it ask this server and nothing else.
    let (status, head, page) = get(&sv, "");
    assert_eq!(status, 200);
    assert!(
        head.contains("connect-src 'self'") && head.contains("default-src 'none'"),
        "{head}"
    );
    assert!(page.contains("\"blame\":true"));
    // Not a checkpoint, not a file of it, outside the tree, no token, another host, not GET.
    let user_commit = r.rev("HEAD");
    for bad in [
        format!("blame?c={user_commit}&p=app.txt"),
        format!("blame?c={cp}&p=nope.txt"),
        format!("blame?c={cp}&p=..%2F..%2Fetc%2Fpasswd"),
        format!("blame?c={cp}&p=-L1"),
        format!("blame?c={}&p=app.txt", &cp[..12]),
        "elsewhere".to_string(),
    ] {
        let (status, _, body) = get(&sv, &bad);
        assert_eq!(status, 404, "{bad}: {body}");
    }
    let (status, _, _) = get(&sv, "blame?c=%zz&p=app.txt");
    assert_eq!(status, 400);
    let port = sv.port;
    let (status, _, _) = http(
        port,
        &format!("GET /blame?c={cp}&p=app.txt HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"),
    );
    assert_eq!(status, 404, "no token");
    let token_path = &sv.url[format!("http://127.0.0.1:{port}").len()..];
    let (status, _, _) = http(
        port,
        &format!("GET {token_path} HTTP/1.1\r\nHost: attacker.example:{port}\r\n\r\n"),
    );
    assert_eq!(status, 403, "DNS rebinding: another host name");
    let (status, _, _) = http(
        port,
        &format!(
            "POST {token_path}blame HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\n\r\n"
        ),
    );
    assert_eq!(status, 405);
    drop(sv);
    // Serving only read: the user's files and index are as they were.
    assert_eq!(r.git(&["status", "--porcelain"]), status_before);
    assert_eq!(r.index_bytes(), index_before);
    r.assert_fsck();
}

/// A client that sends one byte of its request and then stalls holds up no one else: a
/// second client is answered while the first is still open, and the stalled one is closed
/// in time (408) without ever being answered.
#[test]
fn a_stalled_client_holds_up_no_other_and_is_closed_in_time() {
    let (r, _) = fixture();
    let sv = serve(&r);
    let mut stalled = TcpStream::connect(("127.0.0.1", sv.port)).unwrap();
    stalled.write_all(b"G").unwrap();
    let (status, _, page) = get(&sv, "");
    assert_eq!(status, 200);
    assert!(page.contains("<html"), "the page");
    // The stalled connection is still open: nothing to read from it, and no end.
    stalled.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    let still_open = stalled.read(&mut byte);
    assert!(
        still_open
            .as_ref()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock),
        "the stalled connection was answered or closed before the second client was: {still_open:?}"
    );
    // Then it is closed: its head did not arrive in time. The wait is bounded only so that
    // a server that never closes it fails the test instead of hanging it.
    stalled.set_nonblocking(false).unwrap();
    stalled
        .set_read_timeout(Some(crate::common::HANG_TIMEOUT))
        .unwrap();
    let mut reply = String::new();
    stalled
        .read_to_string(&mut reply)
        .expect("the stalled connection is closed by the server");
    assert!(reply.starts_with("HTTP/1.1 408 "), "{reply}");
}

#[test]
fn served_page_shows_who_wrote_each_line_in_chromium() {
    let (r, cp) = fixture();
    let run = r.json(&["status"])["run"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let sv = serve(&r);
    let profile = tempfile::tempdir().unwrap();
    let out = crate::view::browser(profile.path())
        .arg("--virtual-time-budget=20000")
        .arg("--dump-dom")
        .arg(format!("{}#{cp}:app.txt", sv.url))
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8(out.stdout).unwrap();
    assert!(
        dom.contains(
            "<button class=\"blame-btn\" data-path=\"app.txt\">who wrote each line</button>"
        ),
        "the button is there"
    );
    assert!(
        dom.contains("data-blamed=\"app.txt\""),
        "the attribution arrived: {dom}"
    );
    assert!(dom.contains("2 of 4 lines by an agent"), "{dom}");
    let who = format!("<td class=\"who\">claude:claude-sonnet-4-5 {run}/");
    assert_eq!(dom.matches(&who).count(), 2, "{who} in {dom}");
    assert!(
        dom.contains(
            "<tr class=\"bl-person\"><td class=\"ln\">1</td><td class=\"who\">Test User</td>"
        ),
        "{dom}"
    );
    // The agent's line is text, never markup.
    assert!(dom.contains("&lt;img src=x onerror=alert(1)&gt;"), "{dom}");
    assert!(!dom.contains("<img"), "{dom}");
    drop(sv);
    // The page written to a file has no server to ask: no button.
    let page = r.path().join("page.html");
    r.ok(&["view", "-o", page.to_str().unwrap()]);
    let profile = tempfile::tempdir().unwrap();
    let out = crate::view::browser(profile.path())
        .arg("--dump-dom")
        .arg(format!("file://{}#{cp}", page.display()))
        .output()
        .expect("run chromium");
    let dom = String::from_utf8(out.stdout).unwrap();
    assert!(dom.contains("data-ready=\"true\"") && !dom.contains("class=\"blame-btn\""));
}
