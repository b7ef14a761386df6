//! `view --serve`: the view page over HTTP on 127.0.0.1, and — when a person clicks "who
//! wrote each line" on a checkpoint's file — that file's attribution as the checkpoint
//! recorded it (`ops::blame::blame_at_checkpoint`), as JSON. The page stays live: it asks
//! `version` (a fingerprint of the runs' refs and notes refs) every second and, when that
//! changed, fetches the page again, which is built anew for the new state.
//!
//! Safety rules: it listens on 127.0.0.1 only; every path is under a random 128-bit token
//! (`http://127.0.0.1:<port>/<token>/`), anything else is 404; the `Host` header must name
//! 127.0.0.1 or localhost and the port (no DNS rebinding); GET only; a request head is at
//! most 16 KiB and must arrive, all of it, within 5 seconds, and a reply is written within
//! 30 (each connection on its own thread, so a slow one holds up no other; at most 64 at
//! once); no CORS headers, so no other origin reads an
//! answer; the page's Content-Security-Policy admits requests to this server only. It only
//! reads: nothing it serves writes a ref, an object or a file. It never renders HTML itself
//! (the page is `agent_rewind::view`'s; attribution goes out as JSON the page shows with
//! textContent).

use agent_rewind::ops;
use agent_rewind::store::Store;
use agent_rewind_core::error::{Error, ErrorKind, Result};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

/// Biggest request head read.
const MAX_HEAD: usize = 16 << 10;

/// The longest a whole request head may take to arrive.
const HEAD_TIME: Duration = Duration::from_secs(5);

/// The longest writing one reply may take.
const REPLY_TIME: Duration = Duration::from_secs(30);

/// A bound server, not serving yet.
pub struct Server {
    listener: TcpListener,
    token: String,
    port: u16,
}

impl Server {
    /// Listen on 127.0.0.1:`port` (0: a free port).
    pub fn bind(port: u16) -> Result<Server> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).map_err(|e| {
            Error::other(format!("could not listen on 127.0.0.1:{port}: {e}"))
                .with_hint("choose another port with --port N (0: any free port)")
        })?;
        let port = listener
            .local_addr()
            .map_err(|e| Error::other(format!("could not listen on 127.0.0.1: {e}")))?
            .port();
        let mut bytes = [0u8; 16];
        agent_rewind_core::ids::fill_random(&mut bytes);
        let token = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ok(Server {
            listener,
            token,
            port,
        })
    }

    /// The page's address.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/{}/", self.port, self.token)
    }

    /// Serve until the process is stopped. Each connection has its own thread that reads
    /// its request head (at most [`HEAD_TIME`] for the whole head, however slowly it
    /// trickles in) and writes its reply, so a slow client holds only itself up; the
    /// answers are made here, one at a time, as only this thread reads the repository.
    /// `render` builds the page for the state whose fingerprint it is given; it is called
    /// again only when the fingerprint changed since the last page was built.
    /// `page` is the page built before serving, for the state whose fingerprint it has.
    pub fn serve(
        &self,
        store: &Store,
        mut page: Page,
        render: &dyn Fn(&str) -> Result<String>,
    ) -> Result<()> {
        let listener = self
            .listener
            .try_clone()
            .map_err(|e| Error::other(format!("could not serve: {e}")))?;
        let (jobs, requests) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("view-accept".into())
            .spawn(move || accept(listener, jobs))
            .map_err(|e| Error::other(format!("could not serve: {e}")))?;
        for job in requests {
            let reply = self.answer(store, &mut page, render, &job.head);
            let _ = job.reply.send(reply);
        }
        Ok(())
    }

    fn answer(
        &self,
        store: &Store,
        page: &mut Page,
        render: &dyn Fn(&str) -> Result<String>,
        head: &str,
    ) -> Reply {
        let mut lines = head.split("\r\n");
        let mut first = lines.next().unwrap_or_default().split(' ');
        let (method, target) = (first.next().unwrap_or(""), first.next().unwrap_or(""));
        let host = lines
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("host"))
            .map(|(_, v)| v.trim().to_ascii_lowercase());
        let allowed = [
            format!("127.0.0.1:{}", self.port),
            format!("localhost:{}", self.port),
        ];
        if !host.is_some_and(|h| allowed.contains(&h)) {
            return Reply::status(403, "forbidden");
        }
        let Some(rest) = target
            .strip_prefix('/')
            .and_then(|t| t.strip_prefix(self.token.as_str()))
            .and_then(|t| t.strip_prefix('/'))
        else {
            return Reply::status(404, "not found");
        };
        if method != "GET" {
            return Reply::status(405, "only GET");
        }
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        match path {
            "" => match page.current(store, render) {
                Ok(html) => Reply {
                    status: 200,
                    content_type: "text/html; charset=utf-8",
                    csp: agent_rewind::view::served_content_security_policy(),
                    body: html.as_bytes().to_vec(),
                },
                Err(e) => Reply::status(500, &e.message),
            },
            "version" => match version(store) {
                Ok(v) => Reply::json(200, &serde_json::json!({ "version": v })),
                Err(e) => Reply::json(500, &serde_json::json!({"error": e.message})),
            },
            "blame" => blame(store, query),
            _ => Reply::status(404, "not found"),
        }
    }
}

/// The page last built, and the fingerprint of the state it was built for.
pub struct Page {
    pub version: String,
    pub html: String,
}

impl Page {
    /// The page for the state now: the one built before when nothing changed since.
    fn current(&mut self, store: &Store, render: &dyn Fn(&str) -> Result<String>) -> Result<&str> {
        // The fingerprint is taken before the page is built: a checkpoint recorded in between
        // is then in the page but not in its fingerprint, and the page's next poll sees a
        // new fingerprint and fetches again — never the other way round, a change missed.
        let now = version(store)?;
        if now != self.version {
            self.html = render(&now)?;
            self.version = now;
        }
        Ok(&self.html)
    }
}

/// The fingerprint of the state the page shows (`ops::fingerprint`).
pub fn version(store: &Store) -> Result<String> {
    ops::fingerprint::runs(store)
}

/// `blame?c=<checkpoint>&p=<path>`: the file's attribution as JSON, or `{"error"}`.
fn blame(store: &Store, query: &str) -> Reply {
    let (mut c, mut p) = (None, None);
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "c" => c = percent_decode(v),
            "p" => p = percent_decode(v),
            _ => {}
        }
    }
    let (Some(c), Some(p)) = (c, p) else {
        return Reply::json(
            400,
            &serde_json::json!({"error": "name the checkpoint (c) and the file (p)"}),
        );
    };
    match ops::blame::blame_at_checkpoint(store, &c, &p) {
        Ok(b) => Reply::json(200, &crate::cli::output::json(&b)),
        Err(e) => {
            let status = if e.kind == ErrorKind::NotFound {
                404
            } else {
                500
            };
            Reply::json(status, &serde_json::json!({"error": e.message}))
        }
    }
}

/// `%XX` decoded; `None` when it is not valid UTF-8 or a `%` is not followed by two hex digits.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A request head read, and where its reply goes.
struct Job {
    head: String,
    reply: mpsc::Sender<Reply>,
}

/// How many connections are served at once; one more is told to come back (503).
const MAX_CONNECTIONS: usize = 64;

/// Accept connections, each on its own thread, until the listener fails for good.
fn accept(listener: TcpListener, jobs: mpsc::Sender<Job>) {
    let open = Arc::new(AtomicUsize::new(0));
    for conn in listener.incoming() {
        let Ok(mut conn) = conn else { continue };
        if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            open.fetch_sub(1, Ordering::SeqCst);
            let _ = conn.set_write_timeout(Some(HEAD_TIME));
            let _ = Reply::status(503, "busy: too many connections")
                .send(&mut conn, Instant::now() + HEAD_TIME);
            continue;
        }
        let (jobs, open_now) = (jobs.clone(), open.clone());
        let spawned = std::thread::Builder::new()
            .name("view-conn".into())
            .spawn(move || {
                connection(conn, &jobs);
                open_now.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            open.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// One connection: its head within [`HEAD_TIME`], the answer from the serving thread, the
/// reply within [`REPLY_TIME`]; then it is closed.
fn connection(mut conn: TcpStream, jobs: &mpsc::Sender<Job>) {
    let reply = match read_head(&mut conn, Instant::now() + HEAD_TIME) {
        Ok(head) => {
            let (reply, answer) = mpsc::channel();
            if jobs.send(Job { head, reply }).is_err() {
                return;
            }
            match answer.recv() {
                Ok(r) => r,
                Err(_) => return,
            }
        }
        Err(HeadError::TooSlow) => Reply::status(408, "request head too slow"),
        Err(HeadError::Bad) => Reply::status(400, "bad request"),
    };
    let _ = reply.send(&mut conn, Instant::now() + REPLY_TIME);
}

/// Why no request head was read.
enum HeadError {
    /// Not all of it within [`HEAD_TIME`].
    TooSlow,
    /// Too big, not text, or the connection ended or failed.
    Bad,
}

/// The request head (up to the blank line), all of it before `deadline`.
fn read_head(conn: &mut TcpStream, deadline: Instant) -> std::result::Result<String, HeadError> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        if buf.len() > MAX_HEAD {
            return Err(HeadError::Bad);
        }
        let left = deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or(HeadError::TooSlow)?;
        conn.set_read_timeout(Some(left))
            .map_err(|_| HeadError::Bad)?;
        let n = match conn.read(&mut chunk) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(HeadError::TooSlow);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return Err(HeadError::Bad),
        };
        if n == 0 {
            return Err(HeadError::Bad);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8(buf).map_err(|_| HeadError::Bad)
}

struct Reply {
    status: u16,
    content_type: &'static str,
    csp: String,
    body: Vec<u8>,
}

impl Reply {
    fn status(status: u16, text: &str) -> Reply {
        Reply {
            status,
            content_type: "text/plain; charset=utf-8",
            csp: "default-src 'none'".into(),
            body: format!("{text}\n").into_bytes(),
        }
    }

    fn json(status: u16, v: &serde_json::Value) -> Reply {
        Reply {
            status,
            content_type: "application/json",
            csp: "default-src 'none'".into(),
            body: serde_json::to_vec(v).expect("json"),
        }
    }

    /// Write the reply, all of it before `deadline` (a client that reads slowly holds only
    /// its own connection, and not for longer).
    fn send(&self, conn: &mut TcpStream, deadline: Instant) -> std::io::Result<()> {
        let reason = match self.status {
            200 => "OK",
            400 => "Bad Request",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Method Not Allowed",
            408 => "Request Timeout",
            503 => "Service Unavailable",
            _ => "Internal Server Error",
        };
        let head = format!(
            "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\nContent-Security-Policy: {}\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n",
            self.status,
            self.content_type,
            self.body.len(),
            self.csp
        );
        write_before(conn, head.as_bytes(), deadline)?;
        write_before(conn, &self.body, deadline)
    }
}

/// Write all of `bytes` before `deadline`.
fn write_before(conn: &mut TcpStream, mut bytes: &[u8], deadline: Instant) -> std::io::Result<()> {
    while !bytes.is_empty() {
        let left = deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or(std::io::ErrorKind::TimedOut)?;
        conn.set_write_timeout(Some(left))?;
        match conn.write(bytes) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding() {
        assert_eq!(percent_decode("a%20b%2Fc").as_deref(), Some("a b/c"));
        assert_eq!(percent_decode("%e2%86%92").as_deref(), Some("→"));
        assert_eq!(percent_decode("%zz"), None);
        assert_eq!(percent_decode("%4"), None);
        assert_eq!(percent_decode("%ff"), None);
    }
}
