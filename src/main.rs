//! `git-agent-rewind`: parse arguments, call the library, render, map errors to exit codes
//! (0 success, 1 failure with a one-line cause and a hint on stderr, 2 usage error; `run`
//! and `resume` also 1 when the run failed and 3 when it waits for a person). With `--json`
//! a failure also prints `{"error": {"kind", "message", "hint"}}` on stdout.

// `print!`/`eprintln!` panic when the stream is a closed pipe (exit 101): output goes through
// `cli::stderr_line` and writes whose errors are dropped.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod cli;

// The static musl build allocates through mimalloc: musl's own allocator made a checkpoint
// a fifth to a third slower than the glibc build (docs/PERFORMANCE.md, "Static (musl)
// binary"). Every other build keeps the system allocator.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::Write;

fn main() {
    agent_rewind_core::trace::mark("start");
    if let Some(line) = cli::version_request() {
        let _ = std::io::stdout().lock().write_all(line.as_bytes());
        return;
    }
    let parsed = match cli::parse() {
        Ok(p) => p,
        Err(e) => usage_error(e),
    };
    agent_rewind_core::trace::mark("arguments parsed");
    let json = parsed.global.json;
    let pager = cli::pager::choose(&parsed);
    match cli::execute(parsed) {
        Ok(out) => {
            agent_rewind_core::trace::mark("command done");
            let exit_code = out.exit_code;
            if let Some(pager) = &pager {
                let bytes = match &out.raw_human {
                    Some(b) => b.clone(),
                    None if out.human.is_empty() => vec![],
                    None => format!("{}\n", cli::render::terminal_safe(&out.human)).into_bytes(),
                };
                if bytes.is_empty() || cli::pager::page(pager, &bytes).is_ok() {
                    if exit_code != 0 {
                        std::process::exit(exit_code);
                    }
                    return;
                }
            }
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error worth reporting.
            if json && let Some(write) = out.json_writer {
                let mut w = std::io::BufWriter::with_capacity(1 << 16, &mut stdout);
                let _ = write(&mut w).and_then(|()| writeln!(w));
                let _ = w.flush();
            } else if !json && let Some(bytes) = &out.raw_human {
                let _ = stdout.write_all(bytes);
            } else {
                let text: std::borrow::Cow<str> = if json {
                    serde_json::to_string_pretty(&out.json)
                        .expect("serializable")
                        .into()
                } else {
                    cli::render::terminal_safe(&out.human)
                };
                // An empty human output (the `hook` entry points) prints nothing, not even
                // a newline.
                if json || !text.is_empty() {
                    let _ = writeln!(stdout, "{text}");
                }
            }
            agent_rewind_core::trace::mark("output written");
            if exit_code != 0 {
                let _ = stdout.flush();
                std::process::exit(exit_code);
            }
        }
        Err(e) => {
            cli::stderr_line(&format!(
                "error: {}",
                cli::render::terminal_safe(&e.message)
            ));
            if let Some(h) = &e.hint {
                cli::stderr_line(&format!("hint: {}", cli::render::terminal_safe(h)));
            }
            if json {
                print_json_error(e.kind.as_str(), &e.message, e.hint.as_deref());
            }
            std::process::exit(e.kind.exit_code());
        }
    }
}

fn print_json_error(kind: &str, message: &str, hint: Option<&str>) {
    let doc = serde_json::json!({"error": {"kind": kind, "message": message, "hint": hint}});
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(
        stdout,
        "{}",
        serde_json::to_string_pretty(&doc).expect("serializable")
    );
    let _ = stdout.flush();
}

/// A command line clap rejects (or `--help`/`--version`, which clap prints and exits 0 on;
/// help laid out for a person, or the manual page, by `cli::help_answer`).
/// With `--json` anywhere before `--`, the usage error is also a JSON document on stdout.
fn usage_error(e: clap::Error) -> ! {
    use clap::error::ErrorKind as K;
    // `--help` answered by the manual page: nothing more to print.
    let Some(e) = cli::help_answer(e) else {
        std::process::exit(0)
    };
    let wants_json = std::env::args_os()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--json");
    if !wants_json || matches!(e.kind(), K::DisplayHelp | K::DisplayVersion) {
        e.exit();
    }
    let _ = e.print();
    let rendered = e.render().to_string();
    let message = rendered
        .lines()
        .next()
        .unwrap_or_default()
        .trim_start_matches("error: ")
        .to_string();
    print_json_error(
        "usage",
        &message,
        Some("see `git agent-rewind <command> -h` for the usage"),
    );
    std::process::exit(2);
}
