//! The guard of the MCP writes, tried with every target shape — a run, a step, a range (a
//! step whose checkpoints have another agent's between them), one checkpoint, the run's
//! start, a person's checkpoint — by two agents, for `revert` and `restore`: a caller takes
//! back only what its own turns wrote (a path its turn reported editing), never another
//! agent's work unless `agentRewind.mcpAllow` says so, and never a person's.

use super::{Client, agent_turn};
use crate::common::Repo;
use serde_json::{Value, json};

/// Run `r`, each checkpoint's owner:
/// @0 a person's start; @1 codex writes y.txt (step codex-work); @2 claude writes c.txt
/// (claude-work); @3 a person's checkpoint of p.txt (by-hand); @4 claude writes s.txt
/// (split); @5 codex writes o.txt and changes y.txt (other); @6 claude changes s.txt (split
/// again); @7 a claude turn that wrote n.txt without reporting the edit (silent).
fn three_owners() -> Repo {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r"]);
    agent_turn(
        &repo,
        "codex",
        "s-codex",
        Some("codex-work"),
        &[("y.txt", "from codex\n")],
        true,
    );
    agent_turn(
        &repo,
        "claude",
        "s-claude",
        Some("claude-work"),
        &[("c.txt", "from claude\n")],
        true,
    );
    repo.write("p.txt", "by hand\n");
    repo.ok(&["checkpoint", "by-hand"]);
    agent_turn(
        &repo,
        "claude",
        "s-claude",
        Some("split"),
        &[("s.txt", "s1\n")],
        true,
    );
    agent_turn(
        &repo,
        "codex",
        "s-codex",
        Some("other"),
        &[("o.txt", "o\n"), ("y.txt", "from codex, twice\n")],
        true,
    );
    agent_turn(
        &repo,
        "claude",
        "s-claude",
        Some("split"),
        &[("s.txt", "s2\n")],
        true,
    );
    agent_turn(
        &repo,
        "claude",
        "s-claude",
        Some("silent"),
        &[("n.txt", "n\n")],
        false,
    );
    let owners: Vec<Value> = repo
        .json(&["list", "r"])
        .as_array()
        .unwrap()
        .iter()
        .map(|c| json!([c["seq"], c["step"], c["agent"]]))
        .collect();
    assert_eq!(
        owners,
        [
            json!([0, null, null]),
            json!([1, "codex-work", "codex"]),
            json!([2, "claude-work", "claude"]),
            json!([3, "by-hand", null]),
            json!([4, "split", "claude"]),
            json!([5, "other", "codex"]),
            json!([6, "split", "claude"]),
            json!([7, "silent", "claude"]),
        ]
    );
    repo
}

/// Every file of the scenario, as on disk now.
fn files(repo: &Repo) -> Vec<(&'static str, Option<String>)> {
    ["y.txt", "c.txt", "p.txt", "s.txt", "o.txt", "n.txt"]
        .into_iter()
        .map(|f| (f, std::fs::read_to_string(repo.path().join(f)).ok()))
        .collect()
}

/// `tool` with `args` is refused, and its message names each of `naming`.
fn refused(c: &mut Client, tool: &str, args: Value, naming: &[&str]) -> String {
    let r = c.call(tool, args.clone());
    assert_eq!(r["isError"], true, "{tool} {args}: {r:#}");
    let why = r["structuredContent"]["error"]
        .as_str()
        .unwrap()
        .to_string();
    for name in naming {
        assert!(
            why.contains(name),
            "{tool} {args}: {why:?} does not name {name:?}"
        );
    }
    why
}

/// `tool` with `args` is planned; the plan's id.
fn planned(c: &mut Client, tool: &str, args: Value) -> String {
    let r = c.ok(tool, args.clone());
    assert_eq!(r["applied"], false, "{tool} {args}: {r:#}");
    r["plan_id"].as_str().unwrap().to_string()
}

const NO_ONES: &str = "no one's to";

#[test]
fn revert_through_mcp_takes_back_only_the_callers_own_turns() {
    let repo = three_owners();
    let before = files(&repo);
    // (client, its agent, the other agent, its own step, its own checkpoint, the other's)
    let callers = [
        (
            "claude-code",
            "claude",
            "codex",
            "r/claude-work",
            "r@2",
            "r@5",
        ),
        (
            "codex-mcp-client",
            "codex",
            "claude",
            "r/codex-work",
            "r@5",
            "r@2",
        ),
    ];
    for (client, _me, other, own_step, own_cp, other_cp) in callers {
        let (mut c, _) = Client::start(&repo, client);
        let revert = |t: &str| json!({ "target": t });
        // The run holds the other agent's turns and a person's checkpoint: both named.
        let why = refused(&mut c, "revert", revert("r"), &[other, "a person's r@3"]);
        assert!(why.contains("not the caller's"), "{why}");
        // Even with a plan id: the guard comes first.
        refused(
            &mut c,
            "revert",
            json!({"target": "r", "plan_id": "0123456789abcdef0123"}),
            &[other],
        );
        // A range: step split's checkpoints (@4, @6: claude's) have codex's @5 between them.
        let range_holder = if other == "codex" {
            "codex's r@5"
        } else {
            "claude's r@4"
        };
        refused(&mut c, "revert", revert("r/split"), &[range_holder]);
        // The run's start and a person's checkpoint are no one's.
        refused(&mut c, "revert", revert("r@0"), &[NO_ONES, "r@0"]);
        refused(&mut c, "revert", revert("r@3"), &[NO_ONES, "r@3"]);
        // The other agent's checkpoint and step.
        refused(
            &mut c,
            "revert",
            revert(other_cp),
            &[&format!("recorded by {other}")],
        );
        let other_step = if other == "codex" {
            "r/codex-work"
        } else {
            "r/claude-work"
        };
        refused(&mut c, "revert", revert(other_step), &[other]);
        // Claude's silent turn reported no edit: what it changed is no one's to take back,
        // even for Claude.
        let silent_holder = if other == "claude" {
            "recorded by claude"
        } else {
            "n.txt by a person (the turn of claude"
        };
        refused(&mut c, "revert", revert("r@7"), &[silent_holder]);
        // Its own step and its own checkpoint are planned.
        planned(&mut c, "revert", revert(own_step));
        planned(&mut c, "revert", revert(own_cp));
    }
    assert_eq!(files(&repo), before, "a refusal or a plan wrote something");

    // Widened to other agents: Claude may take back Codex's turn, never a person's work.
    repo.git(&["config", "agentRewind.mcpAllow", "other-agents"]);
    let (mut c, _) = Client::start(&repo, "claude-code");
    planned(&mut c, "revert", json!({"target": "r@5"}));
    let why = refused(
        &mut c,
        "revert",
        json!({"target": "r"}),
        &["a person's r@3"],
    );
    assert!(
        !why.contains("codex's"),
        "codex's turns are allowed now: {why}"
    );
    refused(&mut c, "revert", json!({"target": "r@3"}), &[NO_ONES]);
    repo.git(&["config", "--unset", "agentRewind.mcpAllow"]);

    // Applied: each agent's own checkpoint goes, everyone else's work stays.
    let (mut claude, _) = Client::start(&repo, "claude-code");
    let id = planned(&mut claude, "revert", json!({"target": "r@2"}));
    let done = claude.ok("revert", json!({"target": "r@2", "plan_id": id}));
    assert_eq!(done["applied"], true, "{done:#}");
    let (mut codex, _) = Client::start(&repo, "codex-mcp-client");
    let id = planned(&mut codex, "revert", json!({"target": "r@5"}));
    let done = codex.ok("revert", json!({"target": "r@5", "plan_id": id}));
    assert_eq!(done["applied"], true, "{done:#}");
    let expected = [
        ("y.txt", Some("from codex\n")),
        ("c.txt", None),
        ("p.txt", Some("by hand\n")),
        ("s.txt", Some("s2\n")),
        ("o.txt", None),
        ("n.txt", Some("n\n")),
    ]
    .map(|(f, c)| (f, c.map(str::to_string)));
    assert_eq!(files(&repo), expected);
    repo.assert_fsck();
}

#[test]
fn restore_through_mcp_brings_back_only_over_the_callers_own_changes() {
    let repo = three_owners();
    let before = files(&repo);
    let restore = |cp: &str, path: &str| json!({ "checkpoint": cp, "paths": [path] });
    for client in ["claude-code", "codex-mcp-client"] {
        let (mut c, _) = Client::start(&repo, client);
        // The run's start and a person's checkpoint are no one's to restore from: not even
        // a path only the caller changed since.
        refused(
            &mut c,
            "restore",
            restore("r@0", "y.txt"),
            &[NO_ONES, "r@0"],
        );
        refused(
            &mut c,
            "restore",
            restore("r@3", "p.txt"),
            &[NO_ONES, "r@3"],
        );
        refused(&mut c, "restore", restore("r/by-hand", "s.txt"), &[NO_ONES]);
    }
    let (mut claude, _) = Client::start(&repo, "claude-code");
    // From its own checkpoint, over a path only its own turns changed since: planned.
    planned(&mut claude, "restore", restore("r@4", "s.txt"));
    planned(&mut claude, "restore", restore("r/split", "s.txt"));
    // Over what Codex changed since (y.txt at @5), or what its own turn changed without
    // reporting it (n.txt at @7): refused, naming them. A path the checkpoint never held
    // (p.txt, a person's since @3) has nothing to be restored to: refused as the command
    // line refuses it, and never deleted.
    refused(
        &mut claude,
        "restore",
        restore("r@2", "y.txt"),
        &["y.txt by codex at r@5"],
    );
    refused(
        &mut claude,
        "restore",
        restore("r@2", "p.txt"),
        &["p.txt did not exist at checkpoint"],
    );
    refused(
        &mut claude,
        "restore",
        restore("r@6", "n.txt"),
        &["n.txt did not exist at checkpoint"],
    );
    // From Codex's checkpoint, or the run's newest (a turn of Claude's) over Codex's file.
    refused(
        &mut claude,
        "restore",
        restore("r@1", "y.txt"),
        &["recorded by codex"],
    );
    let (mut codex, _) = Client::start(&repo, "codex-mcp-client");
    planned(&mut codex, "restore", restore("r@1", "y.txt"));
    planned(&mut codex, "restore", restore("r/codex-work", "y.txt"));
    refused(
        &mut codex,
        "restore",
        restore("r@4", "s.txt"),
        &["recorded by claude"],
    );
    refused(
        &mut codex,
        "restore",
        restore("r", "o.txt"),
        &["recorded by claude"],
    );
    refused(
        &mut codex,
        "restore",
        restore("r@2", "c.txt"),
        &["recorded by claude"],
    );
    refused(
        &mut codex,
        "restore",
        restore("r@1", "c.txt"),
        &["c.txt did not exist at checkpoint"],
    );

    // A change no turn recorded yet is no one's to take back.
    repo.write("s.txt", "by hand since\n");
    refused(
        &mut claude,
        "restore",
        restore("r@4", "s.txt"),
        &["s.txt changed since the newest checkpoint r@7"],
    );
    repo.write("s.txt", "s2\n");
    assert_eq!(files(&repo), before, "a refusal or a plan wrote something");

    // Widened to other agents: Claude may restore from Codex's checkpoint over Codex's
    // changes.
    repo.git(&["config", "agentRewind.mcpAllow", "other-agents"]);
    planned(&mut claude, "restore", restore("r@1", "y.txt"));
    repo.git(&["config", "--unset", "agentRewind.mcpAllow"]);

    // Applied: each takes back its own change.
    let id = planned(&mut claude, "restore", restore("r@4", "s.txt"));
    let mut apply = restore("r@4", "s.txt");
    apply["plan_id"] = id.into();
    assert_eq!(claude.ok("restore", apply)["applied"], true);
    let id = planned(&mut codex, "restore", restore("r@1", "y.txt"));
    let mut apply = restore("r@1", "y.txt");
    apply["plan_id"] = id.into();
    assert_eq!(codex.ok("restore", apply)["applied"], true);
    assert_eq!(repo.read("s.txt"), "s1\n");
    assert_eq!(repo.read("y.txt"), "from codex\n");
    assert_eq!(repo.read("p.txt"), "by hand\n");
    assert_eq!(repo.read("o.txt"), "o\n");

    // A person's change since the checkpoint is never reachable, not even widened.
    repo.write("c.txt", "claude's, then a person's\n");
    repo.ok(&["checkpoint", "by-hand"]);
    repo.git(&["config", "agentRewind.mcpAllow", "other-agents"]);
    refused(
        &mut claude,
        "restore",
        restore("r@2", "c.txt"),
        &["c.txt by a person at r@8"],
    );
    assert_eq!(repo.read("c.txt"), "claude's, then a person's\n");
    // Nor is its own turn's change that the turn did not report.
    agent_turn(
        &repo,
        "claude",
        "s-claude",
        Some("split"),
        &[("s.txt", "s3\n")],
        false,
    );
    refused(
        &mut claude,
        "restore",
        restore("r@4", "s.txt"),
        &["s.txt by a person (the turn of claude there did not report editing it) at r@9"],
    );
    assert_eq!(repo.read("s.txt"), "s3\n");
    repo.assert_fsck();
}
