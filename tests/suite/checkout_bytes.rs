//! Rewind and restore write the bytes `git checkout` writes, for every attribute git applies
//! on checkout: `text`, `eol`, `crlf`, `-text`, `ident`, `filter` (smudge)
//! and `working-tree-encoding` (UTF-16 with and without a byte order mark, UTF-16LE, a
//! legacy encoding). Each file the tool writes is compared, byte for byte, with the same
//! file in a linked worktree that git checked out.

use crate::common;
use common::*;
use std::path::Path;

const ATTRIBUTES: &str = "\
*.crlf text eol=crlf
*.lf text eol=lf
*.auto text=auto
*.legacy crlf
*.bin -text
*.id ident
*.up filter=upper
*.u16le working-tree-encoding=UTF-16LE
*.u16 working-tree-encoding=UTF-16
*.sjis working-tree-encoding=SHIFT-JIS
*.both ident working-tree-encoding=UTF-16LE
";

fn utf16le(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

/// The files under test, as the user wrote them in the worktree (git's clean side
/// converts them on `git add`).
fn files() -> Vec<(&'static str, Vec<u8>)> {
    let mut bom16 = vec![0xFF, 0xFE];
    bom16.extend(utf16le("héllo\nwörld\n"));
    vec![
        ("a.crlf", b"one\r\ntwo\r\n".to_vec()),
        ("a.lf", b"one\ntwo\n".to_vec()),
        ("a.auto", b"one\ntwo\n".to_vec()),
        ("a.legacy", b"one\r\ntwo\r\n".to_vec()),
        ("a.bin", b"one\r\ntwo\n\0".to_vec()),
        ("a.id", b"version $Id$\nsame line $Id$ twice\n".to_vec()),
        ("a.up", b"SHOUTED\n".to_vec()),
        ("a.u16le", utf16le("héllo\nwörld\n")),
        ("a.u16", bom16),
        // "日本語\n" in Shift-JIS.
        ("a.sjis", b"\x93\xfa\x96\x7b\x8c\xea\n".to_vec()),
        ("a.both", utf16le("$Id$\n")),
    ]
}

fn assert_same_as_git_checkout(repo: &Repo, reference: &Path, what: &str) {
    for (name, _) in files() {
        let ours = std::fs::read(repo.path().join(name)).unwrap();
        let gits = std::fs::read(reference.join(name)).unwrap();
        assert_eq!(
            ours, gits,
            "{what}: {name} differs from what git checks out\nours: {ours:?}\ngit's: {gits:?}"
        );
    }
    assert_eq!(
        repo.git(&["status", "--porcelain"]),
        "",
        "{what}: git sees the written files as unchanged"
    );
    repo.assert_fsck();
}

#[test]
fn rewind_and_restore_write_what_git_checkout_writes_for_every_attribute() {
    let repo = Repo::new();
    repo.git(&["config", "filter.upper.smudge", "tr a-z A-Z"]);
    repo.git(&["config", "filter.upper.clean", "tr A-Z a-z"]);
    repo.write(".gitattributes", ATTRIBUTES);
    for (name, bytes) in files() {
        std::fs::write(repo.path().join(name), bytes).unwrap();
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "attributes"]);
    // The files as git checks them out, in a worktree of its own.
    let reference = tempfile::tempdir().unwrap();
    let reference = reference.path().join("reference");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "--detach",
        reference.to_str().unwrap(),
        "HEAD",
    ]);
    // The ident and encoding cases are not trivial: git expands and encodes.
    let expanded = std::fs::read(reference.join("a.id")).unwrap();
    assert!(
        expanded.starts_with(b"version $Id: ") && expanded.windows(3).any(|w| w == b" $\n"),
        "git expands ident as `$Id: <sha> $`: {:?}",
        String::from_utf8_lossy(&expanded)
    );

    repo.json(&["start", "--run", "r1"]);
    let remove_all = || {
        for (name, _) in files() {
            std::fs::remove_file(repo.path().join(name)).unwrap();
        }
    };
    remove_all();
    repo.json(&["checkpoint", "gone"]);
    repo.json(&["rewind", "r1", "--to", "r1@0", "--run", "r2"]);
    assert_same_as_git_checkout(&repo, &reference, "after rewind");

    remove_all();
    repo.json(&["restore", "r1@0"]);
    assert_same_as_git_checkout(&repo, &reference, "after restore");

    // And the other way: a checkpoint of these files stores what `git add -A` stores.
    let cp = repo.json(&["checkpoint", "again"])["checkpoint"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(repo.rev(&format!("{cp}^{{tree}}")), repo.add_all_tree());
}
