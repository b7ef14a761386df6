//! The rule engine's semantics, and the built-in rules on the hard cases a review of the
//! secret scan collected.

use super::*;
use crate::redact::pattern::literal_braces;

fn ids(set: &RuleSet, text: &str, path: Option<&str>) -> Vec<(String, usize)> {
    let origin = Origin { path, commit: None };
    set.scan(text.as_bytes(), origin)
        .into_iter()
        .map(|f| (f.rule, f.line))
        .collect()
}

/// The built-in rules as a rule file is read (each pattern parsed, each `secretGroup`
/// checked): `RuleSet::builtin` trusts them and parses a pattern only when it compiles it.
#[test]
fn the_builtin_rules_all_compile() {
    let set = RuleSet::parse(&[BUILTIN_RULES]).unwrap();
    assert!(set.skipped().is_empty(), "{:?}", set.skipped());
    assert_eq!(set.len(), RuleSet::builtin().len());
    assert!(set.len() >= 100);
}

#[test]
fn the_four_cases_of_issue_30_item_6() {
    let set = RuleSet::builtin();
    for end in ["'", "\"", ",", ")"] {
        let text = format!("x('Authorization: Bearer abcdef0123456789{end} y"); // gitleaks:allow
        assert_eq!(ids(set, &text, None), [("authorization-header".into(), 1)]);
    }
    let jwt = "a\nt = eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U\n"; // gitleaks:allow
    assert_eq!(ids(set, jwt, Some("new.txt")), [("jwt".into(), 2)]);
    let aws = "export AWS_SECRET_ACCESS_KEY=Zq3xR8vT1mB6nP0sK4wY7cH2jL5dF9gA3eU8iO1r\n"; // gitleaks:allow
    assert_eq!(
        ids(set, aws, Some("env.sh")),
        [("aws-secret-access-key".into(), 1)]
    );
    let yaml = "db:\n  host: x\n  password: hunter2-prod\n";
    assert_eq!(
        ids(set, yaml, Some("c/app.yaml")),
        [("yaml-password".into(), 3)]
    );
    // Path rules need the path; placeholders are allowed.
    assert!(ids(set, yaml, Some("app.txt")).is_empty());
    assert!(ids(set, "password: ${DB_PASSWORD}\n", Some("a.yml")).is_empty());
    assert!(ids(set, "password: /run/secrets/db\n", Some("a.yml")).is_empty());
}

#[test]
fn gitleaks_semantics() {
    let cfg = r#"
[allowlist]
paths = ['''^vendor/''']
stopwords = ["notsecret"]
[[rules]]
id = "t"
regex = '''tok_([a-z0-9]{8})'''
entropy = 2.0
keywords = ["TOK_"]
[[rules.allowlists]]
regexTarget = "line"
regexes = ['''IGNORE''']
[[rules]]
id = "bad"
regex = '''(?<=x)y'''
"#;
    let set = RuleSet::parse(&[cfg]).unwrap();
    assert_eq!(set.len(), 1);
    assert_eq!(set.skipped()[0].0, "bad");
    assert_eq!(
        ids(&set, "a\nTOK_a1b2c3d4", None),
        [] as [(String, usize); 0]
    );
    assert_eq!(ids(&set, "a\ntok_a1b2c3d4", None), [("t".into(), 2)]);
    assert!(ids(&set, "tok_aaaaaaaa", None).is_empty(), "low entropy");
    assert!(
        ids(&set, "tok_a1b2c3d4 IGNORE", None).is_empty(),
        "line allowlist"
    );
    assert!(ids(&set, "tok_a1b2c3d4 # gitleaks:allow", None).is_empty());
    assert!(ids(&set, "tok_a1b2c3d4", Some("vendor/x")).is_empty());
    let secrets: Vec<String> = set
        .scan(b"tok_a1b2c3d4", Origin::default())
        .into_iter()
        .map(|f| f.secret)
        .collect();
    assert_eq!(secrets, ["a1b2c3d4"]);
    assert!((shannon_entropy("aabb") - 1.0).abs() < 1e-9);
    // RE2's literal braces.
    assert_eq!(literal_braces(r"^\$(?:\d+|{\d+})$"), r"^\$(?:\d+|\{\d+\})$");
    assert_eq!(literal_braces(r"a{2,3}b{x}"), r"a{2,3}b\{x\}");
    assert_eq!(literal_braces(r"[{}]\{"), r"[{}]\{");
    assert_eq!(literal_braces(r"\p{Greek}{2}"), r"\p{Greek}{2}");
    assert!(Pattern::new(r"^\{\{[ \t]*[\w ().|]+[ \t]*}}$").is_ok_and(|p| p.regex().is_some()));
}

/// Patterns are parsed when read and compiled on first use: every built-in one compiles.
/// Every built-in rule has keywords, and the quick check reads exactly those.
#[test]
fn the_quick_check_reads_every_builtin_keyword() {
    let set = RuleSet::parse(&[BUILTIN_RULES]).unwrap();
    assert!(set.always.is_empty(), "a built-in rule without keywords");
    let raw: RawConfig = toml::from_str(BUILTIN_RULES).unwrap();
    let mut keywords: Vec<String> = raw
        .rules
        .iter()
        .flat_map(|r| r.keywords.iter().map(|k| k.to_ascii_lowercase()))
        .collect();
    keywords.sort();
    keywords.dedup();
    assert_eq!(builtin_keywords(), keywords.as_slice());
    assert!(!builtin_finds("3f2b8c1e-9a7d-4e2f-b1c3-5d6e7f8a9b0c"));
    assert!(builtin_finds(concat!(
        "ghp_",
        "abcdefghijklmnopqrstuvwxyz0123456789"
    )));
    let long = format!(
        "{}{}",
        "x".repeat(QUICK_CHECK_LIMIT),
        concat!(" dapi", "0123456789abcdef0123456789abcdef")
    );
    assert!(builtin_finds(&long));
}

#[test]
fn every_builtin_pattern_compiles() {
    let set = &RuleSet::parse(&[BUILTIN_RULES]).unwrap();
    assert!(set.skipped().is_empty(), "{:?}", set.skipped());
    for rule in &set.rules {
        for p in rule.regex.iter().chain(&rule.path) {
            assert!(p.regex().is_some(), "{}", rule.id);
        }
        for a in &rule.allowlists {
            for p in a.regexes.iter().chain(&a.paths) {
                assert!(p.regex().is_some(), "{}", rule.id);
            }
        }
    }
    for a in &set.global {
        assert!(
            a.regexes
                .iter()
                .chain(&a.paths)
                .all(|p| p.regex().is_some())
        );
    }
}

/// Patterns are read without Unicode tables: a Unicode class makes its rule skipped, with
/// that reason; a non-ASCII literal still matches its UTF-8 bytes.
#[test]
fn a_unicode_class_skips_its_rule_and_a_non_ascii_literal_matches() {
    let cfg = r#"
[[rules]]
id = "greek"
regex = '''\p{Greek}{3}'''
[[rules]]
id = "euro"
regex = '''€[0-9]{4}'''
[[rules]]
id = "look-behind"
regex = '''(?<=\\p)y'''
"#;
    let set = RuleSet::parse(&[cfg]).unwrap();
    assert_eq!(set.len(), 1);
    let (id, why) = &set.skipped()[0];
    assert_eq!(id, "greek");
    assert!(why.contains("Unicode classes"), "{why}");
    // Another parse error is told as the parser tells it, whatever the pattern holds.
    let (id, why) = &set.skipped()[1];
    assert_eq!(id, "look-behind");
    assert!(!why.contains("Unicode"), "{why}");
    assert_eq!(ids(&set, "price €1234", None), [("euro".into(), 1)]);
}
