//! The MCP server's input: stdin read line by line (one JSON-RPC message a line), with a
//! line longer than [`MAX_MESSAGE_BYTES`] never held in memory and never silently dropped.
//! rmcp drops such a line without a word, so a client would wait for its answer forever;
//! here it is replaced, as it streams past, by a small request of our own
//! ([`TOO_LARGE_METHOD`], with the same `id`) that the server answers with a JSON-RPC error
//! naming the limit. The lines after it are served as usual.
//!
//! Owns the framing only: never parses a message that fits (rmcp does), never answers one
//! (the server does), and never writes anything.

use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

/// The most bytes one message may have, its newline included: rmcp's own limit, so that a
/// line this reader lets through is one rmcp reads.
pub const MAX_MESSAGE_BYTES: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// The method of the request that stands in for one that was too large.
pub const TOO_LARGE_METHOD: &str = "agent-rewind/message-too-large";

/// How many bytes are read from the input at a time.
const CHUNK: usize = 64 * 1024;

/// The most bytes of a too-large message's `id` that are kept (an id is a number or a
/// short string; a longer one is not answered).
const MAX_ID_BYTES: usize = 256;

/// Lines of `inner`, each passed on whole once its newline has been read; a line over the
/// limit is passed on as a [`TOO_LARGE_METHOD`] request (or dropped when it was no request).
pub struct BoundedLines<R> {
    inner: R,
    chunk: Box<[u8]>,
    state: Lines,
}

/// What has been read and not yet passed on.
#[derive(Default)]
struct Lines {
    /// The line being read, while it is within the limit.
    line: Vec<u8>,
    /// The line being read, once it went over the limit.
    over: Option<TooLarge>,
    /// Whole lines ready to be passed on, from `ready_at`.
    ready: Vec<u8>,
    ready_at: usize,
    eof: bool,
}

/// A line over the limit: how long it is so far, and what its top level said.
struct TooLarge {
    bytes: usize,
    scan: TopLevel,
}

impl<R> BoundedLines<R> {
    pub fn new(inner: R) -> Self {
        BoundedLines {
            inner,
            chunk: vec![0; CHUNK].into_boxed_slice(),
            state: Lines::default(),
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            if this.state.hand_out(buf) || this.state.eof {
                return Poll::Ready(Ok(()));
            }
            let mut read = ReadBuf::new(&mut this.chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {}
            }
            let filled = read.filled();
            if filled.is_empty() {
                this.state.end();
            } else {
                this.state.take(filled);
            }
        }
    }
}

impl Lines {
    /// Copy ready bytes into `buf`; whether there were any.
    fn hand_out(&mut self, buf: &mut ReadBuf<'_>) -> bool {
        let ready = &self.ready[self.ready_at..];
        if ready.is_empty() || buf.remaining() == 0 {
            return false;
        }
        let n = ready.len().min(buf.remaining());
        buf.put_slice(&ready[..n]);
        self.ready_at += n;
        if self.ready_at == self.ready.len() {
            self.ready.clear();
            self.ready_at = 0;
        }
        true
    }

    /// Bytes read from the input.
    fn take(&mut self, bytes: &[u8]) {
        for segment in bytes.split_inclusive(|b| *b == b'\n') {
            match &mut self.over {
                Some(over) => {
                    over.bytes += segment.len();
                    over.scan.feed(segment);
                }
                None if self.line.len() + segment.len() > MAX_MESSAGE_BYTES => {
                    let mut scan = TopLevel::default();
                    scan.feed(&self.line);
                    scan.feed(segment);
                    self.over = Some(TooLarge {
                        bytes: self.line.len() + segment.len(),
                        scan,
                    });
                    // What was held of it is let go at once.
                    self.line = Vec::new();
                }
                None => self.line.extend_from_slice(segment),
            }
            if segment.ends_with(b"\n") {
                match self.over.take() {
                    Some(over) => self.ready.extend(over.stand_in()),
                    None => self.ready.append(&mut self.line),
                }
            }
        }
    }

    /// The input ended: a last line without its newline is passed on as it is (rmcp reads
    /// no message from it), one over the limit is dropped.
    fn end(&mut self) {
        if self.over.take().is_none() {
            self.ready.append(&mut self.line);
        }
        self.eof = true;
    }
}

impl TooLarge {
    /// The line that stands in for this one: a [`TOO_LARGE_METHOD`] request with its id,
    /// or nothing when it was no request (a notification or a response gets no answer).
    fn stand_in(&self) -> Vec<u8> {
        let Some(id) = self.scan.request_id() else {
            return vec![];
        };
        let request = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": TOO_LARGE_METHOD,
            "params": {"bytes": self.bytes, "limit": MAX_MESSAGE_BYTES},
        });
        let mut line = request.to_string().into_bytes();
        line.push(b'\n');
        line
    }
}

/// The members of a JSON object's top level, read byte by byte without keeping the object:
/// the raw `id` value and whether a `method` was there.
#[derive(Default)]
struct TopLevel {
    started: bool,
    is_object: bool,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// The next string at the top level is a member's name.
    expect_key: bool,
    /// The member name being read (raw, quotes included), while short.
    key: Option<Vec<u8>>,
    /// The member whose value is being read is `id`.
    in_id: bool,
    /// The raw `id` value being read, while short.
    value: Option<Vec<u8>>,
    id: Option<Vec<u8>>,
    has_method: bool,
}

impl TopLevel {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    fn byte(&mut self, b: u8) {
        if !self.started {
            if b.is_ascii_whitespace() {
                return;
            }
            self.started = true;
            self.is_object = b == b'{';
        }
        if !self.is_object {
            return;
        }
        if self.in_string {
            self.keep(b);
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if let Some(key) = self.key.take() {
                    self.name_read(&key);
                }
            }
            return;
        }
        match b {
            b'"' if self.depth == 1 && self.expect_key => {
                self.in_string = true;
                self.expect_key = false;
                self.key = Some(vec![b]);
            }
            b'"' => {
                self.in_string = true;
                self.keep(b);
            }
            b'{' | b'[' => {
                self.keep(b);
                self.depth += 1;
                if self.depth == 1 {
                    self.expect_key = true;
                }
            }
            b'}' | b']' => {
                if self.depth == 1 {
                    self.value_read();
                } else {
                    self.keep(b);
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b',' if self.depth == 1 => {
                self.value_read();
                self.expect_key = true;
            }
            b':' if self.depth == 1 && self.in_id && self.value.is_none() => {
                self.value = Some(vec![]);
            }
            _ => self.keep(b),
        }
    }

    /// A byte of the member name or `id` value being read.
    fn keep(&mut self, b: u8) {
        if let Some(key) = &mut self.key {
            key.push(b);
            if key.len() > MAX_ID_BYTES {
                self.key = None;
            }
        } else if let Some(value) = &mut self.value {
            value.push(b);
            if value.len() > MAX_ID_BYTES {
                self.value = None;
                self.in_id = false;
            }
        }
    }

    /// A member's name was read (raw, with its quotes).
    fn name_read(&mut self, raw: &[u8]) {
        let name = serde_json::from_slice::<String>(raw).unwrap_or_default();
        self.in_id = name == "id";
        self.has_method |= name == "method";
    }

    /// A top-level member's value ended.
    fn value_read(&mut self) {
        if self.in_id
            && let Some(value) = self.value.take()
        {
            self.id = Some(value);
        }
        self.in_id = false;
        self.value = None;
    }

    /// The id of a request (a number or a string, next to a `method`), if this was one.
    fn request_id(&self) -> Option<serde_json::Value> {
        if !self.has_method {
            return None;
        }
        let id: serde_json::Value = serde_json::from_slice(self.id.as_deref()?).ok()?;
        (id.is_number() || id.is_string()).then_some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scanned(text: &str) -> Option<serde_json::Value> {
        let mut scan = TopLevel::default();
        scan.feed(text.as_bytes());
        scan.request_id()
    }

    #[test]
    fn the_top_level_id_of_a_request_is_found_wherever_it_is() {
        let id = |t| scanned(t);
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":7,"method":"x","params":{}}"#),
            Some(7.into())
        );
        assert_eq!(
            id(r#" { "method" : "x", "params": {"id": 1, "a": [",}", {"id": 2}]}, "id" : "r-1" }"#),
            Some("r-1".into())
        );
        assert_eq!(
            id(r#"{"params":{"s":"\"id\":3,"},"\u0069d":4,"method":"x"}"#),
            Some(4.into())
        );
        // No method: a response or garbage, not answered.
        assert_eq!(id(r#"{"id":5,"result":{}}"#), None);
        // A notification, a batch, an id that is no id.
        assert_eq!(id(r#"{"method":"x","params":{"id":6}}"#), None);
        assert_eq!(id(r#"[{"id":1,"method":"x"}]"#), None);
        assert_eq!(id(r#"{"id":{"a":1},"method":"x"}"#), None);
    }

    #[test]
    fn a_line_over_the_limit_becomes_a_small_request_with_its_id() {
        let mut lines = Lines::default();
        let big = format!(
            "{{\"method\":\"tools/call\",\"params\":{{\"pad\":\"{}\"}},\"id\":9}}\n",
            "x".repeat(MAX_MESSAGE_BYTES)
        );
        for piece in big.as_bytes().chunks(CHUNK) {
            lines.take(piece);
        }
        lines.take(b"{\"id\":10}\n");
        let ready = String::from_utf8(lines.ready.clone()).unwrap();
        let mut out = ready.lines();
        let stand_in: serde_json::Value = serde_json::from_str(out.next().unwrap()).unwrap();
        assert_eq!(stand_in["id"], 9);
        assert_eq!(stand_in["method"], TOO_LARGE_METHOD);
        assert_eq!(stand_in["params"]["bytes"], big.len());
        assert_eq!(out.next(), Some("{\"id\":10}"));
        assert!(lines.line.is_empty() && lines.over.is_none());
    }
}
