//! Measures the secret rules (docs/SECRETS.md, "How well the rules do"). Not part of the
//! program; never writes anything.
//!
//! cargo run -q -p agent-rewind-core --example secret_scan -- recall GITLEAKS_DIR [--rules FILE]…
//!     Recall over gitleaks' true-positive test strings: the string literals of the `tps` lists
//!     in GITLEAKS_DIR/cmd/generate/config/rules/*.go (a checkout of gitleaks), each scanned
//!     with the built-in rules (plus FILEs, in gitleaks' format). Generated samples
//!     (`secrets.NewSecret(…)`) are not literals and are not counted.
//! cargo run -q -p agent-rewind-core --example secret_scan -- files DIR [--rules FILE]… [-v]
//!     Findings over every text file under DIR (not .git, target, node_modules): the false
//!     positives, when DIR holds no real secret.

use agent_rewind_core::redact::rules::{Origin, RuleSet};
use std::path::{Path, PathBuf};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mode, dir) = match (args.first(), args.get(1)) {
        (Some(m), Some(d)) => (m.as_str(), PathBuf::from(d)),
        _ => usage(),
    };
    let mut files = vec![];
    let mut verbose = false;
    let mut rest = args[2..].iter();
    while let Some(a) = rest.next() {
        match a.as_str() {
            "--rules" => files.push(
                std::fs::read_to_string(rest.next().unwrap_or_else(|| usage()))
                    .expect("read the rule file"),
            ),
            "-v" => verbose = true,
            _ => usage(),
        }
    }
    // `--rules` files add rules to the built-in ones (gitleaks' ids differ from ours).
    let mut texts = vec![agent_rewind_core::redact::rules::BUILTIN_RULES];
    texts.extend(files.iter().map(String::as_str));
    let set = RuleSet::parse(&texts).expect("the rules parse");
    println!(
        "rules: {} compiled, {} did not compile",
        set.len(),
        set.skipped().len()
    );
    for (id, why) in set.skipped() {
        println!("  not compiled: {id}: {why}");
    }
    match mode {
        "recall" => recall(&set, &dir, verbose),
        "files" => false_positives(&set, &dir, verbose),
        _ => usage(),
    }
}

fn usage() -> ! {
    eprintln!("usage: secret_scan (recall GITLEAKS_DIR | files DIR) [--rules FILE]… [-v]");
    std::process::exit(2)
}

fn recall(set: &RuleSet, gitleaks: &Path, verbose: bool) {
    let dir = gitleaks.join("cmd/generate/config/rules");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read the rules folder")
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "go") && !p.to_string_lossy().ends_with("_test.go")
        })
        .collect();
    paths.sort();
    let (mut total, mut found, mut rules_with_tps, mut rules_all_found) = (0, 0, 0, 0);
    for p in paths {
        let src = std::fs::read_to_string(&p).unwrap();
        for (rule, tps) in literal_true_positives(&src) {
            if tps.is_empty() {
                continue;
            }
            rules_with_tps += 1;
            let hits = tps
                .iter()
                .filter(|t| !set.scan(t.as_bytes(), Origin::default()).is_empty())
                .count();
            if verbose && hits < tps.len() {
                println!("  {rule}: {hits}/{}", tps.len());
            }
            total += tps.len();
            found += hits;
            rules_all_found += usize::from(hits == tps.len());
        }
    }
    println!(
        "recall: {found} of {total} literal true positives found ({:.1}%); {rules_all_found} of {rules_with_tps} gitleaks rules fully covered",
        100.0 * found as f64 / total.max(1) as f64
    );
}

/// The rules of one generator file, each with the literal strings of its `tps`.
fn literal_true_positives(src: &str) -> Vec<(String, Vec<String>)> {
    let mut out = vec![];
    for body in src.split("\nfunc ").skip(1) {
        let Some(id) = body
            .split("RuleID:")
            .nth(1)
            .and_then(|r| string_at(r.trim_start()).map(|(s, _)| s))
        else {
            continue;
        };
        // The validation part: from the first `tps` to the `fps` list or the end.
        let Some(start) = body.find("tps") else {
            continue;
        };
        let part = &body[start..];
        let part = &part[..part.find("fps").unwrap_or(part.len())];
        out.push((id, literals(part)));
    }
    out
}

/// Direct string elements of `tps` lists and appends (followed by `,`, `}` or `)`, not `+`),
/// and the secrets of `GenerateSampleSecret(s)("id", "literal")`, in gitleaks' sample forms.
fn literals(part: &str) -> Vec<String> {
    let mut out = vec![];
    let bytes = part.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if part[i..].starts_with("//") {
            i += part[i..].find('\n').unwrap_or(part.len() - i);
            continue;
        }
        if part[i..].starts_with("GenerateSampleSecret") {
            let plural = part[i..].starts_with("GenerateSampleSecrets(");
            let open = i + part[i..].find('(').unwrap_or(0) + 1;
            if let Some((name, after)) = string_at(&part[open..])
                && let Some(rest) = part[open + after..].trim_start().strip_prefix(',')
                && let Some((secret, n)) = string_at(rest.trim_start())
                && rest.trim_start()[n..].trim_start().starts_with(')')
            {
                out.extend(samples(&name, &secret, plural));
            }
            i = after_call(part, open);
            continue;
        }
        if (bytes[i] == b'`' || bytes[i] == b'"')
            && let Some((s, n)) = string_at(&part[i..])
        {
            let before = part[..i].trim_end();
            let after = part[i + n..].trim_start();
            let element = (before.ends_with('{') || before.ends_with(','))
                && (after.starts_with(',') || after.starts_with('}') || after.starts_with(')'));
            if element {
                out.push(s);
            }
            i += n;
            continue;
        }
        i += 1;
    }
    out
}

/// The index just past the `)` that closes the call whose arguments start at `open`.
fn after_call(part: &str, open: usize) -> usize {
    let mut depth = 1;
    let mut i = open;
    while i < part.len() && depth > 0 {
        let c = part.as_bytes()[i];
        if (c == b'`' || c == b'"')
            && let Some((_, n)) = string_at(&part[i..])
        {
            i += n;
            continue;
        }
        depth += match c {
            b'(' => 1,
            b')' => -1,
            _ => 0,
        };
        i += 1;
    }
    i
}

/// gitleaks' `GenerateSampleSecret` (one form) and a few of `GenerateSampleSecrets`' forms.
fn samples(name: &str, secret: &str, plural: bool) -> Vec<String> {
    if !plural {
        return vec![format!("{name}_api_token = \"{secret}\"")];
    }
    [
        "{i}Token=\"{s}\"",
        "{i}Token = {s}",
        "{i}_token: {s}",
        "{\n    \"{i}_token\": \"{s}\"\n}",
    ]
    .iter()
    .map(|f| f.replace("{i}", name).replace("{s}", secret))
    .collect()
}

/// The Go string literal at the start of `s` (raw or interpreted) and its length in bytes.
fn string_at(s: &str) -> Option<(String, usize)> {
    let b = s.as_bytes();
    match b.first()? {
        b'`' => {
            let end = s[1..].find('`')?;
            Some((s[1..1 + end].to_string(), end + 2))
        }
        b'"' => {
            let mut out = String::new();
            let mut chars = s[1..].char_indices();
            while let Some((i, c)) = chars.next() {
                match c {
                    '"' => return Some((out, i + 2)),
                    '\\' => match chars.next()?.1 {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        other => out.push(other),
                    },
                    c => out.push(c),
                }
            }
            None
        }
        _ => None,
    }
}

fn false_positives(set: &RuleSet, dir: &Path, verbose: bool) {
    let mut files = vec![];
    walk(dir, &mut files);
    files.sort();
    let (mut scanned, mut findings, mut with) = (0usize, 0usize, 0usize);
    let mut by_rule = std::collections::BTreeMap::<String, usize>::new();
    for f in &files {
        let Ok(content) = std::fs::read(f) else {
            continue;
        };
        if content.len() > 10 << 20 || content[..content.len().min(8000)].contains(&0) {
            continue;
        }
        scanned += 1;
        let rel = f
            .strip_prefix(dir)
            .unwrap_or(f)
            .to_string_lossy()
            .into_owned();
        let found = set.scan(
            &content,
            Origin {
                path: Some(&rel),
                commit: None,
            },
        );
        with += usize::from(!found.is_empty());
        findings += found.len();
        for x in found {
            if verbose {
                println!("  {rel}:{}: {}", x.line, x.rule);
            }
            *by_rule.entry(x.rule).or_default() += 1;
        }
    }
    println!("files: {scanned} text files scanned, {findings} findings in {with} files");
    for (rule, n) in by_rule {
        println!("  {rule}: {n}");
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        let Ok(t) = e.file_type() else { continue };
        if t.is_dir() {
            if !matches!(name.to_str(), Some(".git" | "target" | "node_modules")) {
                walk(&p, out);
            }
        } else if t.is_file() {
            out.push(p);
        }
    }
}
