//! The git command lines that move objects between repositories: push, fetch and bundles.
//! Each returns git's whole output ([`GitOutput`]) whatever its exit status, because the
//! callers (`remote`) parse per-ref results and failures; what they mean is decided there,
//! never here.

use crate::localcopy::{LocalRemote, NotesCopy};
use crate::repository::Store;
use agent_rewind_core::error::Result;
use std::path::Path;

/// The store's remotes and bundles: push, fetch, local copies.
#[derive(Clone, Copy)]
pub struct Remote<'s> {
    pub(crate) store: &'s Store,
}

/// What a finished git process printed, and whether it succeeded.
#[derive(Debug, Clone)]
pub struct GitOutput {
    pub success: bool,
    pub stdout: String,
    /// stderr as one line.
    pub stderr: String,
}

impl GitOutput {
    fn of(out: std::process::Output) -> Self {
        GitOutput {
            success: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: agent_rewind_core::error::one_line(&String::from_utf8_lossy(&out.stderr)),
        }
    }
}

impl Store {
    fn git_output_of(&self, args: &[&str]) -> Result<GitOutput> {
        self.git_unchecked(args).map(GitOutput::of)
    }
}

impl Remote<'_> {
    /// `git push --atomic --porcelain <remote> <refspecs…>`: never forced, all or nothing.
    pub fn push_atomic(&self, remote: &str, refspecs: &[String]) -> Result<GitOutput> {
        let mut args = vec!["push", "--atomic", "--porcelain", remote];
        args.extend(refspecs.iter().map(String::as_str));
        self.store.git_output_of(&args)
    }

    /// `git push --dry-run --porcelain <remote> <refspecs…>` (not atomic, so each ref says
    /// whether it would be updated, is up to date or would be rejected): what a push would
    /// change, from the remote's advertisement, changing nothing.
    pub fn push_dry_run(&self, remote: &str, refspecs: &[String]) -> Result<GitOutput> {
        let mut args = vec!["push", "--dry-run", "--porcelain", "--no-verify", remote];
        args.extend(refspecs.iter().map(String::as_str));
        self.store.git_output_of(&args)
    }

    /// `git push --porcelain <remote> <refspecs…>`: not atomic, never forced.
    pub fn push_each(&self, remote: &str, refspecs: &[String]) -> Result<GitOutput> {
        let mut args = vec!["push", "--porcelain", remote];
        args.extend(refspecs.iter().map(String::as_str));
        self.store.git_output_of(&args)
    }

    /// `git ls-remote <remote> <patterns…>`: the remote's refs matching the patterns.
    pub fn ls_remote(&self, remote: &str, patterns: &[&str]) -> Result<GitOutput> {
        let mut args = vec!["ls-remote", "--refs", remote];
        args.extend(patterns);
        self.store.git_output_of(&args)
    }

    /// `git fetch` of `refspecs` from `source` (a remote name, URL or bundle path), quietly,
    /// pruning the destinations and writing nothing else (no tags, no `FETCH_HEAD`), and
    /// without git's auto-maintenance process when it would find nothing to do
    /// ([`Store::auto_maintenance_due`]). With
    /// `progress`, git's progress lines are passed on to our stderr as git writes them
    /// (and still collected for the error message).
    pub fn fetch_refspecs(
        &self,
        source: &str,
        refspecs: &[String],
        progress: bool,
    ) -> Result<GitOutput> {
        Ok(self
            .fetch_refspecs_while(source, refspecs, progress, || ())?
            .0)
    }

    /// [`Store::fetch_refspecs`], with `meanwhile` run in this thread while git fetches (a
    /// child process); returns git's output and what `meanwhile` returned. git is always
    /// waited for, whatever `meanwhile` did.
    pub fn fetch_refspecs_while<T>(
        &self,
        source: &str,
        refspecs: &[String],
        progress: bool,
        meanwhile: impl FnOnce() -> T,
    ) -> Result<(GitOutput, T)> {
        let mut args = fetch_args(source, progress);
        if !self.auto_maintenance_due() {
            args.insert(args.len() - 1, "--no-auto-maintenance");
        }
        args.extend(refspecs.iter().map(String::as_str));
        let dir = self.store.git_run_dir();
        let mut child = self
            .store
            .git_command(dir, &args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| agent_rewind_core::error::Error::git(format!("could not run git: {e}")))?;
        // With progress, git's stderr is passed on as it comes; otherwise (`--quiet`) it is
        // small and collected at the end.
        let tee = progress.then(|| {
            let mut err = child.stderr.take().expect("piped");
            std::thread::spawn(move || {
                use std::io::{Read, Write};
                let mut all = Vec::new();
                let mut buf = [0u8; 4096];
                while let Ok(n) = err.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let _ = std::io::stderr().write_all(&buf[..n]);
                    all.extend_from_slice(&buf[..n]);
                }
                all
            })
        });
        let result = meanwhile();
        let out = child
            .wait_with_output()
            .map_err(|e| agent_rewind_core::error::Error::git(format!("could not run git: {e}")))?;
        let Some(tee) = tee else {
            return Ok((GitOutput::of(out), result));
        };
        let stderr = tee.join().unwrap_or_default();
        // Only the lines that are not progress (they end in `\r` or say `done.`) describe
        // a failure.
        let text = String::from_utf8_lossy(&stderr);
        let message: Vec<&str> = text
            .split(['\n', '\r'])
            .filter(|l| !l.trim().is_empty() && !is_progress_line(l))
            .collect();
        let output = GitOutput {
            success: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: agent_rewind_core::error::one_line(&message.join("\n")),
        };
        Ok((output, result))
    }

    /// [`Store::fetch_refspecs`] of `refspecs`, and at the same time a second `git fetch` of
    /// `unrelated` from the same `source` that sends no `have` at all
    /// (`fetch.negotiationAlgorithm=noop`), quietly and without git's auto-maintenance (the
    /// first fetch runs it). For refs whose history shares nothing with this repository (a
    /// new run's notes ref, a root commit): upload-pack can never answer `ready` for such a
    /// ref, so in the first fetch it would cost a second negotiation round (a round trip,
    /// and on a socket git's small writes wait for a delayed ACK); alone and without haves,
    /// the request says `done` at once. Both processes write disjoint refs; objects are
    /// written by git as for any concurrent fetch. Returns both outputs (the second `None`
    /// when `unrelated` is empty).
    pub fn fetch_refspecs_and_unrelated(
        &self,
        source: &str,
        refspecs: &[String],
        unrelated: &[String],
        progress: bool,
    ) -> Result<(GitOutput, Option<GitOutput>)> {
        if unrelated.is_empty() {
            return Ok((self.fetch_refspecs(source, refspecs, progress)?, None));
        }
        let mut args = vec!["-c", "fetch.negotiationAlgorithm=noop"];
        args.extend(fetch_args(source, false));
        args.insert(args.len() - 1, "--no-auto-maintenance");
        args.extend(unrelated.iter().map(String::as_str));
        let dir = self.store.git_run_dir();
        let could_not_run = |e: std::io::Error| {
            agent_rewind_core::error::Error::git(format!("could not run git: {e}"))
        };
        let mut second = Some(
            self.store
                .git_command(dir, &args)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .map_err(could_not_run)?,
        );
        let first = self.fetch_refspecs_while(source, refspecs, progress, || {
            second.take().map(std::process::Child::wait_with_output)
        });
        // The first fetch could not start: the second is still waited for.
        if let Some(mut child) = second {
            let _ = child.wait();
        }
        let (first, second) = first?;
        let second = second
            .expect("waited for while the first fetched")
            .map_err(could_not_run)?;
        Ok((first, Some(GitOutput::of(second))))
    }

    /// Whether fetching from the remote `name` can never ask for credentials: its fetch URL,
    /// with `url.<base>.insteadOf` applied, is a local path, `file://` or `git://`. `false`
    /// when unsure (ssh and http may prompt; two fetches at once would prompt twice).
    pub fn remote_never_prompts(&self, name: &str) -> bool {
        let Ok(remote) = self.store.repo.find_remote(name) else {
            return false;
        };
        matches!(
            remote.url(gix::remote::Direction::Fetch).map(|u| &u.scheme),
            Some(gix::url::Scheme::File | gix::url::Scheme::Git)
        )
    }

    /// Whether the `git maintenance run --auto` that `git fetch` starts when it is done could
    /// do anything: git's own test for its default task (`gc --auto`), made here without a
    /// process. More than `gc.autoPackLimit` (50) packs, or more than `gc.auto / 256`
    /// (6700 / 256, rounded up) loose objects in `objects/17`, as git estimates them; `false`
    /// when `gc.auto` is 0 or less. `true` (leave it to git) whenever anything else could
    /// matter: any `maintenance.*` setting (other tasks, a strategy, `maintenance.auto`) or
    /// config given through the environment (`git -c`). Packs with a `.keep` are counted,
    /// though git does not count them: in doubt, git runs.
    pub fn auto_maintenance_due(&self) -> bool {
        if ["GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT"]
            .iter()
            .any(|v| std::env::var_os(v).is_some())
        {
            return true;
        }
        let config = self.store.repo.config_snapshot();
        if config
            .plumbing()
            .sections_by_name("maintenance")
            .is_some_and(|mut s| s.next().is_some())
        {
            return true;
        }
        let threshold = self.store.maintenance().auto_gc_threshold();
        if threshold <= 0 {
            return false;
        }
        let pack_limit = self.store.maintenance().auto_pack_limit();
        if pack_limit > 0 && self.store.maintenance().pack_count() as i64 > pack_limit {
            return true;
        }
        // Rounded up as git does, without overflowing for the largest `gc.auto`.
        let loose_limit = threshold / 256 + i64::from(threshold % 256 != 0);
        let dir = self.store.repo.objects.store_ref().path().join("17");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return !matches!(std::fs::metadata(&dir), Err(e) if e.kind() == std::io::ErrorKind::NotFound);
        };
        // A loose object's file name: its id's hex digits after the folder's two.
        let name_len = self.store.repo.object_hash().len_in_hex() - 2;
        let loose = entries
            .filter_map(|e| e.ok())
            .filter(|e| {
                let name = e.file_name();
                let name = name.as_encoded_bytes();
                name.len() == name_len
                    && name.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            })
            .count();
        loose as i64 > loose_limit
    }

    /// `git bundle create FILE <refs…>`.
    pub fn bundle_create(&self, file: &Path, refs: &[String]) -> Result<GitOutput> {
        let path = file.to_string_lossy();
        let mut args = vec!["bundle", "create", "--quiet", path.as_ref()];
        args.extend(refs.iter().map(String::as_str));
        self.store.git_output_of(&args)
    }

    /// `git bundle verify --quiet FILE`.
    pub fn bundle_verify(&self, file: &Path) -> Result<GitOutput> {
        let path = file.to_string_lossy();
        self.store
            .git_output_of(&["bundle", "verify", "--quiet", path.as_ref()])
    }

    /// `git bundle list-heads FILE`.
    pub fn bundle_list_heads(&self, file: &Path) -> Result<GitOutput> {
        let path = file.to_string_lossy();
        self.store
            .git_output_of(&["bundle", "list-heads", path.as_ref()])
    }
}

/// `git fetch` of nothing yet from `source`: the options of every fetch here, `source` last.
fn fetch_args(source: &str, progress: bool) -> Vec<&str> {
    vec![
        "fetch",
        "--no-tags",
        "--prune",
        "--no-write-fetch-head",
        if progress { "--progress" } else { "--quiet" },
        "--no-recurse-submodules",
        source,
    ]
}

/// A line of git's progress output (`Receiving objects:  45% (…)`, `… done.`).
fn is_progress_line(l: &str) -> bool {
    let l = l.trim();
    l.ends_with("done.")
        || l.contains("% (")
        || l.starts_with("remote: ") && (l.contains("% (") || l.ends_with("done."))
}

impl Remote<'_> {
    /// The repository behind the remote `name` when `fetch` may read it directly: its fetch
    /// URL (after `url.<base>.insteadOf`) is a path or a `file://` URL naming a repository
    /// on this machine that the current user owns, and nothing would make git's upload-pack
    /// show it differently. `Err` says why not (the caller runs `git fetch` instead).
    pub fn open_local_remote(&self, name: &str) -> std::result::Result<LocalRemote, String> {
        crate::localcopy::open_local_remote(self.store, name)
    }

    /// Copy the history of `source_ref` in `remote` (a notes ref) into this repository and
    /// point `staging_ref` at it, compare-and-swap on the value it has now; or, when the
    /// remote has no `source_ref`, remove `staging_ref`. Objects the remote lacks or that do
    /// not match their ids are an error, and nothing is written then.
    pub fn copy_notes_from(
        &self,
        remote: &LocalRemote,
        source_ref: &str,
        staging_ref: &str,
    ) -> Result<NotesCopy> {
        crate::localcopy::copy_notes_from(self.store, remote, source_ref, staging_ref)
    }
}
