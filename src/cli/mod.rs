//! The thin CLI: turn parsed arguments into library calls and their results into output.
//! It knows nothing about git internals; every decision lives in the library.

pub mod args;
mod hooks;
mod render;
mod share;
mod view;

use agent_rewind::error::{Error, Result};
use agent_rewind::ids::{RunId, StepName};
use agent_rewind::model::{Event, Status, StepKind};
use agent_rewind::ops;
use agent_rewind::store::Store;
use args::{Cli, Command, RecordArgs, StepCommand};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What a command produced: the JSON document and the human rendering of the same thing.
pub struct Output {
    pub json: serde_json::Value,
    pub human: String,
    /// Exit status after printing: 0, or 1 when the command reported a partial failure
    /// (e.g. a push with rejected runs) in its output.
    pub exit_code: i32,
}

impl Output {
    fn new(json: serde_json::Value, human: String) -> Self {
        Output {
            json,
            human,
            exit_code: 0,
        }
    }
}

pub fn execute(cli: Cli) -> Result<Output> {
    let dir = match &cli.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir()
            .map_err(|e| Error::other(format!("no current directory: {e}")))?,
    };
    let open = || Store::discover(&dir);
    let style = render::Style::detect();
    let json = cli.json;
    match cli.command {
        Command::Init(a) => {
            let store = open()?;
            let hook_opts = hooks::init_options(&a)?;
            let out = ops::init::init(&store)?;
            let human = if out.added.is_empty() {
                format!("already initialized ({})", out.git_dir)
            } else {
                format!("initialized {}: set {}", out.git_dir, out.added.join(", "))
            };
            let mut output = Output::new(serde_json::to_value(&out).expect("json"), human);
            if let Some(opts) = hook_opts {
                hooks::init_hooks(&store, &opts, &mut output)?;
            }
            Ok(output)
        }
        Command::Start(a) => {
            let store = open()?;
            let workflow_digest = match &a.workflow {
                Some(p) => Some(file_digest(&store, p)?),
                None => None,
            };
            let rec = ops::start::start(
                &store,
                ops::start::StartOptions {
                    run: a.run.map(RunId::new).transpose()?,
                    label: a.label,
                    workflow_digest,
                    meta: parse_meta(&a.meta)?,
                    ..Default::default()
                },
            )?;
            let human = format!(
                "started run {}\n  checkpoint {}",
                rec.line.run,
                render::short(&rec.checkpoint.to_string())
            );
            let mut json = rec.to_json();
            json["run"] = rec.line.run.clone().into();
            Ok(Output::new(json, human))
        }
        Command::Checkpoint(a) => {
            let store = open()?;
            let step = StepName::new(a.step)?;
            let mut opts = record_options(&a.record)?;
            opts.event = a.event.as_deref().map(Event::parse).transpose()?;
            let out = ops::checkpoint::checkpoint(&store, &step, opts)?;
            Ok(recorded_output(&out, &style))
        }
        Command::Step(StepCommand::Begin { step, record }) => {
            let store = open()?;
            let out = ops::checkpoint::step_begin(
                &store,
                &StepName::new(step)?,
                record_options(&record)?,
            )?;
            Ok(recorded_output(&out, &style))
        }
        Command::Step(StepCommand::End {
            step,
            exit_code,
            record,
        }) => {
            let store = open()?;
            let mut opts = record_options(&record)?;
            opts.exit_code = exit_code;
            let out = ops::checkpoint::step_end(&store, &StepName::new(step)?, opts)?;
            Ok(recorded_output(&out, &style))
        }
        Command::List(a) => {
            let store = open()?;
            match a.run {
                None => {
                    let list = ops::list::list_runs(&store, a.all)?;
                    for p in &list.problems {
                        eprintln!("warning: {p}");
                    }
                    Ok(Output::new(
                        serde_json::to_value(&list.runs).expect("json"),
                        render::runs_table(&list.runs, &style),
                    ))
                }
                Some(run) => {
                    let run = ops::address::run(&store, &run)?;
                    let cps = ops::list::list_checkpoints(&store, &run)?;
                    Ok(Output::new(
                        cps.iter().map(|c| c.to_json()).collect(),
                        render::checkpoints_table(&cps, &style),
                    ))
                }
            }
        }
        Command::Show(a) => {
            let store = open()?;
            let spec = ops::address::spec(&store, a.checkpoint.as_deref())?;
            let shown = ops::show::show(&store, &spec)?;
            Ok(Output::new(shown.to_json(), render::shown(&shown, &style)))
        }
        Command::Log(a) => {
            let store = open()?;
            if a.graph
                && let Some(out) = view::log_graph(&store, &a, json)?
            {
                return Ok(out);
            }
            let run = ops::address::run_or_active(&store, a.run.as_deref())?;
            if a.graph {
                let g = ops::log::lineage_graph(&store, &run)?;
                Ok(Output::new(
                    serde_json::to_value(vec![&g]).expect("json"),
                    render::graph(&g, &style),
                ))
            } else {
                let chain = ops::log::lineage(&store, &run)?;
                Ok(Output::new(
                    chain.iter().map(|c| c.to_json()).collect(),
                    render::lineage(&chain, &style),
                ))
            }
        }
        Command::Diff(a) => {
            let store = open()?;
            let first = ops::address::spec(&store, a.first.as_deref())?;
            let d = match a.second {
                Some(s) => {
                    let second = ops::address::spec(&store, Some(&s))?;
                    ops::diff::diff(&store, Some(&first), &second)?
                }
                None => ops::diff::diff(&store, None, &first)?,
            };
            Ok(Output::new(
                serde_json::to_value(&d).expect("json"),
                render::diff(&d, &style),
            ))
        }
        Command::View(a) => view::view(&open()?, a, &dir),
        Command::Status => {
            let store = open()?;
            match ops::status::status(&store)? {
                None => Ok(Output::new(
                    serde_json::json!({"run": null}),
                    "no active run in this worktree (start one with `git agent-rewind start`)"
                        .into(),
                )),
                Some(s) => Ok(Output::new(s.to_json(), render::status(&s, &style))),
            }
        }
        Command::Rewind(a) => rewind(&open()?, a, false, &style),
        Command::Fork(a) => rewind(&open()?, a, true, &style),
        Command::Restore(a) => {
            let store = open()?;
            let out = ops::restore::restore(
                &store,
                &ops::address::spec(&store, Some(&a.checkpoint))?,
                &a.paths,
            )?;
            let human = format!(
                "restored {} path(s) from {}\n  backup {} (`git agent-rewind undo` brings the previous state back)\n{}",
                out.changed.len(),
                render::short(&out.checkpoint),
                render::short(&out.backup.commit),
                render::left_in_place(&out.left_in_place)
            )
            .trim_end()
            .to_string();
            Ok(Output::new(
                serde_json::to_value(&out).expect("json"),
                human,
            ))
        }
        Command::Revert(a) => {
            let store = open()?;
            let out = ops::revert::revert(
                &store,
                &ops::address::spec(&store, Some(&a.target))?,
                &ops::revert::RevertOptions {
                    dry_run: a.dry_run,
                    conflict_markers: a.conflict == "markers",
                },
            )?;
            let human = render::reverted(&out);
            Ok(Output::new(
                serde_json::to_value(&out).expect("json"),
                human,
            ))
        }
        Command::Run(a) => {
            let store = open()?;
            let report = ops::run::run_workflow(
                &store,
                &a.workflow,
                a.run.map(RunId::new).transpose()?,
                a.label,
            )?;
            Ok(run_report_output(report, &style))
        }
        Command::Resume(a) => {
            let store = open()?;
            let run = a
                .run
                .as_deref()
                .map(|r| ops::address::run(&store, r))
                .transpose()?;
            let report = ops::run::resume(&store, run, a.retry.as_deref(), a.workflow.as_deref())?;
            Ok(run_report_output(report, &style))
        }
        Command::Approve(a) => approval(&open()?, a, true),
        Command::Reject(a) => approval(&open()?, a, false),
        Command::Steer(a) => {
            let store = open()?;
            let run = ops::address::run(&store, &a.run)?;
            let mut edits = vec![];
            for e in &a.edits {
                let (p, f) = e.split_once('=').ok_or_else(|| {
                    Error::usage(format!("invalid --edit {e:?}: expected PATH=FILE"))
                })?;
                edits.push((p.to_string(), PathBuf::from(f)));
            }
            let invalidate = a
                .invalidate
                .into_iter()
                .map(StepName::new)
                .collect::<Result<Vec<_>>>()?;
            let out = ops::steer::steer(&store, &run, &edits, &invalidate, a.yes && !a.dry_run)?;
            Ok(Output::new(
                serde_json::to_value(&out).expect("json"),
                render::steer(&out, &style),
            ))
        }
        Command::Hooks(cmd) => hooks::hooks(&open()?, cmd),
        Command::Hook(a) => Ok(hooks::hook(&a, &dir)),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "git-agent-rewind", &mut buf);
            let text = String::from_utf8_lossy(&buf).trim_end().to_string();
            Ok(Output::new(
                serde_json::json!({ "shell": shell.to_string(), "script": text }),
                text,
            ))
        }
        Command::Push(a) => share::push(&open()?, a, &style),
        Command::Fetch(a) => share::fetch(&open()?, a, &style),
        Command::Delete(a) => share::delete(&open()?, a),
        Command::Gc(a) => share::gc(&open()?, a, &style),
        Command::Export(a) => share::export(&open()?, a),
        Command::Import(a) => share::import(&open()?, a, &style),
        Command::Undo => {
            let out = ops::undo::undo(&open()?)?;
            let human = render::undone(&out);
            Ok(Output::new(
                serde_json::to_value(&out).expect("json"),
                human,
            ))
        }
    }
}

fn rewind(store: &Store, a: args::RewindArgs, fork: bool, style: &render::Style) -> Result<Output> {
    let run = ops::address::run_or_active(store, a.run.as_deref())?;
    if a.list {
        let cps = ops::list::list_checkpoints(store, &run)?;
        return Ok(Output::new(
            cps.iter().map(|c| c.to_json()).collect(),
            render::checkpoints_table(&cps, style),
        ));
    }
    let to =
        a.to.ok_or_else(|| Error::usage("--to <step|checkpoint> is required"))?;
    let out = ops::rewind::rewind(
        store,
        &run,
        ops::rewind::RewindOptions {
            to: ops::rewind::RewindTarget::Named(to),
            after: a.after,
            worktree: a.worktree,
            no_checkout: a.no_checkout,
            new_run: a.new_run.map(RunId::new).transpose()?,
            branch: a.branch,
            fork,
            label: a.label,
        },
    )?;
    Ok(Output::new(
        serde_json::to_value(&out).expect("json"),
        render::rewound(&out, style),
    ))
}

fn approval(store: &Store, a: args::ApproveArgs, approved: bool) -> Result<Output> {
    let out = ops::approve::decide(
        store,
        &ops::address::spec(store, Some(&a.checkpoint))?,
        approved,
        a.by,
        a.message,
    )?;
    let human = format!(
        "{} checkpoint {} ({}{}) by {}",
        out.decision,
        render::short(&out.checkpoint),
        out.run,
        out.step
            .as_ref()
            .map(|s| format!("/{s}"))
            .unwrap_or_default(),
        out.by
    );
    Ok(Output::new(
        serde_json::to_value(&out).expect("json"),
        human,
    ))
}

/// A workflow report; a stopped run is still a successful command (the report says why).
fn run_report_output(
    report: agent_rewind::workflow::runner::RunReport,
    style: &render::Style,
) -> Output {
    Output::new(
        serde_json::to_value(&report).expect("json"),
        render::run_report(&report, style),
    )
}

fn recorded_output(out: &ops::checkpoint::CheckpointOutcome, style: &render::Style) -> Output {
    let mut human = String::new();
    if let Some(s) = &out.started {
        human.push_str(&format!("started run {}\n", s.line.run));
    }
    human.push_str(&render::recorded(&out.recorded, style));
    Output::new(out.recorded.to_json(), human)
}

fn record_options(a: &RecordArgs) -> Result<ops::checkpoint::CheckpointOptions> {
    Ok(ops::checkpoint::CheckpointOptions {
        run: a.run.clone().map(RunId::new).transpose()?,
        kind: a.kind.as_deref().map(StepKind::parse).transpose()?,
        status: a.status.as_deref().map(Status::parse).transpose()?,
        session_id: a.session_id.clone(),
        artifacts: a.artifacts.clone(),
        meta: parse_meta(&a.meta)?,
        message: a.message.clone(),
        ..Default::default()
    })
}

/// `k=v` pairs; keys are non-empty and without control characters.
pub fn parse_meta(items: &[String]) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for item in items {
        let Some((k, v)) = item.split_once('=') else {
            return Err(Error::usage(format!(
                "invalid --meta {item:?}: expected KEY=VALUE"
            )));
        };
        if k.is_empty() || k.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(Error::usage(format!(
                "invalid --meta key {k:?}: must be non-empty, no spaces or control characters"
            )));
        }
        out.insert(k.to_string(), v.to_string());
    }
    Ok(out)
}

/// The digest recorded for a workflow file: its git blob id.
fn file_digest(store: &Store, path: &PathBuf) -> Result<String> {
    let data = std::fs::read(path)
        .map_err(|e| Error::usage(format!("cannot read workflow file {}: {e}", path.display())))?;
    Ok(format!("git-blob:{}", store.blob_id(&data)?))
}
