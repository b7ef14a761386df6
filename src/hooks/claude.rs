//! `hook claude`: Claude Code's hook payload (JSON on stdin: `session_id`, `transcript_path`,
//! `cwd`, `hook_event_name`, …). `SessionStart` starts or joins the worktree's active run;
//! `Stop` / `SubagentStop` record a `turn` checkpoint with the session id and a pointer to the
//! transcript (a `file://` URI and its git blob digest — never the transcript itself).
//!
//! An agent must never be blocked by us: every outcome, including a malformed or unknown
//! payload, is an [`HookOutcome`] (the CLI exits 0), and nothing is written for a payload we
//! cannot use. The payload's `cwd` decides the repository; outside one, nothing happens.

use super::HookOutcome;
use super::handlers::hook_run;
use crate::error::Result;
use crate::ids::{RunId, StepName};
use crate::journal::set_active_run;
use crate::journal::{Record, append};
use crate::model::Event;
use crate::ops::checkpoint::{CheckpointOptions, checkpoint};
use crate::store::Store;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const HOOK: &str = "claude";
/// Step of a turn checkpoint when no step was begun and `AGENT_STEP` is unset.
pub const DEFAULT_TURN_STEP: &str = "turn";
/// Transcripts larger than this get a pointer without a digest.
const MAX_DIGEST_BYTES: u64 = 512 * 1024 * 1024;
/// Longest session id we accept.
const MAX_SESSION_ID: usize = 200;

/// What we use from a Claude Code hook payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload {
    pub event: String,
    pub session_id: String,
    pub transcript_path: Option<PathBuf>,
    pub cwd: Option<PathBuf>,
    /// `SessionStart`: startup, resume, clear, compact.
    pub source: Option<String>,
    /// `SubagentStop`: the subagent's id, type and own transcript.
    pub agent_id: Option<String>,
    pub agent_type: Option<String>,
    pub agent_transcript_path: Option<PathBuf>,
}

/// Parse a payload; `Err` says what is wrong with it.
pub fn parse(input: &[u8]) -> std::result::Result<Payload, String> {
    let v: Value = serde_json::from_slice(input).map_err(|e| format!("not JSON ({e})"))?;
    let o = v.as_object().ok_or("not a JSON object")?;
    let text = |k: &str| -> std::result::Result<Option<String>, String> {
        match o.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("{k:?} is not a string")),
        }
    };
    let short = |k: &str| -> std::result::Result<Option<String>, String> {
        match text(k)? {
            Some(s)
                if s.is_empty() || s.len() > MAX_SESSION_ID || s.chars().any(char::is_control) =>
            {
                Err(format!("{k:?} is not a usable identifier"))
            }
            other => Ok(other),
        }
    };
    let path = |k: &str| -> std::result::Result<Option<PathBuf>, String> {
        match text(k)? {
            None => Ok(None),
            Some(s) if s.is_empty() => Ok(None),
            Some(s) if Path::new(&s).is_absolute() && !s.contains('\0') => Ok(Some(s.into())),
            Some(s) => Err(format!("{k:?} is not an absolute path: {s:?}")),
        }
    };
    Ok(Payload {
        event: short("hook_event_name")?.ok_or("no \"hook_event_name\"")?,
        session_id: short("session_id")?.ok_or("no \"session_id\"")?,
        transcript_path: path("transcript_path")?,
        cwd: path("cwd")?,
        source: short("source")?,
        agent_id: short("agent_id")?,
        agent_type: short("agent_type")?,
        agent_transcript_path: path("agent_transcript_path")?,
    })
}

/// Handle one payload read from stdin; `dir` is used when the payload has no `cwd`.
pub fn handle(input: &[u8], dir: &Path) -> HookOutcome {
    let payload = match parse(input) {
        Ok(p) => p,
        Err(why) => return HookOutcome::ignored(HOOK, format!("malformed payload: {why}")),
    };
    match payload.event.as_str() {
        "SessionStart" | "Stop" | "SubagentStop" => {}
        other => {
            return HookOutcome::ignored(HOOK, format!("event {other} is not handled"));
        }
    }
    let cwd = payload.cwd.clone().unwrap_or_else(|| dir.to_path_buf());
    let Ok(store) = Store::discover(&cwd) else {
        return HookOutcome::skipped(
            HOOK,
            format!("{} is not in a git repository", cwd.display()),
        );
    };
    if store.is_bare() {
        return HookOutcome::skipped(HOOK, "bare repository");
    }
    let result = match payload.event.as_str() {
        "SessionStart" => session_start(&store, &payload),
        _ => turn(&store, &payload),
    };
    result.unwrap_or_else(|e| {
        let mut out = HookOutcome::skipped(HOOK, "could not record");
        out.warnings.push(match e.hint {
            Some(h) => format!("{} ({h})", e.message),
            None => e.message,
        });
        out
    })
}

fn base_meta(p: &Payload) -> BTreeMap<String, String> {
    let mut meta = BTreeMap::new();
    meta.insert("agent".into(), "claude".into());
    meta.insert("hook_event".into(), p.event.clone());
    for (k, v) in [
        ("claude_source", &p.source),
        ("subagent_id", &p.agent_id),
        ("subagent_type", &p.agent_type),
    ] {
        if let Some(v) = v {
            meta.insert(k.into(), v.clone());
        }
    }
    meta
}

/// `SessionStart`: join the active run (or `AGENT_RUN`), else start one and make it active.
fn session_start(store: &Store, p: &Payload) -> Result<HookOutcome> {
    let env_run = std::env::var("AGENT_RUN").ok().filter(|v| !v.is_empty());
    let run = match hook_run(store)? {
        Ok(run) if store.run_head(&run)?.is_some() => {
            return Ok(HookOutcome {
                run: Some(run.to_string()),
                reason: Some(format!("session {} continues run {run}", p.session_id)),
                ..HookOutcome::new(HOOK, "joined")
            });
        }
        // AGENT_RUN names a run that does not exist yet.
        Ok(run) => run,
        Err(_) => match env_run {
            Some(r) => RunId::new(r)?,
            None => RunId::generate(),
        },
    };
    let mut rec = Record::new(run.clone(), Event::Start);
    rec.new_run = true;
    rec.session_id = Some(p.session_id.clone());
    rec.label = Some(format!("Claude Code session {}", p.session_id));
    rec.meta = base_meta(p);
    rec.next_action = Some("let the agent work; each turn is recorded".into());
    let recorded = append(store, rec)?;
    set_active_run(store, &run)?;
    Ok(HookOutcome {
        run: Some(run.to_string()),
        checkpoint: Some(recorded.checkpoint.to_string()),
        ..HookOutcome::new(HOOK, "started")
    })
}

/// `file://` URI of an absolute path, percent-encoding what a URI cannot hold (and `#`,
/// which separates the digest in an artifact argument).
pub fn file_uri(path: &Path) -> String {
    let mut s = String::from("file://");
    for b in path.as_os_str().as_encoded_bytes() {
        match *b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                s.push(*b as char)
            }
            other => s.push_str(&format!("%{other:02X}")),
        }
    }
    s
}

/// The artifact argument for a transcript: `file://…#git-blob:<oid>` (the digest left out
/// when the file cannot be read). `None` with a warning when it cannot be recorded at all.
fn transcript_artifact(store: &Store, path: &Path, warnings: &mut Vec<String>) -> Option<String> {
    let uri = file_uri(path);
    if crate::redact::looks_secret(&uri) {
        warnings.push(format!(
            "transcript path {} looks like it holds a credential; not recorded",
            path.display()
        ));
        return None;
    }
    let digest = match std::fs::metadata(path) {
        Ok(md) if md.is_file() && md.len() <= MAX_DIGEST_BYTES => std::fs::read(path)
            .ok()
            .and_then(|bytes| store.blob_id(&bytes).ok()),
        Ok(md) if md.is_file() => {
            warnings.push(format!(
                "transcript {} is larger than {} MiB; recorded without a digest",
                path.display(),
                MAX_DIGEST_BYTES >> 20
            ));
            None
        }
        _ => {
            warnings.push(format!(
                "transcript {} is not readable; recorded without a digest",
                path.display()
            ));
            None
        }
    };
    Some(match digest {
        Some(d) => format!("{uri}#git-blob:{d}"),
        None => uri,
    })
}

/// `Stop` / `SubagentStop`: a `turn` checkpoint in the active run (one is started if there is
/// none), with the session id and transcript pointers.
fn turn(store: &Store, p: &Payload) -> Result<HookOutcome> {
    let mut warnings = vec![];
    // Without a usable active run, a new one is started (and made active) by the checkpoint.
    let (run, step) = match hook_run(store)? {
        Ok(r) => {
            let step = super::handlers::hook_step(store, &r, None, DEFAULT_TURN_STEP)?.0;
            (r, step)
        }
        Err(_) => (RunId::generate(), StepName::new(DEFAULT_TURN_STEP)?),
    };
    let artifacts: Vec<String> = [&p.transcript_path, &p.agent_transcript_path]
        .into_iter()
        .flatten()
        .filter_map(|t| transcript_artifact(store, t, &mut warnings))
        .collect();
    let out = checkpoint(
        store,
        &step,
        CheckpointOptions {
            run: Some(run),
            event: Some(Event::Turn),
            session_id: Some(p.session_id.clone()),
            artifacts,
            meta: base_meta(p),
            ..Default::default()
        },
    )?;
    Ok(HookOutcome {
        warnings,
        ..HookOutcome::recorded(HOOK, &out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads() {
        let p = parse(
            br#"{"session_id":"abc","transcript_path":"/t/x.jsonl","cwd":"/w","hook_event_name":"Stop","stop_hook_active":false}"#,
        )
        .unwrap();
        assert_eq!(p.event, "Stop");
        assert_eq!(p.session_id, "abc");
        assert_eq!(p.transcript_path, Some(PathBuf::from("/t/x.jsonl")));
        for bad in [
            &b"garbage"[..],
            b"[]",
            b"{}",
            br#"{"hook_event_name":"Stop"}"#,
            br#"{"hook_event_name":"Stop","session_id":42}"#,
            br#"{"hook_event_name":"Stop","session_id":"a","cwd":"relative"}"#,
        ] {
            assert!(parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn uris() {
        assert_eq!(
            file_uri(Path::new("/home/me/.claude/projects/-x/a b#1.jsonl")),
            "file:///home/me/.claude/projects/-x/a%20b%231.jsonl"
        );
    }
}
