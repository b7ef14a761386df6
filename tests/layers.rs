//! The layering of docs/DECISIONS.md ("Layers"), checked on the source: a module may name
//! (`crate::x`) only modules of a lower rank, so there is no cycle between top-level
//! modules; only `store/` mentions gix; only `store/` starts processes.

use std::collections::BTreeMap;
use std::path::Path;

/// Top-level module → rank. A module may use only modules of a strictly lower rank.
const RANKS: &[(&str, u32)] = &[
    ("error", 0),
    ("trace", 0),
    ("crash", 0),
    ("ids", 1),
    ("time", 1),
    ("redact", 1),
    ("agent", 1),
    ("quote", 1),
    ("model", 2),
    ("store", 3),
    ("snapshot", 3), // re-exported from store
    ("catalog", 4),
    ("verify", 4),
    ("journal", 5),
    ("materialize", 5),
    ("remote", 5),
    ("workflow", 6),
    ("ops", 7),
    ("hooks", 8),
    ("view", 8),
];

fn rank(m: &str) -> Option<u32> {
    RANKS.iter().find(|(n, _)| *n == m).map(|(_, r)| *r)
}

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a file of `src/` belongs to (`None` for lib.rs, main.rs and cli/).
fn module_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.trim_end_matches(".rs");
    (!matches!(name, "lib" | "main" | "cli")).then(|| name.to_string())
}

/// Every `crate::name` a file mentions, including `crate::{a, b::c}` groups.
fn crate_paths(text: &str) -> Vec<String> {
    let mut out = vec![];
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for part in group[..end].split(',') {
                let name: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.push(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            out.push(name);
        }
    }
    out
}

#[test]
fn modules_call_downward_only() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![];
    sources(&root, &mut files);
    let mut violations: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap();
        let Some(from) = module_of(rel) else { continue };
        let from_rank = rank(&from).unwrap_or_else(|| panic!("no rank for module {from}"));
        let text = std::fs::read_to_string(f).unwrap();
        for to in crate_paths(&text) {
            if to == from || to == "Result" || to == "Error" {
                continue;
            }
            let Some(to_rank) = rank(&to) else { continue };
            if to_rank >= from_rank {
                violations
                    .entry(rel.display().to_string())
                    .or_default()
                    .push(to);
            }
        }
    }
    assert!(
        violations.is_empty(),
        "upward or sideways uses: {violations:#?}"
    );
}

#[test]
fn only_the_store_uses_gix_or_starts_processes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![];
    sources(&root, &mut files);
    let mut offenders = vec![];
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap();
        if rel.starts_with("store") {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        // Only `From<gix::Error>` in error.rs may name gix outside the store.
        let gix_ok = rel == Path::new("error.rs");
        if (!gix_ok && text.contains("gix::")) || text.contains("Command::new(\"git\")") {
            offenders.push(rel.display().to_string());
        }
    }
    assert!(
        offenders.is_empty(),
        "gix or git outside store/: {offenders:?}"
    );
}
