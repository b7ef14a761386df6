//! `completions`: print a shell's completion script.

use crate::cli::args::Cli;
use crate::cli::{Ctx, Output};
use agent_rewind::error::Result;
use clap::Args;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:\n  source <(git agent-rewind completions bash)\n  git agent-rewind completions zsh > ~/.zfunc/_git-agent-rewind\n  git agent-rewind completions fish > ~/.config/fish/completions/git-agent-rewind.fish";

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct CompleteArgs {
    /// `runs`, or `steps`.
    pub what: String,
    /// For `steps`: the run.
    pub run: Option<String>,
}

pub fn run(a: CompletionsArgs, _ctx: &Ctx) -> Result<Output> {
    use clap::CommandFactory;
    let mut buf = Vec::new();
    clap_complete::generate(a.shell, &mut Cli::command(), "git-agent-rewind", &mut buf);
    let text = String::from_utf8_lossy(&buf).trim_end().to_string();
    Ok(Output::new(
        serde_json::json!({ "shell": a.shell.to_string(), "script": text }),
        text,
    ))
}

/// `__complete runs|steps <run>`: names for the shell, one a line; nothing on any error.
pub fn complete(a: CompleteArgs, ctx: &Ctx) -> Output {
    let names = (|| -> Result<Vec<String>> {
        let store = ctx.store()?;
        match (a.what.as_str(), &a.run) {
            ("runs", _) => Ok(agent_rewind::ops::list::list_runs(&store, true)?
                .runs
                .into_iter()
                .map(|r| r.run)
                .collect()),
            ("steps", Some(run)) => {
                let run = agent_rewind::ids::RunId::new(run.clone())?;
                let mut steps: Vec<String> = vec![];
                for c in agent_rewind::ops::list::list_checkpoints(&store, &run)? {
                    if let Some(s) = &c.line().step
                        && !steps.contains(s)
                    {
                        steps.push(s.clone());
                    }
                }
                Ok(steps)
            }
            _ => Ok(vec![]),
        }
    })()
    .unwrap_or_default();
    let text = names.join("\n");
    Output::new(serde_json::json!(names), text)
}
