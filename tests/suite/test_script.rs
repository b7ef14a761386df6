//! `scripts/test`, the README's test command. Where it may not install what the tests need
//! (`--no-install` here; without root or offline it is the same), it stops before building,
//! names what is missing and prints the one command that installs it: for the agent CLIs,
//! the command the hint of the agents_real tests gives.

use crate::agents_real::INSTALL_AGENT_CLIS;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The commands the script itself runs before it looks for what the tests need.
const SCRIPT_TOOLS: [&str; 6] = ["bash", "env", "dirname", "id", "cargo", "git"];

/// The commands whose Debian package the script installs, with that package.
const TEST_TOOLS: [(&str, &str); 8] = [
    ("chromium", "chromium"),
    ("man", "man-db"),
    ("watchman", "watchman"),
    ("node", "nodejs"),
    ("npm", "npm"),
    ("gpg", "gnupg"),
    ("ssh-keygen", "openssh-client"),
    ("lighttpd", "lighttpd"),
];

fn on_path(tool: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// A folder of links to `tools` (those installed here), to be the whole PATH.
fn path_of(dir: &Path, tools: &[&str]) -> PathBuf {
    for tool in tools {
        if let Some(real) = on_path(tool) {
            agent_rewind_core::platform::links::create_symlink(real, dir.join(tool)).unwrap();
        }
    }
    dir.to_path_buf()
}

/// The script run by bash, not executed itself: a copy just written may still be open for
/// writing in a process another test thread forked meanwhile, and exec would then fail.
fn run_script(script: &Path, path: &Path) -> Output {
    Command::new(on_path("bash").expect("bash"))
        .arg(script)
        .arg("--no-install")
        .env("PATH", path)
        .output()
        .expect("run scripts/test")
}

/// The stop message's contract: exit 1, nothing on stdout, the missing things named, the
/// install command, and that nothing was built.
fn assert_stopped(out: &Output, named: &str, command: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(stderr.starts_with("scripts/test: "), "{stderr}");
    assert!(stderr.contains(named), "{stderr}");
    let install = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("install with:"))
        .unwrap_or_else(|| panic!("no install command: {stderr}"))
        .trim();
    assert!(
        install == command || install == format!("sudo {command}"),
        "{install:?} is not {command:?}: {stderr}"
    );
    assert!(stderr.ends_with("(nothing was built or run)\n"), "{stderr}");
}

#[test]
fn missing_packages_are_named_with_the_command_that_installs_them() {
    let bin = tempfile::tempdir().unwrap();
    let hidden = ["chromium", "watchman"];
    let tools: Vec<&str> = SCRIPT_TOOLS
        .iter()
        .copied()
        .chain(TEST_TOOLS.iter().map(|(t, _)| *t))
        .filter(|t| !hidden.contains(t))
        .collect();
    let path = path_of(bin.path(), &tools);
    let missing: Vec<&str> = TEST_TOOLS
        .iter()
        .filter(|(t, _)| hidden.contains(t) || on_path(t).is_none())
        .map(|(_, package)| *package)
        .collect();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/test");
    let out = run_script(&script, &path);
    assert_stopped(
        &out,
        &format!("missing Debian packages: {}", missing.join(" ")),
        &format!("apt-get install -y {}", missing.join(" ")),
    );
}

#[test]
fn missing_agent_clis_are_named_with_the_command_the_tests_hint_gives() {
    // The script looks for the CLIs beside itself: a copy in a checkout without them.
    let checkout = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(checkout.path().join("scripts")).unwrap();
    let script = checkout.path().join("scripts/test");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/test"),
        &script,
    )
    .unwrap();
    let missing: Vec<&str> = TEST_TOOLS
        .iter()
        .filter(|(t, _)| on_path(t).is_none())
        .map(|(t, _)| *t)
        .collect();
    assert!(
        missing.is_empty(),
        "the tests need {missing:?}: `scripts/test` installs them"
    );
    let out = run_script(
        &script,
        Path::new(&std::env::var_os("PATH").unwrap_or_default()),
    );
    assert_stopped(&out, "agent CLIs", INSTALL_AGENT_CLIS);
    assert!(!checkout.path().join("target").exists(), "nothing is built");
}

/// `scripts/agents-outdated` names each pinned agent CLI with its pin and the registry's
/// newest version, and `--check` fails when one is behind. The registry is not reachable from
/// the tests (127.0.0.1 only): an `npm` first on PATH answers `npm view <pkg> version` as the
/// registry would, one version for every package, so the pins differ from it.
#[test]
fn agents_outdated_names_each_pin_and_check_fails_when_one_is_behind() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let npm = bin.join("npm");
    std::fs::write(&npm, "#!/bin/sh\n[ \"$1\" = view ] && echo 99.0.0\n").unwrap();
    let mut perm = std::fs::metadata(&npm).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&npm, perm).unwrap();
    let path = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/agents-outdated");
    let run = |args: &[&str]| {
        Command::new(on_path("bash").expect("bash"))
            .arg(&script)
            .args(args)
            .env("PATH", &path)
            .output()
            .unwrap()
    };
    let pinned: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents/package.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(0));
    let table = String::from_utf8_lossy(&out.stdout);
    for (name, version) in pinned["dependencies"].as_object().unwrap() {
        let line = table
            .lines()
            .find(|l| l.starts_with(name.as_str()))
            .unwrap_or_else(|| panic!("{name} missing: {table}"));
        assert!(line.contains(version.as_str().unwrap()), "{line}");
        assert!(
            line.contains("99.0.0") && line.ends_with("behind"),
            "{line}"
        );
    }
    let out = run(&["--check"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("behind the registry"));
}
