//! The raw index scan held against git and gix: every index version, the flags a tree
//! cannot say, the digest, the cache-tree root, and damaged files.

use super::*;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> String {
    git_with_input(dir, args, b"")
}

/// git in `dir` with `input` on its stdin; its stdout.
fn git_with_input(dir: &Path, args: &[&str], input: &[u8]) -> String {
    let mut child = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_INDEX_FILE")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The empty blob's id, the blob written into the repository at `dir`.
fn empty_blob(dir: &Path) -> String {
    git(dir, &["hash-object", "-w", "/dev/null"])
        .trim()
        .to_string()
}

/// A repository whose index holds `names`.
fn repo(names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q"]);
    for n in names {
        let p = dir.path().join(n);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, n).unwrap();
    }
    git(dir.path(), &["add", "-A"]);
    dir
}

/// An entry whose path is longer than the 12 bits of an entry's name length hold (made
/// by hand: no such file can be), after the others.
fn add_long_path(dir: &Path) -> BString {
    let long = format!("m/{}/x", vec!["l".repeat(200); 24].join("/"));
    let info = format!("100644,{},{long}", empty_blob(dir));
    git(
        dir,
        &["update-index", "--add", "--info-only", "--cacheinfo", &info],
    );
    long.into()
}

fn read_at(dir: &Path) -> RawIndex {
    read(&dir.join(".git/index"), gix::hash::Kind::Sha1).expect("scanned")
}

/// The entries gix decodes, to hold the scan's lookups against.
fn decoded(dir: &Path) -> Vec<(BString, u32, ObjectId)> {
    let file = gix::index::File::at(
        dir.join(".git/index"),
        gix::hash::Kind::Sha1,
        false,
        Default::default(),
    )
    .unwrap();
    file.entries()
        .iter()
        .map(|e| (e.path(&file).to_owned(), e.mode.bits(), e.id))
        .collect()
}

#[test]
fn every_index_version_is_looked_up_as_gix_decodes_it() {
    let names = ["a", "b/c", "b/d/e", "b-x", "b0", "z/y"];
    let dir = repo(&names);
    for version in ["2", "3", "4"] {
        git(dir.path(), &["update-index", "--index-version", version]);
        let raw = read_at(dir.path());
        assert!(raw.plain, "version {version}");
        let want = decoded(dir.path());
        assert_eq!(raw.len(), want.len());
        let mut paths: Vec<BString> = want.iter().map(|(p, _, _)| p.clone()).collect();
        paths.extend(["b/d".into(), "nope".into(), "b/c/zz".into()]);
        paths.sort();
        let dirs: Vec<BString> = vec!["b".into(), "b/d".into(), "c".into(), "z".into()];
        let (found, below) = raw.lookup(&paths, &dirs);
        for (p, f) in paths.iter().zip(&found) {
            let expected = want.iter().find(|(w, _, _)| w == p);
            assert_eq!(
                f.as_ref().map(|e| (e.path.clone(), e.mode, e.id)),
                expected.cloned(),
                "version {version}, {p}"
            );
        }
        // "b-x" and "b0" sort after "b/…" and are not below "b".
        assert_eq!(below, [2, 1, 0, 1], "version {version}");
    }
    // A path too long for its length field (gix refuses such an index; git writes it).
    let long = add_long_path(dir.path());
    for version in ["2", "4"] {
        git(dir.path(), &["update-index", "--index-version", version]);
        let raw = read_at(dir.path());
        let paths: Vec<BString> = vec!["a".into(), long.clone(), "z/y".into()];
        let (found, _) = raw.lookup(&paths, &[]);
        assert!(found.iter().all(Option::is_some), "version {version}");
        assert_eq!(found[1].as_ref().unwrap().path, long);
    }
}

#[test]
fn flags_a_tree_cannot_say_make_the_index_not_plain() {
    let dir = repo(&["a", "b"]);
    git(dir.path(), &["update-index", "--skip-worktree", "a"]);
    assert!(!read_at(dir.path()).plain, "skip-worktree");
    git(dir.path(), &["update-index", "--no-skip-worktree", "a"]);
    assert!(read_at(dir.path()).plain);
    git(dir.path(), &["update-index", "--assume-unchanged", "b"]);
    assert!(!read_at(dir.path()).plain, "assume-unchanged");
    git(dir.path(), &["update-index", "--no-assume-unchanged", "b"]);
    std::fs::write(dir.path().join("new"), "n").unwrap();
    git(dir.path(), &["add", "-N", "new"]);
    assert!(!read_at(dir.path()).plain, "intent-to-add");
}

#[test]
fn the_digest_covers_the_entries_not_the_extensions() {
    let dir = repo(&["a", "b/c"]);
    let before = read_at(dir.path()).digest;
    // A cache-tree extension written, entries the same.
    git(dir.path(), &["write-tree"]);
    assert_eq!(read_at(dir.path()).digest, before);
    // An entry's content staged anew.
    std::fs::write(dir.path().join("a"), "changed").unwrap();
    git(dir.path(), &["add", "a"]);
    assert_ne!(read_at(dir.path()).digest, before);
}

#[test]
fn the_tree_is_the_cache_trees_root_while_it_is_valid() {
    let dir = repo(&["a", "b/c", "b/d/e"]);
    // `git add` writes no valid cache-tree root.
    assert_eq!(read_at(dir.path()).tree, None);
    git(dir.path(), &["commit", "-qm", "one"]);
    let head_tree = |dir: &Path| {
        let hex = git(dir, &["rev-parse", "HEAD^{tree}"]);
        ObjectId::from_hex(hex.trim().as_bytes()).unwrap()
    };
    for version in ["2", "4"] {
        git(dir.path(), &["update-index", "--index-version", version]);
        git(dir.path(), &["write-tree"]);
        assert_eq!(read_at(dir.path()).tree, Some(head_tree(dir.path())));
    }
    // A change staged invalidates the root until the next commit writes it again.
    std::fs::write(dir.path().join("b/c"), "changed").unwrap();
    git(dir.path(), &["add", "b/c"]);
    assert_eq!(read_at(dir.path()).tree, None);
    git(dir.path(), &["commit", "-qm", "two"]);
    assert_eq!(read_at(dir.path()).tree, Some(head_tree(dir.path())));
    // Not plain: no tree either (the cache-tree leaves intent-to-add entries out).
    std::fs::write(dir.path().join("new"), "n").unwrap();
    git(dir.path(), &["add", "-N", "new"]);
    git(dir.path(), &["write-tree"]);
    assert_eq!(read_at(dir.path()).tree, None);
}

#[test]
fn a_large_index_is_digested_in_blocks_on_another_thread_as_in_one() {
    let dir = repo(&["a"]);
    let empty_blob = empty_blob(dir.path());
    let infos: String = (0..6000)
        .map(|i| {
            format!(
                "100644 {empty_blob}\td{}/file-with-a-long-name-{i:05}.txt\n",
                i % 7
            )
        })
        .collect();
    git_with_input(
        dir.path(),
        &["update-index", "--index-info"],
        infos.as_bytes(),
    );
    let bytes = std::fs::read(dir.path().join(".git/index")).unwrap();
    assert!(bytes.len() > 4 * DIGEST_BLOCK, "{} bytes", bytes.len());
    let raw = read_at(dir.path());
    assert_eq!(raw.len(), 6001);
    let end = walk(&bytes, 2, 6001, 20, |_, _, _| true).unwrap();
    // The blocks made on the other thread give what the digest made here alone gives.
    assert_eq!(raw.digest, entries_digest(&bytes, &[], end));
    // An entry changed in the middle changes it; a cache-tree written does not.
    git(dir.path(), &["write-tree"]);
    assert_eq!(read_at(dir.path()).digest, raw.digest);
    let info = format!("100755,{empty_blob},d4/file-with-a-long-name-03000.txt");
    git(dir.path(), &["update-index", "--cacheinfo", &info]);
    assert_ne!(read_at(dir.path()).digest, raw.digest);
}

#[test]
fn damaged_or_cut_indexes_are_refused_without_a_panic() {
    let dir = repo(&["a", "b/c", "d"]);
    add_long_path(dir.path());
    // With a cache-tree extension, whose root is read too.
    git(dir.path(), &["write-tree"]);
    let bytes = std::fs::read(dir.path().join(".git/index")).unwrap();
    assert!(bytes.windows(4).any(|w| w == b"TREE"));
    assert!(
        scan(bytes.clone(), gix::hash::Kind::Sha1)
            .unwrap()
            .tree
            .is_some()
    );
    for cut in 0..bytes.len() {
        let short = bytes[..cut].to_vec();
        let _ = scan(short, gix::hash::Kind::Sha1);
    }
    for i in 0..bytes.len() {
        for bit in [0x01, 0x10, 0x80] {
            let mut flipped = bytes.clone();
            flipped[i] ^= bit;
            if let Some(raw) = scan(flipped, gix::hash::Kind::Sha1) {
                let _ = raw.lookup(&["a".into(), "b/c".into()], &["b".into()]);
            }
        }
    }
    assert!(scan(b"DIRC".to_vec(), gix::hash::Kind::Sha1).is_none());
}
