//! `blame` after a `pick`: the lines the pick brought are credited to the turns that wrote
//! them in the source run, in the worktree and once committed; the lines here stay their
//! writers'.

use crate::attribution::{Agent, commit, expect, origins, repo_with};
use crate::common::ok_in;

#[test]
fn picked_lines_are_credited_to_the_turns_of_the_run_that_wrote_them() {
    let base = "one\ntwo\nthree\nfour\nfive\nsix\n";
    let r = repo_with(base);
    let tmp = tempfile::tempdir().unwrap();
    let wt = tmp.path().join("try-b");
    r.git(&["worktree", "add", "-q", wt.to_str().unwrap()]);
    // An agent works in the second worktree, in its own run.
    let agent = Agent::start(&wt, "sess-b", "model-b");
    agent.write("app.txt", "one\nagent line\ntwo\nthree\nfour\nfive\nsix\n");
    agent.turn();
    let run = ok_in(&wt, &["--json", "status"]);
    let run: serde_json::Value = serde_json::from_str(&run).unwrap();
    let run = run["run"].as_str().unwrap().to_string();
    // Here, a person changes the end of the file meanwhile; then the agent's attempt comes home.
    r.write("app.txt", "one\ntwo\nthree\nfour\nfive\nsix\nmine\n");
    let out = r.json(&["pick", &run]);
    assert_eq!(out["files"][0]["action"], "merge");
    let table = [
        "P:one",
        "A:agent line",
        "P:two",
        "P:three",
        "P:four",
        "P:five",
        "P:six",
        "P:mine",
    ];
    assert_eq!(origins(&r, "app.txt", None), expect("model-b", &table));
    commit(&r, "the winner");
    assert_eq!(
        origins(&r, "app.txt", Some("HEAD")),
        expect("model-b", &table)
    );
}
