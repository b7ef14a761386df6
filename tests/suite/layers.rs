//! The layering of docs/ARCHITECTURE.md (docs/design/layers.md says why). Between crates the
//! compiler keeps it, so this checks the manifests: `agent-rewind-core` depends on no crate
//! of ours and not on gix; only `agent-rewind-scan` and `agent-rewind-store` name gix; each
//! crate depends only on the ones below it. Inside the library, a module may name only
//! modules of a lower rank, so there is no cycle between top-level modules: every path a
//! file names (`crate::…`, `super::…`, `self::…`) is resolved against the module tree
//! before its top-level module is looked up. Inside the store, modules name modules (never
//! an item through `lib.rs`) and no two use each other around a circle. A process is started outside the store and
//! scanner crates only through `agent_rewind_core::process` with a listed purpose
//! (clippy.toml forbids `Command::new` there; this lists the callers).

use std::collections::BTreeMap;
use std::path::Path;

/// Top-level module of the library crate → rank. A module may use only modules of a
/// strictly lower rank. (The crates below are below them all; the compiler keeps them from
/// reaching up, since they do not depend on this crate.)
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

/// The module path of a file of the library's `src/` (`ops/list.rs` → `[ops, list]`,
/// `ops/rewind/mod.rs` → `[ops, rewind]`, `lib.rs` → `[]`).
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_str().unwrap().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// `text` without comments, string and character literals (a path in a doc comment or a
/// message is no import).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let at = |i: usize, pat: &[u8]| b[i..].starts_with(pat);
    let find = |from: usize, pat: &[u8]| {
        (from..b.len())
            .find(|&k| b[k..].starts_with(pat))
            .unwrap_or(b.len())
    };
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if at(i, b"//") {
            i = find(i, b"\n");
        } else if at(i, b"/*") {
            i = (find(i, b"*/") + 2).min(b.len());
        } else if at(i, b"r#\"") {
            i = (find(i + 3, b"\"#") + 2).min(b.len());
            out.extend_from_slice(b"\"\"");
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.extend_from_slice(b"\"\"");
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            // A one-byte character literal ('{'): its brace is no brace.
            i += 3;
        } else if at(i, b"'\\") && b.get(i + 3) == Some(&b'\'') {
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The absolute module path of every path `code` names that starts with `crate`, `super`
/// or `self` (groups `{a, b::c}` expand), in a file whose module path is `file`; inline
/// `mod name { … }` blocks count for `super`.
fn named_paths(code: &str, file: &[String]) -> Vec<Vec<String>> {
    // Words and single punctuation characters, whitespace dropped.
    let mut words: Vec<&str> = vec![];
    let mut start = None;
    for (i, c) in code.char_indices() {
        let in_word = c.is_ascii_alphanumeric() || c == '_';
        match (in_word, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                words.push(&code[s..i]);
                start = None;
            }
            _ => {}
        }
        if !in_word && !c.is_whitespace() {
            words.push(&code[i..i + c.len_utf8()]);
        }
    }
    if let Some(s) = start {
        words.push(&code[s..]);
    }
    let mut out = vec![];
    // The inline modules we are in, with the brace depth each was opened at.
    let mut inline: Vec<(String, usize)> = vec![];
    let mut depth = 0usize;
    let mut i = 0;
    while i < words.len() {
        match words[i] {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            "mod" if words.get(i + 2) == Some(&"{") => {
                inline.push((words[i + 1].to_string(), depth));
            }
            w @ ("crate" | "super" | "self") if words.get(i + 1) == Some(&":") => {
                let mut here: Vec<String> = file.to_vec();
                here.extend(inline.iter().map(|(m, _)| m.clone()));
                let mut path: Vec<String> = match w {
                    "crate" => vec![],
                    _ => here.clone(),
                };
                let mut j = i;
                // Leading `super::super::…` and `self::`.
                while j < words.len() && matches!(words[j], "crate" | "super" | "self") {
                    if words[j] == "super" {
                        path.pop();
                    }
                    if words.get(j + 1) == Some(&":") && words.get(j + 2) == Some(&":") {
                        j += 3;
                    } else {
                        break;
                    }
                }
                match words.get(j) {
                    Some(&"{") => {
                        // A group: each first name inside it, at this level.
                        let mut k = j + 1;
                        let mut level = 0;
                        let mut first = true;
                        while k < words.len() {
                            match words[k] {
                                "{" => level += 1,
                                "}" if level == 0 => break,
                                "}" => level -= 1,
                                "," if level == 0 => first = true,
                                w if first && level == 0 && w != ":" => {
                                    let mut p = path.clone();
                                    p.push(w.to_string());
                                    out.push(p);
                                    first = false;
                                }
                                _ => {}
                            }
                            k += 1;
                        }
                    }
                    Some(name) => {
                        let mut p = path.clone();
                        p.push(name.to_string());
                        out.push(p);
                    }
                    None => {}
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The workspace's root folder.
fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn library_modules_call_downward_only() {
    let root = workspace().join("crates/agent-rewind/src");
    let mut files = vec![];
    sources(&root, &mut files);
    let mut violations: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut resolved = 0;
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap();
        let file = module_path(rel);
        let Some(from) = file.first().cloned() else {
            continue;
        };
        let from_rank = rank(&from).unwrap_or_else(|| panic!("no rank for module {from}"));
        let code = code_only(&std::fs::read_to_string(f).unwrap());
        for path in named_paths(&code, &file) {
            let Some(to) = path.first() else { continue };
            resolved += 1;
            if *to == from {
                continue;
            }
            let Some(to_rank) = rank(to) else { continue };
            if to_rank >= from_rank {
                violations
                    .entry(rel.display().to_string())
                    .or_default()
                    .push(path.join("::"));
            }
        }
    }
    assert!(
        resolved > 100,
        "only {resolved} paths found: the reader is broken"
    );
    assert!(
        violations.is_empty(),
        "upward or sideways uses: {violations:#?}"
    );
}

/// Inside the store, a module names other modules, never an item through the crate root
/// (`crate::RefChange`, `super::BString` from a top-level file): `lib.rs` only declares the
/// modules and says what is public. And no two modules use each other, directly or around a
/// circle: a change to one never needs a change to the module it is used by.
#[test]
fn store_modules_name_modules_and_form_no_circle() {
    let root = workspace().join("crates/agent-rewind-store/src");
    let lib = code_only(&std::fs::read_to_string(root.join("lib.rs")).unwrap());
    let declared: Vec<String> = lib
        .lines()
        .filter_map(|l| {
            let l = l.trim().trim_start_matches("pub ");
            let name = l.strip_prefix("mod ")?;
            Some(name.trim_end_matches([';', '{', ' ']).to_string())
        })
        .collect();
    assert!(
        declared.len() > 20,
        "modules of lib.rs not read: {declared:?}"
    );
    let mut files = vec![];
    sources(&root, &mut files);
    let mut through_root: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut uses: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap();
        let file = module_path(rel);
        let Some(from) = file.first().cloned() else {
            continue;
        };
        let code = code_only(&std::fs::read_to_string(f).unwrap());
        // Test modules may reach anything; they are not part of the layering.
        let code = code.split("#[cfg(test)]").next().unwrap_or_default();
        for path in named_paths(code, &file) {
            let Some(to) = path.first() else { continue };
            if !declared.contains(to) {
                through_root
                    .entry(rel.display().to_string())
                    .or_default()
                    .push(path.join("::"));
            } else if *to != from {
                uses.entry(from.clone()).or_default().insert(to.clone());
            }
        }
    }
    assert!(
        through_root.is_empty(),
        "items named through lib.rs instead of their module: {through_root:#?}"
    );
    // A circle is a module reachable from itself.
    for start in uses.keys() {
        let mut seen = std::collections::BTreeSet::new();
        let mut todo: Vec<&String> = uses[start].iter().collect();
        while let Some(m) = todo.pop() {
            assert!(m != start, "{start} is used by a module it uses: {uses:#?}");
            if seen.insert(m.clone()) {
                todo.extend(uses.get(m).into_iter().flatten());
            }
        }
    }
}

/// The reader of module paths sees through `super::super::` and inline modules.
#[test]
fn module_paths_resolve_super_and_groups() {
    let file = module_path(Path::new("ops/rewind/point.rs"));
    assert_eq!(file, ["ops", "rewind", "point"]);
    let code = code_only(
        "use super::super::journal::Record;\nuse crate::{model::Note, catalog};\n\
         // crate::view::x in a comment\nlet s = \"crate::hooks\";\n\
         mod tests { use super::super::check; }\nfn f() { self::g(); }",
    );
    let paths: Vec<String> = named_paths(&code, &file)
        .iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(
        paths,
        [
            "ops::journal",
            "model",
            "catalog",
            "ops::rewind::check",
            "ops::rewind::point::g"
        ]
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

/// Each crate of ours, bottom up, with the crates of ours it may depend on and whether it
/// may name gix.
const CRATES: &[(&str, &[&str], bool)] = &[
    ("crates/agent-rewind-core", &[], false),
    ("crates/agent-rewind-scan", &["agent-rewind-core"], true),
    (
        "crates/agent-rewind-store",
        &["agent-rewind-core", "agent-rewind-scan"],
        true,
    ),
    (
        "crates/agent-rewind",
        &["agent-rewind-core", "agent-rewind-store"],
        false,
    ),
    (".", &["agent-rewind-core", "agent-rewind"], false),
];

#[test]
fn each_crate_depends_only_on_the_ones_below_and_only_scan_and_store_name_gix() {
    let ours: Vec<&str> = [
        "agent-rewind-core",
        "agent-rewind-scan",
        "agent-rewind-store",
        "agent-rewind",
    ]
    .to_vec();
    for (dir, allowed, gix) in CRATES {
        let deps = dependencies(&workspace().join(dir).join("Cargo.toml"));
        let named_gix = deps.iter().any(|d| d.starts_with("gix"));
        assert_eq!(named_gix, *gix, "{dir} names gix: {deps:?}");
        for d in deps.iter().filter(|d| ours.contains(&d.as_str())) {
            assert!(
                allowed.contains(&d.as_str()),
                "{dir} depends on {d}, which is not below it"
            );
        }
    }
    // Every crate of the workspace is listed above.
    let root: toml::Table = std::fs::read_to_string(workspace().join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let members = root["workspace"]["members"].as_array().unwrap();
    assert_eq!(members.len() + 1, CRATES.len(), "{members:?}");
    for m in members {
        let m = m.as_str().unwrap();
        assert!(CRATES.iter().any(|(d, _, _)| *d == m), "{m} is not ranked");
    }
}

/// Where a process may be started outside the store and scanner crates, by purpose: a new caller or a
/// new purpose fails here until it is listed (and reviewed: nothing fetched may run).
const PROCESS_STARTS: &[(&str, &str)] = &[
    ("src/cli/commands/hook.rs", "BackgroundCheckpoint"),
    ("crates/agent-rewind/src/workflow/runner.rs", "WorkflowStep"),
    ("src/cli/commands/view.rs", "Browser"),
    ("src/cli/help.rs", "Manual"),
    ("src/cli/pager.rs", "Pager"),
    ("src/cli/commands/rewind.rs", "AgentResume"),
    ("src/cli/maintenance.rs", "Retention"),
    ("crates/agent-rewind/src/ops/wrap/mod.rs", "WrappedCommand"),
    (
        "crates/agent-rewind/src/ops/push/scanner.rs",
        "SecretScanner",
    ),
    ("crates/agent-rewind/src/ops/post_rewind.rs", "UserHook"),
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
        "outside the store and scanner crates: {offenders:?}"
    );
    found.sort();
    found.dedup();
    let mut expected: Vec<(String, String)> = PROCESS_STARTS
        .iter()
        .map(|(f, p)| (f.to_string(), p.to_string()))
        .collect();
    expected.sort();
    assert_eq!(
        found, expected,
        "process starts outside the store and scanner crates"
    );
    // Every purpose core offers is listed above, and no other.
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

/// Unix-only code sits in core's `platform/` modules, one per concern, each with a Windows
/// side (docs/LIMITS.md, "Platforms"): elsewhere in the crates and the binary only the
/// scan's stat-level sources, each with a full-pass fallback, name `std::os::unix`; nothing
/// names `std::os::fd`. A use outside them would break the macOS or Windows build that
/// `.ci/run` checks, or hide a difference the platform table does not list.
#[test]
fn unix_only_code_stays_in_the_platform_modules() {
    const ALLOWED: &[&str] = &[
        "crates/agent-rewind-core/src/platform/",
        "crates/agent-rewind-scan/src/statcheck.rs",
        "crates/agent-rewind-scan/src/dirwalk/cache.rs",
        "crates/agent-rewind-scan/src/rawindex.rs",
        "crates/agent-rewind-scan/src/fsmonitor/watchman.rs",
    ];
    let mut offenders = vec![];
    for dir in ["crates", "src"] {
        let mut files = vec![];
        sources(&workspace().join(dir), &mut files);
        for f in files {
            let rel = f.strip_prefix(workspace()).unwrap().display().to_string();
            if !rel.contains("/src/") || ALLOWED.iter().any(|a| rel.starts_with(a)) {
                continue;
            }
            let text = std::fs::read_to_string(&f).unwrap();
            for bad in ["os::unix", "os::fd", "PermissionsExt", "MetadataExt"] {
                if text.contains(bad) {
                    offenders.push(format!("{rel}: {bad}"));
                }
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:#?}");
}
