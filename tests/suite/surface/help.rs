//! Help, manual and completion, driven through the binary: the
//! grouped command list, examples at the end of every `-h`, manual pages that `man` (and so
//! `git agent-rewind --help`) finds beside the installed binary, and bash completion that
//! works for `git-agent-rewind <TAB>` and through git's own completion.

use crate::common;

use common::{Repo, bin};
use std::path::{Path, PathBuf};
use std::process::Command;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn help(args: &[&str]) -> String {
    let out = Command::new(bin()).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// Every visible command, with its nested subcommands.
const COMMANDS: &[&str] = &[
    "init",
    "start",
    "checkpoint",
    "step begin",
    "step end",
    "step exit",
    "list",
    "show",
    "log",
    "diff",
    "blame",
    "stats",
    "view",
    "status",
    "rewind",
    "fork",
    "restore",
    "revert",
    "undo",
    "completions",
    "run",
    "resume",
    "watch",
    "approve",
    "reject",
    "steer",
    "trust",
    "hooks install",
    "hooks uninstall",
    "push",
    "fetch",
    "verify",
    "delete",
    "gc",
    "export",
    "import",
    "mcp",
];

#[test]
fn the_command_list_is_grouped_and_the_hook_entry_point_hidden() {
    let h = help(&["-h"]);
    let groups = [
        "Record:",
        "Inspect:",
        "Travel:",
        "Workflows:",
        "Share:",
        "Maintain:",
        "Set up:",
    ];
    let mut at = 0;
    for g in groups {
        let i = h[at..]
            .find(&format!("\n{g}\n"))
            .unwrap_or_else(|| panic!("no group {g} (in order): {h}"));
        at += i + 1;
    }
    for c in COMMANDS {
        let first = c.split(' ').next().unwrap();
        assert!(
            h.contains(&format!("\n  {first} ")),
            "{first} not listed: {h}"
        );
    }
    assert!(!h.contains("\n  hook "), "{h}");
    assert!(h.contains("Exit status:"), "{h}");
    // The hidden entry points still work.
    assert!(help(&["hook", "-h"]).contains("post-commit"));
}

/// `--version` alone is answered before any argument definition is built (start-up,
/// docs/PERFORMANCE.md "small commands"); it prints what clap prints for it, as do the
/// lines that still go through clap.
#[test]
fn version_is_one_line_with_or_without_the_whole_definition() {
    let expected = format!("git-agent-rewind {}\n", env!("CARGO_PKG_VERSION"));
    for args in [
        &["--version"][..],
        &["-V"],
        &["--json", "--version"],
        &["-V", "-P"],
    ] {
        let out = Command::new(bin()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert_eq!(text(&out.stdout), expected, "{args:?}");
        assert!(out.stderr.is_empty(), "{args:?}: {}", text(&out.stderr));
    }
}

#[test]
fn every_command_help_ends_with_real_examples() {
    for c in COMMANDS {
        let mut args: Vec<&str> = c.split(' ').collect();
        args.push("-h");
        let h = help(&args);
        let tail = &h[h
            .rfind("Examples:\n")
            .unwrap_or_else(|| panic!("{c}: no examples: {h}"))..];
        // A command wrapped to the width goes on after ` \`, as a shell reads it.
        let joined = tail.replace(" \\\n    ", " ");
        let block: Vec<&str> = joined
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .collect();
        // Each example is a command (two spaces in) followed by what it does (six in).
        let examples: Vec<&str> = block
            .iter()
            .copied()
            .filter(|l| !l.starts_with("      "))
            .collect();
        assert!(
            (1..=3).contains(&examples.len()),
            "{c}: {} examples: {tail}",
            examples.len()
        );
        for (i, line) in block.iter().enumerate() {
            if line.starts_with("      ") {
                continue;
            }
            let e = line.trim();
            assert!(e.contains("git agent-rewind "), "{c}: {e}");
            assert!(
                block
                    .get(i + 1)
                    .is_some_and(|w| w.starts_with("      ") && w.trim().len() > 10),
                "{c}: {e} says nothing of what it does"
            );
        }
        // The examples show the command itself (`fork`'s and `restore`'s included).
        let first = c.split(' ').next().unwrap();
        assert!(
            examples
                .iter()
                .any(|e| e.contains(&format!("agent-rewind {first}"))),
            "{c}: {tail}"
        );
    }
    let run = help(&["run", "-h"]);
    let words = run.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("3 the run waits for a person"), "{run}");
}

/// A prefix like `cargo install`'s: `<prefix>/bin/git-agent-rewind` (a link to the binary
/// under test, or a copy).
fn install_prefix() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let bin_dir = t.path().join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    let installed = bin_dir.join("git-agent-rewind");
    if std::fs::hard_link(bin(), &installed).is_err() {
        std::fs::copy(bin(), &installed).unwrap();
    }
    (t, installed)
}

fn path_with(dir: &Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn the_manual_is_installed_where_man_finds_it_and_git_help_opens_it() {
    let (prefix, installed) = install_prefix();
    // The default folder: <prefix>/share/man/man1.
    let out = Command::new(&installed).arg("manpages").output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let man1 = prefix.path().join("share/man/man1");
    for page in [
        "git-agent-rewind.1",
        "git-agent-rewind-rewind.1",
        "git-agent-rewind-step-begin.1",
    ] {
        let roff = std::fs::read_to_string(man1.join(page)).unwrap();
        assert!(
            roff.starts_with(".ie") || roff.contains(".TH"),
            "{page}: {roff}"
        );
    }
    assert!(!man1.join("git-agent-rewind-hook.1").exists());
    // Every command's page names each option's value in its synopsis and has examples,
    // each with what it does.
    let rewind = std::fs::read_to_string(man1.join("git-agent-rewind-rewind.1")).unwrap();
    assert!(
        rewind.contains("[\\-\\-to <STEP|CHECKPOINT>]") && rewind.contains("[\\-C <PATH>]"),
        "{rewind}"
    );
    let mut pages = 0;
    for entry in std::fs::read_dir(&man1).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // The pages of the tool and of its command groups list subcommands instead.
        if [
            "git-agent-rewind.1",
            "git-agent-rewind-hooks.1",
            "git-agent-rewind-step.1",
            "git-agent-rewind-help.1",
        ]
        .contains(&name.as_str())
        {
            continue;
        }
        let roff = std::fs::read_to_string(&path).unwrap();
        let examples = roff
            .split_once(".SH EXAMPLES\n")
            .unwrap_or_else(|| panic!("{name} has no EXAMPLES:\n{roff}"))
            .1;
        let examples = examples.split("\n.SH").next().unwrap();
        let entries: Vec<&str> = examples.split(".TP\n").skip(1).collect();
        assert!(!entries.is_empty(), "{name}: {examples}");
        for e in entries {
            let mut lines = e.lines();
            let command = lines.next().unwrap();
            assert!(command.starts_with("\\fB"), "{name}: {command}");
            let what = lines.next().unwrap_or("");
            assert!(
                what.len() > 10,
                "{name}: {command} says nothing of what it does"
            );
        }
        pages += 1;
    }
    assert!(pages >= 25, "{pages} command pages");
    let main = std::fs::read_to_string(man1.join("git-agent-rewind.1")).unwrap();
    assert!(main.contains("rewind"), "{main}");

    assert!(
        have("man"),
        "these tests need `man` on PATH (apt-get install -y man-db; scripts/test does it)"
    );
    let bin_dir = installed.parent().unwrap();
    let found = Command::new("man")
        .args(["-w", "git-agent-rewind"])
        .env("PATH", path_with(bin_dir))
        .env_remove("MANPATH")
        .output()
        .unwrap();
    assert!(found.status.success(), "man -w: {}", text(&found.stderr));
    assert_eq!(
        Path::new(text(&found.stdout).trim()),
        man1.join("git-agent-rewind.1")
    );
    // git turns `--help` into `man git-agent-rewind`.
    let r = Repo::new();
    let out = common::git_cmd(r.path())
        .args(["agent-rewind", "--help"])
        .env("PATH", path_with(bin_dir))
        .env_remove("MANPATH")
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
        .unwrap();
    let page = text(&out.stdout);
    assert!(out.status.success(), "{}{page}", text(&out.stderr));
    assert!(
        page.contains("SUBCOMMANDS") && page.contains("git-agent-rewind-rewind"),
        "{page}"
    );
}

/// A repository with runs `r1` (steps plan, implement) and `r2` (step review, active).
fn repo_with_runs() -> Repo {
    let r = Repo::new();
    r.ok(&["checkpoint", "plan", "--run", "r1"]);
    r.write("a.txt", "a\n");
    r.ok(&["checkpoint", "implement", "--run", "r1"]);
    r.ok(&["checkpoint", "review", "--run", "r2"]);
    r
}

/// Source the bash script (and, with `through_git`, git's own completion first), set
/// COMP_WORDS/COMP_CWORD to `line` (the last word is the one completed), call the function
/// bash would call, and return COMPREPLY.
fn bash_complete(dir: &Path, line: &[&str], through_git: bool) -> Vec<String> {
    let quoted: Vec<String> = line
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', "'\\''")))
        .collect();
    let setup = if through_git {
        "source /usr/share/bash-completion/completions/git\n"
    } else {
        ""
    };
    let call = if through_git {
        "__git_wrap__git_main"
    } else {
        "_git_agent_rewind_bin"
    };
    let script = format!(
        "{setup}source <(git-agent-rewind completions bash)\n\
         COMP_WORDS=({words})\nCOMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))\n\
         COMP_LINE=\"${{COMP_WORDS[*]}}\"\nCOMP_POINT=${{#COMP_LINE}}\n\
         {call}\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        words = quoted.join(" ")
    );
    let bin_dir = bin().parent().unwrap().to_path_buf();
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(dir)
        .env("PATH", path_with(&bin_dir))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(out.status.success(), "{script}: {}", text(&out.stderr));
    let mut v: Vec<String> = text(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.trim_end().to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn bash_completes_commands_flags_runs_and_steps() {
    let r = repo_with_runs();
    let c = |line: &[&str]| bash_complete(r.path(), line, false);
    let p = "git-agent-rewind";
    assert_eq!(
        c(&[p, "re"]),
        ["reject", "restore", "resume", "revert", "rewind"]
    );
    assert!(!c(&[p, ""]).contains(&"hook".to_string()));
    // Every flag of a subcommand, nested ones included.
    let flags = c(&[p, "rewind", "r1", "--"]);
    for f in [
        "--to",
        "--after",
        "--worktree",
        "--no-checkout",
        "--branch",
        "--label",
        "--json",
    ] {
        assert!(flags.contains(&f.to_string()), "{f}: {flags:?}");
    }
    assert!(c(&[p, "step", "end", "--ex"]).contains(&"--exit-code".to_string()));
    assert_eq!(c(&[p, "hooks", "install", "--ag"]), ["--agent"]);
    // Run ids and step names from the repository.
    assert_eq!(c(&[p, "rewind", ""]), ["r1", "r2"]);
    assert_eq!(c(&[p, "rewind", "r1", "--to", ""]), ["implement", "plan"]);
    assert_eq!(c(&[p, "fork", "r1", "--to", "im"]), ["implement"]);
    assert_eq!(c(&[p, "show", "r1/"]), ["r1/implement", "r1/plan"]);
    assert_eq!(c(&[p, "--json", "log", "r"]), ["r1", "r2"]);
    assert_eq!(c(&[p, "resume", "r2", "--retry", ""]), ["review"]);
    // STEP of `checkpoint`: the active run's steps.
    assert_eq!(c(&[p, "checkpoint", ""]), ["review"]);
    assert_eq!(c(&[p, "checkpoint", "--kind", "d"]), ["deterministic"]);
    // Files where a file is expected.
    assert_eq!(c(&[p, "import", "a.t"]), ["a.txt"]);
    assert_eq!(c(&[p, "restore", "r1", "--", "a."]), ["a.txt"]);
    // Outside a repository: nothing, silently.
    let outside = tempfile::tempdir().unwrap();
    assert_eq!(
        bash_complete(outside.path(), &[p, "show", ""], false),
        Vec::<String>::new()
    );
}

#[test]
fn bash_completion_works_through_git() {
    let git_completion = Path::new("/usr/share/bash-completion/completions/git");
    if !git_completion.exists() {
        eprintln!(
            "note: git's bash completion is not installed; only the script's own function is checked"
        );
        return;
    }
    let r = repo_with_runs();
    let c = |line: &[&str]| bash_complete(r.path(), line, true);
    assert_eq!(c(&["git", "agent-re"]), ["agent-rewind"]);
    assert_eq!(c(&["git", "agent-rewind", "sh"]), ["show"]);
    assert_eq!(
        c(&["git", "agent-rewind", "rewind", "r1", "--to", ""]),
        ["implement", "plan"]
    );
    assert_eq!(
        c(&["git", "-C", ".", "agent-rewind", "diff", "r"]),
        ["r1", "r2"]
    );
    assert!(c(&["git", "agent-rewind", "gc", "--"]).contains(&"--older-than".to_string()));
}

#[test]
fn zsh_and_fish_scripts_use_the_same_candidates() {
    let zsh = help(&["completions", "zsh"]);
    assert!(zsh.starts_with("#compdef git-agent-rewind"), "{zsh}");
    assert!(
        zsh.contains("_git-agent-rewind()") && zsh.contains("__complete"),
        "{zsh}"
    );
    let fish = help(&["completions", "fish"]);
    assert!(
        fish.contains("complete -c git-agent-rewind") && fish.contains("__complete"),
        "{fish}"
    );
    // The engine those scripts call: the words after the program and the index of the one
    // being completed.
    let r = repo_with_runs();
    let out = common::ok_in(
        r.path(),
        &["__complete", "3", "--", "rewind", "r1", "--to", "p"],
    );
    assert_eq!(out.trim(), "plan");
}

/// Completion offers the values of `--agent`, `--format`, `--color` and
/// `--diffs`.
#[test]
fn bash_completes_the_values_of_agent_format_color_and_diffs() {
    let r = repo_with_runs();
    let c = |line: &[&str]| bash_complete(r.path(), line, false);
    let p = "git-agent-rewind";
    assert_eq!(
        c(&[p, "hooks", "install", "--agent", ""]),
        [
            "all", "auggie", "claude", "codex", "copilot", "cursor", "droid", "gemini", "kilo",
            "opencode", "pi", "qwen"
        ]
    );
    assert_eq!(c(&[p, "init", "--agent", "co"]), ["codex", "copilot"]);
    assert_eq!(
        c(&[p, "log", "--graph", "--format", ""]),
        ["dot", "json", "mermaid", "text"]
    );
    assert_eq!(c(&[p, "diff", "--color", ""]), ["always", "auto", "never"]);
    assert_eq!(c(&[p, "view", "--diffs", ""]), ["all", "none"]);
    // The set-up each script and the README give creates the folder it writes into.
    for shell in ["zsh", "fish"] {
        let script = r.ok(&["completions", shell]);
        let setup = script
            .lines()
            .find(|l| l.contains("completions {shell} >".replace("{shell}", shell).as_str()));
        let setup = setup.unwrap_or_else(|| panic!("{script}"));
        assert!(setup.contains("mkdir -p"), "{setup}");
    }
    let readme =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
            .unwrap();
    for line in readme
        .lines()
        .filter(|l| l.contains("agent-rewind completions") && l.contains(" > "))
    {
        let target = line
            .split(" > ")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap();
        let folder = &target[..target.rfind('/').unwrap()];
        assert!(
            line.contains(&format!("mkdir -p {folder} ")),
            "README: {line}"
        );
    }
    assert!(
        readme.contains("completions fish >"),
        "the README installs fish completion"
    );
}

/// The widest line of `text`, in characters.
fn widest(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// `-h` fits the terminal it is shown on, and 100 columns when stdout is no terminal; the
/// top-level list wraps each description in its own column.
#[test]
fn help_is_wrapped_to_the_terminal_or_to_100_columns() {
    for c in COMMANDS {
        let mut args: Vec<&str> = c.split(' ').collect();
        args.push("-h");
        let out = Command::new(bin())
            .args(&args)
            .env_remove("COLUMNS")
            .output()
            .unwrap();
        let h = text(&out.stdout);
        assert!(widest(&h) <= 100, "{c}: {h}");
    }
    // `push -h` on a terminal of 80 columns (the test's pseudo-terminal is unix's).
    #[cfg(unix)]
    {
        let (mut screen, terminal) = common::pseudo_terminal(80);
        let status = Command::new(bin())
            .args(["push", "-h"])
            .env_remove("COLUMNS")
            .stdout(terminal)
            .status()
            .unwrap();
        assert!(status.success());
        let shown = common::read_screen(&mut screen).replace("\r\n", "\n");
        assert!(shown.contains("--allow-secret"), "{shown}");
        assert!(widest(&shown) <= 80, "{shown}");
    }
    // The descriptions of the command list go on under their first line.
    let top = Command::new(bin())
        .arg("-h")
        .env("COLUMNS", "60")
        .output()
        .unwrap();
    let top = text(&top.stdout);
    assert!(widest(&top) <= 60, "{top}");
    let revert = top.find("\n  revert ").expect("revert listed");
    let next = &top[revert + 1..].lines().nth(1).unwrap();
    assert!(next.starts_with(&" ".repeat(15)), "{top}");
}

/// `<command> --help` opens the command's manual page, as `git <command> --help` does;
/// with no page installed it prints the `-h` text.
#[test]
fn command_help_opens_the_command_s_manual_page() {
    let (_prefix, installed) = install_prefix();
    let out = Command::new(&installed).arg("manpages").output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        have("man"),
        "these tests need `man` on PATH (apt-get install -y man-db; scripts/test does it)"
    );
    let bin_dir = installed.parent().unwrap();
    let r = Repo::new();
    for (args, page) in [
        (&["push", "--help"][..], "git-agent-rewind-push"),
        (&["step", "begin", "--help"], "git-agent-rewind-step-begin"),
        (&["--json", "rewind", "--help"], "git-agent-rewind-rewind"),
    ] {
        let out = common::git_cmd(r.path())
            .arg("agent-rewind")
            .args(args)
            .env("PATH", path_with(bin_dir))
            .env_remove("MANPATH")
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .env("MANWIDTH", "100")
            .output()
            .unwrap();
        let shown = text(&out.stdout);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert!(
            shown.contains("NAME") && shown.contains(&format!("{page} ")),
            "{args:?}: {shown}"
        );
    }
    // No page where man looks: the `-h` text, and a note saying why.
    let nowhere = tempfile::tempdir().unwrap();
    let out = Command::new(bin())
        .args(["push", "--help"])
        .env("MANPATH", nowhere.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.contains("Usage: git agent-rewind push"), "{shown}");
    assert!(
        text(&out.stderr).contains("no manual page git-agent-rewind-push(1)"),
        "{}",
        text(&out.stderr)
    );
}

/// `--to <TAB>` completes the steps of a run named by a prefix of its id, and of the
/// active run when a rewind made it (its steps taken over from its source).
#[test]
fn completion_of_to_knows_a_run_prefix_and_a_rewound_active_run() {
    let r = repo_with_runs();
    let c = |line: &[&str]| bash_complete(r.path(), line, false);
    let p = "git-agent-rewind";
    assert_eq!(c(&[p, "rewind", "r1", "--to", ""]), ["implement", "plan"]);
    r.ok(&["checkpoint", "review", "--run", "long-run-id"]);
    assert_eq!(c(&[p, "fork", "long", "--to", ""]), ["review"]);
    r.ok(&["rewind", "r1", "--to", "implement"]);
    assert_eq!(c(&[p, "rewind", "--to", ""]), ["plan"]);
}
