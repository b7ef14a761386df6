//! What a checkpoint stores: its structure, not its size in bytes. A
//! checkpoint of a change adds exactly what a commit of that change adds (one commit, one
//! tree per folder on the path of a changed file, the changed blobs) plus its note (one
//! notes commit, its notes tree, one note blob), moves exactly the run's refs, and writes
//! each of those objects once. `scripts/bench --only storage` measures the bytes.

use crate::common;

use common::Repo;
use std::collections::{BTreeMap, BTreeSet};

/// Every object of the repository (loose or packed) with its type.
fn objects(r: &Repo) -> BTreeMap<String, String> {
    r.git(&[
        "cat-file",
        "--batch-all-objects",
        "--batch-check=%(objectname) %(objecttype)",
    ])
    .lines()
    .map(|l| {
        let (id, kind) = l.split_once(' ').unwrap();
        (id.to_string(), kind.to_string())
    })
    .collect()
}

/// Every ref with its target.
fn all_refs(r: &Repo) -> BTreeMap<String, String> {
    r.git(&["for-each-ref", "--format=%(refname) %(objectname)"])
        .lines()
        .map(|l| {
            let (name, id) = l.split_once(' ').unwrap();
            (name.to_string(), id.to_string())
        })
        .collect()
}

/// Object ids held by the packs in `.git/objects/pack` that are not in `before`, counted
/// with repetitions across packs, plus loose objects written since.
fn objects_written(r: &Repo, packs_before: &BTreeSet<String>) -> Vec<String> {
    let mut ids = vec![];
    let dir = r.path().join(".git/objects/pack");
    for e in std::fs::read_dir(&dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if !name.ends_with(".idx") || packs_before.contains(&name) {
            continue;
        }
        let out = common::git_stdin(
            r.path(),
            &["show-index"],
            &std::fs::read(dir.join(&name)).unwrap(),
        );
        ids.extend(
            out.lines()
                .map(|l| l.split(' ').nth(1).unwrap().to_string()),
        );
    }
    ids
}

fn pack_indexes(r: &Repo) -> BTreeSet<String> {
    std::fs::read_dir(r.path().join(".git/objects/pack"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".idx"))
        .collect()
}

#[test]
fn a_checkpoint_adds_what_a_commit_adds_plus_one_note() {
    let r = Repo::new();
    // Files in nested folders: a/x/…, a/y/…, b/…
    let files = [
        "a/x/one.txt",
        "a/x/two.txt",
        "a/y/three.txt",
        "b/four.txt",
        "b/five.txt",
        "c/six.txt",
    ];
    for f in files {
        r.write(f, &format!("{f}\n"));
    }
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "files"]);
    r.ok(&["start", "--run", "r1"]);
    r.ok(&["checkpoint", "one", "--run", "r1"]);

    // Five files change, in the folders a/x, a/y and b (c is untouched).
    for f in &files[..5] {
        r.write(f, &format!("{f} changed\n"));
    }
    let objects_before = objects(&r);
    let refs_before = all_refs(&r);
    let packs_before = pack_indexes(&r);
    let loose_before = loose_objects(&r);
    r.ok(&["checkpoint", "two", "--run", "r1"]);
    let cp = r.rev("refs/agent-runs/r1/HEAD");

    let added: BTreeMap<String, String> = objects(&r)
        .into_iter()
        .filter(|(id, _)| !objects_before.contains_key(id))
        .collect();
    let count = |kind: &str| added.values().filter(|k| *k == kind).count();

    // Commits: the checkpoint and the notes commit.
    let notes = r.rev("refs/notes/agent-runs/r1");
    let commits: BTreeSet<&str> = added
        .iter()
        .filter(|(_, k)| *k == "commit")
        .map(|(id, _)| id.as_str())
        .collect();
    assert_eq!(commits, BTreeSet::from([cp.as_str(), notes.as_str()]));

    // Trees: one per folder on the path of a changed file (root, a, a/x, a/y, b), and the
    // notes tree (no fan-out for a handful of notes).
    let mut want_trees = BTreeSet::new();
    for dir in ["", "a", "a/x", "a/y", "b"] {
        want_trees.insert(r.rev(&format!("{cp}:{dir}")));
    }
    want_trees.insert(r.rev(&format!("{notes}^{{tree}}")));
    let trees: BTreeSet<String> = added
        .iter()
        .filter(|(_, k)| *k == "tree")
        .map(|(id, _)| id.clone())
        .collect();
    assert_eq!(trees, want_trees);

    // Blobs: the five changed files and the note.
    let mut want_blobs: BTreeSet<String> = files[..5]
        .iter()
        .map(|f| r.rev(&format!("{cp}:{f}")))
        .collect();
    want_blobs.insert(r.rev(&format!("{notes}:{cp}")));
    let blobs: BTreeSet<String> = added
        .iter()
        .filter(|(_, k)| *k == "blob")
        .map(|(id, _)| id.clone())
        .collect();
    assert_eq!(blobs, want_blobs);
    assert_eq!(added.len(), 2 + 6 + 6, "{added:?}");
    assert_eq!(count("tag"), 0);

    // Each object was written once (one small pack, or loose; never both, never twice).
    let mut written = objects_written(&r, &packs_before);
    written.extend(
        loose_objects(&r)
            .into_iter()
            .filter(|id| !loose_before.contains(id)),
    );
    written.sort();
    let want: Vec<String> = added.keys().cloned().collect();
    assert_eq!(
        written, want,
        "objects written more than once or not needed"
    );

    // Refs: the run's HEAD, the step's ref and the notes ref; nothing else moved.
    let refs_after = all_refs(&r);
    let moved: BTreeSet<&str> = refs_after
        .iter()
        .filter(|(name, id)| refs_before.get(*name) != Some(*id))
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(
        moved,
        BTreeSet::from([
            "refs/agent-runs/r1/HEAD",
            "refs/agent-runs/r1/two",
            "refs/notes/agent-runs/r1",
        ])
    );
    assert!(refs_before.keys().all(|k| refs_after.contains_key(k)));

    // The checkpoint's parents: the previous checkpoint and the user's HEAD commit; the
    // notes commit's: the previous notes commit.
    let parents = r.git(&["rev-list", "--parents", "-n", "1", &cp]);
    let parents: Vec<&str> = parents.split_whitespace().skip(1).collect();
    assert_eq!(
        parents,
        vec![
            refs_before["refs/agent-runs/r1/HEAD"].as_str(),
            r.rev("HEAD").as_str()
        ]
    );
    let notes_parents = r.git(&["rev-list", "--parents", "-n", "1", &notes]);
    assert_eq!(
        notes_parents.split_whitespace().skip(1).collect::<Vec<_>>(),
        vec![refs_before["refs/notes/agent-runs/r1"].as_str()]
    );
    r.assert_fsck();
}

/// Loose object ids under `.git/objects/xx/`.
fn loose_objects(r: &Repo) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for e in std::fs::read_dir(r.path().join(".git/objects")).unwrap() {
        let e = e.unwrap();
        let dir = e.file_name().to_string_lossy().into_owned();
        if dir.len() != 2 {
            continue;
        }
        for f in std::fs::read_dir(e.path()).unwrap() {
            out.insert(format!("{dir}{}", f.unwrap().file_name().to_string_lossy()));
        }
    }
    out
}

/// `(size on disk, size)` of an object, as `git cat-file` reports them.
fn sizes(r: &Repo, id: &str) -> (u64, u64) {
    let out = common::git_stdin(
        r.path(),
        &["cat-file", "--batch-check=%(objectsize:disk) %(objectsize)"],
        format!("{id}\n").as_bytes(),
    );
    let mut it = out.split_whitespace().map(|n| n.parse::<u64>().unwrap());
    (it.next().unwrap(), it.next().unwrap())
}

/// What a checkpoint writes is compact: its notes commit has an empty message (nothing reads
/// it), and its objects are compressed as git compresses packs (`git gc` copies packed
/// objects' compressed bytes as they are, so a faster, weaker level would stay for good).
#[test]
fn a_checkpoint_is_written_compact() {
    let r = Repo::new();
    for i in 0..6 {
        r.write(&format!("src/f{i}.txt"), &format!("file {i}\n"));
    }
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "files"]);
    r.ok(&["start", "--run", "r1"]);
    for i in 0..5 {
        r.write(&format!("src/f{i}.txt"), &format!("file {i} changed\n"));
    }
    r.ok(&["checkpoint", "work", "--run", "r1", "-m", "five files"]);
    let cp = r.rev("refs/agent-runs/r1/HEAD");
    let notes = r.rev("refs/notes/agent-runs/r1");

    // The notes commit: tree, parent, identity, and no message.
    assert_eq!(r.git(&["log", "-1", "--format=%B", &notes]).trim(), "");
    let raw = r.git(&["cat-file", "commit", &notes]);
    assert!(raw.ends_with("+0000\n\n"), "{raw:?}");

    // Compressed as git packs: no object of the checkpoint shrinks by more than a few
    // percent (zlib-rs and git's zlib differ by a byte here and there) when git recompresses
    // everything itself (whole objects, no deltas, at its default level); at level 1 the
    // commits took a fifth more.
    let ours: Vec<(String, u64)> = [cp.clone(), notes.clone()]
        .into_iter()
        .chain([
            r.rev(&format!("{cp}^{{tree}}")),
            r.rev(&format!("{notes}:{cp}")),
        ])
        .map(|id| {
            let disk = sizes(&r, &id).0;
            (id, disk)
        })
        .collect();
    r.git(&["-c", "pack.window=0", "repack", "-a", "-d", "-F", "-q"]);
    for (id, disk) in &ours {
        let git = sizes(&r, id).0;
        assert!(
            *disk <= git + git / 32 + 2,
            "{id}: {disk} bytes in our pack, {git} in git's"
        );
    }
    r.assert_fsck();
}

/// `pack.compression` (else `core.compression`) is the level, as for git's own packs.
#[test]
fn the_pack_compression_level_is_git_s() {
    let r = Repo::new();
    r.git(&["config", "pack.compression", "0"]);
    r.write("a.txt", &"the same words again and again\n".repeat(40));
    r.ok(&["start", "--run", "r1"]);
    let cp = r.rev("refs/agent-runs/r1/HEAD");
    let blob = r.rev(&format!("{cp}:a.txt"));
    let (disk, size) = sizes(&r, &blob);
    assert!(disk > size, "stored, not compressed: {disk} vs {size}");
    r.git(&["config", "--unset", "pack.compression"]);
    r.git(&["config", "core.compression", "9"]);
    r.write("b.txt", &"other words, again and again\n".repeat(40));
    r.ok(&["checkpoint", "two", "--run", "r1"]);
    let cp = r.rev("refs/agent-runs/r1/HEAD");
    let (disk, size) = sizes(&r, &r.rev(&format!("{cp}:b.txt")));
    assert!(disk < size / 4, "compressed: {disk} vs {size}");
    r.assert_fsck();
}
