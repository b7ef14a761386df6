//! `git-agent-rewind`: parse arguments, call the library, render, map errors to exit codes
//! (0 success, 1 failure with a one-line cause and a hint on stderr, 2 usage error).

mod cli;

use clap::Parser;
use std::io::Write;

fn main() {
    agent_rewind::trace::mark("start");
    let parsed = cli::args::Cli::parse();
    let json = parsed.json;
    match cli::execute(parsed) {
        Ok(out) => {
            let exit_code = out.exit_code;
            let mut stdout = std::io::stdout().lock();
            let text = if json {
                serde_json::to_string_pretty(&out.json).expect("serializable")
            } else {
                out.human
            };
            // A closed pipe (`| head`) is not an error worth reporting. An empty human
            // output (the `hook` entry points) prints nothing, not even a newline.
            if json || !text.is_empty() {
                let _ = writeln!(stdout, "{text}");
            }
            if exit_code != 0 {
                let _ = stdout.flush();
                std::process::exit(exit_code);
            }
        }
        Err(e) => {
            eprintln!("error: {}", e.message);
            if let Some(h) = &e.hint {
                eprintln!("hint: {h}");
            }
            std::process::exit(e.kind.exit_code());
        }
    }
}
