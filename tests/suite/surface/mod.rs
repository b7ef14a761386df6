//! The everyday surface, driven through the binary against real git: exit codes
//! scripts can trust, `--json` errors, the writer's identity, paths resolved where the
//! command was started, help and man pages, completion, readable list/diff output, and
//! terminal-safe rendering of fields that came from a user or a remote.

mod commands_doc;
mod help;
mod paths;

use crate::common;

use common::{Repo, tool_cmd};
use serde_json::Value;
use std::path::Path;
use std::process::Output;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Run the tool in `dir` with extra environment.
fn tool(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = tool_cmd(dir);
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run git-agent-rewind")
}

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", text(&out.stdout), text(&out.stderr)))
}

// ---------------------------------------------------------------------------------------
// 1. Exit codes of `run` and `resume`.

fn workflow_repo(steps: &str) -> Repo {
    let r = Repo::new();
    r.write("wf.toml", &format!("[workflow]\nname = \"wf\"\n\n{steps}"));
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "workflow"]);
    r
}

const OK_STEP: &str = "[[steps]]\nname = \"build\"\nkind = \"deterministic\"\nrun = \"true\"\n\n";

#[test]
fn run_exits_0_only_when_the_run_completed() {
    let r = workflow_repo(OK_STEP);
    let out = r.run(&["--json", "run", "wf.toml", "--run", "r1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = stdout_json(&out);
    assert_eq!(doc["outcome"], "completed", "{doc:#}");
    assert_eq!(doc["finished"], true, "{doc:#}");
    // Resuming a completed run is still a completed run.
    let out = r.run(&["resume", "r1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn a_failed_step_exits_1_and_a_rejected_gate_exits_1() {
    let r = workflow_repo(
        "[[steps]]\nname = \"build\"\nkind = \"deterministic\"\nrun = \"sh -c 'exit 3'\"\n",
    );
    let out = r.run(&["run", "wf.toml", "--run", "r1"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("failed with exit code 3"));
    let out = r.run(&["--json", "resume", "r1"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout_json(&out)["outcome"], "failed");

    let r = workflow_repo(&format!(
        "{OK_STEP}[[steps]]\nname = \"review\"\nkind = \"gate\"\n"
    ));
    let out = r.run(&["--json", "run", "wf.toml", "--run", "r1"]);
    assert_eq!(out.status.code(), Some(3));
    r.ok(&["reject", "r1/review", "--by", "boss"]);
    let out = r.run(&["--json", "resume", "r1"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert_eq!(stdout_json(&out)["outcome"], "failed");
}

#[test]
fn a_gate_awaiting_approval_exits_3_until_approved() {
    let r = workflow_repo(&format!(
        "{OK_STEP}[[steps]]\nname = \"review\"\nkind = \"gate\"\n\n{}",
        OK_STEP.replace("build", "deploy")
    ));
    let out = r.run(&["--json", "run", "wf.toml", "--run", "r1"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let doc = stdout_json(&out);
    assert_eq!(doc["outcome"], "waiting", "{doc:#}");
    // Human output: same exit status, says why.
    let out = r.run(&["resume", "r1"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stdout).contains("awaiting approval"));
    // `run … && deploy` does not deploy.
    let sh = std::process::Command::new("sh")
        .current_dir(r.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .arg("-c")
        .arg(format!(
            "{} resume r1 >/dev/null && echo deployed",
            common::bin().display()
        ))
        .output()
        .unwrap();
    assert_eq!(text(&sh.stdout), "");

    let gate = r.rev("refs/agent-runs/r1/review");
    r.ok(&["approve", &gate, "--by", "boss"]);
    let out = r.run(&["--json", "resume", "r1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert_eq!(stdout_json(&out)["outcome"], "completed");
}

// ---------------------------------------------------------------------------------------
// 9. Machine-readable errors; the writer is git's identity.

#[test]
fn json_errors_are_a_document_on_stdout_with_the_same_exit_code() {
    let r = Repo::new();
    r.ok(&["start", "--run", "r1"]);
    let cases: [(&[&str], &str, i32); 4] = [
        (&["--json", "show", "nosuch"], "not-found", 1),
        (&["--json", "checkpoint", "bad name!"], "usage", 2),
        (&["list", "--json", "--no-such-flag"], "usage", 2),
        (&["--json", "start", "--run", "r1"], "refused", 1),
    ];
    for (args, kind, code) in cases {
        let out = r.run(args);
        assert_eq!(out.status.code(), Some(code), "{args:?}");
        let doc = stdout_json(&out);
        assert_eq!(doc["error"]["kind"], kind, "{args:?}: {doc:#}");
        let message = doc["error"]["message"].as_str().unwrap();
        assert!(!message.is_empty(), "{doc:#}");
        assert!(doc["error"].get("hint").is_some(), "{doc:#}");
        // stderr keeps the human line.
        let err = text(&out.stderr);
        assert!(err.starts_with("error: "), "{args:?}: {err}");
    }
    // Without --json nothing is printed on stdout.
    let out = r.run(&["show", "nosuch"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
}

#[test]
fn the_writer_is_the_git_identity_and_the_environment_only_without_one() {
    let r = Repo::new();
    let out = tool_cmd(r.path())
        .args(["checkpoint", "s1", "--run", "r1"])
        .env_remove("USER")
        .env_remove("EMAIL")
        .env_remove("GIT_AUTHOR_NAME")
        .env_remove("GIT_AUTHOR_EMAIL")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        r.json(&["show", "r1"])["writer"],
        "Test User <test@example.com>"
    );

    // No identity anywhere: the machine's user and host.
    r.git(&["config", "--unset", "user.name"]);
    r.git(&["config", "--unset", "user.email"]);
    let out = tool_cmd(r.path())
        .args(["checkpoint", "s2", "--run", "r1"])
        .env("USER", "someone")
        .env_remove("EMAIL")
        .env_remove("GIT_AUTHOR_NAME")
        .env_remove("GIT_AUTHOR_EMAIL")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let writer = r.json(&["show", "r1"])["writer"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(writer.starts_with("someone@"), "{writer}");

    // As git resolves an author: `GIT_AUTHOR_*` over `author.*` over `user.*`.
    r.git(&["config", "user.name", "User Name"]);
    r.git(&["config", "user.email", "user@example.com"]);
    r.git(&["config", "author.name", "Author Name"]);
    let out = tool_cmd(r.path())
        .args(["checkpoint", "s3", "--run", "r1"])
        .env_remove("EMAIL")
        .env_remove("GIT_AUTHOR_NAME")
        .env("GIT_AUTHOR_EMAIL", "env@example.com")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        r.json(&["show", "r1"])["writer"],
        "Author Name <env@example.com>"
    );
}

// ---------------------------------------------------------------------------------------
// 7. Output people can read.

#[test]
fn list_fits_the_terminal_with_relative_times_and_counts_hidden_runs() {
    let r = Repo::new();
    for i in 0..24 {
        r.ok(&[
            "start",
            "--run",
            &format!("run-{i:02}-with-a-longish-id"),
            "--label",
            &format!("label {i} that is rather long, as labels written by agents tend to be"),
        ]);
    }
    r.ok(&["checkpoint", "plan", "--run", "run-00-with-a-longish-id"]);
    r.ok(&[
        "rewind",
        "run-00-with-a-longish-id",
        "--to",
        "plan",
        "--run",
        "run-24",
        "--no-checkout",
    ]);
    let out = tool(r.path(), &["list"], &[("COLUMNS", "80")]);
    assert!(out.status.success());
    let t = text(&out.stdout);
    let lines: Vec<&str> = t.lines().collect();
    // Header, 24 visible runs (one archived), the footer.
    assert_eq!(lines.len(), 26, "{t}");
    for l in &lines {
        assert!(
            l.chars().count() <= 80,
            "too wide ({}): {l}",
            l.chars().count()
        );
    }
    for l in &lines[1..25] {
        // Two columns for the marker of the active run (`* `), as `git branch`.
        assert!(l[2..].starts_with("run-"), "{l}");
        let id = l[2..].split_whitespace().next().unwrap();
        assert!(
            id == "run-24" || id.ends_with("-with-a-longish-id"),
            "id cut: {l}"
        );
        assert!(l.contains("just now"), "{l}");
        assert!(
            !l.contains("2026-") && !l.contains("T"),
            "absolute time: {l}"
        );
    }
    assert!(t.contains("…"), "labels not cut: {t}");
    assert_eq!(
        lines[25],
        "1 archived run hidden (`git agent-rewind list --all` shows it)"
    );
    // --all shows it; the JSON keeps absolute times.
    let all = tool(r.path(), &["list", "--all"], &[("COLUMNS", "80")]);
    assert_eq!(text(&all.stdout).lines().count(), 26);
    let doc = r.json(&["list"]);
    assert!(doc[0]["last_activity"].as_str().unwrap().ends_with('Z'));
}

/// `args` run on a pseudo-terminal (util-linux `script`), with `env` set; returns what
/// reached the terminal.
fn on_a_terminal(r: &Repo, args: &str, env: &[(&str, &str)]) -> String {
    // The isolated environment the other tests run the tool with, around `script`.
    let tool = crate::common::tool_cmd(r.path());
    let line = format!("{} {args}", crate::common::bin().display());
    let mut c = std::process::Command::new("script");
    c.args(["-qec", &line, "/dev/null"]).current_dir(r.path());
    for (k, v) in tool.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    let out = c
        .env_remove("GIT_PAGER")
        .env_remove("PAGER")
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{args}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// `diff`, `show` and `log` page through git's pager on a terminal
/// (`GIT_PAGER`, `pager.<cmd>`, `core.pager`), not with `--no-pager`/`-P`, `--json`, or
/// when stdout is not a terminal. The pager here is `cat > FILE`, so what it got is read.
#[test]
fn diff_show_and_log_use_the_pager_on_a_terminal() {
    let r = Repo::new();
    r.ok(&["start", "--run", "r1"]);
    r.write("a.txt", "one\n");
    r.ok(&["checkpoint", "plan"]);
    r.write("a.txt", "two\n");
    r.ok(&["checkpoint", "implement"]);
    let paged = tempfile::tempdir().unwrap();
    let file = paged.path().join("paged");
    let pager = format!("cat > '{}'", file.display());
    let take = || {
        let t = std::fs::read_to_string(&file).unwrap_or_default();
        let _ = std::fs::remove_file(&file);
        t
    };
    for (args, expect) in [
        ("log r1", "implement"),
        ("show r1", "implement"),
        ("diff r1/plan r1/implement", "+two"),
    ] {
        let shown = on_a_terminal(&r, args, &[("GIT_PAGER", &pager)]);
        let got = take();
        assert!(got.contains(expect), "{args}: the pager got {got:?}");
        assert!(!shown.contains(expect), "{args}: printed as well: {shown}");
    }
    // Not with -P, --no-pager or --json; not for other commands.
    for args in ["-P log r1", "--no-pager show r1", "--json log r1", "status"] {
        let shown = on_a_terminal(&r, args, &[("GIT_PAGER", &pager)]);
        assert_eq!(take(), "", "{args}: paged");
        assert!(!shown.is_empty(), "{args}: printed nothing");
    }
    // Not when stdout is not a terminal.
    let out = tool(r.path(), &["log", "r1"], &[("GIT_PAGER", &pager)]);
    assert!(text(&out.stdout).contains("implement"));
    assert_eq!(take(), "");
    // core.pager, and pager.<cmd> = false, as git reads them.
    r.git(&["config", "core.pager", &pager]);
    on_a_terminal(&r, "log r1", &[]);
    assert!(take().contains("implement"), "core.pager");
    r.git(&["config", "pager.log", "false"]);
    let shown = on_a_terminal(&r, "log r1", &[]);
    assert_eq!(take(), "", "pager.log=false");
    assert!(shown.contains("implement"));
}

/// `list <run>`, `log`, `show` and `status` give times relative to now,
/// as `list` does; `--json` keeps the instant.
#[test]
fn times_are_relative_for_people_and_instants_in_json() {
    let r = Repo::new();
    r.ok(&["start", "--run", "r1"]);
    r.ok(&["checkpoint", "plan"]);
    let instant = r.json(&["show", "r1"])["ts"].as_str().unwrap().to_string();
    assert!(instant.ends_with('Z'), "{instant}");
    for args in [
        &["status"][..],
        &["list", "r1"],
        &["log", "r1"],
        &["show", "r1"],
    ] {
        let out = tool(r.path(), args, &[]);
        assert!(out.status.success(), "{args:?}");
        let t = text(&out.stdout);
        assert!(t.contains("just now"), "{args:?}: {t}");
        if args[0] != "show" {
            assert!(
                !t.contains(&instant[..10]),
                "{args:?} shows the instant: {t}"
            );
        }
    }
    // `show` gives the instant beside it, and JSON keeps instants.
    assert!(text(&tool(r.path(), &["show", "r1"], &[]).stdout).contains(&instant));
    assert!(
        r.json(&["log", "r1"])[0]["ts"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    assert!(
        r.json(&["list", "r1"])[0]["ts"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
}

/// At 100 columns, with generated run ids and long labels, the runs table
/// keeps its LINEAGE column, shortened rather than dropped.
#[test]
fn list_keeps_the_lineage_column_at_100_columns() {
    let r = Repo::new();
    for i in 0..3 {
        r.ok(&[
            "start",
            "--label",
            &format!("label {i} that is rather long, as labels written by agents tend to be"),
        ]);
        r.ok(&["checkpoint", "plan-the-work-carefully"]);
    }
    let source = r.json(&["status"])["run"].as_str().unwrap().to_string();
    r.ok(&[
        "fork",
        &source,
        "--to",
        "plan-the-work-carefully",
        "--no-checkout",
    ]);
    let out = tool(r.path(), &["list"], &[("COLUMNS", "100")]);
    assert!(out.status.success());
    let t = text(&out.stdout);
    let lines: Vec<&str> = t.lines().collect();
    for l in &lines {
        assert!(
            l.chars().count() <= 100,
            "too wide ({}): {l}",
            l.chars().count()
        );
    }
    assert!(lines[0].contains("LINEAGE"), "{t}");
    assert!(
        lines.iter().any(|l| l.contains("forked from")),
        "the lineage is shown: {t}"
    );
}

/// Two checkpoints: a modified, b deleted, c added (in sub/), d made executable.
fn diff_repo() -> Repo {
    let r = Repo::new();
    r.write("a.txt", "one\ntwo\nthree\n");
    r.write("b.txt", "bee\n");
    r.write("d.sh", "echo d\n");
    r.ok(&["checkpoint", "s1", "--run", "r1"]);
    r.write("a.txt", "one\n2\nthree\n");
    std::fs::remove_file(r.path().join("b.txt")).unwrap();
    r.write("sub/c.txt", "sea\n");
    agent_rewind_core::platform::mode::set_path_permission_bits(r.path().join("d.sh"), 0o755)
        .unwrap();
    r.ok(&["checkpoint", "s2", "--run", "r1"]);
    r
}

#[test]
fn diff_prints_git_s_format_with_stat_and_paths() {
    let r = diff_repo();
    let t1 = r.rev("refs/agent-runs/r1/s1^{tree}");
    let t2 = r.rev("refs/agent-runs/r1/s2^{tree}");
    let git_diff = |extra: &[&str]| {
        let mut a = vec!["diff", "--no-color", &t1, &t2];
        a.extend_from_slice(extra);
        r.git(&a)
    };
    let out = r.ok(&["diff", "r1/s1", "r1/s2"]);
    assert!(out.contains("diff --git a/a.txt b/a.txt\nindex "), "{out}");
    assert!(out.contains("deleted file mode 100644"), "{out}");
    assert!(out.contains("new file mode 100644"), "{out}");
    assert!(out.contains("old mode 100644\nnew mode 100755"), "{out}");
    assert!(out.trim_end().ends_with(git_diff(&[]).trim_end()), "{out}");
    // One argument: against its predecessor.
    assert_eq!(r.ok(&["diff", "r1/s2"]), r.ok(&["diff", "r1@1", "r1@2"]));
    // --stat, and paths relative to the current folder.
    let stat = r.ok(&["diff", "r1/s1", "r1/s2", "--stat"]);
    assert!(
        stat.trim_end().ends_with(git_diff(&["--stat"]).trim_end()),
        "{stat}"
    );
    let only_sub = r.ok(&["diff", "r1/s1", "r1/s2", "--", "sub"]);
    assert!(
        only_sub.contains("b/sub/c.txt") && !only_sub.contains("a.txt"),
        "{only_sub}"
    );
    let from_sub = common::ok_in(
        &r.path().join("sub"),
        &["diff", "r1/s1", "r1/s2", "--", "."],
    );
    assert_eq!(from_sub, only_sub);
    let doc = r.json(&["diff", "r1/s1", "r1/s2", "--", "sub"]);
    assert_eq!(doc["files"].as_array().unwrap().len(), 1, "{doc:#}");
}

#[test]
fn diff_colours_by_git_s_rules() {
    let r = diff_repo();
    let coloured = |args: &[&str], env: &[(&str, &str)]| {
        let out = tool(r.path(), args, env);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        text(&out.stdout).contains('\x1b')
    };
    let d = ["diff", "r1/s2"];
    let with = |extra: &[&'static str]| [&d[..], extra].concat();
    // Not a terminal: auto means none.
    assert!(!coloured(&d, &[("NO_COLOR", "")]));
    assert!(coloured(&with(&["--color=always"]), &[]));
    assert!(coloured(&with(&["--color"]), &[]));
    assert!(!coloured(&with(&["--color=never"]), &[]));
    assert!(!coloured(&with(&["--no-color"]), &[]));
    assert!(!coloured(&with(&["--color=auto"]), &[("NO_COLOR", "")]));
    // git's config: color.diff over color.ui; NO_COLOR over both; the flag over all.
    r.git(&["config", "color.ui", "always"]);
    assert!(coloured(&d, &[("NO_COLOR", "")]));
    assert!(!coloured(&d, &[("NO_COLOR", "1")]));
    r.git(&["config", "color.diff", "never"]);
    assert!(!coloured(&d, &[("NO_COLOR", "")]));
    assert!(coloured(&with(&["--color=always"]), &[("NO_COLOR", "1")]));
    // A bad value is a usage error, not a panic.
    let out = tool(r.path(), &["diff", "r1/s2", "--color=sometimes"], &[]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn rewind_and_restore_list_the_files_they_removed_or_replaced() {
    let r = Repo::new();
    r.ok(&["checkpoint", "s1", "--run", "r1"]);
    r.write("new.txt", "new\n");
    r.write("README.md", "changed\n");
    r.ok(&["checkpoint", "s2", "--run", "r1"]);
    let out = r.ok(&["rewind", "r1", "--to", "r1@1", "--run", "r2"]);
    assert!(out.contains("  removed   new.txt"), "{out}");
    assert!(out.contains("  replaced  README.md"), "{out}");
    let out = r.ok(&["restore", "r1@2"]);
    assert!(out.contains("  added     new.txt"), "{out}");
    assert!(out.contains("  replaced  README.md"), "{out}");
    assert!(out.starts_with("restored 2 paths from "), "{out}");
    // Counts read as English: one path is "1 path", never "1 path(s)".
    r.write("README.md", "changed again\n");
    let out = r.ok(&["restore", "r1@2", "--", "README.md"]);
    assert!(out.starts_with("restored 1 path from "), "{out}");
}

// ---------------------------------------------------------------------------------------
// Fields from a user or a remote never reach the terminal raw.

const HOSTILE_LABEL: &str = "\x1b]0;pwned\x07\x1b[2J\x1b[Hfake\rX\u{202e}gnp.exe";
const HOSTILE_MESSAGE: &str =
    "first line\n\x1b[31mred\x1b[0m\nwriter: forged\x1b]8;;http://x\x07link";

fn assert_no_raw_controls(what: &str, out: &[u8]) {
    let t = text(out);
    for bad in ['\x1b', '\x07', '\r', '\u{202e}'] {
        assert!(!t.contains(bad), "{what}: raw {bad:?} in {t:?}");
    }
}

#[test]
fn escape_and_osc_sequences_in_labels_and_messages_are_shown_escaped() {
    let r = Repo::new();
    r.ok(&["start", "--run", "r1", "--label", HOSTILE_LABEL]);
    r.write("evil\x1b[2Jname.txt", "x\n");
    r.ok(&[
        "checkpoint",
        "s1",
        "-m",
        HOSTILE_MESSAGE,
        "--session-id",
        "s\x1b]0;t\x07",
    ]);
    for args in [
        &["list"][..],
        &["list", "--all"],
        &["show", "r1"],
        &["status"],
        &["log", "r1"],
        &["log", "r1", "--graph"],
        &["diff", "r1"],
        &["diff", "r1", "--stat"],
        &["list", "r1"],
    ] {
        let out = tool(r.path(), args, &[("COLUMNS", "200")]);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert_no_raw_controls(&format!("{args:?}"), &out.stdout);
        assert_no_raw_controls(&format!("{args:?} (stderr)"), &out.stderr);
    }
    // Shown the way git quotes a path.
    let list = r.ok(&["list"]);
    assert!(list.contains("\"\\033]0;pwned\\a\\033[2J"), "{list}");
    let show = r.ok(&["show", "r1"]);
    assert!(show.contains("\\033[31mred"), "{show}");
    // A message's lines stay under its field: none passes for another field.
    assert!(
        !show.lines().any(|l| l.starts_with("writer: forged")),
        "{show}"
    );
    assert!(show.contains("\\033]0;t\\a"), "session: {show}");
    // The JSON keeps the exact text.
    assert_eq!(r.json(&["show", "r1"])["message"], HOSTILE_MESSAGE);

    // git's own colours survive, a file's escape sequences do not.
    r.write("a.txt", "\x1b]0;title\x07 line\n");
    r.ok(&["checkpoint", "s2"]);
    let out = tool(r.path(), &["diff", "r1", "--color=always"], &[]);
    let t = text(&out.stdout);
    assert!(t.contains("\x1b[32m"), "{t:?}");
    assert!(!t.contains("\x1b]") && !t.contains('\x07'), "{t:?}");
    assert!(t.contains("\\033]0;title\\a"), "{t:?}");
    // Errors that quote user input are safe too.
    let out = tool(r.path(), &["show", "r1/no\x1b[2Jstep"], &[]);
    assert_no_raw_controls("error", &out.stderr);
}
