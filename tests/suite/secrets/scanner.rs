//! `agentRewind.secretScanner`: `push` also runs the installed gitleaks or trufflehog over
//! what it would share and refuses a run on their findings. The scanners here are small
//! shell scripts on `PATH` that take each tool's real command line and print a finding in
//! its real report format for every line holding a marker no built-in rule knows.

use super::{bare_origin, findings, remote_refs};
use crate::common::{Repo, tool_cmd};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// What the fake scanners report; no built-in rule finds it.
const MARKER: &str = "ACME-LEAK-7f3a9c2e";

/// gitleaks as `gitleaks detect --no-git --source DIR --report-format json --report-path
/// FILE --exit-code N …` runs it: a JSON array of findings in the report file, exit N when
/// there are some. It logs its arguments to `$FAKE_ARGS`.
const FAKE_GITLEAKS: &str = r#"#!/bin/sh
echo "$@" > "$FAKE_ARGS"
[ "$1" = detect ] || { echo "unknown command" >&2; exit 126; }
src=""; report=""; code=1; nogit=""
while [ $# -gt 0 ]; do
  case "$1" in
    --source) src="$2"; shift ;;
    --report-path) report="$2"; shift ;;
    --exit-code) code="$2"; shift ;;
    --no-git) nogit=1 ;;
  esac
  shift
done
[ -n "$src" ] && [ -n "$report" ] && [ -n "$nogit" ] || { echo "bad arguments" >&2; exit 1; }
out="["; sep=""
for f in $(grep -rl "ACME-LEAK-" "$src"); do
  for line in $(grep -n "ACME-LEAK-" "$f" | cut -d: -f1); do
    out="$out$sep{\"RuleID\":\"acme-leak\",\"Description\":\"ACME key\",\"StartLine\":$line,\"EndLine\":$line,\"StartColumn\":5,\"EndColumn\":23,\"Match\":\"REDACTED\",\"Secret\":\"REDACTED\",\"File\":\"$f\",\"SymlinkFile\":\"\",\"Commit\":\"\",\"Entropy\":3.9,\"Author\":\"\",\"Email\":\"\",\"Date\":\"\",\"Message\":\"\",\"Tags\":[],\"Fingerprint\":\"$f:acme-leak:$line\"}"
    sep=","
  done
done
echo "$out]" > "$report"
echo "WRN leaks found: some" >&2
[ -n "$sep" ] && exit "$code"
exit 0
"#;

/// trufflehog as `trufflehog filesystem DIR --json --no-verification --no-update --fail`
/// runs it: one JSON object a line on stdout, exit 183 with `--fail` when it found some.
const FAKE_TRUFFLEHOG: &str = r#"#!/bin/sh
echo "$@" > "$FAKE_ARGS"
[ "$1" = filesystem ] || { echo "unknown command" >&2; exit 1; }
dir="$2"; found=""
echo "trufflehog 3.90.5" >&2
for f in $(grep -rl "ACME-LEAK-" "$dir"); do
  for line in $(grep -n "ACME-LEAK-" "$f" | cut -d: -f1); do
    echo "{\"SourceMetadata\":{\"Data\":{\"Filesystem\":{\"file\":\"$f\",\"line\":$line}}},\"SourceID\":1,\"SourceType\":15,\"SourceName\":\"trufflehog - filesystem\",\"DetectorType\":1001,\"DetectorName\":\"AcmeLeak\",\"DetectorDescription\":\"ACME keys\",\"DecoderName\":\"PLAIN\",\"Verified\":false,\"Raw\":\"ACME-LEAK\",\"RawV2\":\"\",\"Redacted\":\"\",\"ExtraData\":null,\"StructuredData\":null}"
    found=1
  done
done
case " $* " in *" --fail "*) [ -n "$found" ] && exit 183 ;; esac
exit 0
"#;

/// A folder holding `name` as an executable script, and the PATH with it first.
fn fake_on_path(name: &str, script: &str) -> (tempfile::TempDir, String) {
    let bin = tempfile::tempdir().unwrap();
    let p = bin.path().join(name);
    std::fs::write(&p, script).unwrap();
    #[cfg(unix)]
    {
        agent_rewind_core::platform::mode::set_path_permission_bits(&p, 0o755).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (bin, path)
}

/// `--json push origin RUN [extra…]` with `PATH` and the fake's argument log set.
fn push_with(r: &Repo, path: &str, args_log: &Path, extra: &[&str]) -> (i32, Value, String) {
    let mut cmd = tool_cmd(r.path());
    cmd.env("PATH", path).env("FAKE_ARGS", args_log);
    cmd.args(["--json", "push", "origin", "r1"]).args(extra);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let entry = doc["runs"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["run"] == "r1").cloned())
        .unwrap_or(doc);
    (out.status.code().unwrap(), entry, stderr)
}

/// A run holding the marker in a new file (line 2), its commit message and its note.
fn run_with_marker(r: &Repo) {
    r.ok(&["start", "--run", "r1"]);
    r.write("notes/deploy.txt", &format!("deploy notes\nkey {MARKER}\n"));
    r.ok(&[
        "checkpoint",
        "work",
        "--run",
        "r1",
        "-m",
        &format!("uses {MARKER}"),
    ]);
}

/// No scratch folder of a scan is left in the git dir.
fn no_scratch_left(r: &Repo) {
    let tmp = r.path().join(".git/agent-rewind/tmp");
    let left: Vec<PathBuf> = std::fs::read_dir(&tmp)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(
        !left
            .iter()
            .any(|p| p.to_string_lossy().contains("secret-scan-")),
        "{left:?}"
    );
}

/// The configured scanner's findings refuse the push, named by place and line; allowed by
/// fingerprint, the run goes.
fn scanner_refuses(scanner: &str, script: &str, rule: &str, expected_args: &[&str]) {
    let r = Repo::new();
    let bare = bare_origin(&r);
    r.git(&["config", "agentRewind.secretScanner", scanner]);
    run_with_marker(&r);
    let (_bin, path) = fake_on_path(scanner, script);
    let log = r.path().join(".git/fake-args");
    let (code, entry, stderr) = push_with(&r, &path, &log, &[]);
    assert_eq!(code, 1, "{entry:#}{stderr}");
    assert_eq!(entry["result"], "rejected", "{entry:#}");
    let (found, fps) = findings(&entry);
    let found: BTreeSet<(String, u64, String)> = found.into_iter().collect();
    let rule = rule.to_string();
    let expected: BTreeSet<(String, u64, String)> = [
        ("notes/deploy.txt".to_string(), 2, rule.clone()),
        ("commit message".to_string(), 3, rule.clone()),
        ("note: message".to_string(), 1, rule.clone()),
    ]
    .into_iter()
    .collect();
    assert_eq!(found, expected);
    assert_eq!(remote_refs(&bare), "", "nothing was pushed");
    let args = std::fs::read_to_string(&log).unwrap();
    for a in expected_args {
        assert!(args.contains(a), "{a} not in `{scanner} {args}`");
    }
    no_scratch_left(&r);
    let mut allow = vec![];
    for fp in &fps {
        allow.extend(["--allow-secret", fp.as_str()]);
    }
    let (code, entry, stderr) = push_with(&r, &path, &log, &allow);
    assert_eq!(
        (code, entry["result"].as_str()),
        (0, Some("pushed")),
        "{entry:#}{stderr}"
    );
    assert!(remote_refs(&bare).contains("refs/agent-runs/r1/HEAD"));
    r.assert_fsck();
}

#[test]
fn gitleaks_findings_refuse_the_push() {
    scanner_refuses(
        "gitleaks",
        FAKE_GITLEAKS,
        "gitleaks:acme-leak",
        &[
            "detect --no-git --source ",
            "--report-format json --report-path ",
            "--exit-code 3",
        ],
    );
}

#[test]
fn trufflehog_findings_refuse_the_push() {
    scanner_refuses(
        "trufflehog",
        FAKE_TRUFFLEHOG,
        "trufflehog:AcmeLeak",
        &[
            "filesystem ",
            " --json",
            "--no-verification",
            "--no-update",
            "--fail",
        ],
    );
}

#[test]
fn a_scanner_not_installed_failing_or_unknown_refuses_the_push() {
    let r = Repo::new();
    let bare = bare_origin(&r);
    run_with_marker(&r);
    // Not installed: PATH holds git and sh only.
    let bin = tempfile::tempdir().unwrap();
    for tool in ["git", "sh"] {
        let real = which(tool);
        agent_rewind_core::platform::links::create_symlink(&real, bin.path().join(tool)).unwrap();
    }
    let only_git = bin.path().display().to_string();
    let log = r.path().join(".git/fake-args");
    r.git(&["config", "agentRewind.secretScanner", "gitleaks"]);
    let (code, entry, stderr) = push_with(&r, &only_git, &log, &[]);
    assert_eq!(code, 1, "{entry:#}{stderr}");
    assert!(
        stderr.contains("gitleaks, which is not installed")
            || entry
                .to_string()
                .contains("gitleaks, which is not installed"),
        "{entry:#}{stderr}"
    );
    assert_eq!(remote_refs(&bare), "");
    no_scratch_left(&r);
    // Installed but failing: its last words, and nothing pushed.
    let (_fake, path) = fake_on_path(
        "gitleaks",
        "#!/bin/sh\necho 'FTL failed to load config: bad toml' >&2\nexit 1\n",
    );
    let (code, entry, stderr) = push_with(&r, &path, &log, &[]);
    assert_eq!(code, 1, "{entry:#}{stderr}");
    let said = format!("{entry}{stderr}");
    assert!(said.contains("gitleaks failed"), "{said}");
    assert!(said.contains("bad toml"), "{said}");
    assert_eq!(remote_refs(&bare), "");
    no_scratch_left(&r);
    // Neither gitleaks nor trufflehog: a usage error.
    r.git(&["config", "agentRewind.secretScanner", "detect-secrets"]);
    let (code, entry, stderr) = push_with(&r, &path, &log, &[]);
    assert_eq!(code, 2, "{entry:#}{stderr}");
    assert!(
        format!("{entry}{stderr}").contains("unknown scanner"),
        "{stderr}"
    );
    assert_eq!(remote_refs(&bare), "");
}

/// Where `tool` is on this machine's PATH.
fn which(tool: &str) -> PathBuf {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{tool} not on PATH"))
}
