//! How well the built-in secret rules do, through the binary: recall on the corpus of fake
//! credentials (`corpus`) in the three places the rules guard (what `push` shares, new
//! files the snapshot leaves out, metadata redaction), and findings on this project's own
//! tree, where there must be none. Run with `--nocapture` to see the figures
//! docs/SECRETS.md reports.

use super::corpus::{self, Category, Sample};
use super::{bare_origin, note_lines, push_json, remote_refs};
use crate::common::Repo;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The share of the corpus each place must catch.
const RECALL_GOAL: f64 = 0.95;

/// The samples (by index) a set of found (file, line) pairs covers.
fn caught(samples: &[Sample], prefix: &str, found: &BTreeSet<(String, u64)>) -> BTreeSet<usize> {
    (0..samples.len())
        .filter(|&i| {
            let s = &samples[i];
            found.contains(&(format!("{prefix}{}", s.file), s.line))
                || found.contains(&(format!("{prefix}{}", s.file), 0))
        })
        .collect()
}

/// Recall overall and by category, printed as a table; the overall figure.
fn report(what: &str, samples: &[Sample], hits: &BTreeSet<usize>) -> f64 {
    let mut by: BTreeMap<Category, (usize, usize)> = BTreeMap::new();
    for (i, s) in samples.iter().enumerate() {
        let e = by.entry(s.format.category).or_default();
        e.1 += 1;
        e.0 += usize::from(hits.contains(&i));
    }
    let recall = hits.len() as f64 / samples.len() as f64;
    println!(
        "{what}: {} of {} samples ({:.1}%)",
        hits.len(),
        samples.len(),
        100.0 * recall
    );
    for (c, (h, n)) in by {
        println!("  {c:?}: {h} of {n}");
    }
    for (i, s) in samples.iter().enumerate() {
        if !hits.contains(&i) {
            println!(
                "  missed: {} {} ({}) in {}",
                s.format.provider, s.format.kind, s.place, s.file
            );
        }
    }
    recall
}

#[test]
fn the_built_in_rules_catch_95_percent_of_60_providers_token_formats_on_push_in_new_files_and_in_metadata()
 {
    let samples = corpus::samples();
    let providers: BTreeSet<&str> = samples.iter().map(|s| s.format.provider).collect();
    assert_eq!(providers.len(), 60, "{providers:?}");
    let r = Repo::new();
    let bare = bare_origin(&r);
    // Files the run changes in place: the snapshot keeps tracked files, so `push` is what
    // stands between them and the remote.
    for s in &samples {
        r.write(&format!("tracked/{}", s.file), "\n");
    }
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "placeholders"]);
    r.ok(&["start", "--run", "r1"]);
    for s in &samples {
        r.write(&format!("tracked/{}", s.file), &s.text);
        r.write(&format!("new/{}", s.file), &s.text);
    }
    let cp = r.json(&["checkpoint", "corpus", "--run", "r1"]);
    let left_out: BTreeSet<(String, u64)> = cp["excluded"]
        .as_array()
        .unwrap_or_else(|| panic!("{cp:#}"))
        .iter()
        .filter(|e| e["reason"].as_str().unwrap().contains("its content holds"))
        .map(|e| (e["path"].as_str().unwrap().to_string(), 0))
        .collect();
    let (code, entry) = push_json(&r, "r1", &[]);
    assert_eq!(code, 1, "{entry:#}");
    assert_eq!(remote_refs(&bare), "", "nothing reached the remote");
    let pushed: BTreeSet<(String, u64)> = entry["secrets"]
        .as_array()
        .unwrap_or_else(|| panic!("{entry:#}"))
        .iter()
        .map(|f| {
            let place = f["place"].as_str().unwrap().to_string();
            (place, f["line"].as_u64().unwrap())
        })
        .collect();

    // Metadata: every sample as the value of an innocent key.
    r.ok(&["start", "--run", "r2"]);
    let metas: Vec<String> = samples
        .iter()
        .enumerate()
        .map(|(i, s)| format!("s{i}={}", s.text))
        .collect();
    let mut args = vec!["checkpoint", "meta", "--run", "r2"];
    for m in &metas {
        args.extend(["--meta", m.as_str()]);
    }
    r.ok(&args);
    let tip = r.rev("refs/agent-runs/r2/HEAD");
    let meta = &note_lines(&r, "r2", &tip)[0]["meta"];
    let redacted: BTreeSet<usize> = (0..samples.len())
        .filter(|i| meta[format!("s{i}")] == "[REDACTED]")
        .collect();

    let push_hits = caught(&samples, "tracked/", &pushed);
    let file_hits = caught(&samples, "new/", &left_out);
    let recalls = [
        report("push", &samples, &push_hits),
        report("new files left out", &samples, &file_hits),
        report("metadata redacted", &samples, &redacted),
    ];
    // The snapshot and `push` read files with the same rules: a new file holding a secret
    // is left out of the checkpoint, so `push` never sees it.
    assert!(
        !pushed.iter().any(|(p, _)| p.starts_with("new/")),
        "{pushed:?}"
    );
    assert_eq!(push_hits, file_hits);
    for recall in recalls {
        assert!(recall >= RECALL_GOAL, "recall {recall:.3} < {RECALL_GOAL}");
    }
}

/// Every file of `dir` worth reading as source (not .git, target, node_modules).
fn tree_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let t = e.file_type().unwrap();
        // `.git` is a file in a linked worktree: copied, it would make a nested repository.
        if matches!(
            e.file_name().to_str(),
            Some(".git" | "target" | "node_modules")
        ) {
            continue;
        }
        if t.is_dir() {
            tree_files(&p, out);
        } else if t.is_file() {
            out.push(p);
        }
    }
}

#[test]
fn this_projects_own_tree_holds_nothing_the_rules_find() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![];
    tree_files(root, &mut files);
    let r = Repo::new();
    let bare = bare_origin(&r);
    r.ok(&["start", "--run", "r1"]);
    let mut copied = 0;
    for f in &files {
        let rel = f.strip_prefix(root).unwrap();
        let to = r.path().join("tree").join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(f, &to).unwrap();
        copied += 1;
    }
    assert!(copied > 300, "only {copied} files under {}", root.display());
    let cp = r.json(&["checkpoint", "tree", "--run", "r1"]);
    let by_content: Vec<&serde_json::Value> = cp["excluded"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|e| e["reason"].as_str().unwrap().contains("content"))
                .collect()
        })
        .unwrap_or_default();
    assert!(by_content.is_empty(), "{by_content:#?}");
    let (code, entry) = push_json(&r, "r1", &[]);
    assert_eq!(
        (code, entry["result"].as_str()),
        (0, Some("pushed")),
        "{entry:#}"
    );
    assert!(remote_refs(&bare).contains("refs/agent-runs/r1/HEAD"));
}
