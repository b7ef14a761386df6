//! The opt-in `prepare-commit-msg` hook: `Assisted-by: <agent>:<model>`
//! trailers for the agents whose turns a commit holds, never `Co-Authored-By`; installed
//! only when asked for, removed by `hooks uninstall`.

use super::{Agent, repo_with};
use crate::common::Repo;

fn message(r: &Repo, rev: &str) -> String {
    r.git(&["log", "-1", "--format=%B", rev])
}

#[test]
fn assisted_by_trailers_name_the_agents_of_the_commit_and_never_co_authored_by() {
    let r = repo_with("one\n");
    let hooks = std::path::PathBuf::from(r.git(&["rev-parse", "--git-path", "hooks"]).trim());
    let hooks = r.path().join(hooks);
    // Not installed by default.
    assert!(!hooks.join("prepare-commit-msg").exists());
    let doc = r.json(&["hooks", "install", "--assisted-by"]);
    assert_eq!(doc["git"][0]["hook"], "prepare-commit-msg", "{doc}");
    assert!(hooks.join("post-commit").exists());
    let a = Agent::start(r.path(), "s-tr-1", "model-a");
    a.write("app.txt", "one\nagent\n");
    a.turn();
    let b = Agent::start(r.path(), "s-tr-2", "model-b");
    b.write("b.txt", "b\n");
    b.turn();
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "with agents"]);
    let msg = message(&r, "HEAD");
    assert_eq!(
        msg.trim_end(),
        "with agents\n\nAssisted-by: claude:model-a\nAssisted-by: claude:model-b",
        "{msg}"
    );
    assert!(!msg.to_lowercase().contains("co-authored-by"), "{msg}");
    // A commit with no turn since the last one gets none.
    r.write("app.txt", "one\nagent\nperson\n");
    r.git(&["commit", "-q", "-a", "-m", "person only"]);
    assert_eq!(message(&r, "HEAD").trim_end(), "person only");
    // An amend keeps one trailer per agent (no duplicate).
    a.write("app.txt", "one\nagent\nperson\nagent again\n");
    a.turn();
    r.git(&["commit", "-q", "-a", "-m", "agent again"]);
    r.git(&["commit", "-q", "--amend", "--no-edit"]);
    let msg = message(&r, "HEAD");
    assert_eq!(
        msg.matches("Assisted-by: claude:model-").count(),
        1,
        "{msg}"
    );
    r.assert_fsck();
    // Uninstalling removes it with the rest.
    let doc = r.json(&["hooks", "uninstall", "--git"]);
    let names: Vec<&str> = doc["git"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["hook"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"prepare-commit-msg"), "{doc}");
    assert!(!hooks.join("prepare-commit-msg").exists());
}
