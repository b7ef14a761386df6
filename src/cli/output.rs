//! What a command produced: one JSON document and the human rendering of the same thing.

/// What a command produced: the JSON document and the human rendering of the same thing.
pub struct Output {
    pub json: serde_json::Value,
    pub human: String,
    /// Exit status after printing: 0, or 1 when the command reported a partial failure
    /// (e.g. a push with rejected runs) in its output.
    pub exit_code: i32,
}

impl Output {
    pub fn new(json: serde_json::Value, human: String) -> Self {
        Output {
            json,
            human,
            exit_code: 0,
        }
    }
}

/// Any serializable outcome as its JSON document.
pub fn json<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).expect("json")
}
