//! `rewind` and `fork`: a new run pinned to an earlier point of a run.

use crate::cli::{Ctx, Output, render};
use agent_rewind::ops;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::RunId;
use agent_rewind_core::process::Purpose;
use clap::Args;
use std::path::PathBuf;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind rewind r1 --to implement
      Start a new run from the state right before r1's implement step began and check it out here; r1 is archived, and `undo` brings the current files back.
  git agent-rewind rewind r1 --to plan --after
      Start from the state when the plan step finished instead.
  git agent-rewind rewind r1 --list
      List r1's checkpoints, to choose where to go back to.";

/// The examples ending `fork -h`.
pub const FORK_EXAMPLES: &str = "Examples:
  git agent-rewind fork r1 --to implement --worktree ../try-b
      Try another way from before step implement in a new worktree ../try-b; r1 stays active here.
  git agent-rewind fork r1 --to r1@4 --run r1-alt --label \"other approach\"
      Fork from checkpoint r1@4 into a run named r1-alt, checked out here.";

#[derive(Debug, Args)]
pub struct RewindArgs {
    /// The run to go back in (an id or a unique prefix; default: the active run).
    pub run: Option<String>,
    /// A step (the state right before its latest attempt began), or a checkpoint
    /// (`<run>@<seq>`, a commit id).
    #[arg(long, value_name = "STEP|CHECKPOINT", required_unless_present = "list")]
    pub to: Option<String>,
    /// The state when the step last finished, instead of right before it began.
    #[arg(long)]
    pub after: bool,
    /// Check out into a new linked worktree at PATH; this worktree is left alone.
    #[arg(long, value_name = "PATH", conflicts_with = "no_checkout")]
    pub worktree: Option<PathBuf>,
    /// Only write refs (for orchestrators).
    #[arg(long)]
    pub no_checkout: bool,
    /// The new run's id (default: generated).
    #[arg(long = "run", value_name = "NEWID")]
    pub new_run: Option<String>,
    /// Branch to create (default: agent-runs/<newrun>).
    #[arg(long, value_name = "NAME")]
    pub branch: Option<String>,
    /// A label for the new run.
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// List the run's checkpoints instead (same as `list RUN`).
    #[arg(long)]
    pub list: bool,
    /// Say what would happen (the files that would change, what stays in place, where the
    /// agent's conversation would resume) and write nothing.
    #[arg(long, short = 'n')]
    pub dry_run: bool,
    /// Then run the printed command that continues the agent's conversation (in the new
    /// worktree with --worktree), with ARGS after `--` appended; exit with its status.
    #[arg(long, conflicts_with_all = ["dry_run", "no_checkout", "list"])]
    pub agent_resume: bool,
    /// Arguments for the agent's command (after `--`), with --agent-resume.
    #[arg(last = true, value_name = "ARGS", requires = "agent_resume")]
    pub agent_args: Vec<String>,
}

/// `rewind` (`fork == false`) or `fork`.
pub fn run(a: RewindArgs, fork: bool, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    let style = ctx.style(&store)?;
    let run = ops::address::run_or_active(&store, a.run.as_deref())?;
    if a.list {
        let cps = ops::list::list_checkpoints(&store, &run)?;
        return Ok(Output::new(
            cps.iter().map(|c| c.to_json()).collect(),
            render::checkpoints_table(&cps, &style),
        ));
    }
    let to =
        a.to.ok_or_else(|| Error::usage("--to <step|checkpoint> is required"))?;
    if a.agent_resume && ctx.json {
        return Err(Error::usage(
            "--agent-resume runs the agent in this terminal; it cannot be combined with --json",
        )
        .with_hint("use resume_command from the --json output"));
    }
    let opts = ops::rewind::RewindOptions {
        to: ops::rewind::RewindTarget::Named(to),
        after: a.after,
        worktree: a.worktree.map(|p| ctx.path(&p)),
        no_checkout: a.no_checkout,
        new_run: a.new_run.map(RunId::new).transpose()?,
        branch: a.branch,
        fork,
        label: a.label,
        dry_run: a.dry_run,
    };
    let agent = if a.agent_resume {
        // Everything the agent needs is checked before anything is written. Only the
        // conversation is wanted of this preview: it skips planning the checkout (a pass
        // over the worktree), which the rewind itself does once, with all its checks.
        let preview = ops::rewind::rewind(
            &store,
            &run,
            ops::rewind::RewindOptions {
                dry_run: true,
                no_checkout: true,
                ..opts.clone()
            },
        )?;
        Some(agent_command(&preview)?)
    } else {
        None
    };
    let out = ops::rewind::rewind(&store, &run, opts)?;
    if !out.dry_run {
        crate::cli::maintenance::after_recording(&store);
        crate::cli::post_rewind::run_hook(
            &store,
            &ops::post_rewind::RewindEvent {
                operation: if fork { "fork" } else { "rewind" },
                source: Some(&out.from_checkpoint),
                target: Some(&out.checkpoint),
                backup: out.backup.as_ref().map(|b| b.commit.as_str()),
            },
        );
    }
    let json = serde_json::to_value(&out).expect("json");
    let human = render::rewound(&out, &style);
    let Some(agent) = agent else {
        return Ok(Output::new(json, human));
    };
    // What was done is told before the agent takes the terminal.
    {
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{}", render::terminal_safe(&human));
        let _ = stdout.flush();
    }
    let mut output = Output::raw(json, vec![]);
    output.exit_code = resume_agent(&out, agent, &a.agent_args, ctx)?;
    Ok(output)
}

/// Run the agent's command that continues its conversation (`--agent-resume`), in the
/// worktree the rewind or fork checked out; its exit status. The command is the one printed,
/// from what this repository recorded: the agent's name picks the program, and the recorded
/// ids are arguments, never a shell line.
fn resume_agent(
    out: &ops::rewind::RewindOutcome,
    (program, args): (String, Vec<String>),
    extra: &[String],
    ctx: &Ctx,
) -> Result<i32> {
    let dir = match &out.worktree {
        Some(w) => std::path::PathBuf::from(w),
        None => ctx.store()?.worktree().root()?.to_path_buf(),
    };
    crate::cli::stderr_line(&format!(
        "running: {program} {}{}",
        args.join(" "),
        extra.iter().map(|a| format!(" {a}")).collect::<String>()
    ));
    // Ctrl-C is the agent's: like git waiting for an editor, we outlive it and report its
    // status.
    agent_rewind_core::process::interrupt::catch();
    let status = agent_rewind_core::process::command(Purpose::AgentResume, &program)
        .args(&args)
        .args(extra)
        .current_dir(&dir)
        .status()
        .map_err(|e| {
            Error::not_found(format!("could not run {program}: {e}"))
                .with_hint(format!("the {} itself was done", out.relation))
        })?;
    Ok(status.code().unwrap_or(1))
}

/// The oldest Claude Code whose `--resume-session-at` (the CLI's spelling of the Agent SDK's
/// `resumeSessionAt`, absent from `claude --help`) was checked to fork at a message.
const CLAUDE_RESUME_AT_CHECKED: [u32; 3] = [2, 1, 197];

/// The agent's program (found on `PATH`) and its arguments, or why there is none. A fork at
/// a message through an option the CLI does not document is used only from the version it
/// was checked with: an older CLI continues the conversation at its end, and says so.
fn agent_command(out: &ops::rewind::RewindOutcome) -> Result<(String, Vec<String>)> {
    let Some((program, args)) = out.resume_argv.split_first() else {
        return Err(Error::not_found(
            "no agent conversation was recorded at that point: nothing to resume",
        )
        .with_hint("nothing was changed; leave out --agent-resume"));
    };
    let path = std::env::var_os("PATH").unwrap_or_default();
    if !std::env::split_paths(&path).any(|d| d.join(program).is_file()) {
        return Err(
            Error::not_found(format!("{program} is not on PATH")).with_hint(
                "nothing was changed; install the agent's CLI or leave out --agent-resume",
            ),
        );
    }
    let mut args = args.to_vec();
    if let Some(at) = args.iter().position(|a| a == "--resume-session-at") {
        let version = agent_rewind_core::process::command(Purpose::AgentResume, program)
            .arg("--version")
            .output()
            .ok()
            .and_then(|o| semver_prefix(&String::from_utf8_lossy(&o.stdout)));
        if version.is_none_or(|v| v < CLAUDE_RESUME_AT_CHECKED) {
            args.drain(at..(at + 2).min(args.len()));
            let [a, b, c] = CLAUDE_RESUME_AT_CHECKED;
            crate::cli::render::warn(&format!(
                "{program} {} is older than {a}.{b}.{c}, whose --resume-session-at was \
                 checked: the conversation continues at its end",
                version.map_or("(version unknown)".into(), |[x, y, z]| format!(
                    "{x}.{y}.{z}"
                )),
            ));
        }
    }
    Ok((program.clone(), args))
}

/// `major.minor.patch` at the start of a version line (`2.1.197 (Claude Code)`).
fn semver_prefix(text: &str) -> Option<[u32; 3]> {
    let word = text.split_whitespace().next()?;
    let mut parts = word.split('.').map(|p| p.parse::<u32>().ok());
    Some([parts.next()??, parts.next()??, parts.next()??])
}
