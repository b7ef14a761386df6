//! docs/COMMANDS.md against the binary's own definitions: every long flag a command's `-h`
//! lists is named (long or short) in the section of COMMANDS.md about that command, and
//! every flag COMMANDS.md names is a flag of some command, unless it is one of the other
//! programs' flags the text quotes for comparison. The reference is written by hand beside
//! clap's help and the manual pages; this is what keeps the three telling the same story.

use crate::common::tool_cmd;
use std::collections::{BTreeMap, BTreeSet};

/// Flags every command takes, described once in the reference's "Conventions".
const GLOBAL: &[&str] = &["--json", "--help", "--version", "--no-pager"];

/// Flags COMMANDS.md names that are not ours: git's, the agents' CLIs' and GitHub's, quoted
/// to say what a command of ours does like them; and `gc --auto`, the hidden flag a
/// checkpoint starts maintenance with (the reference says so, `-h` does not list it).
const FOREIGN: &[&str] = &[
    "--atomic",
    "--decorate",
    "--disk-usage",
    "--first-parent",
    "--no-renames",
    "--local",
    "--notes",
    "--objects",
    "--oneline",
    "--ref",
    "--reset",
    "--source",
    "--fork-session",
    "--resume-session-at",
    "--fill",
    "--auto",
];

/// `git-agent-rewind <args> -h`, when it succeeds.
fn help(args: &[&str]) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    let out = tool_cmd(dir.path()).args(args).arg("-h").output().unwrap();
    out.status
        .success()
        .then(|| String::from_utf8(out.stdout).unwrap())
}

/// The names a help text lists as commands (the entries before "Options:"), without `help`.
fn commands_listed(help: &str) -> Vec<String> {
    let before_options = help.split("\nOptions:").next().unwrap_or("");
    before_options
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// Every long flag and its short form (if any) that a help text's options list.
fn flags_listed(help: &str) -> BTreeMap<String, Option<String>> {
    let Some((_, options)) = help.split_once("\nOptions:\n") else {
        return BTreeMap::new();
    };
    // The options end at the first blank line, where the examples and notes begin.
    let options = options.split("\n\n").next().unwrap_or_default();
    let mut flags = BTreeMap::new();
    for line in options.lines() {
        // An option's line is indented by at most six spaces; its wrapped text by more.
        if line.len() - line.trim_start().len() > 6 {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let (short, long) = match words.as_slice() {
            [s, l, ..] if s.len() == 3 && s.ends_with(',') && l.starts_with("--") => {
                (Some(s.trim_end_matches(',').to_string()), *l)
            }
            [l, ..] if l.starts_with("--") => (None, *l),
            _ => continue,
        };
        let long = long.split(['=', '[', '<']).next().unwrap_or(long);
        flags.insert(long.to_string(), short);
    }
    flags
}

/// Whether `text` names `flag` as a word of its own (not inside a longer flag or word).
fn mentions(text: &str, flag: &str) -> bool {
    let not_part = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '-'));
    text.match_indices(flag).any(|(at, _)| {
        not_part(text[..at].chars().next_back()) && not_part(text[at + flag.len()..].chars().next())
    })
}

/// Every `--flag` the text names as a word of its own.
fn flags_named(text: &str) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    for (at, _) in text.match_indices("--") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '-') {
            continue;
        }
        let rest = &text[at + 2..];
        let len = rest
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
            .unwrap_or(rest.len());
        if len > 0 && rest.as_bytes()[0].is_ascii_alphanumeric() {
            named.insert(format!("--{}", &rest[..len]));
        }
    }
    named
}

/// The text of the reference's `## ` sections by the commands their headings (and the `### `
/// headings inside them) name in backticks: `step end --attempt` names `step end`. A command
/// named by two sections gets both.
fn sections_by_command(doc: &str) -> BTreeMap<String, String> {
    let mut by_command = BTreeMap::new();
    for section in doc.split("\n## ").skip(1) {
        let headings = std::iter::once(section.lines().next().unwrap_or(""))
            .chain(section.lines().filter(|l| l.starts_with("### ")));
        for heading in headings {
            for (i, span) in heading.split('`').enumerate() {
                if i % 2 == 0 {
                    continue;
                }
                let words: Vec<&str> = span
                    .split_whitespace()
                    .take_while(|w| !w.starts_with('-') && !w.starts_with('<'))
                    .collect();
                if !words.is_empty() {
                    let text: &mut String = by_command.entry(words.join(" ")).or_default();
                    text.push_str(section);
                }
            }
        }
    }
    by_command
}

/// Every command the binary has (nested ones as `hooks install`), with its `-h`: those
/// `-h` lists, and the hidden ones the reference documents.
fn every_command(sections: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut names: Vec<String> = commands_listed(&help(&[]).expect("top-level -h"));
    names.extend(sections.keys().cloned());
    let mut commands = BTreeMap::new();
    for name in names {
        let args: Vec<&str> = name.split(' ').collect();
        let Some(text) = help(&args) else { continue };
        if text.contains("\nCommands:\n") {
            for sub in commands_listed(&text) {
                let nested = format!("{name} {sub}");
                let mut sub_args = args.clone();
                sub_args.push(&sub);
                commands.insert(nested, help(&sub_args).expect("a listed command's -h"));
            }
        } else {
            commands.insert(name, text);
        }
    }
    commands
}

#[test]
fn every_flag_of_every_command_is_in_the_reference_and_the_reference_names_no_other() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/COMMANDS.md")).unwrap();
    let sections = sections_by_command(&doc);
    let commands = every_command(&sections);
    assert!(
        commands.contains_key("checkpoint") && commands.contains_key("hooks install"),
        "the commands were read from -h: {:?}",
        commands.keys()
    );
    let mut undocumented = Vec::new();
    let mut all_flags: BTreeSet<String> = GLOBAL.iter().map(|f| f.to_string()).collect();
    for (name, text) in &commands {
        let section = sections
            .get(name)
            .or_else(|| sections.get(name.split(' ').next().unwrap_or("")));
        let Some(section) = section else {
            undocumented.push(format!("`{name}`: no section of COMMANDS.md names it"));
            continue;
        };
        for (long, short) in flags_listed(text) {
            all_flags.insert(long.clone());
            let named =
                mentions(section, &long) || short.as_deref().is_some_and(|s| mentions(section, s));
            if !named && !GLOBAL.contains(&long.as_str()) {
                undocumented.push(format!("`{name} {long}`"));
            }
        }
    }
    assert!(
        undocumented.is_empty(),
        "in clap, not in docs/COMMANDS.md: {undocumented:#?}"
    );
    let unknown: Vec<String> = flags_named(&doc)
        .into_iter()
        .filter(|f| !all_flags.contains(f) && !FOREIGN.contains(&f.as_str()))
        .collect();
    assert!(
        unknown.is_empty(),
        "in docs/COMMANDS.md, no command has them: {unknown:?}"
    );
}

#[test]
fn the_flag_readers_of_this_test_read_what_they_should() {
    let text = "Usage: x\n\nCommands:\n  install  Install\n  help     Print\n\nOptions:\n  \
        -m, --message <TEXT>  A message\n      --dry-run         Only show\n  -C <PATH>  Dir\n";
    assert_eq!(commands_listed(text), ["install"]);
    let flags = flags_listed(text);
    assert_eq!(flags.get("--message"), Some(&Some("-m".to_string())));
    assert_eq!(flags.get("--dry-run"), Some(&None));
    assert_eq!(flags.len(), 2);
    assert!(mentions("use `--dry-run` first", "--dry-run"));
    assert!(!mentions("use --dry-run-twice", "--dry-run"));
    assert_eq!(
        flags_named("a --b-c and x--y and `--z`"),
        BTreeSet::from(["--b-c".to_string(), "--z".to_string()])
    );
}
