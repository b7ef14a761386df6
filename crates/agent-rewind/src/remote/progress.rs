//! Progress of a long import on stderr, as git reports its own: only when stderr is a
//! terminal, only once the work has taken more than a second, one line rewritten in place
//! (`\r`) at most ten times a second, and a final `done.` line.
//!
//! Must never print when stderr is not a terminal (scripts, `--json`, tests), and never
//! print on stdout.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

const DELAY: Duration = Duration::from_secs(1);
const EVERY: Duration = Duration::from_millis(100);

pub struct Progress {
    label: String,
    total: usize,
    start: Instant,
    last: Option<Instant>,
    enabled: bool,
}

impl Progress {
    /// Progress of `total` items, shown only if stderr is a terminal.
    pub fn new(label: impl Into<String>, total: usize) -> Self {
        Progress {
            label: label.into(),
            total,
            start: Instant::now(),
            last: None,
            enabled: std::io::stderr().is_terminal(),
        }
    }

    /// `done` items are finished.
    pub fn tick(&mut self, done: usize) {
        if !self.enabled || self.start.elapsed() < DELAY {
            return;
        }
        let now = Instant::now();
        if self.last.is_some_and(|l| now - l < EVERY) {
            return;
        }
        self.last = Some(now);
        self.show(done, "");
    }

    /// The final line, if any line was shown.
    pub fn finish(&mut self) {
        if self.last.is_some() {
            self.show(self.total, ", done.\n");
            self.last = None;
        }
    }

    fn show(&self, done: usize, end: &str) {
        let pct = (done * 100).checked_div(self.total).unwrap_or(100);
        let _ = write!(
            std::io::stderr(),
            "\r{}: {pct:3}% ({done}/{}){end}",
            self.label,
            self.total
        );
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
