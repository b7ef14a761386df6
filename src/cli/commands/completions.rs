//! `completions`: print a shell's completion script.

use crate::cli::args::Cli;
use crate::cli::{Ctx, Output};
use agent_rewind::error::Result;
use clap::Args;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    pub shell: clap_complete::Shell,
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
