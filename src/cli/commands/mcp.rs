//! `mcp`: an MCP server on standard input and output for the worktree it starts in. The
//! tools are in `cli/mcp_server.rs`, the reading of stdin in `cli/mcp_input.rs`; this file
//! only starts the runtime and serves until the client closes the connection. Nothing but
//! the protocol is written to stdout.

use crate::cli::{Ctx, Output};
use agent_rewind_core::error::{Error, Result};
use clap::Args;
use rmcp::ServiceExt;

pub const EXAMPLES: &str = "Examples:
  git agent-rewind mcp
      Serve this worktree's runs to an MCP client on stdin/stdout (agents start it
      themselves: `git agent-rewind hooks install --agent claude --mcp` adds it to
      Claude Code's project configuration).";

#[derive(Debug, Args)]
pub struct McpArgs {}

pub fn run(_: McpArgs, ctx: &Ctx) -> Result<Output> {
    // The repository must open before the client is told anything.
    ctx.store()?;
    let server = crate::cli::mcp_server::Server::new(ctx.dir.clone());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::other(format!("could not start the MCP server: {e}")))?;
    runtime
        .block_on(async move {
            // A message over the size limit is answered, not dropped (cli/mcp_input.rs).
            let input = crate::cli::mcp_input::BoundedLines::new(tokio::io::stdin());
            let service = server.serve((input, tokio::io::stdout())).await?;
            service.waiting().await?;
            Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
        })
        .map_err(|e| Error::other(format!("MCP server: {e}")))?;
    Ok(Output::raw(serde_json::Value::Null, vec![]))
}
