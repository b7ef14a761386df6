//! `view --serve`: the view page over HTTP on 127.0.0.1, and — when a person clicks "who
//! wrote each line" on a checkpoint's file — that file's attribution as the checkpoint
//! recorded it (`ops::blame::blame_at_checkpoint`), as JSON.
//!
//! Safety rules: it listens on 127.0.0.1 only; every path is under a random 128-bit token
//! (`http://127.0.0.1:<port>/<token>/`), anything else is 404; the `Host` header must name
//! 127.0.0.1 or localhost and the port (no DNS rebinding); GET only; a request head is at
//! most 16 KiB and must arrive within 5 seconds; no CORS headers, so no other origin reads an
//! answer; the page's Content-Security-Policy admits requests to this server only. It only
//! reads: nothing it serves writes a ref, an object or a file. It never renders HTML itself
//! (the page is `agent_rewind::view`'s; attribution goes out as JSON the page shows with
//! textContent).

use agent_rewind::error::{Error, ErrorKind, Result};
use agent_rewind::ops;
use agent_rewind::store::Store;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::time::Duration;

/// Biggest request head read.
const MAX_HEAD: usize = 16 << 10;

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
        agent_rewind::store::ids::fill_random(&mut bytes);
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

    /// Answer requests one at a time, until the process is stopped.
    pub fn serve(&self, store: &Store, page: &str) -> Result<()> {
        for conn in self.listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = conn.set_write_timeout(Some(Duration::from_secs(5)));
            let reply = match read_head(&mut conn) {
                Some(head) => self.answer(store, page, &head),
                None => Reply::status(400, "bad request"),
            };
            let _ = reply.send(&mut conn);
        }
        Ok(())
    }

    fn answer(&self, store: &Store, page: &str, head: &str) -> Reply {
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
            "" => Reply {
                status: 200,
                content_type: "text/html; charset=utf-8",
                csp: agent_rewind::view::served_content_security_policy(),
                body: page.as_bytes().to_vec(),
            },
            "blame" => blame(store, query),
            _ => Reply::status(404, "not found"),
        }
    }
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

/// The request head (up to the blank line), or `None` when it is too big, too slow or not
/// text.
fn read_head(conn: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        if buf.len() > MAX_HEAD {
            return None;
        }
        let n = conn.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8(buf).ok()
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

    fn send(&self, conn: &mut TcpStream) -> std::io::Result<()> {
        let reason = match self.status {
            200 => "OK",
            400 => "Bad Request",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Method Not Allowed",
            _ => "Internal Server Error",
        };
        let head = format!(
            "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\nContent-Security-Policy: {}\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n",
            self.status,
            self.content_type,
            self.body.len(),
            self.csp
        );
        conn.write_all(head.as_bytes())?;
        conn.write_all(&self.body)?;
        conn.flush()
    }
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
