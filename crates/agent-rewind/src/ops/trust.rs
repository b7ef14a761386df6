//! `trust [<run>]`: the one way to let a workflow that was not run from a file of yours run
//! here. It reads the workflow `resume` and `watch` would execute for the run (the copy
//! stored in its lineage, or for an old run the file recorded at its start), says what it
//! would run, and — once the person has seen that and said yes, which the CLI asks for —
//! puts that text's digest on this repository's trusted list (`workflow::trust`).
//!
//! What is shown is everything that decides what a step executes: its command, the shell
//! and folder it runs in, every variable of its `env` (those that change which program runs
//! or what it loads, `PATH`, `LD_*`, `BASH_ENV`, `GIT_*` …, named as such) and its
//! `inputs`. What is trusted is the digest of the whole text, so the same commands with
//! another `env` or `inputs` are another text, not trusted.
//!
//! Owns the decision of what is shown and what is trusted: exactly the digest that was
//! shown, so a fetch between showing and accepting cannot slip another text in. Never runs
//! a step, never asks anything itself (the CLI owns the terminal), never trusts a text
//! because a file with the same content exists somewhere.

use super::run::find_workflow;
use crate::store::Store;
use crate::workflow::runner::STEP_SHELL;
use crate::workflow::schema::StepDef;
use crate::workflow::trust;
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::RunId;
use serde::Serialize;

/// What `trust <run>` would accept: the workflow's steps and where its text is stored.
#[derive(Debug, Clone, Serialize)]
pub struct TrustPlan {
    pub run: String,
    /// The run whose root note stores the text (an ancestor for a rewound or forked run).
    pub holder: String,
    /// The workflow's name (from its `[workflow]` table).
    pub workflow: String,
    /// In words: the stored copy (and of which file), or the file.
    pub from: String,
    /// `git-blob:<hex>` of the text, computed here from the text itself.
    pub digest: String,
    /// Steps in workflow order, each with its command (`run`), `env` and `inputs`.
    pub steps: Vec<StepDef>,
    /// How each command runs: `sh -c <command>` (the runner's `STEP_SHELL`).
    pub shell: String,
    /// The folder every step runs in: this worktree's top.
    pub folder: String,
    /// The `env` variables of the steps that change which program runs or what it loads.
    pub changes_what_runs: Vec<RiskyEnv>,
    /// Already on the trusted list (then nothing is asked or written).
    pub already_trusted: bool,
    /// Put on the trusted list by this command.
    pub trusted: bool,
}

/// What trusting `run`'s workflow means, without trusting it.
pub fn inspect(store: &Store, run: &RunId) -> Result<TrustPlan> {
    if store.refs().run_head(run)?.is_none() {
        return Err(crate::catalog::unknown_run(run));
    }
    let found = find_workflow(store, run)?;
    let changes_what_runs = found
        .workflow
        .steps
        .iter()
        .flat_map(|step| {
            step.env.keys().filter_map(|key| {
                changes_what_runs(key).map(|why| RiskyEnv {
                    step: step.name.to_string(),
                    key: key.clone(),
                    why: why.to_string(),
                })
            })
        })
        .collect();
    Ok(TrustPlan {
        run: run.to_string(),
        holder: found.holder,
        workflow: found.workflow.name.clone(),
        from: found.from,
        digest: found.digest,
        steps: found.workflow.steps,
        shell: STEP_SHELL.join(" "),
        // A repository without a worktree runs no step; its trust still says where they run.
        folder: store
            .worktree()
            .root()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "the top of the worktree `resume` runs in".to_string()),
        changes_what_runs,
        already_trusted: found.trusted,
        trusted: false,
    })
}

/// A step's `env` variable that changes which program runs or what it does.
#[derive(Debug, Clone, Serialize)]
pub struct RiskyEnv {
    pub step: String,
    pub key: String,
    /// What it changes, in words.
    pub why: String,
}

/// What setting `key` changes about the programs a step runs, when it changes any: the
/// search path of programs (`sh` itself included) and libraries, code a shell or an
/// interpreter loads before the command, the programs git and other tools start.
pub fn changes_what_runs(key: &str) -> Option<&'static str> {
    const EXACT: [(&str, &str); 9] = [
        ("PATH", "which programs run (`sh` included)"),
        ("BASH_ENV", "a file every bash script runs first"),
        ("ENV", "a file the shell may run first"),
        ("SHELL", "the shell programs start"),
        ("IFS", "how the shell splits words"),
        ("CDPATH", "where `cd` goes"),
        ("HOME", "the configuration files programs read"),
        ("XDG_CONFIG_HOME", "the configuration files programs read"),
        ("JAVA_TOOL_OPTIONS", "the code Java loads"),
    ];
    const PREFIXES: [(&str, &str); 9] = [
        ("LD_", "the libraries every program loads"),
        ("DYLD_", "the libraries every program loads"),
        ("GIT_", "what git runs and which repository it reads"),
        ("BASH_FUNC_", "a bash function that replaces a command"),
        ("PERL5", "the code Perl loads"),
        ("RUBY", "the code Ruby loads"),
        ("NODE_", "the code Node.js loads"),
        ("PYTHON", "the code Python loads"),
        ("GCONV_", "the libraries every program loads"),
    ];
    let upper = key.to_ascii_uppercase();
    EXACT
        .iter()
        .find(|(k, _)| *k == upper)
        .or_else(|| PREFIXES.iter().find(|(p, _)| upper.starts_with(p)))
        .map(|(_, why)| *why)
        .or_else(|| {
            // A program other tools start: an editor, a pager, a password prompt.
            [
                "EDITOR", "VISUAL", "PAGER", "ASKPASS", "_COMMAND", "_PROGRAM",
            ]
            .iter()
            .any(|end| upper.ends_with(end))
            .then_some("a program other tools start")
        })
}

/// Put the text `plan` showed on the trusted list (the person accepted it).
pub fn accept(store: &Store, mut plan: TrustPlan) -> Result<TrustPlan> {
    if !plan.already_trusted {
        trust::trust(store, &plan.digest)?;
        plan.trusted = true;
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::changes_what_runs;

    #[test]
    fn variables_that_change_what_runs_are_named() {
        for key in [
            "PATH",
            "path",
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "DYLD_INSERT_LIBRARIES",
            "BASH_ENV",
            "GIT_SSH_COMMAND",
            "GIT_EXEC_PATH",
            "BASH_FUNC_ls%%",
            "PYTHONPATH",
            "NODE_OPTIONS",
            "EDITOR",
            "SSH_ASKPASS",
            "HOME",
        ] {
            assert!(changes_what_runs(key).is_some(), "{key}");
        }
        for key in ["MODEL", "TASK", "LANG", "RUST_LOG"] {
            assert!(changes_what_runs(key).is_none(), "{key}");
        }
    }
}
