//! `blame`: agent lines are what a turn changed in the paths it touched,
//! a person's edits between turns are the person's, moved and re-indented lines keep their
//! origin, lines not committed yet are attributed too; git's layout, `--porcelain`,
//! `--json`, `-L`, colour by git's rules, paths relative to the current folder.

use super::{Agent, commit, expect, origins, repo_with};
use crate::common::tool_cmd;

#[test]
fn blame_names_the_agent_turn_or_the_person_of_every_line() {
    let r = repo_with("one\ntwo\nthree\n");
    let before = r.git(&["status", "--porcelain"]);
    let a = Agent::start(r.path(), "s-1", "model-a");
    // Turn 1: the agent adds two lines and also writes notes.txt.
    a.write("app.txt", "one\nagent alpha\nagent beta\ntwo\nthree\n");
    a.write("notes.txt", "agent note\n");
    let t1 = a.turn();
    // The person adds a line between turns and commits (a `commit` checkpoint).
    r.write(
        "app.txt",
        "one\nagent alpha\nagent beta\ntwo\nperson gamma\nthree\n",
    );
    // The person also edits a file the agent never touched in that turn.
    r.write("other.txt", "person other\n");
    commit(&r, "first");
    // Turn 2: the agent moves `agent alpha` to the end, re-indents `agent beta`, adds one.
    a.write(
        "app.txt",
        "one\n    agent beta\ntwo\nperson gamma\nthree\nagent delta\nagent alpha\n",
    );
    let t2 = a.turn();
    commit(&r, "second");
    assert_ne!(t1, t2);
    let want = expect(
        "model-a",
        &[
            "P:one",
            "A:    agent beta",
            "P:two",
            "P:person gamma",
            "P:three",
            "A:agent delta",
            "A:agent alpha",
        ],
    );
    assert_eq!(origins(&r, "app.txt", None), want);
    assert_eq!(origins(&r, "app.txt", Some("HEAD")), want);
    assert_eq!(
        origins(&r, "notes.txt", Some("HEAD")),
        expect("model-a", &["A:agent note"])
    );
    assert_eq!(
        origins(&r, "other.txt", None),
        expect("model-a", &["P:person other"])
    );

    // Every field of an agent line: run, step, seq, checkpoint, session, model.
    let doc = r.json(&["blame", "app.txt"]);
    let delta = &doc["lines"][5];
    assert_eq!(delta["agent"]["checkpoint"], t2.as_str(), "{delta}");
    assert_eq!(delta["agent"]["agent"], "claude");
    assert_eq!(delta["agent"]["session"], "s-1");
    assert_eq!(delta["commit"], r.rev("HEAD").as_str());
    let beta = &doc["lines"][1];
    assert_eq!(beta["agent"]["checkpoint"], t1.as_str(), "{beta}");
    let run = beta["agent"]["run"].as_str().unwrap();
    let cps = crate::common::checkpoints(r.path(), run);
    let cp = cps
        .iter()
        .find(|c| c["checkpoint"] == t1.as_str())
        .expect("the turn is a checkpoint of the run");
    assert_eq!(cp["event"], "turn");
    assert_eq!(beta["agent"]["seq"], cp["seq"]);
    assert_eq!(beta["agent"]["step"], cp["step"]);
    let person = &doc["lines"][3];
    assert_eq!(person["author"]["name"], "Test User");
    assert_eq!(person["commit"], r.rev("HEAD~1").as_str());
    assert!(person.get("agent").is_none());
    r.assert_fsck();
    assert_eq!(r.git(&["status", "--porcelain"]), before);
}

#[test]
fn lines_not_committed_yet_are_attributed_in_the_worktree() {
    let r = repo_with("one\n");
    let a = Agent::start(r.path(), "s-2", "model-b");
    a.write("app.txt", "one\nagent new\n");
    a.turn();
    r.write("app.txt", "one\nagent new\nperson new\n");
    let got = origins(&r, "app.txt", None);
    assert_eq!(
        got,
        expect("model-b", &["P:one", "A:agent new", "P:person new"])
    );
    let doc = r.json(&["blame", "app.txt"]);
    assert_eq!(doc["lines"][1]["commit"], "0".repeat(40).as_str());
    assert_eq!(doc["lines"][2]["author"]["name"], "Not Committed Yet");
}

/// A file the agent created and nobody added yet (git's own blame refuses it: "no such path
/// in HEAD"), and one .gitignore ignores: every line is blamed as not committed, the agent's
/// lines named (an ignored file is in no checkpoint, so no turn is named). The user's index is untouched and nothing is left in the store's folders.
#[test]
fn a_new_file_git_does_not_know_yet_is_blamed_too() {
    let r = repo_with("one\n");
    r.write(".gitignore", "*.log\n");
    commit(&r, "ignore logs");
    let a = Agent::start(r.path(), "s-3", "model-c");
    a.write("src/new.rs", "fn new() {}\n");
    a.write("out.log", "agent log\n");
    a.turn();
    r.write("src/new.rs", "fn new() {}\n// person\n");
    let status = r.git(&["status", "--porcelain", "--ignored"]);
    assert_eq!(
        origins(&r, "src/new.rs", None),
        expect("model-c", &["A:fn new() {}", "P:// person"])
    );
    // Checkpoints leave ignored files out, so no turn holds it: blamed, as nobody's turn.
    assert_eq!(
        origins(&r, "out.log", None),
        expect("model-c", &["P:agent log"])
    );
    // From a subfolder, relative to it, as git would read it.
    let doc = crate::common::json_in(&r.path().join("src"), &["blame", "new.rs"]);
    assert_eq!(doc["lines"][0]["commit"], "0".repeat(40).as_str());
    assert_eq!(r.git(&["status", "--porcelain", "--ignored"]), status);
    let git_dir = r.path().join(".git");
    let leftovers: Vec<_> = walk(&git_dir)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("blame-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // A file that is not there at all is still a clear error.
    let out = r.run(&["blame", "src/missing.rs"]);
    assert!(!out.status.success());
    r.assert_fsck();
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

#[test]
fn blame_output_is_git_blame_s_layout_with_porcelain_ranges_colour_and_relative_paths() {
    let r = repo_with("one\n");
    let a = Agent::start(r.path(), "s-3", "model-c");
    a.write("src/lib.txt", "alpha\nbeta\ngamma\n");
    a.turn();
    commit(&r, "lib");
    // Human: `<commit> (<who> <date> <line>) <content>`, the agent as agent:model run/step@seq.
    let out = r.ok(&["blame", "src/lib.txt"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    let head = r.rev("HEAD");
    assert!(lines[0].starts_with(&head[..8]), "{out}");
    assert!(lines[0].contains("(claude:model-c "), "{out}");
    assert!(lines[0].ends_with(") alpha"), "{out}");
    assert!(!out.contains('\x1b'), "no colour when piped: {out}");
    // Colour when asked, as git's --color; never with --no-color.
    let coloured = r.ok(&["blame", "--color=always", "src/lib.txt"]);
    assert!(coloured.contains("\x1b[36m"), "{coloured:?}");
    let cfg = r.ok(&["-C", ".", "blame", "--no-color", "src/lib.txt"]);
    assert!(!cfg.contains('\x1b'));
    // -L as git reads it.
    let doc = r.json(&["blame", "src/lib.txt", "-L", "2,3"]);
    let got: Vec<u64> = doc["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["line"].as_u64().unwrap())
        .collect();
    assert_eq!(got, vec![2, 3]);
    // Porcelain: a header per line, key value lines, the line after a tab.
    let p = r.ok(&["blame", "--porcelain", "src/lib.txt", "HEAD"]);
    assert!(p.starts_with(&format!("{head} 1 1\norigin agent\n")), "{p}");
    assert!(p.contains("\nagent claude\nagent-model model-c\n"), "{p}");
    assert!(p.contains("\nagent-session s-3\n"), "{p}");
    assert!(p.contains("\n\talpha\n"), "{p}");
    // Relative to the current folder, as git.
    let sub = r.path().join("src");
    let doc = crate::common::json_in(&sub, &["blame", "lib.txt"]);
    assert_eq!(doc["path"], "src/lib.txt");
    assert_eq!(doc["lines"][0]["origin"], "agent");
    // `git -c color.ui=always` (as git passes it on) colours a pipe too.
    let out = tool_cmd(r.path())
        .env_remove("NO_COLOR")
        .args(["blame", "src/lib.txt"])
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "color.ui")
        .env("GIT_CONFIG_VALUE_0", "always")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("\x1b["));
}

#[test]
fn blame_refuses_bad_input_clearly_and_changes_nothing() {
    let r = repo_with("one\n");
    let before = r.git(&["status", "--porcelain"]);
    let refs = r.git(&["for-each-ref"]);
    for (args, needle) in [
        (vec!["blame", "missing.txt"], "missing.txt"),
        (vec!["blame", "app.txt", "--output=x"], "--output"),
        (vec!["blame", "app.txt", "-x"], "-x"),
        (vec!["blame", "app.txt", "no-such-rev"], "no-such-rev"),
        (vec!["blame", "../outside.txt"], "outside"),
        (vec!["blame", "."], "not a file"),
        (vec!["blame", "app.txt", "-L", "9,12"], "only 1 line"),
        (vec!["stats", "no-such-rev"], "no-such-rev"),
        (vec!["stats", "--oops"], "--oops"),
    ] {
        let out = r.run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(matches!(out.status.code(), Some(1 | 2)), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    assert_eq!(r.git(&["status", "--porcelain"]), before);
    assert_eq!(r.git(&["for-each-ref"]), refs);
}

#[test]
fn a_person_moving_or_reindenting_agent_lines_leaves_them_the_agent_s() {
    let r = repo_with("start\n");
    let a = Agent::start(r.path(), "s-4", "model-d");
    a.write(
        "app.txt",
        "start\nfn helper() {\n    let total = compute_total(items);\n    return total;\n}\n",
    );
    a.turn();
    commit(&r, "agent work");
    // The person wraps the agent's body in a block (re-indented) and moves the function
    // into another file (a copy git blame -C follows).
    r.write(
        "app.txt",
        "start\nfn helper() {\n    if ready {\n        let total = compute_total(items);\n        return total;\n    } // ready\n}\n",
    );
    r.write(
        "moved.txt",
        "// moved here\nfn helper() {\n    let total = compute_total(items);\n    return total;\n}\n",
    );
    commit(&r, "person refactor");
    assert_eq!(
        origins(&r, "app.txt", Some("HEAD")),
        expect(
            "model-d",
            &[
                "P:start",
                "A:fn helper() {",
                "P:    if ready {",
                "A:        let total = compute_total(items);",
                "A:        return total;",
                "P:    } // ready",
                "A:}",
            ]
        )
    );
    let moved = origins(&r, "moved.txt", None);
    assert_eq!(moved[0], ("// moved here".into(), "person".into()));
    assert_eq!(moved[2].1, "agent:model-d", "{moved:?}");
    assert_eq!(moved[3].1, "agent:model-d", "{moved:?}");
}

#[test]
fn blame_keeps_its_who_column_narrow_with_the_run_prefix_and_short_model() {
    let r = repo_with("one\n");
    let a = Agent::start(r.path(), "s-5", "claude-sonnet-4-5-20250929");
    a.write("src/lib.txt", "alpha\nbeta\n");
    a.turn();
    commit(&r, "lib");
    let doc = r.json(&["blame", "src/lib.txt"]);
    let run = doc["lines"][0]["agent"]["run"]
        .as_str()
        .unwrap()
        .to_string();
    // --json keeps the full values.
    assert_eq!(
        doc["lines"][0]["agent"]["model"],
        "claude-sonnet-4-5-20250929"
    );
    assert!(run.len() > 20, "a generated run id: {run}");
    let out = r.ok(&["blame", "src/lib.txt"]);
    for line in out.lines() {
        let open = line.find('(').expect("git blame's layout");
        let close = line.find(") ").expect("git blame's layout");
        // `(<who> <date> <line>)`: the date is 10 characters, the line number 1.
        let who = line[open + 1..close - 13].trim_end();
        assert!(who.chars().count() <= 40, "{who:?} in {line}");
        assert!(who.starts_with("claude:sonnet-4-5 "), "{line}");
        assert!(!line.contains(&run), "the full run id in {line}");
        let shown = who.split(' ').nth(1).unwrap();
        let prefix = shown.split(['/', '@']).next().unwrap();
        assert!(run.starts_with(prefix) && prefix.len() >= 4, "{line}");
        // The prefix names the run.
        assert_eq!(r.json(&["log", prefix])[0]["run"], run.as_str());
        assert!(close < 70, "the code starts at column {close}: {line}");
    }
}
