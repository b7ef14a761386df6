//! The layering of docs/ARCHITECTURE.md (docs/design/layers.md says why). Between crates the compiler keeps it: the
//! library does not depend on gix, and the store does not depend on the library; this
//! checks the manifests keep it so. Inside the library, a module may name (`crate::x`)
//! only modules of a lower rank, so there is no cycle between top-level modules. A process
//! is started outside the store crate only through `agent_rewind_store::process` with a
//! listed purpose (clippy.toml forbids `Command::new` there; this lists the callers).

use std::collections::BTreeMap;
use std::path::Path;

/// Top-level module of the library crate → rank. A module may use only modules of a
/// strictly lower rank. (The store crate is below them all; the compiler keeps it from
/// reaching up, since it does not depend on this crate.)
const RANKS: &[(&str, u32)] = &[
    ("agent", 1),
    ("model", 2),
    ("catalog", 4),
    ("verify", 4),
    ("attribution", 5),
    ("journal", 5),
    ("materialize", 5),
    ("remote", 5),
    ("workflow", 6),
    ("ops", 7),
    ("hooks", 8),
    ("mcp", 8),
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

/// The top-level module a file of the library's `src/` belongs to (`None` for lib.rs).
fn module_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.trim_end_matches(".rs");
    (name != "lib").then(|| name.to_string())
}

/// The workspace's root folder.
fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
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
fn library_modules_call_downward_only() {
    let root = workspace().join("crates/agent-rewind/src");
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

/// The `[dependencies]` table of a manifest, as the names it lists.
fn dependencies(manifest: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(manifest).unwrap();
    let value: toml::Table = text.parse().unwrap();
    let mut names = vec![];
    let tables = [value.get("dependencies")].into_iter().chain(
        value
            .get("target")
            .and_then(|t| t.as_table())
            .into_iter()
            .flat_map(|t| t.values())
            .map(|t| t.get("dependencies")),
    );
    for table in tables.flatten() {
        names.extend(table.as_table().unwrap().keys().cloned());
    }
    names
}

#[test]
fn only_the_store_crate_depends_on_gix() {
    let store = dependencies(&workspace().join("crates/agent-rewind-store/Cargo.toml"));
    assert!(store.contains(&"gix".to_string()), "{store:?}");
    for manifest in ["Cargo.toml", "crates/agent-rewind/Cargo.toml"] {
        let deps = dependencies(&workspace().join(manifest));
        assert!(
            !deps.iter().any(|d| d.starts_with("gix")),
            "{manifest} depends on gix: {deps:?}"
        );
        assert!(
            !deps.iter().any(|d| d == "agent-rewind-store") || manifest != "Cargo.toml",
            "the binary reaches the store through the library"
        );
    }
    let library = dependencies(&workspace().join("crates/agent-rewind/Cargo.toml"));
    assert!(library.contains(&"agent-rewind-store".to_string()));
}

/// Where a process may be started outside the store crate, by purpose: a new caller or a
/// new purpose fails here until it is listed (and reviewed: nothing fetched may run).
const PROCESS_STARTS: &[(&str, &str)] = &[
    ("src/cli/commands/hook.rs", "BackgroundCheckpoint"),
    ("crates/agent-rewind/src/workflow/runner.rs", "WorkflowStep"),
    ("src/cli/commands/view.rs", "Browser"),
    ("src/cli/pager.rs", "Pager"),
    ("src/cli/commands/rewind.rs", "AgentResume"),
    ("src/cli/maintenance.rs", "Retention"),
    (
        "crates/agent-rewind/src/ops/push/scanner.rs",
        "SecretScanner",
    ),
];

#[test]
fn processes_start_in_one_named_place() {
    let mut found = vec![];
    let mut offenders = vec![];
    for dir in ["crates/agent-rewind/src", "src"] {
        let mut files = vec![];
        sources(&workspace().join(dir), &mut files);
        for f in files {
            let rel = f.strip_prefix(workspace()).unwrap().display().to_string();
            let text = std::fs::read_to_string(&f).unwrap();
            for bad in [
                "std::process::Command",
                "process::{Command",
                "disallowed_methods",
                "gix::",
                "libc::",
                "posix_spawn",
            ] {
                if text.contains(bad) {
                    offenders.push(format!("{rel}: {bad}"));
                }
            }
            let mut rest = text.as_str();
            while let Some(i) = rest.find("Purpose::") {
                rest = &rest[i + "Purpose::".len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric())
                    .collect();
                found.push((rel.clone(), name));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "outside the store crate: {offenders:?}"
    );
    found.sort();
    found.dedup();
    let mut expected: Vec<(String, String)> = PROCESS_STARTS
        .iter()
        .map(|(f, p)| (f.to_string(), p.to_string()))
        .collect();
    expected.sort();
    assert_eq!(found, expected, "process starts outside the store crate");
    // Every purpose the store offers is listed above, and no other.
    let offered =
        std::fs::read_to_string(workspace().join("crates/agent-rewind-core/src/process.rs"))
            .unwrap();
    let mut purposes: Vec<&str> = PROCESS_STARTS.iter().map(|(_, p)| *p).collect();
    purposes.sort();
    purposes.dedup();
    let body = &offered[offered.find("pub enum Purpose {").unwrap()..];
    let body = &body[..body.find("\n}").unwrap()];
    let mut variants: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("    ")?.strip_suffix(','))
        .filter(|l| l.chars().all(|c| c.is_ascii_alphanumeric()))
        .collect();
    variants.sort();
    assert_eq!(
        variants, purposes,
        "every Purpose has a listed caller, and no other"
    );
}

/// The write path does no maintenance and starts no process: what a write makes due is
/// `ops::maintenance`'s, asked by the command after it recorded (docs/design/maintenance.md).
#[test]
fn the_write_path_does_no_maintenance() {
    let root = workspace().join("crates/agent-rewind/src/journal");
    let mut files = vec![];
    sources(&root, &mut files);
    assert!(files.iter().any(|f| f.ends_with("append.rs")), "{files:?}");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for side_effect in [
            "maintenance()",
            "process::",
            "current_exe",
            "spawn",
            "retention",
            "ops::",
        ] {
            assert!(
                !text.contains(side_effect),
                "{}: {side_effect}",
                f.display()
            );
        }
    }
}
