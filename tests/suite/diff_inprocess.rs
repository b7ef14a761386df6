//! `diff` renders the common case in-process: proven byte for byte
//! against `git diff` on a random corpus (insertions, deletions, moved blocks, repeated and
//! blank lines, indentation changes, form feeds, files without a final newline, new and
//! deleted files, long files), for the patch and `--stat`; and every condition under which
//! git could print something else really runs `git diff` (its output is still git's).

use crate::common;

use common::{Repo, git_cmd, tool_cmd};

/// The tool's `diff` between two steps of run `r1`, traced: (files part, rendered in-process?).
fn ours(r: &Repo, args: &[&str], env: &[(&str, &str)]) -> (String, bool) {
    let mut c = tool_cmd(r.path());
    c.env("AGENT_REWIND_TRACE", "1").arg("diff").args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let inprocess = stderr.contains("diff: files rendered in-process");
    assert!(inprocess || stderr.contains("diff: git diff printed the files"));
    let text = String::from_utf8(out.stdout).unwrap();
    // Metadata lines first, then a blank line, then the files.
    let files = match text.strip_prefix("metadata ") {
        Some(_) => text.split_once("\n\n").map_or("", |(_, f)| f).to_string(),
        None => text,
    };
    (files, inprocess)
}

/// `git diff` between the two steps' commits (the tool's piped output is exactly this).
fn theirs(r: &Repo, from: &str, to: &str, extra: &[&str], env: &[(&str, &str)]) -> String {
    let (a, b) = (
        r.rev(&format!("refs/agent-runs/r1/{from}")),
        r.rev(&format!("refs/agent-runs/r1/{to}")),
    );
    let mut c = git_cmd(r.path());
    c.arg("diff").args(extra).args([&a, &b]);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// Both `diff` and `diff --stat` equal git's; returns whether both were rendered in-process.
fn same_as_git(r: &Repo, from: &str, to: &str, env: &[(&str, &str)]) -> bool {
    let steps = [format!("r1/{from}"), format!("r1/{to}")];
    let (patch, fast_patch) = ours(r, &[&steps[0], &steps[1]], env);
    let git = theirs(r, from, to, &[], env);
    assert_eq!(patch, git, "{from}..{to}");
    // `--json` (and the page) use the same engine: wherever the terminal's patch is
    // rendered in-process, each file's patch is git's, from its `---` line on.
    let json = r.json(&["diff", "--json", &steps[0], &steps[1]]);
    let files = if fast_patch {
        json["files"].as_array().expect("files").clone()
    } else {
        vec![]
    };
    for f in &files {
        let Some(p) = f["patch"].as_str().filter(|p| !p.is_empty()) else {
            continue;
        };
        assert!(
            p.starts_with("--- ") && git.contains(p),
            "{from}..{to} {}: --json's patch is not git's:\n{p}",
            f["path"]
        );
    }
    let (stat, fast_stat) = ours(r, &["--stat", &steps[0], &steps[1]], env);
    assert_eq!(
        stat,
        theirs(r, from, to, &["--stat"], env),
        "--stat {from}..{to}"
    );
    assert_eq!(fast_patch, fast_stat, "{from}..{to}");
    fast_patch
}

/// xorshift64*: a reproducible corpus without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn line(&mut self) -> String {
        const WORDS: &[&str] = &[
            "",
            "",
            "}",
            "{",
            "\treturn x;",
            "    if (a) {",
            "int main(void)",
            "foo();",
            "bar",
            "# header",
            "static int f(int y)   ",
            "  x = 1;",
            "_private:",
            "$var",
            "\x0cfeed",
            "end",
            "        deep",
            "a_very_long_function_name_that_goes_on_and_on_beyond_the_eighty_bytes_git_keeps(x)",
        ];
        let w = WORDS[self.below(WORDS.len())];
        if self.below(10) < 7 {
            w.to_string()
        } else {
            format!("{w}{}", self.below(20))
        }
    }
    fn lines(&mut self, n: usize) -> Vec<String> {
        (0..n).map(|_| format!("{}\n", self.line())).collect()
    }
}

fn edit(rng: &mut Rng, mut ls: Vec<String>) -> Vec<String> {
    let ops = if ls.len() > 400 {
        120
    } else {
        1 + rng.below(6)
    };
    for _ in 0..ops {
        let n = ls.len();
        match rng.below(7) {
            0 => {
                let k = rng.below(n + 1);
                let new = if rng.below(5) == 0 {
                    vec!["aaa\n".to_string(); 1 + rng.below(20)]
                } else {
                    {
                        let n = 1 + rng.below(8);
                        rng.lines(n)
                    }
                };
                ls.splice(k..k, new);
            }
            1 if n > 0 => {
                let k = rng.below(n);
                let end = (k + 1 + rng.below(6)).min(n);
                ls.drain(k..end);
            }
            2 if n > 4 => {
                let k = rng.below(n - 3);
                let block: Vec<String> = ls.drain(k..k + 1 + rng.below(3)).collect();
                let j = rng.below(ls.len() + 1);
                ls.splice(j..j, block);
            }
            3 if n > 0 => {
                let k = rng.below(n);
                ls[k] = format!("    {}", ls[k]);
            }
            4 if n > 0 => {
                let k = rng.below(n);
                let copies = vec![ls[k].clone(); 1 + rng.below(3)];
                ls.splice(k..k, copies);
            }
            5 => {
                let k = rng.below(n + 1);
                ls.splice(k..k, vec!["\n".to_string(); 1 + rng.below(3)]);
            }
            _ if n > 0 => {
                let k = rng.below(n);
                ls[k] = format!("{}\n", rng.line());
            }
            _ => {}
        }
    }
    if let Some(last) = ls.last_mut() {
        match rng.below(7) {
            0 => *last = last.trim_end_matches('\n').to_string(),
            1 if !last.ends_with('\n') => last.push('\n'),
            _ => {}
        }
    }
    ls
}

#[test]
fn random_corpus_matches_git_byte_for_byte_in_process() {
    let r = Repo::new();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut files: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for i in 0..36 {
        let path = match i % 3 {
            0 => format!("top{i}.txt"),
            _ => format!("d{}/sub{}/f{i}.c", i % 4, i % 2),
        };
        let n = if i % 9 == 0 { 1500 } else { rng.below(60) };
        files.insert(path, rng.lines(n));
    }
    // Longer than `--stat`'s name column: cut at a folder boundary.
    let long = format!(
        "{}/deeper/than/eighty/columns/file.c",
        "long_folder_name".repeat(5)
    );
    files.insert(long, rng.lines(40));
    let write = |files: &std::collections::BTreeMap<String, Vec<String>>| {
        for (p, ls) in files {
            r.write(p, &ls.concat());
        }
    };
    write(&files);
    r.write("run.sh", "#!/bin/sh\necho one\n");
    agent_rewind_core::platform::mode::set_path_permission_bits(r.path().join("run.sh"), 0o755)
        .unwrap();
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "base"]);
    r.ok(&["checkpoint", "s0", "--run", "r1"]);
    let rounds = 24;
    for round in 1..=rounds {
        let paths: Vec<String> = files.keys().cloned().collect();
        for _ in 0..1 + rng.below(10) {
            let p = &paths[rng.below(paths.len())];
            let new = edit(&mut rng, files[p].clone());
            files.insert(p.clone(), new);
        }
        if round % 5 == 0 {
            r.write("run.sh", &format!("#!/bin/sh\necho {round}\n"));
        }
        match round % 4 {
            // Additions only (one of them empty), or deletions only: never both, which git
            // could pair as a rename.
            1 => {
                let count = rng.below(15);
                let n = rng.lines(count);
                files.insert(format!("new/r{round}.c"), n);
                files.insert(format!("new/empty{round}.txt"), vec![]);
            }
            3 => {
                let p = paths[rng.below(paths.len())].clone();
                std::fs::remove_file(r.path().join(&p)).unwrap();
                files.remove(&p);
            }
            _ => {}
        }
        write(&files);
        r.ok(&["checkpoint", &format!("s{round}"), "--run", "r1"]);
        let fast = same_as_git(&r, &format!("s{}", round - 1), &format!("s{round}"), &[]);
        assert!(fast, "round {round} went to git");
    }
    // Across many steps at once: additions and deletions together, so git's own text.
    assert!(!same_as_git(&r, "s1", &format!("s{}", rounds - 1), &[]));
}

/// `core.abbrev` is honoured, and an `index` line's id grows past it while another object
/// shares its prefix, as git's does.
#[test]
fn abbreviations_follow_core_abbrev_and_grow_until_unique() {
    let r = Repo::new();
    r.git(&["config", "core.abbrev", "4"]);
    // Two contents whose blob ids share their first 4 hex digits.
    let id = |s: &str| {
        gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, s.as_bytes())
            .unwrap()
            .to_string()
    };
    let mut seen = std::collections::HashMap::new();
    let (a, b) = (0..)
        .find_map(|i| {
            let c = format!("content {i}\n");
            let prefix = id(&c)[..4].to_string();
            seen.insert(prefix, c.clone()).map(|other| (other, c))
        })
        .unwrap();
    r.write("other.txt", &a);
    r.write("f.txt", "first\n");
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "base"]);
    r.ok(&["checkpoint", "s0", "--run", "r1"]);
    r.write("f.txt", &b);
    r.ok(&["checkpoint", "s1", "--run", "r1"]);
    assert!(same_as_git(&r, "s0", "s1", &[]));
    let (patch, _) = ours(&r, &["r1/s0", "r1/s1"], &[]);
    let index = patch.lines().find(|l| l.starts_with("index ")).unwrap();
    let new = index.split("..").nth(1).unwrap().split(' ').next().unwrap();
    assert!(new.len() > 4, "{index}");
    r.git(&["config", "core.abbrev", "12"]);
    assert!(same_as_git(&r, "s0", "s1", &[]));
}

/// One change to the worktree.
type Change = Box<dyn Fn(&Repo)>;

/// Each condition under which git might print other than the in-process rendering sends
/// the diff to git: the output is git's own, and the trace says git printed it.
#[test]
fn every_uncertain_case_falls_back_to_git_diff() {
    let r = Repo::new();
    let body: String = (0..30).map(|i| format!("line {i}\n")).collect();
    r.write("a.txt", &body);
    r.write("sub/b.txt", &body);
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "base"]);
    r.ok(&["checkpoint", "s0", "--run", "r1"]);
    r.write("a.txt", &body.replace("line 15\n", "changed\n"));
    r.ok(&["checkpoint", "s1", "--run", "r1"]);
    assert!(
        same_as_git(&r, "s0", "s1", &[]),
        "the plain case is in-process"
    );

    // Config and environment that change git's output.
    for (key, value) in [("diff.context", "1"), ("core.bigFileThreshold", "1")] {
        r.git(&["config", key, value]);
        assert!(!same_as_git(&r, "s0", "s1", &[]), "{key}");
        r.git(&["config", "--unset", key]);
    }
    let attrs = r.path().join("attrs");
    std::fs::write(&attrs, "*.txt -diff\n").unwrap();
    r.git(&["config", "core.attributesFile", attrs.to_str().unwrap()]);
    assert!(!same_as_git(&r, "s0", "s1", &[]), "core.attributesFile");
    r.git(&["config", "--unset", "core.attributesFile"]);
    assert!(!same_as_git(
        &r,
        "s0",
        "s1",
        &[("GIT_DIFF_OPTS", "--unified=1")]
    ));
    let xdg = r.path().join(".git/xdg");
    std::fs::create_dir_all(xdg.join("git")).unwrap();
    std::fs::write(xdg.join("git/attributes"), "*.txt -diff\n").unwrap();
    let xdg_env = [("XDG_CONFIG_HOME", xdg.to_str().unwrap())];
    assert!(!same_as_git(&r, "s0", "s1", &xdg_env), "XDG attributes");
    let (colored, fast) = ours(&r, &["--color=always", "r1/s0", "r1/s1"], &[]);
    assert!(!fast && colored.contains("\x1b["));

    // Attributes files: untracked in the worktree (git reads those, not the trees'),
    // in a folder on the path, and the repository's info/attributes (read by git only).
    let mut prev = "s1".to_string();
    for (i, file) in [
        ".gitattributes",
        "sub/.gitattributes",
        ".git/info/attributes",
    ]
    .into_iter()
    .enumerate()
    {
        let changed = if file.starts_with("sub") {
            "sub/b.txt"
        } else {
            "a.txt"
        };
        r.write(changed, &body.replace("line 3\n", &format!("{file}\n")));
        let step = format!("attr{i}");
        r.ok(&["checkpoint", &step, "--run", "r1"]);
        assert!(same_as_git(&r, &prev, &step, &[]), "{file} absent");
        // A builtin driver's function names are git's to find.
        r.write(file, "*.txt diff=cpp\n");
        assert!(!same_as_git(&r, &prev, &step, &[]), "{file}");
        std::fs::remove_file(r.path().join(file)).unwrap();
        prev = step;
    }

    // Content and tree changes: a rename candidate, a late NUL, a mode change, a
    // symlink, a path git quotes or pads, a big file.
    let cases: Vec<(&str, Change)> = vec![
        (
            "rename",
            Box::new(|r: &Repo| {
                r.git(&["mv", "a.txt", "moved.txt"]);
            }),
        ),
        // A NUL after git's first 8000 bytes: text to git, with a NUL the hunks cannot hold.
        (
            "late-nul",
            Box::new(|r: &Repo| r.write("bin.dat", &format!("{}\0b\n", "a".repeat(9000)))),
        ),
        (
            "mode",
            Box::new(|r: &Repo| {
                let p = r.path().join("sub/b.txt");
                agent_rewind_core::platform::mode::set_path_permission_bits(p, 0o755).unwrap();
            }),
        ),
        (
            "symlink",
            Box::new(|r: &Repo| {
                agent_rewind_core::platform::links::create_symlink("a.txt", r.path().join("ln"))
                    .unwrap()
            }),
        ),
        (
            "space",
            Box::new(|r: &Repo| r.write("with space.txt", "x\n")),
        ),
        ("utf8", Box::new(|r: &Repo| r.write("caf\u{e9}.txt", "x\n"))),
        (
            "big",
            Box::new(|r: &Repo| r.write("big.txt", &"0123456789abcdef\n".repeat(70_000))),
        ),
    ];
    for (name, change) in cases {
        change(&r);
        r.ok(&["checkpoint", name, "--run", "r1"]);
        assert!(!same_as_git(&r, &prev, name, &[]), "{name}");
        prev = name.to_string();
    }

    // A path filter goes to git as well.
    r.write("sub/b.txt", "filtered\n");
    r.ok(&["checkpoint", "last", "--run", "r1"]);
    let (filtered, fast) = ours(&r, &[&format!("r1/{prev}"), "r1/last", "--", "sub"], &[]);
    assert!(!fast);
    let (a, b) = (
        r.rev(&format!("refs/agent-runs/r1/{prev}")),
        r.rev("refs/agent-runs/r1/last"),
    );
    assert_eq!(filtered, r.git(&["diff", &a, &b, "--", "sub"]));
}

/// Piped without colour, `diff` prints exactly `git diff`'s bytes (whatever renders them):
/// CRLF lines, bytes that are not UTF-8, a last line that is an empty context line. Such a
/// patch applies with `git apply`; two equal checkpoints print nothing, as `git diff` does.
#[test]
fn piped_output_is_git_diffs_bytes_and_applies() {
    let r = Repo::new();
    r.ok(&["start", "--run", "r1"]);
    let write = |rel: &str, bytes: &[u8]| std::fs::write(r.path().join(rel), bytes).unwrap();
    write("crlf.txt", b"one\r\ntwo\r\nthree\r\n");
    write("latin1.txt", b"caf\xe9\nna\xefve\n\nend\n\n");
    r.ok(&["checkpoint", "a"]);
    write("crlf.txt", b"one\r\nTWO\r\nthree\r\n");
    write("latin1.txt", b"caf\xe9\nna\xefve!\n\nend\n\n");
    r.ok(&["checkpoint", "b"]);
    let (a, b) = (r.rev("refs/agent-runs/r1/a"), r.rev("refs/agent-runs/r1/b"));
    let ours = tool_cmd(r.path())
        .args(["diff", "r1/a", "r1/b"])
        .output()
        .unwrap();
    assert!(ours.status.success());
    let git = git_cmd(r.path())
        .args(["diff", &a, &b])
        .output()
        .unwrap()
        .stdout;
    assert!(git.windows(2).any(|w| w == b"\r\n") && git.contains(&0xe9));
    // The metadata lines ("step: a -> b") come first; then git's bytes.
    let start = ours
        .stdout
        .windows(10)
        .position(|w| w == b"diff --git")
        .expect("a patch");
    assert!(ours.stdout[..start].starts_with(b"metadata "));
    assert_eq!(&ours.stdout[start..], git.as_slice());
    // The whole output applies to A's files (git apply skips the lines before the patch).
    r.git(&["read-tree", "--reset", "-u", &a]);
    let patch = r.path().join("../ours.patch");
    std::fs::write(&patch, &ours.stdout).unwrap();
    r.git(&["apply", "--index", patch.to_str().unwrap()]);
    assert_eq!(
        r.git(&["write-tree"]).trim(),
        r.rev(&format!("{b}^{{tree}}"))
    );
    std::fs::remove_file(&patch).unwrap();
    // Nothing differs: nothing printed.
    let same = tool_cmd(r.path())
        .args(["diff", "r1/b", "r1/b"])
        .output()
        .unwrap();
    assert!(same.status.success());
    assert_eq!(same.stdout, b"");
}

/// The worktree's `.gitattributes`: with text/eol rules, `binary`, `-diff`,
/// a `diff=` driver without configuration and `export-ignore`, the patch is rendered in
/// process and equals git's byte for byte, binary files as `Binary files … differ`; `--stat`
/// of a binary file and a builtin driver go to git, whose output it is.
#[test]
fn worktree_attributes_are_followed_byte_for_byte() {
    let r = Repo::new();
    let text: String = (0..40)
        .map(|i| format!("int f{i}(void)\n{{\n  x;\n}}\n"))
        .collect();
    r.write(
        ".gitattributes",
        "* text=auto eol=lf\n*.png binary\n*.lock -diff\n*.cfg diff=settings\n\
         docs/** export-ignore\n*.sh eol=crlf\n*.md diff=markdown\n",
    );
    r.write("sub/.gitattributes", "*.txt -text\n");
    for f in [
        "a.c",
        "sub/b.txt",
        "s.cfg",
        "docs/d.c",
        "run.sh",
        "deps.lock",
        "m.md",
    ] {
        r.write(f, &text);
    }
    r.write("img.png", "\u{89}PNG\r\n\0\0data\n");
    r.write("blob.bin", &format!("{}\0tail\n", "x".repeat(100)));
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "base"]);
    r.ok(&["checkpoint", "s0", "--run", "r1"]);
    let edit = |f: &str, n: usize| {
        let t = text.replace(&format!("int f{n}(void)"), &format!("int g{n}(long)"));
        r.write(f, &t.replace("  x;\n}\nint f30", "  y;\n}\nint f30"));
    };
    for (i, f) in ["a.c", "sub/b.txt", "s.cfg", "docs/d.c", "run.sh"]
        .iter()
        .enumerate()
    {
        edit(f, 10 + i);
    }
    r.ok(&["checkpoint", "text", "--run", "r1"]);
    assert!(
        same_as_git(&r, "s0", "text", &[]),
        "text files under attributes"
    );

    // Binary: by attribute (-diff on text, binary), by content (a NUL early), added.
    edit("deps.lock", 3);
    r.write("img.png", "\u{89}PNG\r\n\0\0other\n");
    r.write("blob.bin", &format!("{}\0tail2\n", "x".repeat(100)));
    r.write("new.png", "\0\0");
    r.ok(&["checkpoint", "binary", "--run", "r1"]);
    let steps = ["r1/text", "r1/binary"];
    let (patch, fast) = ours(&r, &steps, &[]);
    assert!(fast, "binary files are rendered in-process");
    assert_eq!(patch, theirs(&r, "text", "binary", &[], &[]));
    assert!(
        patch.contains("Binary files a/deps.lock and b/deps.lock differ"),
        "{patch}"
    );
    assert!(
        patch.contains("Binary files /dev/null and b/new.png differ"),
        "{patch}"
    );
    let (stat, fast) = ours(&r, &["--stat", steps[0], steps[1]], &[]);
    assert!(!fast, "--stat of a binary file is git's");
    assert_eq!(stat, theirs(&r, "text", "binary", &["--stat"], &[]));

    // A builtin driver (markdown) goes to git.
    edit("m.md", 5);
    r.ok(&["checkpoint", "md", "--run", "r1"]);
    assert!(
        !same_as_git(&r, "binary", "md", &[]),
        "diff=markdown is git's"
    );

    // An attributes file deleted in the worktree only no longer applies (git reads neither
    // the trees' nor the index's): `deps.lock` is a text patch again, in process.
    edit("deps.lock", 21);
    r.ok(&["checkpoint", "c3", "--run", "r1"]);
    std::fs::remove_file(r.path().join(".gitattributes")).unwrap();
    assert!(
        same_as_git(&r, "md", "c3", &[]),
        "a .gitattributes the worktree lacks"
    );
}

/// `git diff` under the user's prefix and relative-path settings, run in `dir`; `config` as
/// `git -c` options.
fn git_diff_in(dir: &std::path::Path, config: &[&str], args: &[&str]) -> Vec<u8> {
    let mut c = git_cmd(dir);
    for kv in config {
        c.args(["-c", kv]);
    }
    let out = c.arg("diff").args(args).output().unwrap();
    assert!(out.status.success());
    out.stdout
}

/// The tool's `diff` in `dir`, the files part only (after the metadata lines).
fn ours_in(dir: &std::path::Path, config: &[&str], args: &[&str]) -> Vec<u8> {
    let mut c = git_cmd(dir);
    for kv in config {
        c.args(["-c", kv]);
    }
    c.env("PATH", common::path_with_tool());
    let out = c
        .arg("agent-rewind")
        .arg("diff")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Metadata lines first, then a blank line, then the files.
    if !out.stdout.starts_with(b"metadata ") {
        return out.stdout;
    }
    match out.stdout.windows(2).position(|w| w == b"\n\n") {
        Some(i) => out.stdout[i + 2..].to_vec(),
        None => vec![],
    }
}

/// `diff.noprefix`, `diff.srcPrefix`/`diff.dstPrefix` and `diff.relative` (in a subfolder)
/// change `diff`'s bytes exactly as they change `git diff`'s, whether set with `git -c` or in
/// the repository's config, for the patch and `--stat`.
#[test]
fn prefix_and_relative_settings_are_git_diffs_bytes() {
    let r = Repo::new();
    r.ok(&["start", "--run", "r1"]);
    r.write("top.txt", "one\n");
    r.write("sub/in.txt", "a\nb\n");
    r.write("sub/deep/x.txt", "x\n");
    r.ok(&["checkpoint", "a"]);
    r.write("top.txt", "one\ntwo\n");
    r.write("sub/in.txt", "a\nB\n");
    r.write("sub/deep/x.txt", "x\ny\n");
    r.ok(&["checkpoint", "b"]);
    let (a, b) = (r.rev("refs/agent-runs/r1/a"), r.rev("refs/agent-runs/r1/b"));
    let sub = r.path().join("sub");
    let settings: [&[&str]; 5] = [
        &["diff.noprefix=true"],
        &["diff.srcPrefix=left/", "diff.dstPrefix=right/"],
        &["diff.relative=true"],
        &["diff.relative=true", "diff.noprefix=true"],
        &["diff.mnemonicPrefix=true"],
    ];
    for config in settings {
        for dir in [r.path(), sub.as_path()] {
            for stat in [false, true] {
                let extra: &[&str] = if stat { &["--stat"] } else { &[] };
                let git = git_diff_in(dir, config, &[extra, &[&a, &b]].concat());
                let ours = ours_in(dir, config, &[extra, &["r1/a", "r1/b"]].concat());
                assert!(!git.is_empty() || dir == sub.as_path());
                assert_eq!(
                    String::from_utf8_lossy(&ours),
                    String::from_utf8_lossy(&git),
                    "git -c {config:?} in {dir:?}, --stat: {stat}"
                );
                // The same from the repository's config.
                for kv in config {
                    let (k, v) = kv.split_once('=').unwrap();
                    r.git(&["config", k, v]);
                }
                let ours = ours_in(dir, &[], &[extra, &["r1/a", "r1/b"]].concat());
                assert_eq!(
                    String::from_utf8_lossy(&ours),
                    String::from_utf8_lossy(&git),
                    "{config:?} in the repository's config, in {dir:?}, --stat: {stat}"
                );
                for kv in config {
                    r.git(&["config", "--unset", kv.split_once('=').unwrap().0]);
                }
            }
        }
    }
    // The relative view narrows to the folder, as git's does, and so does a path given
    // relative to it.
    let git = git_diff_in(&sub, &["diff.relative=true"], &[&a, &b, "--", "deep"]);
    let ours = ours_in(
        &sub,
        &["diff.relative=true"],
        &["r1/a", "r1/b", "--", "deep"],
    );
    assert!(String::from_utf8_lossy(&git).contains("a/deep/x.txt"));
    assert_eq!(ours, git);
}
