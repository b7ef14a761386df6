//! Sharing runs through the git binary (docs/SHARING.md): which remote, `git push --atomic` of
//! runs' refs with its per-ref results, `git fetch` into the staging namespace
//! (`refs/agent-runs-remote/<remote>/…`), bundles, and reading and validating what was
//! staged ([`staged`]). The user's own git does all network work, as its own process, so
//! credentials, ssh config, proxies and `insteadOf` apply.
//!
//! It never forces a push, never writes the user's `remote.*` config, `refs/remotes/` or
//! `FETCH_HEAD`, never executes anything it fetched, and never moves a run's own refs:
//! deciding what a staged run means for the local one is `ops::fetch`'s job.

pub mod listing;
pub mod objectformat;
pub mod progress;
pub mod staged;

use crate::store::{LocalRemote, NotesCopy, Store, layout};
use agent_rewind_core::error::IoResultExt;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::{RemoteName, RunId};
use std::path::Path;

/// The remote used by `fetch` when none is named or configured.
pub const DEFAULT_REMOTE: &str = "origin";

/// The config key naming the remote (or URL) runs go to and come from by default.
pub const REMOTE_KEY: &str = "agentRewind.remote";

/// A git remote runs are pushed to or fetched from: a configured remote, or a URL.
#[derive(Debug, Clone)]
pub struct Remote {
    /// The remote's name; for a URL, a name made from it (`url-<hex>`), which names its
    /// staging refs (`refs/agent-runs-remote/<name>/…`).
    pub name: RemoteName,
    pub url: String,
    /// What git is given: the remote's name, or the URL.
    pub target: String,
}

impl Remote {
    /// Whether this remote is a URL rather than a configured remote.
    pub fn is_url(&self) -> bool {
        self.target != self.name.as_str()
    }
}

/// The remote called `name` (default `origin`), which must be configured in this repository.
pub fn resolve(store: &Store, name: Option<&str>) -> Result<Remote> {
    let shown = name.unwrap_or(DEFAULT_REMOTE);
    let url = remote_url(store, shown);
    match (url, name) {
        (Some(url), _) => Ok(Remote {
            name: RemoteName::new(shown)?,
            url,
            target: shown.to_string(),
        }),
        (None, None) => Err(Error::not_found(format!("no remote {DEFAULT_REMOTE}"))
            .with_hint("add one with `git remote add origin URL`, or name the remote to use")),
        (None, Some(n)) => Err(Error::not_found(format!("unknown remote {n:?}"))
            .with_hint("`git remote -v` lists the remotes of this repository")),
    }
}

/// Whether `s` is a URL or path git takes as a repository (`scheme://…`, `user@host:path`,
/// `/path`, `./path`), not a remote name.
fn looks_like_url(s: &str) -> bool {
    s.contains("://")
        || s.starts_with(['/', '.', '~'])
        || s.split_once(':')
            .is_some_and(|(host, _)| !host.is_empty() && !host.contains('/'))
}

/// A remote named by `agentRewind.remote` or `--remote`: a configured remote's name, or a
/// URL (path) of a repository.
pub fn resolve_name_or_url(store: &Store, word: &str, origin: &str) -> Result<Remote> {
    let bad = |why: &str| {
        Error::usage(format!("{origin} {word:?} {why}"))
            .with_hint("a remote name (`git remote -v`) or a repository URL")
    };
    if word.trim().is_empty() || word.starts_with('-') || word.contains(['\n', '\0']) {
        return Err(bad("is not a remote name or URL"));
    }
    if remote_url(store, word).is_some() {
        return resolve(store, Some(word));
    }
    if !looks_like_url(word) {
        return Err(
            Error::not_found(format!("unknown remote {word:?} ({origin})"))
                .with_hint("`git remote -v` lists the remotes of this repository; a URL works too"),
        );
    }
    Ok(Remote {
        name: RemoteName::new(format!("url-{:016x}", stable_hash(word)))?,
        url: word.to_string(),
        target: word.to_string(),
    })
}

/// FNV-1a of `s`: a name for a URL's staging refs that stays the same across versions.
fn stable_hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn remote_url(store: &Store, name: &str) -> Option<String> {
    if name.is_empty() || name.contains(['\n', '\0']) {
        return None;
    }
    store
        .config()
        .string(&format!("remote.{name}.url"))
        .or_else(|| store.config().string(&format!("remote.{name}.pushurl")))
}

/// Which remote a command uses, and how it was chosen.
#[derive(Debug, Clone)]
pub struct Chosen {
    pub remote: Remote,
    pub runs: Vec<RunId>,
    /// Chosen with `--remote` while `agentRewind.remote` was not set: the caller may
    /// remember it.
    pub first_choice: bool,
}

/// Split `[REMOTE] [RUN…]` with `--remote` (`flag`): with the flag every word is a run;
/// otherwise the first word is the remote when a remote of that name is configured. With
/// no remote named, `agentRewind.remote`; with none configured, `origin` for a fetch, and
/// for a push (`push`) an error that names the remote it would use and asks for
/// `--remote`: where runs go is chosen once, by a person.
pub fn choose(store: &Store, words: &[String], flag: Option<&str>, push: bool) -> Result<Chosen> {
    let configured = store.config().string(REMOTE_KEY);
    let (remote, runs, first_choice) = match (flag, words.split_first()) {
        (Some(f), _) => (
            resolve_name_or_url(store, f, "--remote")?,
            words,
            configured.is_none(),
        ),
        (None, Some((first, rest))) if remote_url(store, first).is_some() => {
            (resolve(store, Some(first))?, rest, false)
        }
        // Runs to push are here: a first word that is neither a remote nor a run was meant
        // as a remote that does not exist.
        (None, Some((first, _))) if push && !names_a_run(store, first)? => {
            return Err(Error::not_found(format!(
                "no remote {first} in this repository, and no run {first}"
            ))
            .with_hint(
                "`git remote -v` lists the remotes; `git remote add <name> <URL>` adds one",
            ));
        }
        (None, _) => match &configured {
            Some(c) => (resolve_name_or_url(store, c, REMOTE_KEY)?, words, false),
            None if push => return Err(ask_for_remote(store)),
            None => (resolve(store, None)?, words, false),
        },
    };
    let runs = runs
        .iter()
        .map(|r| RunId::new(r.clone()))
        .collect::<Result<Vec<_>>>()?;
    Ok(Chosen {
        remote,
        runs,
        first_choice,
    })
}

/// Whether `word` names a run here (its id or a unique prefix); a word no run id can be is
/// none. A prefix two runs share is an error, as everywhere a run is named.
fn names_a_run(store: &Store, word: &str) -> Result<bool> {
    match RunId::new(word.to_string()) {
        Ok(id) => Ok(crate::catalog::Catalog::new(store)
            .run_matching(&id)?
            .is_some()),
        Err(_) => Ok(false),
    }
}

/// The error of a push with no remote named or configured: names the remote it would use.
fn ask_for_remote(store: &Store) -> Error {
    let choose = "say where runs go once: `git agent-rewind push --remote <name or URL> …` (remembered as agentRewind.remote), or `git config agentRewind.remote <name or URL>`; a private repository keeps runs out of the project's remote";
    match remote_url(store, DEFAULT_REMOTE) {
        Some(url) => Error::usage(format!(
            "no remote chosen for runs: this would push to {DEFAULT_REMOTE} ({url})"
        ))
        .with_hint(choose),
        None => Error::not_found(format!(
            "no remote chosen for runs, and no remote {DEFAULT_REMOTE}"
        ))
        .with_hint(choose),
    }
}

/// Remember `remote` as `agentRewind.remote` in this repository's config (after a push
/// that named it with `--remote` while none was set).
pub fn remember(store: &Store, remote: &Remote) -> Result<()> {
    store.config().add(REMOTE_KEY, &remote.target)
}

/// What the remote said about one ref of a push (`git push --porcelain`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefStatus {
    /// ` ` fast-forward, `*` new, `=` up to date, `!` rejected, `-` deleted, `+` forced.
    pub flag: char,
    /// The remote ref.
    pub dst: String,
    /// `[rejected] (non-fast-forward)`, `[up to date]`, `abc..def`, …
    pub summary: String,
}

impl RefStatus {
    pub fn rejected(&self) -> bool {
        self.flag == '!'
    }
    /// Rejected only because another ref of the same atomic push was.
    pub fn collateral(&self) -> bool {
        self.rejected() && self.summary.contains("atomic push failed")
    }
    /// Rejected because the remote ref moved on (it is not an ancestor of ours).
    pub fn moved_on(&self) -> bool {
        self.rejected()
            && (self.summary.contains("non-fast-forward")
                || self.summary.contains("fetch first")
                || self.summary.contains("stale info"))
    }
    /// Rejected by the remote for a passing reason (a lock held by a concurrent push).
    pub fn transient(&self) -> bool {
        self.rejected()
            && self.summary.contains("remote rejected")
            && (self.summary.contains("lock") || self.summary.contains("try again"))
    }
}

/// The result of one `git push` process.
#[derive(Debug, Clone)]
pub struct PushAttempt {
    pub success: bool,
    pub refs: Vec<RefStatus>,
    /// git's stderr, as one line (for failures without per-ref results).
    pub stderr: String,
}

/// `git push --atomic --porcelain <remote> <refspecs…>`: never forced, all or nothing.
pub fn push_atomic(store: &Store, remote: &Remote, refspecs: &[String]) -> Result<PushAttempt> {
    let out = store.remote().push_atomic(&remote.target, refspecs)?;
    objectformat::refused_by_git(store, &format!("remote {}", remote.target), &out.stderr)?;
    // git's own words: the server lacks the capability (no typed signal exists for it).
    if out.stderr.contains("does not support --atomic") {
        return Err(Error::refused(format!(
            "remote {} does not support atomic pushes",
            remote.name
        ))
        .with_hint("agent runs are pushed with `git push --atomic` so a run never lands half; use a remote whose server supports it"));
    }
    Ok(PushAttempt {
        success: out.success,
        refs: parse_porcelain(&out.stdout),
        stderr: out.stderr,
    })
}

/// A remote's runs with their ref counts, and the names there that are not run ids.
pub type RemoteRuns = (Vec<(RunId, usize)>, Vec<String>);

/// The runs of `remote` (`git ls-remote` of our two namespaces) with how many refs each has
/// there (its ref folder and notes ref), sorted; and the names that are not valid run ids
/// (never fetched by name).
pub fn remote_runs(store: &Store, remote: &Remote) -> Result<RemoteRuns> {
    let out = store.remote().ls_remote(
        &remote.target,
        &[
            &format!("{}*", layout::RUNS_PREFIX),
            &format!("{}*", layout::NOTES_PREFIX),
        ],
    )?;
    if !out.success {
        return Err(Error::git(format!(
            "`git ls-remote` of {} failed: {}",
            remote.target, out.stderr
        ))
        .with_hint("check that the remote is reachable with `git ls-remote`"));
    }
    let ids = out
        .stdout
        .lines()
        .filter_map(|l| l.split_once('\t').map(|(id, _)| id));
    objectformat::check_ids(store, &format!("remote {}", remote.target), ids)?;
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for line in out.stdout.lines() {
        let Some((_, name)) = line.split_once('\t') else {
            continue;
        };
        if let Some((run, _)) = run_of_ref(name) {
            *counts.entry(run).or_default() += 1;
        }
    }
    let mut valid = vec![];
    let mut invalid = vec![];
    for (name, n) in counts {
        match RunId::new(name.clone()) {
            Ok(r) => valid.push((r, n)),
            Err(_) => invalid.push(name),
        }
    }
    Ok((valid, invalid))
}

/// `git fetch` of the remote's tombstones alone into their staging namespace.
pub fn fetch_tombstones(store: &Store, remote: &Remote) -> Result<()> {
    fetch(
        store,
        &remote.target,
        &remote.target,
        &[layout::fetch_tombstones_refspec(&remote.name)],
    )
}

/// `git push --porcelain <remote> <refspecs…>`, not atomic (each ref lands or not on its
/// own), never forced; what git said per ref.
pub fn push_each(store: &Store, remote: &Remote, refspecs: &[String]) -> Result<PushAttempt> {
    let out = store.remote().push_each(&remote.target, refspecs)?;
    objectformat::refused_by_git(store, &format!("remote {}", remote.target), &out.stderr)?;
    Ok(PushAttempt {
        success: out.success,
        refs: parse_porcelain(&out.stdout),
        stderr: out.stderr,
    })
}

/// What a push of `refspecs` would do, per ref (`git push --dry-run`): nothing is sent.
pub fn push_dry_run(store: &Store, remote: &Remote, refspecs: &[String]) -> Result<PushAttempt> {
    let out = store.remote().push_dry_run(&remote.target, refspecs)?;
    objectformat::refused_by_git(store, &format!("remote {}", remote.target), &out.stderr)?;
    Ok(PushAttempt {
        success: out.success,
        refs: parse_porcelain(&out.stdout),
        stderr: out.stderr,
    })
}

/// Whether a failed push was refused for the number of refs it updated (a host's push
/// policy, a pre-receive hook): every ref of it was declined by the remote, none for being
/// behind, and the remote's message speaks of a limit. `Some(n)` with the number the message
/// names as the most refs allowed (`more than 5`, `at most 5`), `Some(None)` when it names
/// none; `None` when the push failed for anything else.
pub fn refused_for_ref_count(attempt: &PushAttempt) -> Option<Option<usize>> {
    let updates: Vec<&RefStatus> = attempt.refs.iter().filter(|r| r.flag != '=').collect();
    if attempt.success || updates.len() < 2 {
        return None;
    }
    let declined = updates.iter().all(|r| {
        r.rejected() && !r.moved_on() && (r.collateral() || r.summary.contains("remote rejected"))
    });
    let text = attempt.stderr.to_ascii_lowercase();
    let about_count = ["too many", "more than", "at most", "limit", "exceed"]
        .iter()
        .any(|w| text.contains(w));
    if !declined || !about_count {
        return None;
    }
    let number_after = |word: &str| {
        text.split(word).nth(1).and_then(|rest| {
            let digits: String = rest
                .trim_start()
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse::<usize>().ok().filter(|n| *n > 0)
        })
    };
    Some(
        ["more than", "at most", "limit of", "maximum of", "max"]
            .iter()
            .find_map(|w| number_after(w)),
    )
}

/// Parse the per-ref lines of `git push --porcelain`: `<flag>\t<src>:<dst>\t<summary>`.
pub fn parse_porcelain(stdout: &str) -> Vec<RefStatus> {
    stdout
        .lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, '\t');
            let flag = parts.next()?.chars().next()?;
            let spec = parts.next()?;
            let summary = parts.next().unwrap_or("").to_string();
            let dst = spec.rsplit_once(':').map_or(spec, |(_, d)| d).to_string();
            Some(RefStatus { flag, dst, summary })
        })
        .collect()
}

/// The run a pushed ref belongs to, and whether it is the run's notes ref.
pub fn run_of_ref(dst: &str) -> Option<(String, bool)> {
    if let Some(r) = layout::parse_run_ref(dst) {
        return Some(match r {
            layout::RunRef::Head(run) | layout::RunRef::Step(run, _) => (run, false),
        });
    }
    layout::parse_notes_ref(dst).map(|run| (run, true))
}

/// `git fetch` the runs of `remote` (all, or only `runs`) into its staging namespace. The
/// staging refs are force-updated and pruned; nothing else is written (no tags, no
/// `FETCH_HEAD`, no `refs/remotes/`).
///
/// Named runs: the notes ref of a run that has no notes here yet is a root commit sharing no
/// history with this repository, so in the same request as the run's refs it costs a second
/// negotiation round (upload-pack cannot say `ready`). From a remote that is a repository on
/// this machine, such notes are copied in this process while git fetches the runs' refs
/// ([`Store::copy_notes_from`], like `git clone --local`: docs/design/fetch.md). From any other
/// remote that never asks for credentials (`git://`, or a local one the copy does not take),
/// they are fetched by a second `git fetch` running at the same time that sends no `have`s
/// and so says `done` in its first request ([`Store::fetch_refspecs_and_unrelated`]);
/// everything it brings is that run's notes history, which this repository lacks anyway.
/// Over ssh and http one fetch does it all (two at once could prompt for credentials twice).
pub fn fetch_into_staging(store: &Store, remote: &Remote, runs: Option<&[RunId]>) -> Result<()> {
    let mut refspecs: Vec<String> = vec![];
    let mut unrelated: Vec<String> = vec![];
    // Runs whose notes are copied from a local remote (while git fetches the runs' refs).
    let mut copies: Vec<&RunId> = vec![];
    let mut fetched_notes: Vec<&RunId> = vec![];
    let mut local: Option<LocalRemote> = None;
    match runs {
        None => {
            refspecs.extend(layout::fetch_refspecs(&remote.name));
            refspecs.push(layout::fetch_tombstones_refspec(&remote.name));
        }
        Some(runs) => {
            let split = !remote.is_url() && store.remote().remote_never_prompts(&remote.target);
            let mut tried = false;
            for r in runs {
                let [run, notes] = layout::fetch_run_refspecs(&remote.name, r);
                refspecs.push(run);
                if !split || store.refs().notes_tip(r)?.is_some() {
                    refspecs.push(notes);
                    fetched_notes.push(r);
                    continue;
                }
                if !tried {
                    tried = true;
                    match store.remote().open_local_remote(remote.name.as_str()) {
                        Ok(l) => local = Some(l),
                        Err(why) => {
                            agent_rewind_core::trace::mark(&format!("fetch: not copied: {why}"))
                        }
                    }
                }
                match local {
                    Some(_) => copies.push(r),
                    None => unrelated.push(notes),
                }
            }
        }
    }
    // A lock on a notes staging ref (the in-process copy writes them) that a killed process
    // of ours left: git cannot tell it is stale and would fail on it.
    store
        .refs()
        .remove_stale_locks_under(&layout::remote_notes_prefix(&remote.name));
    let shown = remote.target.clone();
    let Some(source) = local.filter(|_| !copies.is_empty()) else {
        let (out, second) = store.remote().fetch_refspecs_and_unrelated(
            &remote.target,
            &refspecs,
            &unrelated,
            progress(),
        )?;
        check_fetch(store, &shown, &out)?;
        return second.map_or(Ok(()), |o| check_fetch(store, &shown, &o));
    };
    let copy = || -> Result<Vec<String>> {
        let mut fallbacks = vec![];
        for r in &copies {
            let copied = store.remote().copy_notes_from(
                &source,
                &layout::notes_ref(r),
                &layout::remote_notes_ref(&remote.name, r),
            )?;
            agent_rewind_core::trace::mark(&format!("fetch: notes of {r}: {copied:?}"));
            if let NotesCopy::Fallback(_) = copied {
                fallbacks.push(layout::fetch_run_refspecs(&remote.name, r)[1].clone());
            }
        }
        Ok(fallbacks)
    };
    // The copy runs while git fetches, unless git's prefix glob for a run whose notes it
    // fetches (`<run>*`) could stage a copied run's notes ref too.
    let overlap = copies.iter().any(|c| {
        fetched_notes
            .iter()
            .any(|f| c.as_str().starts_with(f.as_str()))
    });
    let (out, fallbacks) = if overlap {
        let fallbacks = copy()?;
        (
            store
                .remote()
                .fetch_refspecs(&remote.target, &refspecs, progress())?,
            fallbacks,
        )
    } else {
        let (out, copied) =
            store
                .remote()
                .fetch_refspecs_while(&remote.target, &refspecs, progress(), copy)?;
        (out, copied?)
    };
    check_fetch(store, &shown, &out)?;
    if fallbacks.is_empty() {
        return Ok(());
    }
    // Notes the copy left to git (a history too large, a tip that is not a commit): rare
    // enough for a plain second fetch after the first.
    fetch(store, &remote.target, &shown, &fallbacks)
}

/// git's progress, on a terminal only (as git decides for itself when not captured).
fn progress() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stderr())
}

fn check_fetch(store: &Store, shown: &str, out: &crate::store::GitOutput) -> Result<()> {
    if !out.success {
        objectformat::refused_by_git(store, shown, &out.stderr)?;
        return Err(
            Error::git(format!("`git fetch` from {shown} failed: {}", out.stderr))
                .with_hint("check that the remote is reachable with `git ls-remote`"),
        );
    }
    Ok(())
}

fn fetch(store: &Store, source: &str, shown: &str, refspecs: &[String]) -> Result<()> {
    check_fetch(
        store,
        shown,
        &store
            .remote()
            .fetch_refspecs(source, refspecs, progress())?,
    )
}

/// `git bundle create FILE <refs…>`: a bundle without prerequisites, so any repository can
/// import it.
pub fn bundle_create(store: &Store, file: &Path, refs: &[String]) -> Result<()> {
    let out = store.remote().bundle_create(file, refs)?;
    if !out.success {
        return Err(Error::git(format!(
            "`git bundle create` failed: {}",
            out.stderr
        )));
    }
    Ok(())
}

/// `git bundle verify FILE`, then the refs it holds.
pub fn bundle_verify(store: &Store, file: &Path) -> Result<Vec<String>> {
    let path = file.to_string_lossy();
    if !file.is_file() {
        return Err(Error::usage(format!("no such file: {path}")));
    }
    let out = store.remote().bundle_verify(file)?;
    if !out.success {
        return Err(Error::refused(format!(
            "{path} is not a valid bundle for this repository: {}",
            out.stderr
        ))
        .with_hint("create it with `git agent-rewind export RUN -o FILE`"));
    }
    let heads = store.remote().bundle_list_heads(file)?;
    let lines = || heads.stdout.lines().filter_map(|l| l.split_once(' '));
    objectformat::check_ids(store, &format!("bundle {path}"), lines().map(|(id, _)| id))?;
    Ok(lines().map(|(_, r)| r.to_string()).collect())
}

/// Fetch the runs of a bundle file into the staging namespace of `staging`.
pub fn fetch_bundle(store: &Store, file: &Path, staging: &RemoteName) -> Result<()> {
    let path = std::path::absolute(file).at(file)?;
    let source = path.to_string_lossy();
    fetch(
        store,
        source.as_ref(),
        &format!("bundle {}", file.display()),
        &layout::fetch_refspecs(staging),
    )
}

/// A limit on the refs of one push or fetch, from git config `key`: `None` when unset or 0;
/// a value that is not a number is a usage error with `hint`.
pub fn refs_limit(store: &Store, key: &str, hint: &str) -> Result<Option<usize>> {
    match store.config().string(key) {
        None => Ok(None),
        Some(v) => match v.trim().parse::<usize>() {
            Ok(0) => Ok(None),
            Ok(n) => Ok(Some(n)),
            Err(_) => Err(
                Error::usage(format!("config {key} = {v:?} is not a number of refs"))
                    .with_hint(hint.to_string()),
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_porcelain_lines() {
        let out = "To ../remote.git\n=\trefs/notes/agent-runs/r1:refs/notes/agent-runs/r1\t[up to date]\n\
                   !\trefs/agent-runs/r1/HEAD:refs/agent-runs/r1/HEAD\t[rejected] (non-fast-forward)\n\
                   !\trefs/agent-runs/r2/HEAD:refs/agent-runs/r2/HEAD\t[rejected] (atomic push failed)\nDone\n";
        let refs = parse_porcelain(out);
        assert_eq!(refs.len(), 3);
        assert_eq!(refs[0].flag, '=');
        assert!(refs[1].moved_on() && !refs[1].collateral());
        assert!(refs[2].collateral() && !refs[2].moved_on());
        assert_eq!(run_of_ref(&refs[1].dst), Some(("r1".into(), false)));
        assert_eq!(run_of_ref(&refs[0].dst), Some(("r1".into(), true)));
    }
}
