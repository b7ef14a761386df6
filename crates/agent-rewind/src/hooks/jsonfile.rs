//! The reading and writing of an agent's JSON configuration file for [`super::settings`]:
//! parsed leniently (a blank file is an empty object), refused with a hint when it is not
//! JSON, written as two-space-indented JSON keeping an existing file's mode. It never
//! decides what goes into a file.

use super::Agent;
use super::install::write_atomic;
use agent_rewind_core::error::IoResultExt;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::platform::mode::permission_bits;
use serde_json::{Map, Value};
use std::path::Path;

/// A configuration file's bytes as [`read`] parses them (blank: an empty object).
pub(super) fn parsed(bytes: &[u8]) -> Option<Value> {
    match std::str::from_utf8(bytes).ok()?.trim() {
        "" => Some(Value::Object(Map::new())),
        text => serde_json::from_str(text).ok(),
    }
}

/// Read and parse a configuration file; `None` when it does not exist.
pub(super) fn read(path: &Path, agent: Agent) -> Result<Option<Value>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Error::other(format!(
                "could not read {}: {e}",
                path.display()
            )));
        }
    };
    if text.trim().is_empty() {
        return Ok(Some(Value::Object(Map::new())));
    }
    serde_json::from_str(&text).map(Some).map_err(|e| {
        Error::refused(format!(
            "{} is not valid JSON ({e}); left it untouched",
            path.display()
        ))
        .with_hint(format!(
            "fix or move the file, then run `git agent-rewind hooks install --agent {}` again",
            agent.name()
        ))
    })
}

/// Remove the (now empty) folders holding `path`, up to `levels` of them; a folder that
/// still holds anything stays.
pub fn remove_empty_dirs(path: &Path, levels: usize) {
    let mut dir = path.parent();
    for _ in 0..levels {
        match dir {
            Some(d) if std::fs::remove_dir(d).is_ok() => dir = d.parent(),
            _ => break,
        }
    }
}

pub(super) fn write(path: &Path, settings: &Value, created: bool) -> Result<()> {
    let mode = if created {
        0o644
    } else {
        permission_bits(&std::fs::metadata(path).at(path)?)
    };
    let mut text = serde_json::to_string_pretty(settings).expect("serializable");
    text.push('\n');
    write_atomic(path, &text, mode)
}
