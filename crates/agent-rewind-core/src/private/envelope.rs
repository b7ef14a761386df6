//! The envelope of every private file with data (docs/FORMAT.md, "Local state outside
//! refs"): a header line naming the format and its version, the body, and a checksum.
//!
//! ```text
//! agent-rewind/<name> v<N>\n      the header
//! <body>                          the format's own bytes (text or binary)
//! crc32 <8 hex digits>\n          CRC-32 of the header and the body
//! ```
//!
//! Files appended to by concurrent processes (a log: `touched/<run>`, `post-commit.report`)
//! carry the same header, and then one record per line, each with its own checksum:
//! `<text>\t<8 hex digits>\n`.
//!
//! Owns the header, the checksum and what a reader makes of a file that is not current:
//! missing, of an older version (a file from before the envelope is version 0, its body the
//! whole file), of a newer one, or damaged. A cache takes anything but a current file as
//! missing (it is rebuilt); a state file reads version 0 as its body and refuses a damaged
//! or newer file with an error naming it. It never decides what a body means: the body's
//! format stays with the module that owns its semantics, and every [`Format`] is listed here.

use super::digest::{Crc32, crc32};
use crate::error::{Error, IoResultExt, Result};
use std::io::Write;
use std::path::Path;

/// A private file's format: its name in the header, its version, and what it is.
#[derive(Debug, Clone, Copy)]
pub struct Format {
    pub name: &'static str,
    pub version: u32,
    /// `None` for a cache (rebuilt when not current); for state, what the file holds, said
    /// in the error that refuses a damaged one.
    pub holds: Option<&'static str>,
}

impl Format {
    const fn cache(name: &'static str, version: u32) -> Format {
        Format {
            name,
            version,
            holds: None,
        }
    }
    const fn state(name: &'static str, version: u32, holds: &'static str) -> Format {
        Format {
            name,
            version,
            holds: Some(holds),
        }
    }
}

/// `<git dir>/agent-rewind/active-run`.
pub const ACTIVE_RUN: Format = Format::state(
    "active-run",
    1,
    "the worktree's active run (removed, no run is active until one is started or switched to)",
);
/// `<git dir>/agent-rewind/touched/<run>` (a log).
pub const TOUCHED: Format = Format::state(
    "touched",
    1,
    "the paths an agent edited since its last turn (removed, the next turn lists none)",
);
/// `<git dir>/agent-rewind/post-commit.report` (a log).
pub const POST_COMMIT_REPORT: Format = Format::state(
    "post-commit-report",
    1,
    "what the last background post-commit checkpoint could not record",
);
/// `<git dir>/agent-rewind/post-commit.pending`.
pub const POST_COMMIT_PENDING: Format = Format::state(
    "post-commit-pending",
    1,
    "the commit a background post-commit checkpoint was recording",
);
/// `<common dir>/agent-rewind/deleted-runs`.
pub const DELETED_RUNS: Format = Format::state(
    "deleted-runs",
    1,
    "the runs deleted here (removed, fetching all runs may import them again)",
);
/// `<common dir>/agent-rewind/trusted-workflows`.
pub const TRUSTED_WORKFLOWS: Format = Format::state(
    "trusted-workflows",
    1,
    "the stored workflows trusted here (removed, they need `git agent-rewind trust <run>` again)",
);
/// The content of `<common dir>/agent-rewind/runners/<run>.lock`.
pub const RUNNER_LOCK: Format = Format::state(
    "runner-lock",
    1,
    "the runner holding the lock (removed, the lock is free when no runner holds its flock)",
);
/// `<common dir>/agent-rewind/retention.state`.
pub const RETENTION_STATE: Format = Format::state(
    "retention-state",
    1,
    "when the retention policy was last applied (removed, it is applied a day later)",
);
/// `<common dir>/agent-rewind/retention.report` (a log).
pub const RETENTION_REPORT: Format = Format::state(
    "retention-report",
    1,
    "the runs the retention policy deleted, not yet told (removed, they are not told)",
);
/// `<git dir>/agent-rewind/cache/dirwalk`.
pub const DIRWALK_CACHE: Format = Format::cache("dirwalk", 4);
/// `<git dir>/agent-rewind/cache/fsmonitor`.
pub const FSMONITOR_TOKEN: Format = Format::cache("fsmonitor", 5);
/// `<git dir>/agent-rewind/cache/monitored`.
pub const MONITORED_SNAPSHOT: Format = Format::cache("monitored", 2);
/// `<git dir>/agent-rewind/cache/watchman-sock`.
pub const WATCHMAN_SOCK: Format = Format::cache("watchman-sock", 2);
/// `<common dir>/agent-rewind/cache/runs.lines`.
pub const RUNS_CACHE: Format = Format::cache("runs-cache", 7);

/// Every format, for the documentation test.
pub const ALL: &[Format] = &[
    ACTIVE_RUN,
    TOUCHED,
    POST_COMMIT_REPORT,
    RETENTION_STATE,
    RETENTION_REPORT,
    POST_COMMIT_PENDING,
    DELETED_RUNS,
    TRUSTED_WORKFLOWS,
    RUNNER_LOCK,
    DIRWALK_CACHE,
    FSMONITOR_TOKEN,
    MONITORED_SNAPSHOT,
    WATCHMAN_SOCK,
    RUNS_CACHE,
];

/// `crc32 ` and 8 hex digits and a line break.
pub const TRAILER_LEN: usize = 15;
const PREFIX: &str = "agent-rewind/";

/// What a private file turned out to be.
#[derive(Debug, PartialEq, Eq)]
pub enum Read<'a> {
    Missing,
    /// A file of the current version: its body.
    Current(&'a [u8]),
    /// A file of an older version (0: from before the envelope; the body is the whole file).
    Older {
        version: u32,
        body: &'a [u8],
    },
    /// A file a newer version of this program wrote.
    Newer(u32),
    /// Not a file that can be trusted, and why.
    Damaged(String),
}

impl Format {
    /// The header line.
    pub fn header(&self) -> String {
        format!("{PREFIX}{} v{}\n", self.name, self.version)
    }

    /// The whole file holding `body`.
    pub fn encode(&self, body: &[u8]) -> Vec<u8> {
        let mut out = self.header().into_bytes();
        out.reserve(body.len() + TRAILER_LEN);
        out.extend_from_slice(body);
        let crc = crc32(&out);
        out.extend_from_slice(trailer(crc).as_bytes());
        out
    }

    /// What `data`, a file's bytes, is.
    pub fn decode<'a>(&self, data: &'a [u8]) -> Read<'a> {
        let own = format!("{PREFIX}{} v", self.name);
        let Some((signed, crc)) = split_trailer(data) else {
            return if data.starts_with(own.as_bytes()) {
                Read::Damaged("it has no checksum at its end (cut short or edited)".into())
            } else {
                Read::Older {
                    version: 0,
                    body: data,
                }
            };
        };
        if crc32(signed) != crc {
            return Read::Damaged("its checksum does not match its content".into());
        }
        let Some(nl) = signed.iter().position(|b| *b == b'\n') else {
            return Read::Damaged("it has no header line".into());
        };
        let version = signed[..nl]
            .strip_prefix(own.as_bytes())
            .and_then(|v| std::str::from_utf8(v).ok())
            .and_then(|v| v.parse::<u32>().ok());
        let body = &signed[nl + 1..];
        match version {
            None => Read::Damaged(format!(
                "its header {:?} is not that of {}",
                String::from_utf8_lossy(&signed[..nl]),
                self.name
            )),
            Some(v) if v == self.version => Read::Current(body),
            Some(v) if v < self.version => Read::Older { version: v, body },
            Some(v) => Read::Newer(v),
        }
    }

    /// The error refusing the file at `path` that reads as `what` (damaged or newer).
    pub fn refuse(&self, path: &Path, what: &Read<'_>) -> Error {
        let why = match what {
            Read::Damaged(why) => why.clone(),
            Read::Newer(v) => format!("a newer version of git-agent-rewind wrote it (v{v})"),
            _ => "it cannot be read".into(),
        };
        Error::corrupt(format!(
            "{} is damaged: {why}; it was not used",
            path.display()
        ))
        .with_hint(format!(
            "it holds {}; remove it to go on without it",
            self.holds.unwrap_or("a cache")
        ))
    }

    /// The body of the state file at `path` (a file of version 0 as it is: the body kept its
    /// format, and the next write puts it in the envelope), `None` when there is none. A
    /// damaged file or one of a newer version is an error naming it.
    pub fn read_state(&self, path: &Path) -> Result<Option<Vec<u8>>> {
        let Some(data) = super::read_if_exists(path)? else {
            return Ok(None);
        };
        self.state_body(path, &data).map(|b| Some(b.to_vec()))
    }

    /// [`Format::read_state`] of bytes already read from `path`.
    pub fn state_body<'a>(&self, path: &Path, data: &'a [u8]) -> Result<&'a [u8]> {
        match self.decode(data) {
            Read::Current(body) | Read::Older { version: 0, body } => Ok(body),
            other => Err(self.refuse(path, &other)),
        }
    }

    /// The body of the cache at `path` when it is current; anything else (missing, older,
    /// newer, damaged) is no cache, to be rebuilt.
    pub fn read_cache(&self, path: &Path) -> Option<Vec<u8>> {
        let data = std::fs::read(path).ok()?;
        self.cache_body(&data).map(<[u8]>::to_vec)
    }

    /// [`Format::read_cache`] of bytes already read.
    pub fn cache_body<'a>(&self, data: &'a [u8]) -> Option<&'a [u8]> {
        match self.decode(data) {
            Read::Current(body) => Some(body),
            other => {
                crate::trace::mark(&format!("private file {}: {other:?}: rebuilt", self.name));
                None
            }
        }
    }

    /// Replace the file at `path` with one holding `body`, atomically.
    pub fn write(&self, path: &Path, body: &[u8]) -> Result<()> {
        super::write_atomic(path, &self.encode(body), None)
    }

    /// Replace the file at `path` atomically with one whose body `write` writes (streamed,
    /// see [`super::write_atomic_with`]); the body starts at offset `header().len()`.
    pub fn write_with(
        &self,
        path: &Path,
        write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
    ) -> Result<std::fs::File> {
        super::write_atomic_with(path, |w| {
            let mut signed = Signed {
                inner: w,
                crc: Crc32::new(),
            };
            signed.write_all(self.header().as_bytes())?;
            write(&mut signed)?;
            let crc = signed.crc.finalize();
            w.write_all(trailer(crc).as_bytes())
        })
    }

    /// Append `records` (each without a line break) to the log at `path`, creating it with
    /// its header when missing. Each record is one line with its checksum, written with one
    /// `O_APPEND` write, so concurrent writers never interleave inside a line.
    pub fn append(&self, path: &Path, records: &[String]) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let mut buf = String::new();
        for r in records {
            let r = r.replace('\n', " ");
            buf.push_str(&format!("{r}\t{:08x}\n", crc32(r.as_bytes())));
        }
        let open = || std::fs::OpenOptions::new().append(true).open(path);
        let mut f = match open() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.create_log(path)?;
                open()
            }
            other => other,
        }
        .at(path)?;
        f.write_all(buf.as_bytes()).at(path)
    }

    /// Make the log at `path` with its header, unless another process just did: the header
    /// goes into a temp file that is then hard-linked to `path`, so it is always first.
    fn create_log(&self, path: &Path) -> Result<()> {
        let dir = super::create_parent(path)?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".agent-rewind-")
            .suffix(".tmp")
            .tempfile_in(dir)
            .at(dir)?;
        tmp.write_all(self.header().as_bytes()).at(tmp.path())?;
        match std::fs::hard_link(tmp.path(), path) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(Error::io(path, e)),
            _ => Ok(()),
        }
    }

    /// The records of the whole lines of `data` (a log's bytes read from `path`, or a part
    /// of them that starts at a line), in order; a last line without its line break is
    /// still being written and left out. A line of a log from before the envelope (version
    /// 0: no header, one path per line, to which a new version may have appended records)
    /// is a record as it is. A line shaped as a record whose checksum does not match, a
    /// header that differs from this one (a byte flipped), or a header of another version is
    /// an error naming the file.
    pub fn records(&self, path: &Path, data: &[u8]) -> Result<Vec<String>> {
        let whole = data.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let header = self.header();
        let damaged = |why: String| self.refuse(path, &Read::Damaged(why));
        let (strict, rest) = match data[..whole].strip_prefix(header.as_bytes()) {
            Some(rest) => (true, rest),
            None => {
                let first = data.split(|b| *b == b'\n').next().unwrap_or_default();
                if let Some(v) = self.decode_header_version(first) {
                    let what = match v > self.version {
                        true => Read::Newer(v),
                        false => Read::Damaged(format!("it is of version {v}")),
                    };
                    return Err(self.refuse(path, &what));
                }
                let expected = &header.as_bytes()[..header.len() - 1];
                let differs = first.len() == expected.len()
                    && first.iter().zip(expected).filter(|(a, b)| a != b).count() == 1;
                if differs {
                    return Err(damaged("its header line is damaged".into()));
                }
                (false, &data[..whole])
            }
        };
        let mut out = Vec::new();
        for line in rest.split(|b| *b == b'\n') {
            if line.is_empty() {
                continue;
            }
            let text = match record(line) {
                Some(text) => text,
                None if strict || record_shaped(line) => {
                    return Err(damaged(format!(
                        "the line {:?} does not match its checksum",
                        String::from_utf8_lossy(line)
                    )));
                }
                None => line,
            };
            out.push(String::from_utf8_lossy(text).into_owned());
        }
        Ok(out)
    }

    fn decode_header_version(&self, line: &[u8]) -> Option<u32> {
        let own = format!("{PREFIX}{} v", self.name);
        std::str::from_utf8(line.strip_prefix(own.as_bytes())?)
            .ok()?
            .parse()
            .ok()
    }
}

/// The text of a log line `<text>\t<crc>` whose checksum matches.
fn record(line: &[u8]) -> Option<&[u8]> {
    let tab = line.iter().rposition(|b| *b == b'\t')?;
    let (text, crc) = (&line[..tab], &line[tab + 1..]);
    (crc.len() == 8 && parse_hex(crc)? == crc32(text)).then_some(text)
}

/// Whether `line` ends as a record does (a tab and 8 lowercase hex digits).
fn record_shaped(line: &[u8]) -> bool {
    line.len() > 9 && line[line.len() - 9] == b'\t' && parse_hex(&line[line.len() - 8..]).is_some()
}

fn trailer(crc: u32) -> String {
    format!("crc32 {crc:08x}\n")
}

fn parse_hex(hex: &[u8]) -> Option<u32> {
    let s = std::str::from_utf8(hex).ok()?;
    (s.len() == 8
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    .then(|| u32::from_str_radix(s, 16).ok())?
}

/// The signed part of `data` and the checksum its trailer gives, when it ends in one.
fn split_trailer(data: &[u8]) -> Option<(&[u8], u32)> {
    let at = data.len().checked_sub(TRAILER_LEN)?;
    let t = &data[at..];
    if !t.starts_with(b"crc32 ") || t[TRAILER_LEN - 1] != b'\n' {
        return None;
    }
    Some((&data[..at], parse_hex(&t[6..14])?))
}

/// A writer that keeps the CRC-32 of what goes through it.
struct Signed<'w, W: Write> {
    inner: &'w mut W,
    crc: Crc32,
}

impl<W: Write> Write for Signed<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_older_damaged() {
        let f = DELETED_RUNS;
        let file = f.encode(b"r1 abc\n");
        assert_eq!(
            String::from_utf8_lossy(&file),
            format!(
                "agent-rewind/deleted-runs v1\nr1 abc\ncrc32 {:08x}\n",
                crc32(b"agent-rewind/deleted-runs v1\nr1 abc\n")
            )
        );
        assert_eq!(f.decode(&file), Read::Current(b"r1 abc\n"));
        assert_eq!(
            f.decode(b"r1 abc\n"),
            Read::Older {
                version: 0,
                body: b"r1 abc\n"
            }
        );
        for i in 0..file.len() {
            let mut bad = file.clone();
            bad[i] ^= 0x01;
            assert!(
                matches!(f.decode(&bad), Read::Damaged(_)),
                "flipped byte {i}: {:?}",
                f.decode(&bad)
            );
        }
        assert!(matches!(
            f.decode(&file[..file.len() - 1]),
            Read::Damaged(_)
        ));
        let newer = Format { version: 2, ..f }.encode(b"x");
        assert_eq!(f.decode(&newer), Read::Newer(2));
        assert!(matches!(ACTIVE_RUN.decode(&file), Read::Damaged(_)));
    }

    /// docs/FORMAT.md lists every format with its version.
    #[test]
    fn every_format_is_documented() {
        let doc = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/FORMAT.md"),
        )
        .unwrap();
        for f in ALL {
            let row = format!("| `{}` v{}", f.name, f.version);
            assert!(doc.contains(&row), "docs/FORMAT.md lacks {row}");
        }
    }

    #[test]
    fn logs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("touched").join("r1");
        TOUCHED
            .append(&path, &["a.txt".into(), "b\tc".into()])
            .unwrap();
        TOUCHED.append(&path, &["d".into()]).unwrap();
        let mut data = std::fs::read(&path).unwrap();
        assert!(data.starts_with(b"agent-rewind/touched v1\n"));
        assert_eq!(
            TOUCHED.records(&path, &data).unwrap(),
            ["a.txt", "b\tc", "d"]
        );
        // A line still being written is left out.
        data.extend_from_slice(b"e\t0000");
        assert_eq!(TOUCHED.records(&path, &data).unwrap().len(), 3);
        assert_eq!(TOUCHED.records(&path, b"x\ny\n").unwrap(), ["x", "y"]);
        // A list from before the envelope, appended to by this version.
        let mut mixed = b"x\n".to_vec();
        mixed.extend_from_slice(&data[24..]);
        assert_eq!(
            TOUCHED.records(&path, &mixed).unwrap(),
            ["x", "a.txt", "b\tc", "d"]
        );
        for i in 0..24 {
            let mut bad = data.clone();
            bad[i] ^= 1;
            assert!(TOUCHED.records(&path, &bad).is_err(), "header byte {i}");
        }
        let pos = data.iter().position(|b| *b == b'a').unwrap();
        data[pos + 24] ^= 1;
        let err = TOUCHED.records(&path, &data).unwrap_err();
        assert!(err.message.contains(&path.display().to_string()), "{err:?}");
    }
}
