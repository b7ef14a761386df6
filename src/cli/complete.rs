//! Shell completion, computed here from the clap definitions and the repository: the shell
//! scripts (`completions bash|zsh|fish`) only pass the words of the command line to the
//! hidden `__complete <index> -- <words…>` and show what it prints, one candidate a line.
//! Subcommands, every flag of every subcommand, flag values, run ids and step names (read
//! from the repository at completion time) all come from one place, so the shells agree.
//! It never fails: any error gives no candidates.

use super::Ctx;
use agent_rewind::ops;
use agent_rewind_core::ids::RunId;
use clap::Command;

/// Printed alone when the shell should complete file names (or folder names) itself.
pub const FILES: &str = "__FILES__";
pub const DIRS: &str = "__DIRS__";

/// What a value is.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Runs,
    /// Steps of the run named by the command's first positional argument, or by `--run`,
    /// or the active run.
    Steps,
    /// `<run>`, `<run>/<step>`.
    Checkpoints,
    Files,
    Dirs,
    Values(&'static [&'static str]),
    Nothing,
}

const KINDS: &[&str] = &["agent", "deterministic", "effect", "gate"];
const STATUSES: &[&str] = &[
    "pending",
    "running",
    "awaiting_approval",
    "completed",
    "failed",
    "interrupted",
    "skipped",
];
const EVENTS: &[&str] = &["begin", "finish", "commit", "turn", "manual", "steer"];
const SHELLS: &[&str] = &["bash", "zsh", "fish", "elvish", "powershell"];
const HOOKS: &[&str] = &["post-commit", "post-rewrite", "claude"];
const AGENTS: &[&str] = &[
    "claude", "codex", "gemini", "cursor", "opencode", "qwen", "copilot", "pi", "auggie", "kilo",
    "droid", "all",
];
/// `view --diffs` takes these or a number.
const DIFFS: &[&str] = &["all", "none"];

/// The value kind of argument `id` of command `cmd` (its name; `begin` for `step begin`).
fn kind_of(cmd: &str, id: &str) -> Kind {
    match (cmd, id) {
        ("rewind" | "fork", "new_run") | (_, "label" | "message" | "by" | "session_id") => {
            Kind::Nothing
        }
        ("start", "run") => Kind::Nothing,
        ("blame", "file") => Kind::Files,
        ("blame", "rev" | "ranges") | ("stats", "range") => Kind::Nothing,
        (_, "run" | "runs" | "words") => Kind::Runs,
        (_, "checkpoint" | "first" | "second" | "target") => Kind::Checkpoints,
        (_, "to" | "retry" | "invalidate" | "step") => Kind::Steps,
        (_, "worktree" | "dir") => Kind::Dirs,
        (_, "workflow" | "file" | "output" | "artifacts" | "paths" | "edits") => Kind::Files,
        (_, "kind") => Kind::Values(KINDS),
        (_, "status") => Kind::Values(STATUSES),
        (_, "event") => Kind::Values(EVENTS),
        (_, "shell") => Kind::Values(SHELLS),
        (_, "agents") => Kind::Values(AGENTS),
        (_, "diffs") => Kind::Values(DIFFS),
        ("hook", "name") => Kind::Values(HOOKS),
        _ => Kind::Nothing,
    }
}

/// The values clap accepts for the flag `id` of `cmd` (or a global one of `root`).
fn possible_values(cmd: &Command, root: &Command, id: &str) -> Vec<String> {
    cmd.get_arguments()
        .chain(root.get_arguments().filter(|a| a.is_global_set()))
        .find(|a| a.get_id().as_str() == id)
        .map(|a| {
            a.get_possible_values()
                .iter()
                .filter(|v| !v.is_hide_set())
                .map(|v| v.get_name().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The candidates for word `index` of `words` (the words after the program name).
pub fn candidates(root: &Command, index: usize, words: &[String], ctx: &Ctx) -> Vec<String> {
    let cur = words.get(index).map(String::as_str).unwrap_or("");
    let mut cmd = root;
    let mut cmd_name = String::new();
    let mut positionals: Vec<String> = vec![];
    let mut pending: Option<String> = None; // the id of a flag waiting for its value
    let mut after_dashes = false;
    let mut dir: Option<String> = None;
    let mut run_flag: Option<String> = None;
    for w in words.iter().take(index) {
        if let Some(id) = pending.take() {
            match id.as_str() {
                "dir" => dir = Some(w.clone()),
                "run" => run_flag = Some(w.clone()),
                _ => {}
            }
            continue;
        }
        if after_dashes {
            positionals.push(w.clone());
        } else if w == "--" {
            after_dashes = true;
        } else if w.starts_with('-') && w.len() > 1 {
            if let Some(arg) = find_flag(cmd, root, w)
                && !w.contains('=')
                && arg.get_action().takes_values()
            {
                pending = Some(arg.get_id().to_string());
            }
        } else if cmd.has_subcommands() && positionals.is_empty() {
            match cmd.find_subcommand(w) {
                Some(sub) => {
                    cmd = sub;
                    cmd_name = w.clone();
                }
                None => return vec![],
            }
        } else {
            positionals.push(w.clone());
        }
    }
    let kind = if let Some(id) = &pending {
        match kind_of(&cmd_name, id) {
            // A flag whose values clap knows (`--format`, `--color`): those.
            Kind::Nothing => {
                let values = possible_values(cmd, root, id);
                if !values.is_empty() {
                    return filter(values, cur);
                }
                Kind::Nothing
            }
            k => k,
        }
    } else if after_dashes {
        Kind::Files
    } else if cur.starts_with('-') {
        let mut flags: Vec<String> = vec![];
        let globals = root.get_arguments().filter(|a| a.is_global_set());
        for a in cmd.get_arguments().chain(globals) {
            if a.is_hide_set() {
                continue;
            }
            let names = [
                a.get_long().map(|l| format!("--{l}")),
                a.get_short().map(|s| format!("-{s}")),
            ];
            for n in names.into_iter().flatten() {
                if !flags.contains(&n) {
                    flags.push(n);
                }
            }
        }
        return filter(flags, cur);
    } else if cmd.has_subcommands() {
        let names = cmd
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| s.get_name().to_string())
            .collect();
        return filter(names, cur);
    } else {
        let pos: Vec<_> = cmd.get_positionals().filter(|a| !a.is_last_set()).collect();
        let arg = pos.get(positionals.len()).or_else(|| {
            pos.last()
                .filter(|a| a.get_num_args().is_some_and(|n| n.max_values() > 1))
        });
        match arg {
            Some(a) => kind_of(&cmd_name, a.get_id().as_str()),
            None => Kind::Nothing,
        }
    };
    let ctx = match dir {
        Some(d) => Ctx {
            dir: ctx.dir.join(d),
            in_cwd: false,
            colour: super::Colour::Never,
            json: false,
        },
        None => Ctx {
            dir: ctx.dir.clone(),
            in_cwd: ctx.in_cwd,
            colour: super::Colour::Never,
            json: false,
        },
    };
    match kind {
        Kind::Files => vec![FILES.into()],
        Kind::Dirs => vec![DIRS.into()],
        Kind::Nothing => vec![],
        Kind::Values(v) => filter(v.iter().map(|s| s.to_string()).collect(), cur),
        Kind::Runs => filter(runs(&ctx), cur),
        Kind::Steps => {
            let run = match cmd_name.as_str() {
                "checkpoint" | "begin" | "end" => run_flag.clone(),
                _ => positionals.first().cloned().or(run_flag.clone()),
            };
            filter(steps(&ctx, run.as_deref()), cur)
        }
        Kind::Checkpoints => match cur.split_once('/') {
            Some((run, _)) => filter(
                steps(&ctx, Some(run))
                    .into_iter()
                    .map(|s| format!("{run}/{s}"))
                    .collect(),
                cur,
            ),
            None => filter(runs(&ctx), cur),
        },
    }
}

fn find_flag<'a>(cmd: &'a Command, root: &'a Command, w: &str) -> Option<&'a clap::Arg> {
    let name = w.split('=').next().unwrap_or(w);
    cmd.get_arguments()
        .chain(root.get_arguments())
        .find(|a| match name.strip_prefix("--") {
            Some(l) => a.get_long() == Some(l),
            None => {
                let mut c = name[1..].chars();
                c.next().is_some_and(|s| a.get_short() == Some(s)) && c.next().is_none()
            }
        })
}

fn filter(mut names: Vec<String>, cur: &str) -> Vec<String> {
    names.retain(|n| n.starts_with(cur));
    names
}

fn runs(ctx: &Ctx) -> Vec<String> {
    let Ok(store) = ctx.store() else {
        return vec![];
    };
    ops::list::list_runs(&store, true)
        .map(|l| l.runs.into_iter().map(|r| r.run).collect())
        .unwrap_or_default()
}

/// The step names of `run` (its id or a unique prefix; default: the active run), as `list`
/// shows them: a rewound or forked run's steps include those it took over from its source.
fn steps(ctx: &Ctx, run: Option<&str>) -> Vec<String> {
    let Ok(store) = ctx.store() else {
        return vec![];
    };
    let run = match run {
        Some(r) => ops::address::run(&store, r).ok(),
        None => ops::status::status(&store)
            .ok()
            .flatten()
            .and_then(|s| RunId::new(s.summary.run).ok()),
    };
    let Some(run) = run else {
        return vec![];
    };
    agent_rewind::catalog::Catalog::new(&store)
        .summary(&run)
        .map(|s| s.steps)
        .unwrap_or_default()
}
