//! The OpenCode plugin itself, run by Node.js, forwards its events.

use crate::common::agent_fixtures::{fixture, retarget};
use crate::common::{self, Repo, checkpoints};
use serde_json::{Value, json};

/// The OpenCode plugin itself, run by Node.js (OpenCode runs plugins on Bun, which provides
/// the same `node:child_process`): its events reach `git agent-rewind hook opencode`. Skipped,
/// saying so, where no `node` is installed.
#[test]
fn the_opencode_plugin_forwards_its_events() {
    if std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("node is not installed: the OpenCode plugin was not run");
        return;
    }
    let repo = Repo::new();
    let dir = repo.path();
    repo.ok(&["hooks", "install", "--agent", "opencode"]);
    let js = tempfile::tempdir().unwrap();
    let plugin = js.path().join("plugin.mjs");
    std::fs::copy(dir.join(".opencode/plugins/git-agent-rewind.js"), &plugin).unwrap();
    let events: Vec<Value> = [
        "session-created.json",
        "file-edited.json",
        "session-idle.json",
    ]
    .iter()
    .map(|f| {
        let mut v = fixture("opencode", f);
        retarget(&mut v, dir);
        v["event"].clone()
    })
    .collect();
    let driver = format!(
        "import {{ GitAgentRewind }} from {plugin:?};\n\
         const hooks = await GitAgentRewind({{ directory: {dir:?}, worktree: {dir:?} }});\n\
         for (const event of {events}) await hooks.event({{ event }});\n",
        plugin = plugin.to_str().unwrap(),
        dir = dir.to_str().unwrap(),
        events = Value::from(events),
    );
    std::fs::write(js.path().join("driver.mjs"), driver).unwrap();
    repo.write("src/cart.rs", "let mut total = 0;\n");
    let bin_dir = common::bin().parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
    let out = std::process::Command::new("node")
        .arg(js.path().join("driver.mjs"))
        .current_dir(dir)
        .env("PATH", path)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("AGENT_RUN")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status = repo.json(&["status"]);
    let run = status["run"]
        .as_str()
        .expect("session.created started a run");
    let turn = checkpoints(dir, run).last().unwrap().clone();
    assert_eq!(turn["event"], "turn", "{turn}");
    assert_eq!(turn["agent"], "opencode");
    assert_eq!(turn["touched"], json!(["src/cart.rs"]));
    assert_eq!(
        status["resume_command"],
        "opencode --session ses_6a1f0c3e9ffeXk2Lq8Rz4TbN1d"
    );
}
