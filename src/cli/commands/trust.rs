//! `trust [<run>]`: show what the workflow a run would execute runs (each step's command,
//! shell, folder, `env` and `inputs`) and, once the person says yes (on a terminal, or
//! `--yes`), let it run here. Owns the question and the terminal; the decision of what is
//! trusted is the library's (`ops::trust`). Never trusts without a yes: with no terminal
//! and no `--yes` it refuses.

use crate::cli::{Ctx, Output, render};
use agent_rewind::ops;
use agent_rewind_core::error::{Error, IoResultExt, Result};
use clap::Args;
use std::io::{BufRead, IsTerminal, Write};

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind trust w1
      Show where run w1's workflow comes from and what every step runs (command, env, inputs), and ask whether it may run here.
  git agent-rewind trust w1 --yes && git agent-rewind resume w1
      Trust it without asking (you read its commands already), then continue the run.

Exit status: 0 the workflow is trusted (now or already); 1 it was not (answered no, or no terminal to ask on and no --yes).";

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The run whose workflow may run here (default: the active run of this worktree).
    pub run: Option<String>,
    /// Trust without asking (after reading the steps: `trust <run>` prints them). Without
    /// it, `trust` asks on a terminal; with no terminal, or with --json, it refuses (exit 1).
    #[arg(long)]
    pub yes: bool,
}

pub fn run(a: TrustArgs, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    let style = ctx.style(&store)?;
    let run = match a.run.as_deref() {
        Some(r) => ops::address::run(&store, r)?,
        None => agent_rewind::journal::active_run(&store)?.ok_or_else(|| {
            Error::usage("no run given and this worktree has no active run")
                .with_hint("git agent-rewind trust <run>")
        })?,
    };
    let plan = ops::trust::inspect(&store, &run)?;
    let shown = render::trust_plan(&plan, &style);
    let plan = if plan.already_trusted || a.yes {
        ops::trust::accept(&store, plan)?
    } else if !ctx.json && std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        if !ask(&shown)? {
            return Err(Error::refused(format!(
                "the workflow of run {run} was not trusted (answered no)"
            ))
            .with_hint("nothing was changed; `resume --workflow FILE` runs a file of yours"));
        }
        ops::trust::accept(&store, plan)?
    } else {
        let read = if ctx.json {
            format!(
                "read what its steps run (`git agent-rewind trust {run}` on a terminal shows it)"
            )
        } else {
            crate::cli::stderr_text(&shown);
            "read what its steps run (above: command, env, inputs)".to_string()
        };
        return Err(Error::refused(format!(
            "the workflow of run {run} was not trusted: there is no terminal to ask on and --yes was not given"
        ))
        .with_hint(format!("{read}, then `git agent-rewind trust {run} --yes`")));
    };
    let human = render::trusted(&plan);
    Ok(Output::new(
        serde_json::to_value(&plan).expect("json"),
        if a.yes || plan.already_trusted {
            format!("{shown}{human}")
        } else {
            human
        },
    ))
}

/// Show `shown` on stderr and ask; `true` for a yes.
fn ask(shown: &str) -> Result<bool> {
    let mut err = std::io::stderr();
    let prompt = format!("{shown}Trust this workflow and let its commands run here? [y/N] ");
    err.write_all(prompt.as_bytes()).at("stderr")?;
    err.flush().at("stderr")?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer).at("stdin")?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}
