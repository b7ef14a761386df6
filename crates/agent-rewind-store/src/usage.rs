//! What the runs hold and who is using them, for retention (`agentRewind.retain`): the bytes
//! on disk of the objects only runs reach (`git rev-list --objects --disk-usage`), and every
//! worktree of the repository with its HEAD and its active-run file. Read-only; it never
//! decides which run to delete (`agent_rewind::ops::retention` does).

use crate::layout;
use crate::repository::Store;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::RunId;
use gix::ObjectId;
use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;

/// One worktree of the repository (the main one included).
#[derive(Debug, Clone)]
pub struct WorktreeUse {
    /// The commit its HEAD is at (`None`: unborn or unreadable).
    pub head: Option<ObjectId>,
    /// Its active-run file (which may not exist).
    pub active_run_file: PathBuf,
}

/// [`crate::Worktree::uses`].
pub(crate) fn worktree_uses(store: &Store) -> Result<Vec<WorktreeUse>> {
    let repos = store
        .repo
        .worktrees_including_main()
        .map_err(|e| Error::git(format!("listing the worktrees: {e}")))?;
    let mut out = vec![];
    for repo in repos {
        let repo = repo.map_err(|e| Error::git(format!("opening a worktree: {e}")))?;
        let head = repo.head_id().ok().map(|id| id.detach());
        let private =
            agent_rewind_core::private::PrivatePaths::of(repo.git_dir(), store.repo.common_dir());
        out.push(WorktreeUse {
            head,
            active_run_file: private.active_run(),
        });
    }
    Ok(out)
}

/// [`Objects::runs_disk_usage`].
pub(crate) fn runs_disk_usage(store: &Store, runs: &[RunId]) -> Result<u64> {
    let keep: std::collections::HashSet<&str> = runs.iter().map(|r| r.as_str()).collect();
    let mut wanted: Vec<String> = store
        .refs()
        .refs_under(layout::RUNS_PREFIX)?
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| match layout::parse_run_ref(name) {
            Some(layout::RunRef::Head(r) | layout::RunRef::Step(r, _)) => keep.contains(r.as_str()),
            None => false,
        })
        .collect();
    if wanted.is_empty() {
        return Ok(0);
    }
    wanted.extend(
        store
            .refs()
            .refs_under(layout::NOTES_PREFIX)?
            .into_iter()
            .map(|(name, _)| name)
            .filter(|name| {
                layout::parse_notes_ref(name).is_some_and(|r| keep.contains(r.as_str()))
            }),
    );
    let mut stdin = wanted.join("\n");
    for prefix in [
        layout::BRANCHES_PREFIX,
        layout::TAGS_PREFIX,
        layout::REMOTES_PREFIX,
    ] {
        for (name, _) in store.refs().refs_under(prefix)? {
            stdin.push_str(&format!("\n^{name}"));
        }
    }
    stdin.push('\n');
    let dir = store.git_run_dir();
    let mut child = store
        .git_command(dir, &["rev-list", "--objects", "--disk-usage", "--stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::git(format!("could not run git: {e}")).with_source(e))?;
    let mut input = child.stdin.take().expect("piped");
    let writer = std::thread::spawn(move || input.write_all(stdin.as_bytes()));
    let out = child
        .wait_with_output()
        .map_err(|e| Error::git(format!("could not run git: {e}")).with_source(e))?;
    let _ = writer.join();
    if !out.status.success() {
        return Err(Error::git(format!(
            "git rev-list --disk-usage: {}",
            agent_rewind_core::error::one_line(&String::from_utf8_lossy(&out.stderr))
        )));
    }
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|_| Error::git("git rev-list --disk-usage printed no number"))
}
