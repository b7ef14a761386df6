//! Reading a JSON Lines transcript from its end, one line at a time, newest first: a turn's
//! model calls are the last lines of the file, so what a turn hook reads grows with the
//! turn, never with the session.
//!
//! Reads only; stops at [`MAX_BACKWARD_BYTES`] so that a transcript without the line a
//! reader looks for costs a bounded read.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The most bytes read back from the end of one transcript.
pub const MAX_BACKWARD_BYTES: u64 = 64 << 20;
/// The first read's size; each read that finds no line end doubles it.
const FIRST_READ: usize = 64 << 10;

/// The lines of a file from the last to the first.
pub struct Backward {
    file: File,
    /// Where the bytes not yet read end (they start at 0).
    pos: u64,
    /// Bytes read and not yet handed out: the file's bytes from `pos` on.
    pending: Vec<u8>,
    next_read: usize,
    read: u64,
    limit: u64,
}

impl Backward {
    /// The file at `path`; `None` when it cannot be read.
    pub fn open(path: &Path) -> Option<Backward> {
        Self::open_with_limit(path, MAX_BACKWARD_BYTES)
    }

    pub(super) fn open_with_limit(path: &Path, limit: u64) -> Option<Backward> {
        let file = File::open(path).ok()?;
        let len = file.metadata().ok()?.len();
        Some(Backward {
            file,
            pos: len,
            pending: vec![],
            next_read: FIRST_READ,
            read: 0,
            limit,
        })
    }

    /// Whether the whole file was read (no line was cut off by the limit).
    pub fn reached_start(&self) -> bool {
        self.pos == 0
    }

    /// The previous non-empty line, without its line end; `None` at the file's start, on a
    /// read error, or once [`MAX_BACKWARD_BYTES`] were read.
    pub fn next_line(&mut self) -> Option<Vec<u8>> {
        loop {
            while self.pending.last() == Some(&b'\n') || self.pending.last() == Some(&b'\r') {
                self.pending.pop();
            }
            if let Some(at) = self.pending.iter().rposition(|b| *b == b'\n') {
                let line = self.pending.split_off(at + 1);
                if !line.is_empty() {
                    return Some(line);
                }
                continue;
            }
            if self.pos == 0 {
                return (!self.pending.is_empty()).then(|| std::mem::take(&mut self.pending));
            }
            if self.read >= self.limit {
                return None;
            }
            let n = (self.next_read as u64).min(self.pos);
            let start = self.pos - n;
            let mut chunk = vec![0; n as usize];
            self.file.seek(SeekFrom::Start(start)).ok()?;
            self.file.read_exact(&mut chunk).ok()?;
            chunk.extend_from_slice(&self.pending);
            self.pending = chunk;
            self.pos = start;
            self.read += n;
            self.next_read = self.next_read.saturating_mul(2).min(16 << 20);
        }
    }
}

/// Whether `line` holds `needle`: the cheap test before a line is parsed.
pub fn holds(line: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(line, needle).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_come_newest_first_across_reads_and_stop_at_the_limit() {
        let dir = std::env::temp_dir().join(format!("agent-rewind-back-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.jsonl");
        let long = "x".repeat(200_000);
        std::fs::write(&p, format!("first\n\n{long}\nthird\r\nfourth\n\n")).unwrap();
        let mut b = Backward::open(&p).unwrap();
        let mut lines = vec![];
        while let Some(l) = b.next_line() {
            lines.push(String::from_utf8(l).unwrap());
        }
        assert_eq!(lines, ["fourth", "third", long.as_str(), "first"]);
        assert!(b.reached_start());
        let mut cut = Backward::open_with_limit(&p, 10).unwrap();
        assert_eq!(cut.next_line().as_deref(), Some(&b"fourth"[..]));
        assert_eq!(cut.next_line().as_deref(), Some(&b"third"[..]));
        assert_eq!(cut.next_line(), None, "the limit stops a long line");
        assert!(Backward::open(&dir.join("missing")).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
