//! `verify`: who signed each checkpoint (and notes commit) of runs, as git checks it.
//! Arguments and rendering only; the verdicts are the library's (`ops::signatures`).

use crate::cli::output::json;
use crate::cli::render::short;
use crate::cli::{Ctx, Output};
use agent_rewind::ops;
use agent_rewind::ops::signatures::Signed;
use agent_rewind_core::error::Result;
use clap::Args;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind verify r1
      Check the signature of every checkpoint and notes commit of run r1 against gpg.ssh.allowedSignersFile or your gpg keyring, and say who signed each; exit 1 unless all are good.
  git agent-rewind --json verify r1 r2
      The same for two runs, as JSON.";

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The runs to check (full id or unique prefix).
    #[arg(required = true, value_name = "RUN")]
    pub runs: Vec<String>,
}

fn line(s: &Signed) -> String {
    let what = match (s.kind, s.seq, &s.step) {
        ("checkpoint", Some(seq), Some(step)) => format!("@{seq} {step}"),
        ("checkpoint", Some(seq), None) => format!("@{seq}"),
        _ => "notes".to_string(),
    };
    let who = match (s.signer.is_empty(), s.key.is_empty()) {
        (false, false) => format!(" by {} (key {})", s.signer, s.key),
        (false, true) => format!(" by {}", s.signer),
        (true, false) => format!(" by key {}", s.key),
        (true, true) => String::new(),
    };
    let mut l = format!("  {} {what}: {}{who}", short(&s.commit), s.verdict);
    if let Some(d) = &s.detail {
        l.push_str(&format!(" ({d})"));
    }
    l
}

pub fn run(a: VerifyArgs, ctx: &Ctx) -> Result<Output> {
    let store = &ctx.store()?;
    let runs = a
        .runs
        .iter()
        .map(|r| ops::address::run(store, r))
        .collect::<Result<Vec<_>>>()?;
    let out = ops::signatures::verify(store, &runs)?;
    let mut s = String::new();
    for r in &out.runs {
        let good = r
            .checkpoints
            .iter()
            .chain(&r.notes)
            .filter(|c| c.good())
            .count();
        let all = r.checkpoints.len() + r.notes.len();
        s.push_str(&format!(
            "run {}: {} ({good} of {all} signatures good)\n",
            r.run,
            if r.ok { "signed" } else { "NOT fully signed" }
        ));
        for c in r.checkpoints.iter().chain(&r.notes) {
            s.push_str(&line(c));
            s.push('\n');
        }
    }
    let mut o = Output::new(json(&out), s.trim_end().to_string());
    if !out.ok {
        o.exit_code = 1;
    }
    Ok(o)
}
