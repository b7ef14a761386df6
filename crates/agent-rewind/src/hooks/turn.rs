//! `hook <agent>` (claude, codex, gemini, cursor, opencode, qwen, copilot, pi): one pipeline
//! from an agent's event ([`super::payload`]) to what it records.
//!
//! - session start: start or join the worktree's active run (a run a workflow completed is
//!   not joined: the session starts a run after it);
//! - end of a turn: a `turn` checkpoint with the agent's name, its session id, pointers to
//!   its transcripts (a `file://` URI and its git blob digest — never the transcript
//!   itself), the model when given, the paths the agent edited since its last turn
//!   (`touched`) and the tokens the turn used (`usage`, [`super::usage`]);
//! - file edit: the edited paths appended to the run's pending list ([`super::touched`]).
//!
//! An agent must never be blocked by us: every outcome, including a malformed or unknown
//! payload, is a [`HookOutcome`] (the CLI exits 0), and nothing is written for a payload we
//! cannot use. The payload decides the repository (`cwd`, or the first workspace root that
//! is a git worktree); outside one, nothing happens.

use super::handlers::hook_run;
use super::payload::{self, AgentEvent, Kind, Unusable};
use super::touched;
use super::{HookAction, HookOutcome};
use crate::agent::Agent;
use crate::catalog::{Catalog, Checkpoint};
use crate::journal::{Origin, Record, StepFacts, append, set_active_run};
use crate::model::{Event, LineageLink};
use crate::ops::checkpoint::{CheckpointOptions, checkpoint};
use crate::store::{OpenFor, Store};
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::{RunId, StepName};
use std::path::{Component, Path, PathBuf};

/// Step of a turn checkpoint when the run's newest checkpoint has no step and `AGENT_STEP`
/// is unset.
pub const DEFAULT_TURN_STEP: &str = "turn";
/// Transcripts larger than this get a pointer without a digest.
const MAX_DIGEST_BYTES: u64 = 512 * 1024 * 1024;

/// Handle one event of `agent` (its standard input and arguments); `dir` is where to look
/// for the repository when the payload names no directory.
pub fn handle(agent: Agent, input: &[u8], args: &[String], dir: &Path) -> HookOutcome {
    let hook = agent.name();
    let ev = match payload::parse(agent, input, args) {
        Ok(ev) => ev,
        Err(Unusable::Malformed(why)) => {
            return HookOutcome::ignored(hook, format!("malformed payload: {why}"));
        }
        Err(Unusable::Unhandled(why)) => return HookOutcome::ignored(hook, why),
    };
    let dirs = if ev.dirs.is_empty() {
        vec![dir.to_path_buf()]
    } else {
        ev.dirs.clone()
    };
    let Some(store) = dirs.iter().find_map(|d| {
        Store::discover(d, OpenFor::Work)
            .ok()
            .filter(|s| !s.worktree().is_bare())
    }) else {
        return HookOutcome::skipped(
            hook,
            format!("{} is not in a git worktree", dirs[0].display()),
        );
    };
    if let Some(off) = super::switch::disabled(&store, hook) {
        return off;
    }
    // A turn without a usable active run starts one.
    let run_before = ev.kind == Kind::Turn && hook_run(&store).is_ok_and(|r| r.is_ok());
    let result = match ev.kind {
        Kind::SessionStart => session_start(&store, &ev),
        Kind::Turn => turn(&store, &ev),
        Kind::Edit => edit(&store, &ev, &dirs[0]),
    };
    let mut out = result.unwrap_or_else(|e| {
        let mut out = HookOutcome::skipped(hook, "could not record");
        out.warnings.push(match e.hint {
            Some(h) => format!("{} ({h})", e.message),
            None => e.message,
        });
        out
    });
    super::switch::set_up_after(&store, &mut out, ev.kind == Kind::Turn && !run_before);
    out
}

fn session(ev: &AgentEvent) -> String {
    ev.session_id.clone().unwrap_or_default()
}

/// Session start: join the active run (or `AGENT_RUN`), else start one and make it active.
fn session_start(store: &Store, ev: &AgentEvent) -> Result<HookOutcome> {
    let hook = ev.agent.name();
    let env_run = std::env::var("AGENT_RUN").ok().filter(|v| !v.is_empty());
    let run = match hook_run(store)? {
        Ok(run) if let Some(tip) = completed(store, &run)? => {
            let new = start_after(store, ev, &tip)?;
            return Ok(HookOutcome {
                run: Some(new.to_string()),
                reason: Some(format!(
                    "run {run} is complete; session {} starts run {new} after it",
                    session(ev)
                )),
                ..HookOutcome::new(hook, HookAction::Started)
            });
        }
        Ok(run) if store.refs().run_head(&run)?.is_some() => {
            let context = (super::manifest::resumed(store, &run, ev)?
                && super::manifest::enabled(store))
            .then(|| super::manifest::manifest(store, &run))
            .transpose()?;
            return Ok(HookOutcome {
                run: Some(run.to_string()),
                reason: Some(format!("session {} continues run {run}", session(ev))),
                context,
                ..HookOutcome::new(hook, HookAction::Joined)
            });
        }
        // AGENT_RUN names a run that does not exist yet.
        Ok(run) => run,
        Err(_) => match env_run {
            Some(r) => RunId::new(r)?,
            None => RunId::generate(),
        },
    };
    let recorded = start_session_run(store, ev, &run, None)?;
    Ok(HookOutcome {
        run: Some(run.to_string()),
        checkpoint: Some(recorded.checkpoint.to_string()),
        ..HookOutcome::new(hook, HookAction::Started)
    })
}

/// The tip of `run` when a workflow completed it and nothing was recorded after: an agent's
/// turn then belongs to a run of its own, never to the finished run's last step.
fn completed(store: &Store, run: &RunId) -> Result<Option<Checkpoint>> {
    let mut catalog = Catalog::new(store);
    let Some(tip) = catalog.run_tip(run)? else {
        return Ok(None);
    };
    let root = catalog.root_of(&tip)?;
    Ok(root.note.completed_as_of(tip.line().ts).then_some(tip))
}

/// Start, and make active, the run an agent's session continues in after the completed run
/// whose tip is `finished`.
fn start_after(store: &Store, ev: &AgentEvent, finished: &Checkpoint) -> Result<RunId> {
    let run = RunId::generate();
    start_session_run(store, ev, &run, Some(finished))?;
    Ok(run)
}

/// Record the start of `run` for the agent's session and make it the active run. After a
/// completed run (`after`, its tip), the start's first parent is that tip, so lineage shows
/// where it came from.
fn start_session_run(
    store: &Store,
    ev: &AgentEvent,
    run: &RunId,
    after: Option<&Checkpoint>,
) -> Result<crate::journal::Recorded> {
    let mut rec = Record::new(run.clone(), Event::Start);
    rec.new_run = true;
    rec.facts.session_id = ev.session_id.clone();
    rec.facts.agent = Some(ev.agent.name().to_string());
    rec.label = Some(format!("{} session {}", ev.agent.display(), session(ev)));
    rec.facts.meta = ev.meta.clone();
    rec.facts.next_action = Some("let the agent work; each turn is recorded".into());
    if let Some(finished) = after {
        let line = finished.line();
        rec.origin = Some(Origin {
            link: LineageLink {
                run: line.run.clone(),
                step: line.step.clone(),
                checkpoint: finished.id().to_string(),
            },
            rewound: false,
            checkpoint: finished.id(),
            inherited_steps: vec![],
        });
        rec.label = rec.label.map(|l| format!("{l}, after run {}", line.run));
    }
    let recorded = append(store, rec)?;
    set_active_run(store, run)?;
    Ok(recorded)
}

/// File edit: the edited paths that are in this worktree, appended to the pending list of
/// the run the next turn records into.
fn edit(store: &Store, ev: &AgentEvent, cwd: &Path) -> Result<HookOutcome> {
    let hook = ev.agent.name();
    let root = store.worktree().root()?;
    let paths: Vec<String> = ev
        .edited
        .iter()
        .filter_map(|p| worktree_relative(root, cwd, p))
        .collect();
    if paths.is_empty() {
        return Ok(HookOutcome::skipped(
            hook,
            "the edited files are not in this worktree",
        ));
    }
    let run = hook_run(store)?.ok();
    let key = run.as_ref().map_or(touched::NO_RUN, |r| r.as_str());
    touched::note(store, key, &paths)?;
    Ok(HookOutcome {
        run: run.map(|r| r.to_string()),
        reason: Some(format!("noted for the next turn: {}", paths.join(" "))),
        ..HookOutcome::new(hook, HookAction::Noted)
    })
}

/// `path` (absolute, or relative to `cwd`) relative to the worktree `root`, `/`-separated;
/// `None` outside it, inside `.git`, or not valid UTF-8.
pub fn worktree_relative(root: &Path, cwd: &Path, path: &Path) -> Option<String> {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    let abs = normalize(&abs);
    let rel = match abs.strip_prefix(root) {
        Ok(rel) => rel.to_path_buf(),
        // Through a symlink (e.g. /tmp → /private/tmp): compare real folders.
        Err(_) => {
            let real_root = std::fs::canonicalize(root).ok()?;
            let parent = abs.parent()?;
            let real_parent = std::fs::canonicalize(parent).ok()?;
            real_parent
                .join(abs.file_name()?)
                .strip_prefix(&real_root)
                .ok()?
                .to_path_buf()
        }
    };
    let parts: Vec<&str> = rel
        .components()
        .map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect::<Option<_>>()?;
    if parts.is_empty() || parts[0] == ".git" {
        return None;
    }
    Some(parts.join("/"))
}

/// `.` and `..` resolved lexically.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
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
    if agent_rewind_core::redact::looks_secret(&uri) {
        warnings.push(format!(
            "transcript path {} looks like it holds a credential; not recorded",
            path.display()
        ));
        return None;
    }
    let digest = match std::fs::metadata(path) {
        Ok(md) if md.is_file() && md.len() <= MAX_DIGEST_BYTES => std::fs::read(path)
            .ok()
            .and_then(|bytes| store.objects().blob_id(&bytes).ok()),
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

/// End of a turn: a `turn` checkpoint in the active run (one is started if there is none),
/// carrying the paths noted since the last turn.
fn turn(store: &Store, ev: &AgentEvent) -> Result<HookOutcome> {
    let hook = ev.agent.name();
    let mut warnings = vec![];
    // Without a usable active run, a new one is started (and made active) by the checkpoint.
    // Edits noted while the finished run was still the active one are this turn's too.
    let mut finished = None;
    let (run, step) = match hook_run(store)? {
        Ok(r) if let Some(tip) = completed(store, &r)? => {
            finished = Some(r);
            (
                start_after(store, ev, &tip)?,
                StepName::new(DEFAULT_TURN_STEP)?,
            )
        }
        Ok(r) => {
            let step = super::handlers::hook_step(store, &r, None, DEFAULT_TURN_STEP)?.0;
            (r, step)
        }
        Err(_) => (RunId::generate(), StepName::new(DEFAULT_TURN_STEP)?),
    };
    let artifacts: Vec<String> = ev
        .transcripts
        .iter()
        .filter_map(|t| transcript_artifact(store, t, &mut warnings))
        .collect();
    let mut pending = vec![run.as_str(), touched::NO_RUN];
    pending.extend(finished.as_ref().map(RunId::as_str));
    let taken = touched::take(store, &pending)?;
    if taken.dropped > 0 {
        warnings.push(format!(
            "{} more edited paths than {} were not recorded",
            taken.dropped,
            touched::MAX_TOUCHED
        ));
    }
    let mut meta = ev.meta.clone();
    if ev.agent == Agent::Claude
        && ev.event == "Stop"
        && let Some(at) = ev
            .transcripts
            .first()
            .and_then(|t| super::conversation::claude_last_message(t))
    {
        meta.insert("conversation_at".into(), at.message);
        if let Some(model) = at.model {
            meta.entry("model".into()).or_insert(model);
        }
    }
    let result = checkpoint(
        store,
        &step,
        CheckpointOptions {
            run: Some(run),
            event: Some(Event::Turn),
            facts: StepFacts {
                session_id: ev.session_id.clone(),
                agent: Some(hook.to_string()),
                touched: taken.paths.clone(),
                artifacts,
                meta,
                usage: super::usage::of_turn(ev),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    let out = match result {
        Ok(out) => {
            taken.done();
            out
        }
        Err(e) => {
            taken.put_back();
            return Err(e);
        }
    };
    Ok(HookOutcome {
        warnings,
        ..HookOutcome::recorded(hook, &out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris() {
        assert_eq!(
            file_uri(Path::new("/home/me/.claude/projects/-x/a b#1.jsonl")),
            "file:///home/me/.claude/projects/-x/a%20b%231.jsonl"
        );
    }

    #[test]
    fn relative_paths() {
        let root = Path::new("/w/repo");
        let rel = |cwd: &str, p: &str| worktree_relative(root, Path::new(cwd), Path::new(p));
        assert_eq!(rel("/w/repo", "src/a.rs").as_deref(), Some("src/a.rs"));
        assert_eq!(rel("/w/repo/src", "../b.rs").as_deref(), Some("b.rs"));
        assert_eq!(rel("/x", "/w/repo/c/d.txt").as_deref(), Some("c/d.txt"));
        assert_eq!(rel("/w/repo", ".git/config"), None);
        assert_eq!(rel("/w/repo", "../other/x"), None);
        assert_eq!(rel("/w/repo", "/w/repo"), None);
    }
}
