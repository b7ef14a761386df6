//! What `trust <run>` shows is everything that decides what a step executes, not only its
//! command: a step `run = "ls"` whose `env` puts someone's folder first on `PATH` runs their
//! `ls`. The shell, the folder, every `env` variable (those that change which program runs
//! marked) and the `inputs` are shown; and what is trusted is the whole text, so the same
//! commands trusted without that `env` do not let it run.

use super::{Hostile, log_lines, stderr, tool};
use std::os::unix::fs::PermissionsExt;

/// A folder holding their `ls`: it leaves its mark in `$TRUST_LOG` wherever it runs.
fn their_ls() -> tempfile::TempDir {
    let bin = tempfile::tempdir().unwrap();
    let ls = bin.path().join("ls");
    std::fs::write(&ls, "#!/bin/sh\necho pwned >> \"$TRUST_LOG\"\n").unwrap();
    std::fs::set_permissions(&ls, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// A workflow whose step `b` runs `ls`, with `bin` first on its `PATH` when given.
fn workflow(bin: Option<&std::path::Path>) -> String {
    let env = bin
        .map(|b| {
            format!(
                "env = {{ PATH = \"{}:/usr/bin:/bin\", MODEL = \"sonnet\" }}\n",
                b.display()
            )
        })
        .unwrap_or_default();
    format!(
        r#"[workflow]
name = "path"

[[steps]]
name = "a"
kind = "deterministic"
run = "true"

[[steps]]
name = "b"
kind = "deterministic"
run = "ls >/dev/null; test -f go.txt"
inputs = ["go.txt"]
needs = ["a"]
{env}"#
    )
}

#[test]
fn trust_shows_a_steps_env_shell_folder_and_inputs_and_trusts_only_that_text() {
    let bin = their_ls();
    let h = Hostile::with_text(None, &workflow(Some(bin.path())));
    h.fetch();
    let path_value = format!("{}:/usr/bin:/bin", bin.path().display());

    // Shown, with no terminal to ask on: the command, the shell and folder, every variable
    // (PATH marked as changing which programs run), the inputs. Nothing trusted, nothing run.
    let o = h.tool(&["trust", "w1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let shown = stderr(&o);
    let top = h.ours.path().canonicalize().unwrap();
    for part in [
        "$ ls >/dev/null; test -f go.txt".to_string(),
        format!("env PATH={path_value}  (!) changes which programs run"),
        "env MODEL=sonnet\n".to_string(),
        "inputs go.txt".to_string(),
        format!("`sh -c <command>` in {}", top.display()),
        "(!) 1 env variable above changes which programs run".to_string(),
    ] {
        assert!(shown.contains(&part), "{part:?} is not shown:\n{shown}");
    }
    h.refused(&["resume", "w1"]);

    // The same in the JSON document.
    let o = h.tool(&["--json", "trust", "w1"]);
    assert_eq!(o.status.code(), Some(1));
    let o = h.tool(&["--json", "trust", "w1", "--yes"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["shell"], "sh -c", "{doc:#}");
    assert_eq!(doc["folder"], top.to_str().unwrap(), "{doc:#}");
    assert_eq!(
        doc["steps"][1]["env"]["PATH"],
        path_value.as_str(),
        "{doc:#}"
    );
    assert_eq!(doc["steps"][1]["inputs"][0], "go.txt", "{doc:#}");
    let risky: Vec<(&str, &str)> = doc["changes_what_runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["step"].as_str().unwrap(), r["key"].as_str().unwrap()))
        .collect();
    assert_eq!(risky, [("b", "PATH")], "{doc:#}");
    assert_eq!(
        log_lines(&h.log),
        Vec::<String>::new(),
        "trust runs nothing"
    );
}

#[test]
fn trusting_the_commands_without_their_env_does_not_let_the_env_run() {
    let bin = their_ls();
    let h = Hostile::with_text(None, &workflow(Some(bin.path())));
    h.fetch();
    // We run the same commands from a file of ours, without the env: that text is trusted.
    h.ours.write("plain.toml", &workflow(None));
    let o = tool(
        h.ours.path(),
        &h.log,
        &["run", "plain.toml", "--run", "mine"],
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "b fails without go.txt: {}",
        stderr(&o)
    );
    assert_eq!(
        log_lines(&h.log),
        Vec::<String>::new(),
        "our ls is the system's"
    );
    // Their run, with the env, is still not trusted: its PATH never runs.
    h.ours.write("go.txt", "go\n");
    h.refused(&["resume", "w1"]);
    h.refused(&["watch", "w1", "--once"]);
}
