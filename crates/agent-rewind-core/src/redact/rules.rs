//! Secret rules in gitleaks' configuration format (`[[rules]]` with `id`, `regex`,
//! `secretGroup`, `entropy`, `keywords`, `path`, `[[rules.allowlists]]`; a global
//! `[allowlist]` or `[[allowlists]]`), and the scan of a text with them, with gitleaks'
//! semantics: a case-insensitive keyword prefilter, the secret taken from `secretGroup` (or
//! the first non-empty group), a Shannon entropy threshold, allowlists of regexes (on the
//! secret, the match or the line), stopwords, paths and commits, `AND`/`OR` conditions, and
//! a line holding `gitleaks:allow` skipped.
//!
//! Owns the rules and the scan; never reads git or the file system (a rule file is handed in
//! as text). A rule whose regex does not compile is kept out and reported by
//! [`RuleSet::skipped`], never dropped silently.

use super::pattern::Pattern;
use aho_corasick::AhoCorasick;
use regex::bytes::Regex;
use serde::Deserialize;

/// The built-in rules, in gitleaks' format (docs/SECRETS.md says where they come from): one
/// file per kind of provider, read as one text (the first holds the title and the global
/// allowlist).
pub const BUILTIN_RULES: &str = concat!(
    include_str!("builtin/general.toml"),
    include_str!("builtin/cloud.toml"),
    include_str!("builtin/hosting.toml"),
    include_str!("builtin/payment.toml"),
    include_str!("builtin/messaging.toml"),
    include_str!("builtin/ai.toml"),
    include_str!("builtin/data.toml"),
    include_str!("builtin/observability.toml"),
    include_str!("builtin/tools.toml"),
);

/// Texts up to this long are first checked against the built-in keywords one by one (a
/// few microseconds for a metadata value) before the built-in rules are read at all.
const QUICK_CHECK_LIMIT: usize = 1024;

/// The built-in rules' keywords, lowercased, taken from the `keywords = [...]` lines of
/// their text without reading it as TOML (a unit test checks they are the rules' keywords).
fn builtin_keywords() -> &'static [String] {
    static KEYWORDS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    KEYWORDS.get_or_init(|| {
        let mut out: Vec<String> = BUILTIN_RULES
            .lines()
            .filter_map(|l| l.trim().strip_prefix("keywords = ["))
            .flat_map(|l| l.trim_end().trim_end_matches(']').split(','))
            .map(|k| k.trim().trim_matches('"').to_ascii_lowercase())
            .filter(|k| !k.is_empty())
            .collect();
        out.sort();
        out.dedup();
        out
    })
}

/// Whether a built-in rule finds a secret in `text`. Most values redaction checks (session
/// ids, counts, paths) hold none of the rules' keywords: a short one is answered without
/// reading the rules (every built-in rule has keywords).
pub fn builtin_finds(text: &str) -> bool {
    if text.len() <= QUICK_CHECK_LIMIT
        && !builtin_keywords()
            .iter()
            .any(|k| contains_ignore_ascii_case(text.as_bytes(), k.as_bytes()))
    {
        return false;
    }
    RuleSet::builtin().finds(text)
}

fn contains_ignore_ascii_case(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

#[derive(Debug, Default, Deserialize)]
struct RawConfig {
    #[serde(default)]
    allowlist: Option<RawAllowlist>,
    #[serde(default)]
    allowlists: Vec<RawAllowlist>,
    #[serde(default)]
    rules: Vec<RawRule>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawRule {
    id: String,
    #[serde(default)]
    regex: Option<String>,
    #[serde(default)]
    secret_group: Option<usize>,
    #[serde(default)]
    entropy: Option<f64>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    allowlist: Option<RawAllowlist>,
    #[serde(default)]
    allowlists: Vec<RawAllowlist>,
    #[serde(default)]
    skip_report: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawAllowlist {
    #[serde(default)]
    condition: Option<String>,
    #[serde(default)]
    regex_target: Option<String>,
    #[serde(default)]
    regexes: Vec<String>,
    #[serde(default)]
    stopwords: Vec<String>,
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default)]
    commits: Vec<String>,
}

/// What an allowlist's regexes are matched against.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Target {
    Secret,
    Match,
    Line,
}

#[derive(Debug, Clone)]
struct Allowlist {
    and: bool,
    target: Target,
    regexes: Vec<Pattern>,
    stopwords: Vec<String>,
    paths: Vec<Pattern>,
    commits: Vec<String>,
}

#[derive(Debug, Clone)]
struct Rule {
    id: String,
    regex: Option<Pattern>,
    secret_group: usize,
    entropy: f64,
    path: Option<Pattern>,
    allowlists: Vec<Allowlist>,
}

/// One secret found: the rule, the 1-based line of the match in the scanned text (0 for a
/// rule that matches a path only), and the secret itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub rule: String,
    pub line: usize,
    pub secret: String,
}

/// Where a scanned text comes from: the file path (for path rules and path allowlists) and
/// the commit (for commit allowlists). Both empty for a free-text value.
#[derive(Debug, Clone, Copy, Default)]
pub struct Origin<'a> {
    pub path: Option<&'a str>,
    pub commit: Option<&'a str>,
}

/// A compiled rule set.
#[derive(Debug, Clone)]
pub struct RuleSet {
    rules: Vec<Rule>,
    global: Vec<Allowlist>,
    prefilter: Option<AhoCorasick>,
    /// For each prefilter pattern, the rules it selects.
    keyword_rules: Vec<Vec<usize>>,
    /// Rules without keywords: always tried.
    always: Vec<usize>,
    skipped: Vec<(String, String)>,
}

/// A rule file that could not be read as gitleaks' format at all.
#[derive(Debug)]
pub struct RulesError(pub String);

impl std::fmt::Display for RulesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RulesError {}

/// How patterns are read: a rule file's are parsed when read, so that a bad one is named;
/// the built-in ones are trusted (their unit tests parse each) and parsed when first
/// compiled.
#[derive(Debug, Clone, Copy)]
enum Reading {
    Checked,
    Trusted,
}

impl Reading {
    fn pattern(self, pattern: &str) -> Result<Pattern, String> {
        match self {
            Reading::Checked => Pattern::new(pattern),
            Reading::Trusted => Ok(Pattern::trusted(pattern)),
        }
    }
}

fn compile_all(patterns: &[String], reading: Reading) -> Result<Vec<Pattern>, String> {
    patterns.iter().map(|p| reading.pattern(p)).collect()
}

impl Allowlist {
    fn new(raw: &RawAllowlist, reading: Reading) -> Result<Allowlist, String> {
        Ok(Allowlist {
            and: raw
                .condition
                .as_deref()
                .is_some_and(|c| c.eq_ignore_ascii_case("and")),
            target: match raw.regex_target.as_deref() {
                Some("match") => Target::Match,
                Some("line") => Target::Line,
                _ => Target::Secret,
            },
            regexes: compile_all(&raw.regexes, reading)?,
            stopwords: raw.stopwords.iter().map(|s| s.to_lowercase()).collect(),
            paths: compile_all(&raw.paths, reading)?,
            commits: raw
                .commits
                .iter()
                .map(|c| c.trim().to_lowercase())
                .collect(),
        })
    }

    fn path_allowed(&self, origin: Origin) -> bool {
        origin
            .path
            .is_some_and(|p| self.paths.iter().any(|r| r.is_match(p.as_bytes())))
    }

    fn commit_allowed(&self, origin: Origin) -> bool {
        origin
            .commit
            .is_some_and(|c| self.commits.iter().any(|a| a.eq_ignore_ascii_case(c)))
    }

    /// gitleaks' check before a rule runs: an `OR` allowlist whose commits or paths match
    /// skips the whole text; an `AND` one only when it checks nothing else.
    fn skips_origin(&self, origin: Origin) -> bool {
        let (commit, path) = (self.commit_allowed(origin), self.path_allowed(origin));
        if self.and {
            let only_origin = self.regexes.is_empty() && self.stopwords.is_empty();
            let checks = [
                (!self.commits.is_empty()).then_some(commit),
                (!self.paths.is_empty()).then_some(path),
            ];
            only_origin && checks.iter().any(Option::is_some) && checks.iter().flatten().all(|c| *c)
        } else {
            commit || path
        }
    }

    /// gitleaks' check of one finding.
    fn allows(&self, secret: &[u8], matched: &[u8], line: &[u8], origin: Origin) -> bool {
        let target = match self.target {
            Target::Secret => secret,
            Target::Match => matched,
            Target::Line => line,
        };
        let regex = !target.is_empty() && self.regexes.iter().any(|r| r.is_match(target));
        let lower = String::from_utf8_lossy(secret).to_lowercase();
        let stop = !lower.is_empty() && self.stopwords.iter().any(|w| lower.contains(w.as_str()));
        if self.and {
            let checks = [
                (!self.commits.is_empty()).then(|| self.commit_allowed(origin)),
                (!self.paths.is_empty()).then(|| self.path_allowed(origin)),
                (!self.regexes.is_empty()).then_some(regex),
                (!self.stopwords.is_empty()).then_some(stop),
            ];
            checks.iter().any(Option::is_some) && checks.iter().flatten().all(|c| *c)
        } else {
            regex || stop
        }
    }
}

/// Shannon entropy of `s` in bits per character, as gitleaks computes it (over characters,
/// divided by the length in bytes).
pub fn shannon_entropy(s: &str) -> f64 {
    super::entropy::per_byte_length(s)
}

impl RuleSet {
    /// Parse and compile gitleaks-format rule files; later files add rules (a rule with the
    /// id of an earlier one replaces it) and global allowlists.
    pub fn parse(files: &[&str]) -> Result<RuleSet, RulesError> {
        Self::read(files, Reading::Checked)
    }

    fn read(files: &[&str], reading: Reading) -> Result<RuleSet, RulesError> {
        let mut raw = RawConfig::default();
        for (i, text) in files.iter().enumerate() {
            let mut c: RawConfig = toml::from_str(text)
                .map_err(|e| RulesError(format!("rule file {}: {}", i + 1, e.message())))?;
            raw.allowlists.extend(c.allowlist.take());
            raw.allowlists.append(&mut c.allowlists);
            for r in c.rules {
                raw.rules.retain(|o| o.id != r.id);
                raw.rules.push(r);
            }
        }
        let mut set = RuleSet {
            rules: vec![],
            global: vec![],
            prefilter: None,
            keyword_rules: vec![],
            always: vec![],
            skipped: vec![],
        };
        for a in &raw.allowlists {
            match Allowlist::new(a, reading) {
                Ok(a) => set.global.push(a),
                Err(e) => set.skipped.push(("global allowlist".into(), e)),
            }
        }
        let mut keywords: Vec<String> = vec![];
        for r in raw.rules.into_iter().filter(|r| !r.skip_report) {
            let rule = match Self::rule(&r, reading) {
                Ok(rule) => rule,
                Err(e) => {
                    set.skipped.push((r.id.clone(), e));
                    continue;
                }
            };
            let index = set.rules.len();
            set.rules.push(rule);
            if r.keywords.is_empty() {
                set.always.push(index);
            }
            for k in r.keywords.iter().map(|k| k.to_lowercase()) {
                match keywords.iter().position(|o| *o == k) {
                    Some(p) => set.keyword_rules[p].push(index),
                    None => {
                        keywords.push(k);
                        set.keyword_rules.push(vec![index]);
                    }
                }
            }
        }
        if !keywords.is_empty() {
            set.prefilter = Some(
                AhoCorasick::builder()
                    .ascii_case_insensitive(true)
                    // Built on every run that scans; the texts scanned are mostly short, so
                    // a contiguous NFA beats a DFA that costs more to build than to use.
                    .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
                    .build(&keywords)
                    .map_err(|e| RulesError(format!("keywords: {e}")))?,
            );
        }
        Ok(set)
    }

    fn rule(r: &RawRule, reading: Reading) -> Result<Rule, String> {
        let regex = r.regex.as_deref().map(|p| reading.pattern(p)).transpose()?;
        let path = r.path.as_deref().map(|p| reading.pattern(p)).transpose()?;
        if regex.is_none() && path.is_none() {
            return Err("neither a regex nor a path".into());
        }
        let allowlists = r
            .allowlist
            .iter()
            .chain(&r.allowlists)
            .map(|a| Allowlist::new(a, reading))
            .collect::<Result<Vec<_>, _>>()?;
        let secret_group = r.secret_group.unwrap_or(0);
        if let Some(groups) = regex.as_ref().and_then(Pattern::captures_len)
            && secret_group >= groups
        {
            return Err(format!("secretGroup {secret_group} is not a group"));
        }
        Ok(Rule {
            id: r.id.clone(),
            regex,
            secret_group,
            entropy: r.entropy.unwrap_or(0.0),
            path,
            allowlists,
        })
    }

    /// The built-in rules, read once (their patterns parsed and compiled as scans reach
    /// them).
    pub fn builtin() -> &'static RuleSet {
        static SET: std::sync::OnceLock<RuleSet> = std::sync::OnceLock::new();
        SET.get_or_init(|| {
            RuleSet::read(&[BUILTIN_RULES], Reading::Trusted).expect("the built-in rules parse")
        })
    }

    /// How many rules compiled.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules (and allowlists) that did not compile, with why: (rule id, error).
    pub fn skipped(&self) -> &[(String, String)] {
        &self.skipped
    }

    /// The rules whose keywords occur in `text` (ASCII case-insensitive), and those without
    /// keywords, in rule order.
    fn candidates(&self, text: &[u8]) -> Vec<usize> {
        let mut hit = vec![false; self.rules.len()];
        for &i in &self.always {
            hit[i] = true;
        }
        if let Some(ac) = &self.prefilter {
            for m in ac.find_overlapping_iter(text) {
                for &i in &self.keyword_rules[m.pattern().as_usize()] {
                    hit[i] = true;
                }
            }
        }
        (0..self.rules.len()).filter(|&i| hit[i]).collect()
    }

    /// Every finding in `text`. As in gitleaks, a finding of a rule whose id holds
    /// `generic` gives way to another rule's finding on the same line whose secret holds its
    /// secret: the provider's rule names the secret better.
    pub fn scan(&self, text: &[u8], origin: Origin) -> Vec<Finding> {
        if self.global.iter().any(|a| !a.and && a.path_allowed(origin)) {
            return vec![];
        }
        let mut out = vec![];
        for i in self.candidates(text) {
            self.scan_rule(&self.rules[i], text, origin, &mut out);
        }
        let generic = |f: &Finding| f.rule.to_ascii_lowercase().contains("generic");
        let covered = |f: &Finding| {
            out.iter().any(|o| {
                o.line == f.line
                    && o.rule != f.rule
                    && !generic(o)
                    && o.secret.contains(f.secret.as_str())
            })
        };
        let keep: Vec<bool> = out.iter().map(|f| !(generic(f) && covered(f))).collect();
        let mut keep = keep.into_iter();
        out.retain(|_| keep.next().unwrap_or(true));
        out
    }

    /// Whether any rule finds a secret in `text`.
    pub fn finds(&self, text: &str) -> bool {
        !self.scan(text.as_bytes(), Origin::default()).is_empty()
    }

    fn scan_rule(&self, rule: &Rule, text: &[u8], origin: Origin, out: &mut Vec<Finding>) {
        if rule.allowlists.iter().any(|a| a.skips_origin(origin)) {
            return;
        }
        if let Some(p) = &rule.path {
            let Some(path) = origin.path else { return };
            if !p.is_match(path.as_bytes()) {
                return;
            }
            if rule.regex.is_none() {
                out.push(Finding {
                    rule: rule.id.clone(),
                    line: 0,
                    secret: format!("file detected: {path}"),
                });
                return;
            }
        }
        let Some(re) = rule.regex.as_ref().and_then(Pattern::regex) else {
            return;
        };
        for m in re.find_iter(text) {
            let matched = trim_newlines(m.as_bytes());
            let start = m.start() + (m.as_bytes().len() - trim_start_newlines(m.as_bytes()).len());
            let line_start = text[..start]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            let line_end = text[start..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(text.len(), |i| start + i);
            let line = &text[line_start..line_end];
            if contains(line, b"gitleaks:allow") {
                continue;
            }
            let secret = secret_of(re, rule.secret_group, matched);
            let secret_text = String::from_utf8_lossy(secret);
            if rule.entropy > 0.0 && shannon_entropy(&secret_text) <= rule.entropy {
                continue;
            }
            let allowed = |a: &Allowlist| a.allows(secret, matched, line, origin);
            if self.global.iter().any(allowed) || rule.allowlists.iter().any(allowed) {
                continue;
            }
            out.push(Finding {
                rule: rule.id.clone(),
                line: 1 + text[..start].iter().filter(|&&b| b == b'\n').count(),
                secret: secret_text.into_owned(),
            });
        }
    }
}

/// gitleaks' secret of a match: the match run through the regex again, then `secretGroup`,
/// or the first non-empty group, or the whole match.
fn secret_of<'t>(re: &Regex, group: usize, matched: &'t [u8]) -> &'t [u8] {
    let Some(caps) = re.captures(matched) else {
        return matched;
    };
    if caps.len() < 2 {
        return matched;
    }
    if group > 0 {
        return caps.get(group).map_or(&matched[..0], |g| g.as_bytes());
    }
    (1..caps.len())
        .filter_map(|i| caps.get(i))
        .map(|g| g.as_bytes())
        .find(|g| !g.is_empty())
        .unwrap_or(matched)
}

fn trim_start_newlines(b: &[u8]) -> &[u8] {
    let i = b.iter().position(|&c| c != b'\n').unwrap_or(b.len());
    &b[i..]
}

fn trim_newlines(b: &[u8]) -> &[u8] {
    let b = trim_start_newlines(b);
    let j = b.iter().rposition(|&c| c != b'\n').map_or(0, |j| j + 1);
    &b[..j]
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests;
