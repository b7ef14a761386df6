//! The prebuilt ways in: the npm packages `scripts/npm-pack` makes from the binary under
//! test, installed globally into a temporary prefix offline, then run as `git agent-rewind`
//! (the launcher, the manual pages npm links, the demo). It must never reach a registry:
//! npm runs with `--offline` and a cache of its own.

use crate::common::bin;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// node's `platform-arch` of this machine, as the platform packages are named.
fn npm_platform() -> &'static str {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => "linux-x64",
        ("linux", "aarch64") => "linux-arm64",
        ("macos", "x86_64") => "darwin-x64",
        ("macos", "aarch64") => "darwin-arm64",
        (os, arch) => panic!("no npm platform package is made for {os} {arch}"),
    }
}

/// A command with HOME, npm's cache and temporary files inside `home`, git without user or
/// system config, and `bin_dir` first on PATH.
fn isolated(program: &str, home: &Path, bin_dir: &Path) -> Command {
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let mut c = Command::new(program);
    c.env("HOME", home)
        .env("PATH", path)
        .env("TMPDIR", home)
        .env("npm_config_cache", home.join("npm-cache"))
        .env("npm_config_update_notifier", "false")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("MANPATH")
        .env_remove("AGENT_REWIND")
        .env_remove("AGENT_RUN")
        .env_remove("AGENT_STEP");
    c
}

fn succeeded(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed ({:?}):\n{}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The tarballs `scripts/npm-pack` made of the binary under test, once for every test here
/// (it compresses the whole binary); the folder lives as long as the test binary.
fn tarballs() -> &'static [PathBuf] {
    static TARBALLS: OnceLock<(tempfile::TempDir, Vec<PathBuf>)> = OnceLock::new();
    let (_, tarballs) = TARBALLS.get_or_init(|| {
        let home = tempfile::tempdir().unwrap();
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let printed = succeeded(
            isolated("bash", home.path(), home.path())
                .arg(root.join("scripts/npm-pack"))
                .arg(home.path().join("tarballs"))
                .arg(format!("{}={}", npm_platform(), bin().display()))
                .output()
                .unwrap(),
            "scripts/npm-pack",
        );
        let tarballs: Vec<PathBuf> = printed.lines().map(PathBuf::from).collect();
        (home, tarballs)
    });
    tarballs
}

/// `npm install -g --offline` of the tarballs into `prefix`.
fn install(home: &Path, prefix: &Path) {
    let tarballs = tarballs();
    assert_eq!(
        tarballs.len(),
        2,
        "one platform package and the launcher's: {tarballs:?}"
    );
    assert!(tarballs.iter().all(|t| t.is_file()), "{tarballs:?}");
    succeeded(
        isolated("npm", home, prefix)
            .args([
                "install",
                "--global",
                "--offline",
                "--no-audit",
                "--no-fund",
            ])
            .arg("--prefix")
            .arg(prefix)
            .args(tarballs)
            .output()
            .unwrap(),
        "npm install -g of the tarballs",
    );
}

#[test]
fn npm_install_offline_runs_git_agent_rewind_and_the_demo() {
    let home = tempfile::tempdir().unwrap();
    let prefix = home.path().join("prefix");
    install(home.path(), &prefix);
    let prefix_bin = prefix.join("bin");
    let modules = prefix.join("lib/node_modules");

    // No package runs anything at install time, and the launcher's lists every platform.
    for name in [
        "git-agent-rewind",
        &format!("git-agent-rewind-{}", npm_platform()),
    ] {
        let text = std::fs::read_to_string(modules.join(name).join("package.json")).unwrap();
        let manifest: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(manifest.get("scripts").is_none(), "{name}: {text}");
    }
    let launcher: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(modules.join("git-agent-rewind/package.json")).unwrap(),
    )
    .unwrap();
    let optional = launcher["optionalDependencies"].as_object().unwrap();
    assert_eq!(optional.len(), 5, "{optional:?}");

    // `git agent-rewind` reaches the binary through the launcher npm put on PATH.
    let direct = succeeded(
        Command::new(bin()).arg("--version").output().unwrap(),
        "--version",
    );
    let via_npm = succeeded(
        isolated("git", home.path(), &prefix_bin)
            .args(["agent-rewind", "--version"])
            .output()
            .unwrap(),
        "git agent-rewind --version",
    );
    assert_eq!(via_npm, direct);
    assert!(
        std::fs::read_link(prefix_bin.join("git-agent-rewind"))
            .unwrap()
            .ends_with("bin/git-agent-rewind.js"),
        "the command on PATH is the launcher"
    );

    // man finds the pages npm linked under the prefix, for <prefix>/bin on PATH.
    let page = succeeded(
        isolated("man", home.path(), &prefix_bin)
            .args(["-w", "git-agent-rewind-rewind"])
            .output()
            .unwrap(),
        "man -w",
    );
    assert!(
        page.trim().starts_with(&*prefix.to_string_lossy()),
        "{page}"
    );

    // The demo, with the installed command and nothing else of ours on PATH.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let demo = succeeded(
        isolated("bash", home.path(), &prefix_bin)
            .arg(root.join("scripts/demo"))
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap(),
        "scripts/demo",
    );
    assert!(demo.contains("plain git reads all of it"), "{demo}");
    assert!(demo.contains("$ git agent-rewind resume"), "{demo}");
}

#[test]
fn npm_launcher_passes_exit_status_and_names_a_missing_platform_package() {
    let home = tempfile::tempdir().unwrap();
    let prefix = home.path().join("prefix");
    install(home.path(), &prefix);
    let prefix_bin = prefix.join("bin");

    // A failing command fails the same way through the launcher.
    let repo = crate::common::Repo::new();
    let direct = crate::common::run_in(repo.path(), &["show", "no-such-run"]);
    let via_npm = isolated("git-agent-rewind", home.path(), &prefix_bin)
        .args(["show", "no-such-run"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(!direct.status.success());
    assert_eq!(via_npm.status.code(), direct.status.code());
    assert_eq!(via_npm.stderr, direct.stderr);

    // Without the platform package (npm --omit=optional) the launcher says what is missing.
    let platform_package = format!("git-agent-rewind-{}", npm_platform());
    std::fs::remove_dir_all(prefix.join("lib/node_modules").join(&platform_package)).unwrap();
    let out = isolated("git-agent-rewind", home.path(), &prefix_bin)
        .arg("--version")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(
        stderr.contains(&format!("the package {platform_package}"))
            && stderr.contains("npm install -g git-agent-rewind"),
        "{stderr}"
    );
}

/// `{ name }` … `{ binary-ext }` of a cargo-binstall template, for a Linux target.
fn expand_binstall(template: &str, version: &str, target: &str) -> String {
    template
        .replace("{ repo }/", "")
        .replace("{ name }", "git-agent-rewind")
        .replace("{ bin }", "git-agent-rewind")
        .replace("{ version }", version)
        .replace("{ target }", target)
        .replace("{ binary-ext }", "")
}

#[test]
fn release_archive_is_where_the_binstall_metadata_looks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest: toml::Value =
        toml::from_str(&std::fs::read_to_string(root.join("Cargo.toml")).unwrap()).unwrap();
    let version = manifest["workspace"]["package"]["version"]
        .as_str()
        .unwrap();
    let binstall = &manifest["package"]["metadata"]["binstall"];
    let target = format!("{}-unknown-linux-musl", std::env::consts::ARCH);

    let home = tempfile::tempdir().unwrap();
    let printed = succeeded(
        isolated("bash", home.path(), home.path())
            .arg(root.join("scripts/release-archive"))
            .arg(&target)
            .arg(bin())
            .arg(home.path().join("dist"))
            .output()
            .unwrap(),
        "scripts/release-archive",
    );
    let archive = PathBuf::from(printed.trim());
    let url_path = expand_binstall(binstall["pkg-url"].as_str().unwrap(), version, &target);
    assert_eq!(
        format!(
            "releases/download/v{version}/{}",
            archive.file_name().unwrap().to_string_lossy()
        ),
        url_path
    );

    // Unpacked, the binary is where bin-dir says, and runs; the pages and completions are
    // beside it.
    let unpacked = home.path().join("unpacked");
    std::fs::create_dir(&unpacked).unwrap();
    succeeded(
        Command::new("tar")
            .arg("-xzf")
            .arg(&archive)
            .arg("-C")
            .arg(&unpacked)
            .output()
            .unwrap(),
        "tar -x",
    );
    let binary = unpacked.join(expand_binstall(
        binstall["bin-dir"].as_str().unwrap(),
        version,
        &target,
    ));
    let direct = succeeded(
        Command::new(bin()).arg("--version").output().unwrap(),
        "--version",
    );
    let unpacked_version = succeeded(
        Command::new(&binary).arg("--version").output().unwrap(),
        "the unpacked binary",
    );
    assert_eq!(unpacked_version, direct);
    let top = binary.parent().unwrap();
    assert!(top.join("man/man1/git-agent-rewind-rewind.1").is_file());
    for completion in [
        "git-agent-rewind.bash",
        "_git-agent-rewind",
        "git-agent-rewind.fish",
        "_git-agent-rewind.ps1",
    ] {
        let text = std::fs::read_to_string(top.join("completions").join(completion)).unwrap();
        assert!(text.contains("rewind"), "{completion}");
    }

    // The demo runs from the archive alone, with its fixtures (the Homebrew formula's test
    // takes its first steps from them).
    let demo = succeeded(
        isolated("bash", home.path(), home.path())
            .arg(top.join("demo/scripts/demo"))
            .env("AGENT_REWIND", &binary)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap(),
        "the archive's demo",
    );
    assert!(demo.contains("plain git reads all of it"), "{demo}");
}
