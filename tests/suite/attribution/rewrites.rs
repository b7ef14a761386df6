//! The history-rewriting matrix: every operation that rewrites commits
//! keeps every line's origin — the agent turn or the person that wrote it. The same
//! feature branch (agent turn, person commit, agent turn over two files) is rewritten by
//! each operation, then every line of both files is checked at the new commit and in the
//! worktree. Includes the cases git-ai's users reported lost: a squash rebase, a fresh branch
//! squash-merged, authorship copied to earlier commits, a forge's squash with an outer merge.

use super::{Agent, commit, expect, origins, repo_with};
use crate::common::{Repo, git_cmd};

const MODEL: &str = "model-m";

/// Twelve numbered lines, a person's.
fn base() -> String {
    (1..=12).map(|i| format!("line {i:02}\n")).collect()
}

/// `base` with `extra` lines inserted after the given line numbers.
fn with(inserts: &[(u32, &str)]) -> String {
    let mut out = String::new();
    for i in 1..=12 {
        out.push_str(&format!("line {i:02}\n"));
        for (after, text) in inserts {
            if *after == i {
                out.push_str(text);
                out.push('\n');
            }
        }
    }
    out
}

/// The feature branch: c1 (an agent turn adds `agent a1`), c2 (the person adds `person
/// p1`), c3 (an agent turn adds `agent a3` and writes lib.txt). Returns the repository on
/// `feature`, main still at the base commit.
fn feature() -> (Repo, Agent) {
    let r = repo_with(&base());
    r.git(&["checkout", "-q", "-b", "feature"]);
    let a = Agent::start(r.path(), "s-matrix", MODEL);
    a.write("app.txt", &with(&[(2, "agent a1")]));
    a.turn();
    commit(&r, "c1 agent");
    r.write("app.txt", &with(&[(2, "agent a1"), (6, "person p1")]));
    commit(&r, "c2 person");
    a.write(
        "app.txt",
        &with(&[(2, "agent a1"), (6, "person p1"), (10, "agent a3")]),
    );
    a.write("lib.txt", "agent lib one\nagent lib two\n");
    a.turn();
    commit(&r, "c3 agent");
    (r, a)
}

/// Who wrote each line of the feature's files (`extra`: more expected lines of app.txt).
fn feature_lines(extra: &[(u32, &str)]) -> Vec<(String, String)> {
    let mut rows: Vec<String> = vec![];
    for i in 1..=12u32 {
        rows.push(format!("P:line {i:02}"));
        let mut here: Vec<(u32, &str)> =
            vec![(2, "A:agent a1"), (6, "P:person p1"), (10, "A:agent a3")];
        here.extend_from_slice(extra);
        for (after, text) in here {
            if after == i {
                rows.push(text.to_string());
            }
        }
    }
    let refs: Vec<&str> = rows.iter().map(String::as_str).collect();
    expect(MODEL, &refs)
}

/// Every line of app.txt and lib.txt at HEAD and in the worktree is as `app` says.
fn assert_kept(r: &Repo, app: &[(String, String)], what: &str) {
    assert_eq!(
        origins(r, "app.txt", Some("HEAD")),
        app,
        "{what}: app.txt at HEAD"
    );
    assert_eq!(
        origins(r, "app.txt", None),
        app,
        "{what}: app.txt in the worktree"
    );
    let lib = expect(MODEL, &["A:agent lib one", "A:agent lib two"]);
    assert_eq!(origins(r, "lib.txt", Some("HEAD")), lib, "{what}: lib.txt");
    r.assert_fsck();
    assert_eq!(r.git(&["status", "--porcelain"]), "", "{what}");
}

/// git with extra environment (a sequence editor, fixed dates).
fn git_env(r: &Repo, args: &[&str], env: &[(&str, &str)]) {
    let out = git_cmd(r.path())
        .args(args)
        .env("GIT_EDITOR", "true")
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `git rebase -i <onto>` with the todo list replaced by `todo` (`{c1}`… the commits).
fn rebase_todo(r: &Repo, onto: &str, todo: &str) {
    let ids: Vec<String> = ["HEAD~2", "HEAD~1", "HEAD"]
        .iter()
        .map(|c| r.rev(c))
        .collect();
    let text = todo
        .replace("{c1}", &ids[0])
        .replace("{c2}", &ids[1])
        .replace("{c3}", &ids[2]);
    let file = r.path().join(".git/matrix-todo");
    std::fs::write(&file, text).unwrap();
    let editor = format!("cp {}", file.display());
    git_env(
        r,
        &["rebase", "-q", "-i", onto],
        &[("GIT_SEQUENCE_EDITOR", &editor)],
    );
}

/// A person's commit on main made before the branch's turns (a fixed date in the past).
fn earlier_main_commit(r: &Repo, file: &str, content: &str, message: &str) {
    r.git(&["checkout", "-q", "main"]);
    r.write(file, content);
    r.git(&["add", "-A"]);
    let date = "2020-01-01T00:00:00Z";
    git_env(
        r,
        &["commit", "-q", "-m", message],
        &[("GIT_AUTHOR_DATE", date), ("GIT_COMMITTER_DATE", date)],
    );
}

#[test]
fn the_feature_branch_itself() {
    let (r, _a) = feature();
    assert_kept(&r, &feature_lines(&[]), "before any rewrite");
}

#[test]
fn commit_amend_keeps_every_origin() {
    let (r, _a) = feature();
    r.git(&["commit", "-q", "--amend", "-m", "c3 reworded"]);
    assert_kept(&r, &feature_lines(&[]), "amend (message)");
    // An amend that adds a person's line.
    r.write(
        "app.txt",
        &with(&[
            (2, "agent a1"),
            (6, "person p1"),
            (10, "agent a3"),
            (12, "person p2"),
        ]),
    );
    r.git(&["commit", "-q", "-a", "--amend", "--no-edit"]);
    assert_kept(
        &r,
        &feature_lines(&[(12, "P:person p2")]),
        "amend (content)",
    );
}

#[test]
fn interactive_rebase_reorder_keeps_every_origin() {
    let (r, _a) = feature();
    rebase_todo(&r, "main", "pick {c3}\npick {c1}\npick {c2}\n");
    assert_kept(&r, &feature_lines(&[]), "rebase -i reorder");
}

#[test]
fn interactive_rebase_fixup_keeps_every_origin() {
    let (r, _a) = feature();
    rebase_todo(&r, "main", "pick {c1}\npick {c2}\nfixup {c3}\n");
    assert_eq!(r.git(&["rev-list", "--count", "main..HEAD"]).trim(), "2");
    assert_kept(&r, &feature_lines(&[]), "rebase -i fixup");
}

#[test]
fn interactive_rebase_squash_of_two_agent_and_one_person_commit_git_ai_1214() {
    // A case git-ai was seen to get wrong: a squash rebase of 3 commits (2 AI + 1 human) lost data.
    let (r, _a) = feature();
    rebase_todo(&r, "main", "pick {c1}\nsquash {c2}\nsquash {c3}\n");
    assert_eq!(r.git(&["rev-list", "--count", "main..HEAD"]).trim(), "1");
    assert_kept(&r, &feature_lines(&[]), "rebase -i squash");
}

#[test]
fn rebase_onto_keeps_every_origin() {
    let (r, _a) = feature();
    r.git(&["checkout", "-q", "-b", "other", "main"]);
    r.write("unrelated.txt", "other work\n");
    commit(&r, "other");
    r.git(&["rebase", "-q", "--onto", "other", "main", "feature"]);
    assert_kept(&r, &feature_lines(&[]), "rebase --onto");
}

#[test]
fn cherry_pick_keeps_every_origin() {
    let (r, _a) = feature();
    let picks: Vec<String> = ["feature~2", "feature~1", "feature"]
        .iter()
        .map(|c| r.rev(c))
        .collect();
    r.git(&["checkout", "-q", "-b", "picked", "main"]);
    r.write("unrelated.txt", "main work\n");
    commit(&r, "main work");
    let mut args = vec!["cherry-pick"];
    args.extend(picks.iter().map(String::as_str));
    r.git(&args);
    assert_kept(&r, &feature_lines(&[]), "cherry-pick");
}

#[test]
fn merge_squash_keeps_every_origin() {
    let (r, _a) = feature();
    r.git(&["checkout", "-q", "main"]);
    r.git(&["merge", "-q", "--squash", "feature"]);
    r.git(&["commit", "-q", "-m", "squashed feature"]);
    assert_kept(&r, &feature_lines(&[]), "merge --squash");
}

#[test]
fn a_forge_squash_merge_with_the_same_tree_keeps_every_origin() {
    // A forge's squash-merge: a new commit on main with the branch's tree and a message
    // naming the pull request; no hook of ours ran for it.
    let (r, _a) = feature();
    let tree = r.rev("feature^{tree}");
    let main = r.rev("main");
    let squash = r
        .git(&[
            "commit-tree",
            &tree,
            "-p",
            &main,
            "-m",
            "Add the feature (#42)",
        ])
        .trim()
        .to_string();
    r.git(&["update-ref", "refs/heads/main", &squash, &main]);
    r.git(&["checkout", "-q", "main"]);
    assert_kept(&r, &feature_lines(&[]), "forge squash-merge");
}

#[test]
fn a_rebase_onto_a_main_that_changed_the_same_file_keeps_every_origin() {
    let (r, _a) = feature();
    r.git(&["checkout", "-q", "main"]);
    r.write(
        "app.txt",
        &with(&[(4, "main m1")]).replace("line 12\n", "line 12 (edited on main)\n"),
    );
    commit(&r, "main edits app.txt");
    r.git(&["checkout", "-q", "feature"]);
    r.git(&["rebase", "-q", "main"]);
    let mut want = feature_lines(&[(4, "P:main m1")]);
    for row in &mut want {
        if row.0 == "line 12" {
            row.0 = "line 12 (edited on main)".into();
        }
    }
    assert_kept(&r, &want, "rebase onto a changed main");
}

#[test]
fn a_rebase_of_an_agent_addition_and_an_agent_deletion_git_ai_1079() {
    // A case git-ai lost authorship in: a branch fresh from main with two agent commits, one
    // adding lines and one only deleting, lost its authorship when rebased onto a main that
    // moved on.
    let r = repo_with(&base());
    r.git(&["checkout", "-q", "-b", "feature"]);
    let a = Agent::start(r.path(), "s-1079", MODEL);
    a.write(
        "app.txt",
        &with(&[(3, "agent x1"), (3, "agent x2"), (9, "agent x3")]),
    );
    a.turn();
    commit(&r, "agent adds");
    a.write("app.txt", &with(&[(3, "agent x1"), (9, "agent x3")]));
    a.turn();
    commit(&r, "agent deletes");
    r.git(&["checkout", "-q", "main"]);
    r.write("unrelated.txt", "main moved on\n");
    commit(&r, "main moves on");
    r.git(&["checkout", "-q", "feature"]);
    r.git(&["rebase", "-q", "main"]);
    let mut rows: Vec<String> = (1..=12).map(|i| format!("P:line {i:02}")).collect();
    rows.insert(3, "A:agent x1".into());
    rows.insert(10, "A:agent x3".into());
    let refs: Vec<&str> = rows.iter().map(String::as_str).collect();
    assert_eq!(origins(&r, "app.txt", Some("HEAD")), expect(MODEL, &refs));
    r.assert_fsck();
}

#[test]
fn a_squash_merge_never_gives_the_agent_s_lines_to_earlier_commits_on_main_git_ai_1473() {
    // git-ai was seen to get this wrong: on a squash merge, authorship was copied to unrelated
    // earlier commits of the target branch. Here main's earlier person commits even hold a
    // line equal to one the agent later wrote: it stays the person's.
    let (r, _a) = feature();
    earlier_main_commit(
        &r,
        "main.txt",
        "agent lib one\nperson main\n",
        "earlier on main",
    );
    r.git(&["merge", "-q", "--squash", "feature"]);
    r.git(&["commit", "-q", "-m", "Feature (#7)"]);
    assert_kept(&r, &feature_lines(&[]), "squash merge");
    assert_eq!(
        origins(&r, "main.txt", Some("HEAD")),
        expect(MODEL, &["P:agent lib one", "P:person main"])
    );
}

#[test]
fn a_gitlab_squash_then_merge_commit_with_the_same_tree_git_ai_2079() {
    // A case git-ai lost authorship in: GitLab makes a squash commit S on the target B and an
    // outer merge M of B and S with tree(M) == tree(S); taking M for a plain merge lost the
    // attribution.
    let (r, _a) = feature();
    let tree = r.rev("feature^{tree}");
    let b = r.rev("main");
    let s = r
        .git(&["commit-tree", &tree, "-p", &b, "-m", "Squashed feature"])
        .trim()
        .to_string();
    let m = r
        .git(&[
            "commit-tree",
            &tree,
            "-p",
            &b,
            "-p",
            &s,
            "-m",
            "Merge branch 'feature' into 'main'",
        ])
        .trim()
        .to_string();
    r.git(&["update-ref", "refs/heads/main", &m, &b]);
    r.git(&["checkout", "-q", "main"]);
    assert_kept(&r, &feature_lines(&[]), "GitLab squash + merge");
}
