//! `view`: build the view model, render the page, write it, print its path, optionally open
//! it in a browser; and the text graphs of `log --graph --format`.

use super::log::LogArgs;
use crate::cli::{Ctx, Output};
use agent_rewind::ops;
use agent_rewind::store::Store;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::private::write_atomic;
use agent_rewind_core::process::Purpose;
use clap::Args;
use std::path::{Path, PathBuf};

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind view --open
      Write one self-contained HTML page of all runs (tree, checkpoints, diffs, timelines) and open it in your browser.
  git agent-rewind view r1 -o runs.html
      Write the page of run r1 and the runs its rewinds and forks link it to, to runs.html.
  git agent-rewind view --serve --open
      Serve the page on 127.0.0.1 (until Ctrl-C), where each changed file of a checkpoint has a \"who wrote each line\" button.";

#[derive(Debug, Args)]
pub struct ViewArgs {
    /// Only these runs and the runs linked to them by rewinds and forks (default: every run).
    pub runs: Vec<String>,
    /// The HTML file to write (default: agent-rewind/view.html in the git directory); an
    /// existing FILE is only replaced with --force.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Overwrite the -o FILE when it already exists.
    #[arg(long, requires = "output")]
    pub force: bool,
    /// Open the page in the browser ($BROWSER, else xdg-open or open); never fails the command.
    #[arg(long)]
    pub open: bool,
    /// Which checkpoints carry their changed files: all, none, or the newest N.
    #[arg(long, value_name = "all|none|N", default_value = "100")]
    pub diffs: String,
    /// Serve the page on 127.0.0.1 instead of writing it, until stopped (Ctrl-C): its
    /// address is printed; a checkpoint's changed files then show, on request, who wrote
    /// each line (agent, model, run/step@seq, or the person).
    #[arg(long, conflicts_with_all = ["output", "force"])]
    pub serve: bool,
    /// The port `--serve` listens on (default 0: any free port).
    #[arg(long, value_name = "N", requires = "serve", default_value = "0")]
    pub port: u16,
}

pub fn run(a: ViewArgs, ctx: &Ctx) -> Result<Output> {
    let store = &ctx.store()?;
    let cwd = &ctx.dir;
    let diffs = ops::view::DiffLimit::parse(&a.diffs)?;
    // Like `export`: a file of the user's is never replaced unless told to (checked before
    // the page is built; our own default page is ours to replace).
    if let Some(p) = &a.output {
        let path = cwd.join(p);
        if !a.force && std::fs::symlink_metadata(&path).is_ok_and(|md| !md.is_dir()) {
            return Err(Error::refused(format!("{} already exists", path.display()))
                .with_hint("choose another file, or add --force to overwrite it"));
        }
    }
    let runs = a
        .runs
        .iter()
        .map(|r| ops::address::run(store, r))
        .collect::<Result<Vec<_>>>()?;
    let opts = ops::view::ViewOptions { runs, diffs };
    // Served, the page is built again whenever the runs change: the fingerprint of the state
    // is taken before the model is built, so a change in between is seen by the next poll.
    let version = if a.serve {
        Some(crate::cli::view_server::version(store)?)
    } else {
        None
    };
    let model = ops::view::build(store, &opts)?;
    for p in &model.problems {
        crate::cli::render::warn(p);
    }
    if let Some(version) = version {
        return serve(store, &opts, &model, &version, a.port, a.open);
    }
    let html = agent_rewind::view::page(&model, &repo_name(store));
    let path = match a.output {
        Some(p) => cwd.join(p),
        None => store.private().view_page(),
    };
    if path.is_dir() {
        return Err(Error::usage(format!(
            "{} is a directory; give a file name with -o",
            path.display()
        )));
    }
    write_atomic(&path, html.as_bytes(), None)?;
    let opened = a.open && open_in_browser(path.as_os_str());
    let embedded = model
        .checkpoints
        .iter()
        .filter(|c| c.files.is_some())
        .count();
    let json = serde_json::json!({
        "path": path.display().to_string(),
        "bytes": html.len(),
        "runs": model.runs.len(),
        "checkpoints": model.checkpoints.len(),
        "diffs": embedded,
        "opened": opened,
    });
    Ok(Output::new(json, path.display().to_string()))
}

/// The repository's name for the page title: its worktree folder, else its git folder.
fn repo_name(store: &Store) -> String {
    let dir = store
        .worktree()
        .root()
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| store.worktree().common_dir().to_path_buf());
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string())
}

/// `view --serve`: bind, print the address (at once: the command runs until stopped), serve.
fn serve(
    store: &Store,
    opts: &ops::view::ViewOptions,
    model: &ops::view::ViewModel,
    version: &str,
    port: u16,
    open: bool,
) -> Result<Output> {
    let server = crate::cli::view_server::Server::bind(port)?;
    let name = repo_name(store);
    let first = crate::cli::view_server::Page {
        version: version.to_string(),
        html: agent_rewind::view::served_page(model, &name, version),
    };
    let render = |version: &str| -> Result<String> {
        let model = ops::view::build(store, opts)?;
        Ok(agent_rewind::view::served_page(&model, &name, version))
    };
    let url = server.url();
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{url}");
        let _ = out.flush();
    }
    crate::cli::stderr_line(&format!(
        "serving the runs of this repository on {url} (Ctrl-C stops)"
    ));
    if open {
        open_in_browser(std::ffi::OsStr::new(&url));
    }
    server.serve(store, first, &render)?;
    Ok(Output::new(serde_json::json!({"url": url}), String::new()))
}

/// Best effort: `$BROWSER`, else the platform's opener. A missing browser is a warning.
fn open_in_browser(path: &std::ffi::OsStr) -> bool {
    let url = path;
    let (program, wait) = match std::env::var_os("BROWSER").filter(|b| !b.is_empty()) {
        Some(b) => (b, false),
        None if cfg!(target_os = "macos") => ("open".into(), true),
        None if cfg!(windows) => ("explorer".into(), false),
        None => ("xdg-open".into(), true),
    };
    let child = agent_rewind_core::process::command(Purpose::Browser, &program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    let ok = match child {
        Ok(mut c) if wait => c.wait().map(|s| s.success()).unwrap_or(false),
        Ok(_) => true,
        Err(_) => false,
    };
    if !ok {
        crate::cli::stderr_line(&format!(
            "warning: could not open a browser ({}); open {} yourself",
            program.to_string_lossy(),
            path.to_string_lossy()
        ));
    }
    ok
}

/// `log --graph` with `--format mermaid|dot|json`, and `--json`.
pub fn log_graph(store: &Store, a: &LogArgs, json: bool) -> Result<Option<Output>> {
    let format = a.format.as_deref().unwrap_or("text");
    if format == "text" && !json {
        return Ok(None);
    }
    // No run named: every run, as the text form shows every tree.
    let model = match a.run.as_deref() {
        None => ops::view::build(
            store,
            &ops::view::ViewOptions {
                runs: vec![],
                diffs: ops::view::DiffLimit::None,
            },
        )?,
        Some(named) => ops::view::lineage(store, &ops::address::run(store, named)?)?,
    };
    let graph = serde_json::to_value(model.graph()).expect("json");
    let human = match format {
        "mermaid" => agent_rewind::view::text::mermaid(&model),
        "dot" => agent_rewind::view::text::dot(&model),
        _ => serde_json::to_string_pretty(&graph).expect("json"),
    };
    Ok(Some(Output::new(graph, human.trim_end().to_string())))
}
