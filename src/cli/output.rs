//! What a command produced: one JSON document and the human rendering of the same thing;
//! and the one way the CLI writes a line to stderr ([`stderr_line`]). It never panics on a
//! stream nobody reads any more (`print!`/`eprintln!` would).

/// What a command produced: the JSON document and the human rendering of the same thing.
pub struct Output {
    pub json: serde_json::Value,
    pub human: String,
    /// Exit status after printing: 0, or 1 when the command reported a partial failure
    /// (e.g. a push with rejected runs) in its output.
    pub exit_code: i32,
    /// Writes the JSON document itself (pretty-printed, as `json` would be), for documents
    /// too large to build as a `serde_json::Value` first (`list` of 100,000 runs). When set,
    /// `json` is unused.
    pub json_writer: Option<JsonWriter>,
    /// The human output as exact bytes, written as they are (no escaping, no newline
    /// added): git's own text piped on (`diff` into `git apply`). When set, `human` is
    /// unused.
    pub raw_human: Option<Vec<u8>>,
}

/// See [`Output::json_writer`].
pub type JsonWriter = Box<dyn FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>>;

impl Output {
    pub fn new(json: serde_json::Value, human: String) -> Self {
        Output {
            json,
            human,
            exit_code: 0,
            json_writer: None,
            raw_human: None,
        }
    }

    /// An output whose human form is `bytes`, printed exactly.
    pub fn raw(json: serde_json::Value, bytes: Vec<u8>) -> Self {
        Output {
            raw_human: Some(bytes),
            ..Output::new(json, String::new())
        }
    }

    /// An output whose JSON document is written by `writer` straight to stdout.
    pub fn streamed(writer: JsonWriter, human: String) -> Self {
        Output {
            json_writer: Some(writer),
            ..Output::new(serde_json::Value::Null, human)
        }
    }
}

/// Any serializable outcome as its JSON document.
pub fn json<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).expect("json")
}

/// Write `text` and a newline to stderr. A stderr nobody reads any more (a closed pipe:
/// `2>&1 | head` that has exited) is not an error worth a panic: the line is dropped and
/// the command goes on to its own exit code, as git does.
pub fn stderr_line(text: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.write_all(b"\n");
}

/// [`stderr_line`] without the newline.
pub fn stderr_text(text: &str) {
    use std::io::Write;
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}
