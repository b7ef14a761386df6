//! The MCP server's tools (`git agent-rewind mcp`): their names, their arguments
//! as JSON schemas, and each call answered with the JSON the same command prints with
//! `--json` (wrapped in an object where that is an array). Reads go through the command
//! handlers; writes are planned first and applied only with the plan's id, after the
//! library's guard ([`agent_rewind::mcp`]) let the caller reach the target and every path
//! the plan writes.
//!
//! Owns the protocol side (rmcp); decides nothing about what a caller may do, and never
//! touches a repository other than the one of the worktree it started in.

use crate::cli::commands::{checkpoint, list, log, show, status};
use crate::cli::mcp_events::{Done, EVENTS_CAPABILITY, applied, notify};
use crate::cli::mcp_input::{MAX_MESSAGE_BYTES, TOO_LARGE_METHOD};
use crate::cli::{Ctx, Output, paths::worktree_paths, record::RecordArgs};
use agent_rewind::mcp::{
    Caller, check_plan, check_restore, check_restore_source, check_revert, plan_id,
};
use agent_rewind::ops;
use agent_rewind::ops::post_rewind::RewindEvent;
use agent_rewind_core::error::{Error, Result};
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{
    CallToolResult, CustomRequest, CustomResult, ErrorCode, ErrorData, Implementation,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::PathBuf;

/// The most bytes of unified diff one `diff` call returns.
pub const MAX_DIFF_BYTES: usize = 64 * 1024;

/// The most lines one `blame` call returns.
pub const MAX_BLAME_LINES: usize = 2000;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct NoArgs {}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CheckpointAddress {
    /// A checkpoint as on the command line: `run@N`, `run/step`, `run@-1`, an id or prefix.
    pub checkpoint: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct RunArg {
    /// A run id or a unique prefix (default: this worktree's active run).
    pub run: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct DiffRequest {
    /// The checkpoint to diff from.
    pub from: String,
    /// The checkpoint to diff to (default: the worktree as it is now).
    pub to: Option<String>,
    /// Only these paths (files or folders, relative to the worktree's top).
    #[serde(default)]
    pub paths: Vec<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct BlameRequest {
    /// The file, relative to the worktree's top.
    pub file: String,
    /// The commit to blame it at (default: the file in the worktree as it is now).
    pub rev: Option<String>,
    /// Only these lines, as git's `-L` reads them (`10,40`, `10,+5`, `/regex/,+3`).
    #[serde(default)]
    pub lines: Vec<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CheckpointRequest {
    /// The step the checkpoint belongs to.
    pub step: String,
    /// A message kept with it.
    pub message: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct RevertRequest {
    /// What to take back: a run, `run/step`, or one checkpoint (`run@N`).
    pub target: String,
    /// The id of the plan a call without it returned: apply exactly that plan.
    pub plan_id: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct RestoreRequest {
    /// The checkpoint to take the files from.
    pub checkpoint: String,
    /// The paths to restore (files or folders, relative to the worktree's top).
    pub paths: Vec<String>,
    /// The id of the plan a call without it returned: apply exactly that plan.
    pub plan_id: Option<String>,
}

/// The server: the worktree it started in, and its tools.
#[derive(Clone)]
pub struct Server {
    dir: PathBuf,
    tool_router: ToolRouter<Self>,
}

impl Server {
    pub fn new(dir: PathBuf) -> Server {
        Server {
            dir,
            tool_router: Self::tool_router(),
        }
    }

    fn ctx(&self) -> Ctx {
        Ctx {
            dir: self.dir.clone(),
            in_cwd: false,
            colour: crate::cli::Colour::Never,
            json: true,
        }
    }

    /// Who calls, as the client introduced itself: in its `initialize`, or (a client of the
    /// stateless protocol, which sends no `initialize`) in the request's own `_meta`.
    fn caller(&self, request: &RequestContext<RoleServer>) -> Result<Caller> {
        let client = request
            .peer
            .peer_info()
            .map(|i| i.client_info.name.clone())
            .or_else(|| request.meta.client_info().map(|i| i.name))
            .unwrap_or_default();
        Ok(Caller::identify(&self.ctx().store()?, &client))
    }
}

/// A tool's answer: its JSON as structured content, or the error as a tool error (what
/// failed, and the hint), never a protocol error.
fn answer(result: Result<Value>) -> CallToolResult {
    match result {
        Ok(v @ Value::Object(_)) => CallToolResult::structured(v),
        Ok(v) => CallToolResult::structured(json!({ "result": v })),
        Err(e) => CallToolResult::structured_error(json!({
            "error": e.message,
            "hint": e.hint,
        })),
    }
}

/// The JSON document a command handler made.
fn document(out: Output) -> Result<Value> {
    if let Some(write) = out.json_writer {
        let mut bytes = vec![];
        write(&mut bytes).map_err(|e| Error::other(format!("writing JSON: {e}")))?;
        return serde_json::from_slice(&bytes)
            .map_err(|e| Error::other(format!("reading JSON: {e}")));
    }
    Ok(out.json)
}

#[tool_router]
impl Server {
    #[tool(
        description = "The runs of this repository: id, status, steps, last checkpoint, lineage."
    )]
    fn list_runs(&self, _: Parameters<NoArgs>) -> CallToolResult {
        let ctx = self.ctx();
        answer(
            list::run(
                list::ListArgs {
                    run: None,
                    all: false,
                    usage: false,
                },
                true,
                &ctx,
            )
            .and_then(document)
            .map(|runs| json!({ "runs": runs })),
        )
    }

    #[tool(
        description = "One checkpoint: its metadata (agent, session, touched paths …) and the files it changed against its predecessor."
    )]
    fn show_checkpoint(&self, Parameters(a): Parameters<CheckpointAddress>) -> CallToolResult {
        let args = show::ShowArgs {
            checkpoint: Some(a.checkpoint),
        };
        answer(show::run(args, &self.ctx()).and_then(document))
    }

    #[tool(
        description = "This worktree's active run: its last checkpoint, unfinished steps, the next action."
    )]
    fn status(&self, _: Parameters<NoArgs>) -> CallToolResult {
        answer(status::run(&self.ctx()).and_then(document))
    }

    #[tool(description = "The checkpoints of a run, oldest first (default: the active run).")]
    fn log(&self, Parameters(a): Parameters<RunArg>) -> CallToolResult {
        let ctx = self.ctx();
        let result = (|| {
            let run = match a.run {
                Some(r) => r,
                None => agent_rewind::journal::active_run(&ctx.store()?)?
                    .ok_or_else(|| Error::not_found("no active run in this worktree"))?
                    .to_string(),
            };
            let args = list::ListArgs {
                run: Some(run.clone()),
                all: false,
                usage: false,
            };
            let checkpoints = document(list::run(args, true, &ctx)?)?;
            let lineage = document(log::run(
                log::LogArgs {
                    run: Some(run.clone()),
                    graph: false,
                    all: false,
                    format: None,
                    s: None,
                    g: None,
                    pickaxe_regex: false,
                },
                true,
                &ctx,
            )?)?;
            Ok(json!({ "run": run, "checkpoints": checkpoints, "lineage": lineage }))
        })();
        answer(result)
    }

    #[tool(
        description = "Unified diff (git's format) from a checkpoint to another checkpoint or to the worktree as it is now; at most 64 KiB of patch, paths filterable."
    )]
    fn diff(&self, Parameters(a): Parameters<DiffRequest>) -> CallToolResult {
        answer(diff(&self.ctx(), a))
    }

    #[tool(
        description = "Who wrote each line of a file: an agent's turn (agent, model, run, step, checkpoint, session) or a person (commit and author), as git blame -M -C follows lines; at most 2000 lines per call, narrowed with `lines`."
    )]
    fn blame(&self, Parameters(a): Parameters<BlameRequest>) -> CallToolResult {
        answer(blame(&self.ctx(), a))
    }

    #[tool(description = "Record a checkpoint of the worktree now, as a step of the active run.")]
    fn checkpoint(
        &self,
        Parameters(a): Parameters<CheckpointRequest>,
        request: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let result = (|| {
            let caller = self.caller(&request)?;
            let mut meta = vec!["via=mcp".to_string(), format!("by={}", caller.by())];
            if let Some(a) = &caller.agent {
                meta.push(format!("mcp_agent={a}"));
            }
            let args = checkpoint::CheckpointArgs {
                step: a.step,
                event: None,
                record: RecordArgs {
                    message: a.message,
                    meta,
                    session_id: caller.session.clone(),
                    ..Default::default()
                },
            };
            document(checkpoint::run(args, &self.ctx())?)
        })();
        answer(result)
    }

    #[tool(
        description = "Take back what one of your own turns (a checkpoint), steps or runs changed, keeping everyone else's work: refused when the range holds another agent's or a person's checkpoint, or a file your turns did not report editing. Without plan_id: the plan and its id, nothing written. With plan_id: applies that plan (refused if anything changed since), after a backup; returns what changed and the undo that takes it back."
    )]
    async fn revert(
        &self,
        Parameters(a): Parameters<RevertRequest>,
        request: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let done = self
            .caller(&request)
            .and_then(|c| revert(&self.ctx(), &c, a));
        answer(notify(&request, done).await)
    }

    #[tool(
        description = "Put paths back from one of your own checkpoints of the active run: refused for a path another agent or a person changed since (or that changed since the newest checkpoint). Without plan_id: the plan and its id, nothing written. With plan_id: applies that plan (refused if anything changed since), after a backup; returns what changed and the undo that takes it back."
    )]
    async fn restore(
        &self,
        Parameters(a): Parameters<RestoreRequest>,
        request: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let done = self
            .caller(&request)
            .and_then(|c| restore(&self.ctx(), &c, a));
        answer(notify(&request, done).await)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        // The tool's own name and version, not the protocol library's (its default). The
        // experimental capability says a client may ask to be told of our operations.
        let mut capabilities = ServerCapabilities::builder().enable_tools().build();
        capabilities.experimental =
            Some([(EVENTS_CAPABILITY.to_string(), Default::default())].into());
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                "git-agent-rewind",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "git agent-rewind: the checkpoints of this worktree's agent runs. Read freely; \
             revert and restore return a plan first and apply it only with its plan_id.",
            )
    }

    /// The stand-in for a message over the size limit (cli/mcp_input.rs) is answered with
    /// the error that names the limit; any other method we do not know is not found.
    fn on_custom_request(
        &self,
        request: CustomRequest,
        _: RequestContext<RoleServer>,
    ) -> impl Future<Output = std::result::Result<CustomResult, ErrorData>> + Send + '_ {
        std::future::ready(Err(if request.method == TOO_LARGE_METHOD {
            too_large(request.params.as_ref())
        } else {
            ErrorData::new(ErrorCode::METHOD_NOT_FOUND, request.method, None)
        }))
    }
}

/// The error for a message of `params.bytes` bytes, over [`MAX_MESSAGE_BYTES`].
fn too_large(params: Option<&Value>) -> ErrorData {
    let bytes = params.and_then(|p| p["bytes"].as_u64());
    let size = bytes.map_or_else(String::new, |b| format!(" ({b} bytes)"));
    ErrorData::invalid_request(
        format!(
            "the message{size} is larger than the {MAX_MESSAGE_BYTES} bytes (16 MiB, its \
             newline included) one MCP message may have; it was not read"
        ),
        Some(json!({ "limit": MAX_MESSAGE_BYTES, "bytes": bytes })),
    )
}

fn diff(ctx: &Ctx, a: DiffRequest) -> Result<Value> {
    let store = ctx.store()?;
    let root = store.worktree().root()?.to_path_buf();
    let paths = worktree_paths(&root, &root, &a.paths)?;
    let from = ops::address::spec(&store, Some(&a.from))?;
    let from_cp = agent_rewind::catalog::Catalog::new(&store).resolve(&from)?;
    let from_tree = from_cp.commit.tree.to_string();
    let (to, to_tree) = match &a.to {
        Some(t) => {
            let spec = ops::address::spec(&store, Some(t))?;
            let cp = agent_rewind::catalog::Catalog::new(&store).resolve(&spec)?;
            (cp.id().to_string(), cp.commit.tree.to_string())
        }
        None => {
            let policy = agent_rewind::snapshot::Policy::from_config(&store)?;
            let snap = agent_rewind::snapshot::snapshot_worktree(&store, &policy)?;
            ("worktree".to_string(), snap.tree.to_string())
        }
    };
    let how = agent_rewind::store::DiffText {
        paths: &paths,
        ..Default::default()
    };
    let stat = store.diff().text(
        &from_tree,
        &to_tree,
        &agent_rewind::store::DiffText { stat: true, ..how },
    )?;
    let mut patch = store.diff().text(&from_tree, &to_tree, &how)?;
    let truncated = patch.len() > MAX_DIFF_BYTES;
    if truncated {
        patch.truncate(MAX_DIFF_BYTES);
    }
    Ok(json!({
        "from": from_cp.id().to_string(),
        "to": to,
        "stat": String::from_utf8_lossy(&stat),
        "patch": String::from_utf8_lossy(&patch),
        "truncated": truncated,
    }))
}

fn blame(ctx: &Ctx, a: BlameRequest) -> Result<Value> {
    let store = ctx.store()?;
    let root = store.worktree().root()?.to_path_buf();
    let rel = worktree_paths(&root, &root, std::slice::from_ref(&a.file))?
        .pop()
        .unwrap_or_default();
    if rel == "." {
        return Err(Error::usage(format!("{}: not a file", a.file))
            .with_hint("name one file, relative to the worktree's top"));
    }
    let mut blamed = ops::blame::blame(&store, &root, &rel, &rel, a.rev.as_deref(), &a.lines)?;
    let truncated = blamed.lines.len() > MAX_BLAME_LINES;
    blamed.lines.truncate(MAX_BLAME_LINES);
    let mut out =
        serde_json::to_value(&blamed).map_err(|e| Error::other(format!("writing JSON: {e}")))?;
    out["truncated"] = json!(truncated);
    Ok(out)
}

fn revert(ctx: &Ctx, caller: &Caller, a: RevertRequest) -> Result<Done> {
    let store = ctx.store()?;
    let spec = ops::address::spec(&store, Some(&a.target))?;
    let reach = check_revert(&store, caller, &spec)?;
    let request = json!({"tool": "revert", "target": a.target});
    let planned = ops::revert::revert(
        &store,
        &spec,
        &ops::revert::RevertOptions {
            dry_run: true,
            ..Default::default()
        },
    )?;
    reach.check_plan(&store, &planned)?;
    let plan = crate::cli::output::json(&planned);
    let id = plan_id(&store, &request, &plan)?;
    let Some(given) = a.plan_id else {
        return Ok(Done::plan(
            json!({ "plan": plan, "plan_id": id, "applied": false }),
        ));
    };
    check_plan(&given, &id)?;
    let out = ops::revert::revert(
        &store,
        &spec,
        &ops::revert::RevertOptions {
            by: Some(caller.by()),
            ..Default::default()
        },
    )?;
    let undo = out
        .backup
        .as_ref()
        .map(|b| format!("git agent-rewind undo {}", b.commit));
    let event = RewindEvent {
        operation: "revert",
        source: Some(&out.from),
        target: Some(&out.to),
        backup: out.backup.as_ref().map(|b| b.commit.as_str()),
    };
    let answer =
        json!({ "applied": true, "plan_id": id, "result": out, "by": caller.by(), "undo": undo });
    Ok(applied(&store, &event, &caller.by(), answer))
}

fn restore(ctx: &Ctx, caller: &Caller, a: RestoreRequest) -> Result<Done> {
    let store = ctx.store()?;
    let root = store.worktree().root()?.to_path_buf();
    if a.paths.is_empty() {
        return Err(Error::usage("name the paths to restore"));
    }
    let paths = worktree_paths(&root, &root, &a.paths)?;
    let spec = ops::address::spec(&store, Some(&a.checkpoint))?;
    check_restore_source(&store, caller, &spec)?;
    let request = json!({"tool": "restore", "checkpoint": a.checkpoint, "paths": paths});
    let files = ops::restore::restore_plan(&store, &spec, &paths)?;
    check_restore(&store, caller, &spec, &files)?;
    let plan = json!({ "checkpoint": a.checkpoint, "files": files });
    let id = plan_id(&store, &request, &plan)?;
    let Some(given) = a.plan_id else {
        return Ok(Done::plan(
            json!({ "plan": plan, "plan_id": id, "applied": false }),
        ));
    };
    check_plan(&given, &id)?;
    let out = ops::restore::restore(&store, &spec, &paths)?;
    let undo = format!("git agent-rewind undo {}", out.backup.commit);
    let event = RewindEvent {
        operation: "restore",
        source: Some(&out.checkpoint),
        target: None,
        backup: Some(&out.backup.commit),
    };
    let answer =
        json!({ "applied": true, "plan_id": id, "result": out, "by": caller.by(), "undo": undo });
    Ok(applied(&store, &event, &caller.by(), answer))
}
