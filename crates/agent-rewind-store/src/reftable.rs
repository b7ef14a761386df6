//! Refs of a reftable repository (`extensions.refStorage = reftable`, docs/design/git-compatibility.md): gix 0.90 has no reftable backend, so every read and write of a ref goes
//! through git's own commands here. Reads: `git for-each-ref`, `git rev-parse`,
//! `git symbolic-ref`, `git log -g`. Writes: one `git update-ref --stdin` transaction
//! (`start`/`prepare`/`commit`) with the same compare-and-swap as the files backend:
//! `create` (must not exist), `update <ref> <new> <old>`, `delete <ref> <old>`.
//!
//! Chosen by [`Store::reftable`]; the callers (`refs`, `publish`, `user_head`) stay the one
//! interface. Must never write a ref without its expected old value, and never touch the
//! files under `.git/reftable/` itself.

use crate::publish::{PublishError, RefChange};
use crate::refs::UserHead;
use crate::repository::Store;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_scan::gixerror::from_gix;
use gix::ObjectId;

impl Store {
    /// Whether this repository keeps its refs in reftable (`extensions.refStorage`).
    pub(crate) fn reftable(&self) -> bool {
        self.repo
            .config_snapshot()
            .string("extensions.refStorage")
            .is_some_and(|v| v.eq_ignore_ascii_case(b"reftable".as_slice()))
    }

    /// The object id git printed as text.
    fn parse_id(&self, hex: &str) -> Result<ObjectId> {
        ObjectId::from_hex(hex.trim().as_bytes())
            .map_err(|e| Error::corrupt(format!("git printed {hex:?}, not an object id: {e}")))
    }

    /// `git for-each-ref` under `prefix`: (full name, target), sorted by name as git sorts.
    /// Symbolic refs are left out (gix's listing gives only direct ids as well).
    pub(crate) fn reftable_refs_under(&self, prefix: &str) -> Result<Vec<(String, ObjectId)>> {
        let out = self.git(&[
            "for-each-ref",
            "--format=%(objectname) %(symref) %(refname)",
            "--end-of-options",
            prefix,
        ])?;
        let mut refs = Vec::new();
        for line in out.lines() {
            // `<id> <symref> <name>`: an empty symref leaves two spaces.
            let Some((id, rest)) = line.split_once(' ') else {
                continue;
            };
            let Some((symref, name)) = rest.split_once(' ') else {
                continue;
            };
            if symref.is_empty() {
                refs.push((name.to_string(), self.parse_id(id)?));
            }
        }
        Ok(refs)
    }

    /// The id ref `name` names (a symbolic ref followed), `None` when it does not exist.
    pub(crate) fn reftable_ref_target(&self, name: &str) -> Result<Option<ObjectId>> {
        // `show-ref --verify` takes the full name as given, never a shortened one.
        let args = ["show-ref", "--verify", "--end-of-options", name];
        let out = self.git_unchecked(&args)?;
        match out.status.code() {
            Some(0) => {
                let text = String::from_utf8_lossy(&out.stdout);
                let id = text.split(' ').next().unwrap_or_default();
                Ok(Some(self.parse_id(id)?))
            }
            // git's "not a valid ref" (exit 128 on git 2.47; 1 on later ones).
            Some(1 | 128) if out.stdout.is_empty() => Ok(None),
            _ => Err(Error::git(format!(
                "`git {}` failed: {}",
                args.join(" "),
                agent_rewind_core::error::one_line(&String::from_utf8_lossy(&out.stderr))
            ))),
        }
    }

    /// The tree of the commit HEAD names; the empty tree on an unborn branch.
    pub(crate) fn head_tree_or_empty(&self) -> Result<ObjectId> {
        if !self.reftable() {
            return Ok(self
                .repo
                .head_tree_id_or_empty()
                .map_err(from_gix)?
                .detach());
        }
        match self.reftable_user_head()?.commit {
            None => Ok(ObjectId::empty_tree(self.repo.object_hash())),
            Some(c) => self
                .repo
                .find_commit(c)
                .and_then(|c| c.tree_id())
                .map(|t| t.detach())
                .map_err(|e| {
                    Error::corrupt(format!(
                        "HEAD names {c}, which is not a readable commit: {}",
                        agent_rewind_core::error::one_line(&e.to_string())
                    ))
                }),
        }
    }

    /// The user's HEAD: the branch it is attached to (`git symbolic-ref`) and its commit.
    pub(crate) fn reftable_user_head(&self) -> Result<UserHead> {
        let out = self.git_unchecked(&["symbolic-ref", "-q", "HEAD"])?;
        let branch = out
            .status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
            .filter(|b| !b.is_empty());
        let commit = match &branch {
            Some(b) => self.reftable_ref_target(b)?,
            None => self.reftable_ref_target("HEAD")?,
        };
        Ok(UserHead { commit, branch })
    }

    /// [`crate::Refs::head_moved_on_only_by_commits`] from `git log -g`: reftable's
    /// reflog gives no old id through git's commands, so a `commit:` entry's old id is its
    /// commit's only parent (what `git commit` moved HEAD from).
    pub(crate) fn reftable_head_moved_on_only_by_commits(
        &self,
        from: ObjectId,
        to: ObjectId,
        max: usize,
    ) -> Result<bool> {
        let limit = format!("-n{max}");
        let out = self.git_unchecked(&["log", "-g", &limit, "--format=%H %P%x09%gs", "HEAD"])?;
        if !out.status.success() {
            return Ok(false);
        }
        let mut expected = to;
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if expected == from {
                return Ok(true);
            }
            let Some((ids, subject)) = line.split_once('\t') else {
                return Ok(false);
            };
            let ids: Vec<&str> = ids.split(' ').collect();
            let [new, parent] = ids[..] else {
                return Ok(false);
            };
            if self.parse_id(new)? != expected || !subject.starts_with("commit: ") {
                return Ok(false);
            }
            let Ok(parent) = self.parse_id(parent) else {
                return Ok(false);
            };
            expected = parent;
        }
        Ok(expected == from)
    }

    /// All `changes` in one `git update-ref --stdin` transaction, each compare-and-swap; the
    /// reflog entries name our committer identity like the files backend's do.
    pub(crate) fn reftable_publish(
        &self,
        changes: &[RefChange],
        msg: &str,
        signature: &gix::actor::Signature,
    ) -> std::result::Result<(), PublishError> {
        let mut input = String::from("start\n");
        for c in changes {
            let line = match (c.new, c.expected) {
                (Some(new), Some(old)) => format!("update {} {new} {old}\n", c.name),
                (Some(new), None) => format!("create {} {new}\n", c.name),
                (None, Some(old)) => format!("delete {} {old}\n", c.name),
                (None, None) => continue,
            };
            input.push_str(&line);
        }
        input.push_str("prepare\ncommit\n");
        let args = ["update-ref", "--create-reflog", "-m", msg, "--stdin"];
        let mut cmd = self.git_command(self.repo.git_dir(), &args);
        cmd.env("GIT_COMMITTER_NAME", signature.name.to_string())
            .env("GIT_COMMITTER_EMAIL", signature.email.to_string());
        match self.run_with_input(cmd, input.as_bytes()) {
            Ok(out) if out.status.success() => Ok(()),
            Ok(out) => {
                let why = agent_rewind_core::error::one_line(&String::from_utf8_lossy(&out.stderr));
                // The transaction wrote nothing: a ref without its expected value means
                // another writer was first.
                if changes.iter().any(|c| {
                    self.reftable_ref_target(&c.name)
                        .is_ok_and(|now| now != c.expected)
                }) {
                    Err(PublishError::Conflict(why))
                } else {
                    Err(PublishError::Failed(Error::git(format!(
                        "`git update-ref --stdin` failed: {why}"
                    ))))
                }
            }
            Err(e) => Err(PublishError::Failed(e)),
        }
    }

    /// Run `cmd` with `input` on stdin, collecting its output whatever its status.
    fn run_with_input(
        &self,
        mut cmd: std::process::Command,
        input: &[u8],
    ) -> Result<std::process::Output> {
        use std::io::Write;
        use std::process::Stdio;
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::git(format!("could not run git: {e}")).with_source(e))?;
        let mut stdin = child.stdin.take().expect("piped stdin");
        let written = stdin.write_all(input);
        drop(stdin);
        let out = child
            .wait_with_output()
            .map_err(|e| Error::git(format!("could not run git: {e}")).with_source(e))?;
        if let Err(e) = written
            && out.status.success()
        {
            return Err(Error::git(format!("could not write to git: {e}")).with_source(e));
        }
        Ok(out)
    }
}
