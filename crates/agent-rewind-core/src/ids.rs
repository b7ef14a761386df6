//! Names and addresses: run ids, step names, generated run ids, and the parsing of a
//! checkpoint address (`<run>`, `<run>/<step>`, `<run>@<seq>`, a commit id).
//!
//! Validation happens here and only here, so every entry point (CLI, workflow file, hook
//! payload, fetched refs) rejects the same names with the same message. A name is never
//! silently rewritten. This module must not touch git.

use crate::error::{Error, Result};
use std::fmt;

const MAX_NAME_LEN: usize = 64;

/// Check a run id or step name against `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`, no `..`, not ending
/// in `.lock` or `.`. `what` names the thing in the error message ("run id", "step name").
pub fn validate_name(what: &str, name: &str) -> Result<()> {
    let shown = shown_name(name);
    let fail = |why: &str| {
        Err(Error::usage(format!("invalid {what} {shown}: {why}")).with_hint(
            "names use letters, digits, '.', '_' and '-', start with a letter or digit, at most 64 characters",
        ))
    };
    if name.is_empty() {
        return fail("it is empty");
    }
    if name.len() > MAX_NAME_LEN {
        return fail(&format!(
            "it is {} characters long (at most 64)",
            name.len()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return fail(&format!("character {c:?} is not allowed"));
    }
    if !name.as_bytes()[0].is_ascii_alphanumeric() {
        return fail("it must start with a letter or digit");
    }
    if name.contains("..") {
        return fail("it contains '..'");
    }
    if name.ends_with(".lock") {
        return fail("it ends in '.lock'");
    }
    if name.ends_with('.') {
        return fail("it ends in '.'");
    }
    Ok(())
}

/// Quote a name for an error message, escaping control characters and cutting long names.
fn shown_name(name: &str) -> String {
    let mut s: String = name.chars().take(40).collect();
    if name.chars().count() > 40 {
        s.push('…');
    }
    format!("{:?}", s)
}

/// A validated run id.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct RunId(String);

/// Whether `name` is one git gives a meaning of its own where a revision is expected, in
/// any case (a case-insensitive filesystem folds them): `HEAD`, and the pseudo-refs git
/// writes beside it (`FETCH_HEAD`, `ORIG_HEAD`, `MERGE_HEAD`, `CHERRY_PICK_HEAD`,
/// `REVERT_HEAD`, `REBASE_HEAD`, `BISECT_HEAD`, `AUTO_MERGE`, any `…_HEAD`).
fn is_ref_like(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper == "HEAD" || upper.ends_with("_HEAD") || upper == "AUTO_MERGE"
}

impl RunId {
    pub fn new(s: impl Into<String>) -> Result<Self> {
        let s = s.into();
        validate_name("run id", &s)?;
        if is_ref_like(&s) {
            return Err(Error::usage(format!(
                "invalid run id {}: git gives {s} a meaning of its own (HEAD and the \
                 pseudo-refs beside it, in any case)",
                shown_name(&s)
            ))
            .with_hint("choose another name; `show HEAD` must never mean a run"));
        }
        Ok(RunId(s))
    }
    /// A fresh, time-sortable, collision-free id: a lower-case ULID.
    pub fn generate() -> Self {
        RunId(ulid_lower())
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for RunId {
    type Error = Error;
    fn try_from(s: String) -> Result<Self> {
        RunId::new(s)
    }
}
impl From<RunId> for String {
    fn from(r: RunId) -> String {
        r.0
    }
}
impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A validated step name (never `HEAD`, in any case).
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct StepName(String);

impl StepName {
    pub fn new(s: impl Into<String>) -> Result<Self> {
        let s = s.into();
        validate_name("step name", &s)?;
        // `head` would collide with `HEAD` on a case-insensitive filesystem.
        if s.eq_ignore_ascii_case("HEAD") {
            return Err(Error::usage(format!(
                "invalid step name {s:?}: HEAD (in any case) is reserved for the run's chain tip"
            ))
            .with_hint("choose another step name"));
        }
        Ok(StepName(s))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for StepName {
    type Error = Error;
    fn try_from(s: String) -> Result<Self> {
        StepName::new(s)
    }
}
impl From<StepName> for String {
    fn from(r: StepName) -> String {
        r.0
    }
}
impl fmt::Display for StepName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A validated git remote name, as used in the staging namespace
/// (`refs/agent-runs-remote/<remote>/…`): the same rules as a run id, so it is one ref
/// component (no `/`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RemoteName(String);

impl RemoteName {
    pub fn new(s: impl Into<String>) -> Result<Self> {
        let s = s.into();
        validate_name("remote name", &s).map_err(|e| {
            e.with_hint(
                "remotes for agent runs are named like runs: letters, digits, '.', '_', '-' (no '/')",
            )
        })?;
        Ok(RemoteName(s))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RemoteName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How a checkpoint is addressed on the command line. A run named here may be a unique
/// prefix of a run id; the catalog expands it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckpointSpec {
    /// `<run>`: the run's chain tip.
    RunHead(RunId),
    /// `<run>/<step>`: the newest checkpoint of that step.
    Step(RunId, StepName),
    /// `<run>@<seq>`, `<run>@-<n>`, or `@<seq>` / `@-<n>` for the active run: a position in
    /// the run's own chain.
    Seq(Option<RunId>, SeqPos),
    /// A full or abbreviated commit id (4 to 40 hex digits, 64 in a SHA-256 repository). Also tried as a run id (or run
    /// id prefix) when it is both, by the resolver.
    Commit(String),
}

/// A position in a run's own chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqPos {
    /// `@<seq>`: the checkpoint whose `seq` is this (0 = the run's first).
    FromStart(u64),
    /// `@-<n>`: the n-th from the end (`@-1` = the newest, `@-2` the one before).
    FromEnd(u64),
}

impl fmt::Display for SeqPos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SeqPos::FromStart(n) => write!(f, "@{n}"),
            SeqPos::FromEnd(n) => write!(f, "@-{n}"),
        }
    }
}

impl CheckpointSpec {
    pub fn parse(s: &str) -> Result<Self> {
        if let Some((run, step)) = s.split_once('/') {
            // `<run>/HEAD` is the run's tip, as `refs/agent-runs/<run>/HEAD` is (no step is
            // named HEAD).
            if step == "HEAD" {
                return Ok(CheckpointSpec::RunHead(RunId::new(run)?));
            }
            return Ok(CheckpointSpec::Step(RunId::new(run)?, StepName::new(step)?));
        }
        if let Some((run, seq)) = s.rsplit_once('@') {
            let bad = || {
                Error::usage(format!(
                    "invalid checkpoint address {s:?}: '{seq}' after '@' is not a position"
                ))
                .with_hint("use <run>@<seq> (0 = the first), <run>@-1 (the newest), or @-1 for the active run")
            };
            let (from_end, digits) = match seq.strip_prefix('-') {
                Some(d) => (true, d),
                None => (false, seq),
            };
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            let n: u64 = digits.parse().map_err(|_| bad())?;
            let pos = match (from_end, n) {
                (true, 0) => return Err(bad()),
                (true, n) => SeqPos::FromEnd(n),
                (false, n) => SeqPos::FromStart(n),
            };
            let run = if run.is_empty() {
                None
            } else {
                Some(RunId::new(run)?)
            };
            return Ok(CheckpointSpec::Seq(run, pos));
        }
        if s.len() >= 4 && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(CheckpointSpec::Commit(s.to_ascii_lowercase()));
        }
        Ok(CheckpointSpec::RunHead(RunId::new(s).map_err(|e| {
            e.context(format!(
                "{s:?} is not a run, <run>/<step>, <run>@<seq>, <run>@-<n> or a commit id"
            ))
        })?))
    }
}

/// For each id, the length of its shortest prefix that no other id of `ids` starts with
/// (the whole id when it is a prefix of another). `ids` should be every run of the
/// repository, archived ones included, since a prefix is resolved against all of them.
pub fn shortest_unique_prefixes(ids: &[&str]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by(|a, b| ids[*a].cmp(ids[*b]));
    let common = |a: &str, b: &str| a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let mut out = vec![0; ids.len()];
    for (k, &i) in order.iter().enumerate() {
        let mut need = 0;
        for j in [k.checked_sub(1), Some(k + 1)].into_iter().flatten() {
            if let Some(&other) = order.get(j)
                && ids[other] != ids[i]
            {
                need = need.max(common(ids[i], ids[other]) + 1);
            }
        }
        out[i] = need.clamp(1, ids[i].len().max(1));
    }
    out
}

/// The names of `candidates` closest to `wanted` (edit distance, sharing a prefix, or a
/// prefix of them mistyped), best first, at most `max`; for "did you mean …" hints.
pub fn closest_names<'a>(wanted: &str, candidates: &[&'a str], max: usize) -> Vec<&'a str> {
    let typed = wanted.chars().count();
    let limit = (typed / 3).max(2);
    // A run is named by a prefix of its id: a typo in that prefix is a small distance to
    // the id's first as many characters. One typo per four characters typed, so that a
    // short word is not "near" every name.
    let prefix_limit = typed / 4;
    let mut scored: Vec<(usize, &str)> = candidates
        .iter()
        .filter_map(|c| {
            let d = edit_distance(wanted, c);
            let shares = c.starts_with(wanted) || wanted.starts_with(*c);
            let head: String = c.chars().take(typed).collect();
            let mistyped = edit_distance(wanted, &head);
            if d <= limit || shares {
                Some((if shares { d.min(1) } else { d }, *c))
            } else if mistyped <= prefix_limit {
                Some((mistyped, *c))
            } else {
                None
            }
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(max).map(|(_, c)| c).collect()
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

const CROCKFORD: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// A ULID (48-bit milliseconds + 80 random bits) in lower-case Crockford base32, 26 chars.
fn ulid_lower() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
        & ((1u128 << 48) - 1);
    let mut rnd = [0u8; 10];
    fill_random(&mut rnd);
    let mut value: u128 = ms << 80;
    for (i, b) in rnd.iter().enumerate() {
        value |= (*b as u128) << (8 * (9 - i));
    }
    let mut out = [0u8; 26];
    for (i, slot) in out.iter_mut().enumerate() {
        let shift = 5 * (25 - i);
        *slot = CROCKFORD[((value >> shift) & 31) as usize];
    }
    String::from_utf8(out.to_vec()).expect("ascii")
}

/// Random bytes from the OS; falls back to std's randomly seeded hasher where
/// `/dev/urandom` is unavailable.
pub fn fill_random(buf: &mut [u8]) {
    use std::io::Read;
    if let Ok(mut f) = std::fs::File::open("/dev/urandom")
        && f.read_exact(buf).is_ok()
    {
        return;
    }
    use std::hash::{BuildHasher, Hasher};
    for (i, chunk) in buf.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        h.write_u32(std::process::id());
        let bytes = h.finish().to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_names() {
        for bad in [
            "",
            "..",
            "a..b",
            "a/b",
            "x.lock",
            "x.",
            ".x",
            "-x",
            "a b",
            "a\u{7}b",
            &"a".repeat(65),
        ] {
            assert!(
                validate_name("run id", bad).is_err(),
                "{bad:?} should be rejected"
            );
        }
        for head in ["HEAD", "head", "Head", "hEaD"] {
            assert!(StepName::new(head).is_err(), "{head}");
        }
        for git_name in ["HEAD", "hEaD", "FETCH_HEAD", "orig_head", "AUTO_MERGE"] {
            assert!(RunId::new(git_name).is_err(), "{git_name}");
        }
        for fine in ["HEADS", "head-1", "ahead", "MERGE"] {
            assert!(RunId::new(fine).is_ok(), "{fine}");
        }
        for good in ["a", "plan", "run-1.2_x", &"a".repeat(64)] {
            assert!(
                validate_name("run id", good).is_ok(),
                "{good:?} should be accepted"
            );
        }
    }

    #[test]
    fn generated_ids_are_valid_sortable_and_distinct() {
        let a = RunId::generate();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = RunId::generate();
        assert_eq!(a.as_str().len(), 26);
        assert!(a < b, "{a} < {b}");
        assert!(RunId::new(a.as_str()).is_ok());
    }

    #[test]
    fn parses_addresses() {
        assert_eq!(
            CheckpointSpec::parse("r1").unwrap(),
            CheckpointSpec::RunHead(RunId::new("r1").unwrap())
        );
        assert!(matches!(
            CheckpointSpec::parse("r1/plan").unwrap(),
            CheckpointSpec::Step(_, _)
        ));
        assert_eq!(
            CheckpointSpec::parse("r1/HEAD").unwrap(),
            CheckpointSpec::RunHead(RunId::new("r1").unwrap())
        );
        assert!(matches!(
            CheckpointSpec::parse("r1@3").unwrap(),
            CheckpointSpec::Seq(Some(_), SeqPos::FromStart(3))
        ));
        assert_eq!(
            CheckpointSpec::parse("r1@-1").unwrap(),
            CheckpointSpec::Seq(Some(RunId::new("r1").unwrap()), SeqPos::FromEnd(1))
        );
        assert_eq!(
            CheckpointSpec::parse("@-2").unwrap(),
            CheckpointSpec::Seq(None, SeqPos::FromEnd(2))
        );
        assert_eq!(
            CheckpointSpec::parse("@0").unwrap(),
            CheckpointSpec::Seq(None, SeqPos::FromStart(0))
        );
        for bad in ["r1@-0", "r1@-", "r1@--1", "r1@+1", "@", "r1@-x"] {
            assert!(CheckpointSpec::parse(bad).is_err(), "{bad}");
        }
        assert!(matches!(
            CheckpointSpec::parse("abcdef12").unwrap(),
            CheckpointSpec::Commit(_)
        ));
        assert!(CheckpointSpec::parse("r1@x").is_err());
        assert!(
            CheckpointSpec::parse("r1/head").is_err(),
            "HEAD in any case is reserved"
        );
        assert!(CheckpointSpec::parse("a/b/c").is_err());
    }

    #[test]
    fn shortest_prefixes_are_unique() {
        let ids = ["01jabc", "01jabd", "01k000", "r1", "r10", "x"];
        let lens = shortest_unique_prefixes(&ids);
        assert_eq!(lens, vec![6, 6, 3, 2, 3, 1]);
        for (i, id) in ids.iter().enumerate() {
            let p = &id[..lens[i]];
            let matching: Vec<_> = ids.iter().filter(|o| o.starts_with(p)).collect();
            assert!(matching.len() == 1 || ids.iter().any(|o| o == &p), "{p}");
        }
        assert_eq!(shortest_unique_prefixes(&["only"]), vec![1]);
    }

    #[test]
    fn closest_names_suggest() {
        let steps = ["plan", "implement", "test", "open-pr"];
        assert_eq!(closest_names("implemnt", &steps, 3), vec!["implement"]);
        assert_eq!(closest_names("tset", &steps, 3), vec!["test"]);
        assert!(closest_names("zzzzzzzz", &steps, 3).is_empty());
        assert_eq!(closest_names("imp", &steps, 3), vec!["implement"]);
        // A prefix of a run id with a typo in its middle.
        let runs = ["01m98z408p8gdttjwjf1j6vdgm", "01kzzzzzzzzzzzzzzzzzzzzzzz"];
        assert_eq!(
            closest_names("01m9Xz408p", &runs, 3),
            vec!["01m98z408p8gdttjwjf1j6vdgm"]
        );
        assert!(closest_names("0x", &runs, 3).is_empty());
    }
}
