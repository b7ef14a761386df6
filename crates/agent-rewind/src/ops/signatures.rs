//! `verify`: who signed each checkpoint of a run, and whether git accepts the signature;
//! and the check `fetch --require-signed` makes of fetched runs. git
//! decides (`git log --format=%G?`, with the user's `gpg.ssh.allowedSignersFile`, gpg
//! keyring and `gpg.*.program`); the verdict follows `git verify-commit`: a good signature
//! (`G`), or for gpg a good one from a key of unknown validity (`U`) unless
//! `gpg.minTrustLevel` asks for more.
//!
//! Read-only: it never signs, never changes a ref, and never picks a program itself.

use crate::catalog::Catalog;
use crate::store::{ObjectId, SignatureCheck, Store};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::RunId;
use serde::Serialize;

/// One signed object of a run, as `verify` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct Signed {
    /// `checkpoint` or `notes` (a commit of the run's notes ref).
    pub kind: &'static str,
    pub commit: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// `good`, or why not: `unsigned`, `bad`, `untrusted`, `unchecked`, `expired`, `revoked`.
    pub verdict: &'static str,
    /// git's `%G?` letter.
    pub code: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub signer: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub key: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub fingerprint: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Signed {
    pub fn good(&self) -> bool {
        self.verdict == "good"
    }

    /// Who signed and git's verdict: `good, by alice@example.com (key SHA256:…)`.
    pub fn summary(&self) -> String {
        let mut s = self.verdict.to_string();
        match (self.signer.is_empty(), self.key.is_empty()) {
            (false, false) => s.push_str(&format!(", by {} (key {})", self.signer, self.key)),
            (false, true) => s.push_str(&format!(", by {}", self.signer)),
            (true, false) => s.push_str(&format!(", by key {}", self.key)),
            (true, true) => {}
        }
        if let Some(d) = &self.detail {
            s.push_str(&format!(": {d}"));
        }
        s
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RunSignatures {
    pub run: String,
    pub ok: bool,
    pub checkpoints: Vec<Signed>,
    pub notes: Vec<Signed>,
}

#[derive(Debug, Clone, Serialize)]
pub struct VerifyOutcome {
    pub ok: bool,
    pub runs: Vec<RunSignatures>,
}

/// The trust levels of `%GT`, lowest first (git's `sigcheck_gpg_trust_level`).
const TRUST: [&str; 5] = ["undefined", "never", "marginal", "fully", "ultimate"];

/// git's verdict on one signature check.
pub fn verdict(store: &Store, c: &SignatureCheck) -> Result<(&'static str, Option<String>)> {
    let ssh = c.key.starts_with("SHA256:") || c.fingerprint.starts_with("SHA256:");
    let min = match store.config().string("gpg.minTrustLevel") {
        None => None,
        Some(v) => Some(
            TRUST
                .iter()
                .position(|t| t.eq_ignore_ascii_case(v.trim()))
                .ok_or_else(|| {
                    Error::usage(format!("gpg.minTrustLevel {v:?} is not a trust level"))
                        .with_hint("undefined, never, marginal, fully or ultimate")
                })?,
        ),
    };
    let trust = TRUST.iter().position(|t| *t == c.trust).unwrap_or(0);
    let v = match (c.signed, c.code) {
        (false, _) => ("unsigned", None),
        (true, 'G') if min.is_some_and(|m| trust < m) => (
            "untrusted",
            Some(format!("key trust {} is below gpg.minTrustLevel", c.trust)),
        ),
        (true, 'G') => ("good", None),
        (true, 'U') if !ssh && min.is_none_or(|m| trust >= m) => ("good", None),
        (true, 'U') if ssh => (
            "untrusted",
            Some("a good signature by a key that gpg.ssh.allowedSignersFile does not list".into()),
        ),
        (true, 'U') => (
            "untrusted",
            Some(format!("key trust {} is below gpg.minTrustLevel", c.trust)),
        ),
        (true, 'B') => (
            "bad",
            Some("the signature does not match the commit".into()),
        ),
        (true, 'X') => ("expired", Some("the signature has expired".into())),
        (true, 'Y') => ("expired", Some("the signing key has expired".into())),
        (true, 'R') => ("revoked", Some("the signing key was revoked".into())),
        (true, _) => (
            "unchecked",
            Some(if ssh || c.key.is_empty() {
                "git could not check it: is gpg.ssh.allowedSignersFile set, or the gpg key in your keyring?".into()
            } else {
                format!(
                    "git could not check it: key {} is not in your keyring",
                    c.key
                )
            }),
        ),
    };
    Ok(v)
}

fn signed(store: &Store, kind: &'static str, c: &SignatureCheck) -> Result<Signed> {
    let (verdict, detail) = verdict(store, c)?;
    Ok(Signed {
        kind,
        commit: c.commit.to_string(),
        seq: None,
        step: None,
        verdict,
        code: c.code.to_string(),
        signer: c.signer.clone(),
        key: c.key.clone(),
        fingerprint: c.fingerprint.clone(),
        detail,
    })
}

/// Check every checkpoint of each run's own chain and every commit of its notes ref.
pub fn verify(store: &Store, runs: &[RunId]) -> Result<VerifyOutcome> {
    if runs.is_empty() {
        return Err(
            Error::usage("which runs? name them").with_hint("`git agent-rewind verify RUN…`")
        );
    }
    let mut catalog = Catalog::new(store);
    let mut out = VerifyOutcome {
        ok: true,
        runs: vec![],
    };
    for run in runs {
        let chain = catalog.run_chain(run)?;
        let ids: Vec<ObjectId> = chain.iter().map(|c| c.id()).collect();
        let notes_ids = match store.refs().notes_tip(run)? {
            Some(tip) => store.objects().commits_between(tip, None)?,
            None => vec![],
        };
        let mut all = ids.clone();
        all.extend(&notes_ids);
        let checks = store.objects().check_signatures(&all)?;
        let (cps, notes) = checks.split_at(ids.len().min(checks.len()));
        let mut r = RunSignatures {
            run: run.to_string(),
            ok: true,
            checkpoints: vec![],
            notes: vec![],
        };
        for (c, cp) in cps.iter().zip(&chain) {
            let mut s = signed(store, "checkpoint", c)?;
            s.seq = Some(cp.line().seq);
            s.step = cp.line().step.clone();
            r.checkpoints.push(s);
        }
        for c in notes {
            r.notes.push(signed(store, "notes", c)?);
        }
        r.ok = r.checkpoints.len() == ids.len()
            && r.checkpoints.iter().chain(&r.notes).all(Signed::good);
        out.ok &= r.ok;
        out.runs.push(r);
    }
    Ok(out)
}

/// A commit git does not accept as signed: its id, the verdict and why.
type Verdict = (ObjectId, &'static str, Option<String>);

/// The commits among `commits` whose signature git does not accept, with the verdict and
/// why: for `fetch --require-signed`.
pub fn unaccepted(store: &Store, commits: &[ObjectId]) -> Result<Vec<Verdict>> {
    let checks = store.objects().check_signatures(commits)?;
    let mut bad = vec![];
    let mut seen = std::collections::HashSet::new();
    for c in &checks {
        seen.insert(c.commit);
        let (v, detail) = verdict(store, c)?;
        if v != "good" {
            bad.push((c.commit, v, detail));
        }
    }
    for c in commits.iter().filter(|c| !seen.contains(*c)) {
        bad.push((
            *c,
            "unchecked",
            Some("git did not report its signature".into()),
        ));
    }
    Ok(bad)
}

/// The signer of one commit, for `show`.
pub fn describe(store: &Store, commit: ObjectId) -> Result<Option<Signed>> {
    Ok(describe_all(store, &[commit])?.pop())
}

/// The signers of checkpoint commits known to be signed, in order (one `git log`).
pub fn describe_all(store: &Store, commits: &[ObjectId]) -> Result<Vec<Signed>> {
    store
        .objects()
        .check_signatures(commits)?
        .iter()
        .map(|c| signed(store, "checkpoint", c))
        .collect()
}

/// A commit of a fetched run whose signature git does not accept.
#[derive(Debug, Clone)]
pub struct Unaccepted {
    pub commit: ObjectId,
    /// A commit of the run's notes ref (else a checkpoint).
    pub notes: bool,
    /// `unsigned`, `bad`, `untrusted`, `unchecked`, `expired`, `revoked` ([`verdict`]).
    pub verdict: &'static str,
    pub detail: Option<String>,
}

impl Unaccepted {
    /// `<short id> <verdict>[: detail]`.
    pub fn describe(&self) -> String {
        let kind = if self.notes { "notes" } else { "checkpoint" };
        let short = crate::catalog::short(self.commit);
        match &self.detail {
            Some(d) => format!("{kind} {short} {}: {d}", self.verdict),
            None => format!("{kind} {short} {}", self.verdict),
        }
    }
}

/// Why a fetched run is refused, in a few words: `unsigned`, `unknown key`, `bad
/// signature`, `expired key`, `revoked key` (from its first refused checkpoint), or `notes
/// changed after signing` when every new checkpoint is signed as required and only notes
/// commits are not.
pub fn refusal_reason(refused: &[Unaccepted]) -> &'static str {
    let Some(first) = refused.iter().find(|u| !u.notes) else {
        return "notes changed after signing";
    };
    match first.verdict {
        "unsigned" => "unsigned",
        "bad" => "bad signature",
        "untrusted" | "unchecked" => "unknown key",
        "expired" => "expired key",
        "revoked" => "revoked key",
        _ => "not signed as required",
    }
}

/// The most commits of one fetched chain walked for their signatures (as validation).
const MAX_WALK: usize = crate::remote::staged::MAX_CHAIN;

/// For `fetch --require-signed`: each staged run (with the local run of that name) whose
/// new checkpoints (its own chain from the staged `HEAD` down to its first checkpoint or to
/// the local tip) or new notes commits are not all signed as git accepts, with those
/// commits. One `git log` process for all of them.
pub fn unsigned_staged(
    store: &Store,
    runs: &[(
        &crate::remote::staged::StagedRun,
        &crate::remote::staged::LocalRun,
    )],
) -> Result<Vec<(String, Vec<Unaccepted>)>> {
    let mut owner: std::collections::HashMap<ObjectId, Vec<usize>> = Default::default();
    let mut notes_commits = std::collections::HashSet::new();
    let mut all = vec![];
    for (i, (staged, local)) in runs.iter().enumerate() {
        let mut ids = vec![];
        let mut next = staged.head;
        while let Some(id) = next.take() {
            if Some(id) == local.head || ids.len() >= MAX_WALK {
                break;
            }
            let commit = store.objects().read_commit(id)?;
            if commit.trailers.run.as_deref() != Some(staged.name.as_str()) {
                break;
            }
            ids.push(id);
            next = commit.parents.first().copied();
        }
        if let Some(tip) = staged.notes
            && Some(tip) != local.notes
        {
            let notes = store.objects().commits_between(tip, local.notes)?;
            notes_commits.extend(notes.iter().copied());
            ids.extend(notes);
        }
        for id in ids {
            let o = owner.entry(id).or_default();
            if o.is_empty() {
                all.push(id);
            }
            o.push(i);
        }
    }
    let mut bad: Vec<Vec<Unaccepted>> = vec![vec![]; runs.len()];
    for (commit, verdict, detail) in unaccepted(store, &all)? {
        for i in owner.get(&commit).into_iter().flatten() {
            bad[*i].push(Unaccepted {
                commit,
                notes: notes_commits.contains(&commit),
                verdict,
                detail: detail.clone(),
            });
        }
    }
    Ok(runs
        .iter()
        .zip(bad)
        .filter(|(_, b)| !b.is_empty())
        .map(|((s, _), b)| (s.name.clone(), b))
        .collect())
}
