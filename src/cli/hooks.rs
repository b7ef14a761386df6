//! CLI glue for `hooks install|uninstall`, `init --hooks/--agent` and `hook <name>`: parse
//! flags into library options and render outcomes. No hook semantics live here.
//!
//! `hook <name>` must never fail the operation that called it: whatever happens (an error,
//! even a panic in the library) it reports on stderr and returns a successful output, and it
//! prints nothing on stdout unless `--json` is given (Claude Code adds a SessionStart hook's
//! stdout to the model's context).

use super::Output;
use super::args::{HookArgs, HooksArgs, HooksCommand, InitArgs};
use agent_rewind::error::Result;
use agent_rewind::hooks::install::{FileAction, HooksOptions, HooksOutcome};
use agent_rewind::hooks::{self, Agent};
use agent_rewind::store::Store;
use std::io::{IsTerminal, Read};
use std::path::Path;

/// Most bytes a hook reads from its standard input.
const MAX_STDIN: u64 = 64 * 1024 * 1024;

/// The `--agent` values (names or `all`), each agent once, in the order first named.
fn agents(names: &[String]) -> Result<Vec<Agent>> {
    let mut out: Vec<Agent> = vec![];
    for n in names {
        for a in Agent::parse_many(n)? {
            if !out.contains(&a) {
                out.push(a);
            }
        }
    }
    Ok(out)
}

fn action_text(a: FileAction) -> &'static str {
    match a {
        FileAction::Created => "created",
        FileAction::Added => "block added to the existing file",
        FileAction::Updated => "block updated",
        FileAction::Unchanged => "already installed",
        FileAction::Removed => "block removed (the rest of the file kept)",
        FileAction::Deleted => "removed (the file only held ours)",
        FileAction::Absent => "nothing of ours there",
    }
}

fn render(out: &HooksOutcome) -> String {
    let mut s = String::new();
    if let Some(dir) = &out.hooks_dir {
        s.push_str(&format!("git hooks in {dir}:\n"));
        for c in &out.git {
            s.push_str(&format!("  {:<13} {}\n", c.hook, action_text(c.action)));
        }
    }
    for a in &out.agents {
        let events = if a.events.is_empty() {
            String::new()
        } else {
            format!(" ({})", a.events.join(", "))
        };
        s.push_str(&format!(
            "{} hooks in {}: {}{events}\n",
            serde_json::to_value(a.agent)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            a.path,
            action_text(a.action)
        ));
    }
    s.trim_end().to_string()
}

fn output(out: &HooksOutcome) -> Output {
    for w in &out.warnings {
        eprintln!("warning: {w}");
    }
    Output::new(serde_json::to_value(out).expect("json"), render(out))
}

/// `hooks install|uninstall`.
pub fn hooks(store: &Store, cmd: HooksCommand) -> Result<Output> {
    match cmd {
        HooksCommand::Install(a) => {
            let opts = install_options(&a)?;
            Ok(output(&hooks::install::install(store, &opts)?))
        }
        HooksCommand::Uninstall(a) => {
            let all = !a.git && a.agents.is_empty();
            let opts = HooksOptions {
                git: a.git || all,
                agents: if all {
                    Agent::ALL.to_vec()
                } else {
                    agents(&a.agents)?
                },
                binary: None,
            };
            Ok(output(&hooks::install::uninstall(store, &opts)?))
        }
    }
}

fn install_options(a: &HooksArgs) -> Result<HooksOptions> {
    Ok(HooksOptions {
        git: a.git || a.agents.is_empty(),
        agents: agents(&a.agents)?,
        binary: None,
    })
}

/// The options `init` installs hooks with (`None`: no hook flag given). Parsed before `init`
/// changes anything, so a bad agent name changes nothing.
pub fn init_options(a: &InitArgs) -> Result<Option<HooksOptions>> {
    if !a.hooks && a.agents.is_empty() {
        return Ok(None);
    }
    Ok(Some(HooksOptions {
        git: a.hooks,
        agents: agents(&a.agents)?,
        binary: None,
    }))
}

/// Add the hooks `init` was asked for to its output.
pub fn init_hooks(store: &Store, opts: &HooksOptions, out: &mut Output) -> Result<()> {
    let o = output(&hooks::install::install(store, opts)?);
    out.json["hooks"] = o.json;
    out.human = format!("{}\n{}", out.human, o.human);
    Ok(())
}

/// Standard input for hooks that take some; nothing when it is a terminal (never wait for a
/// person).
fn read_stdin(name: &str) -> Vec<u8> {
    let mut buf = vec![];
    let reads = name == "post-rewrite" || Agent::from_name(name).is_some();
    if reads && !std::io::stdin().is_terminal() {
        let _ = std::io::stdin()
            .lock()
            .take(MAX_STDIN)
            .read_to_end(&mut buf);
    }
    buf
}

/// `hook <name>`: always a successful output; problems go to stderr.
pub fn hook(a: &HookArgs, dir: &Path) -> Output {
    let stdin = read_stdin(&a.name);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        hooks::run_hook(&a.name, &a.args, dir, &stdin)
    }));
    let prefix = format!("git agent-rewind hook {}", a.name);
    match result {
        Ok(Ok(out)) => {
            for w in &out.warnings {
                eprintln!("warning: {prefix}: {w}");
            }
            if out.action == "ignored"
                && let Some(r) = &out.reason
            {
                eprintln!("warning: {prefix}: ignored: {r}");
            }
            Output::new(serde_json::to_value(&out).expect("json"), String::new())
        }
        Ok(Err(e)) => {
            eprintln!("warning: {prefix}: nothing recorded: {}", e.message);
            if let Some(h) = &e.hint {
                eprintln!("hint: {h}");
            }
            Output::new(
                serde_json::json!({"hook": a.name, "action": "failed", "error": e.message}),
                String::new(),
            )
        }
        Err(_) => {
            eprintln!("warning: {prefix}: nothing recorded (internal error)");
            Output::new(
                serde_json::json!({"hook": a.name, "action": "failed", "error": "internal error"}),
                String::new(),
            )
        }
    }
}
