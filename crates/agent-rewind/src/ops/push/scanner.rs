//! The installed secret scanners `push` also runs when `agentRewind.secretScanner` names
//! them (`gitleaks`, `trufflehog`, multi-valued): each over a private folder holding what
//! the push would share (the texts of `secrets::for_each_shared`, one file each), with its
//! own rules; its findings refuse a run as the built-in rules' do, named `gitleaks:<rule>` or
//! `trufflehog:<detector>` at the place and line the text came from.
//!
//! It writes only inside that folder, removed when the scan is done, and starts only the
//! scanner named, with that tool's own command line. It never lets a scanner send a secret
//! anywhere: trufflehog's verification (which calls the providers' APIs with each secret
//! found) and its update check are turned off. A scanner that is named but not installed,
//! or that fails, is an error: nothing is pushed.

use super::secrets::{SecretFinding, SharedText, for_each_shared};
use crate::store::Store;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::RunId;
use agent_rewind_core::process::{Purpose, command};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// gitleaks exits with this when it found leaks (`--exit-code`); 1 means it failed.
const GITLEAKS_FOUND: i32 = 3;
/// trufflehog exits with this when it found results (`--fail`).
const TRUFFLEHOG_FOUND: i32 = 183;

/// A secret scanner `push` can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scanner {
    Gitleaks,
    Trufflehog,
}

impl Scanner {
    /// The program, as found on `PATH`.
    fn program(self) -> &'static str {
        match self {
            Scanner::Gitleaks => "gitleaks",
            Scanner::Trufflehog => "trufflehog",
        }
    }

    /// The scanners `agentRewind.secretScanner` names; a name that is neither is an error.
    pub fn configured(store: &Store) -> Result<Vec<Scanner>> {
        let mut out = vec![];
        for name in store.config().strings("agentRewind.secretScanner") {
            let scanner = match name.trim().to_ascii_lowercase().as_str() {
                "gitleaks" => Scanner::Gitleaks,
                "trufflehog" => Scanner::Trufflehog,
                _ => {
                    return Err(Error::usage(format!(
                        "agentRewind.secretScanner: unknown scanner {name:?}"
                    ))
                    .with_hint("it takes gitleaks or trufflehog (multi-valued)"));
                }
            };
            if !out.contains(&scanner) {
                out.push(scanner);
            }
        }
        Ok(out)
    }
}

/// One finding as a scanner reports it: the file (as it names it), the 1-based line (0 when
/// it gives none) and its rule or detector.
struct Reported {
    file: String,
    line: usize,
    rule: String,
}

/// The findings of `scanners` in what pushing `runs` would share, by run.
pub fn scan_runs(
    store: &Store,
    runs: &[RunId],
    scanners: &[Scanner],
) -> Result<BTreeMap<RunId, Vec<SecretFinding>>> {
    let mut out: BTreeMap<RunId, Vec<SecretFinding>> = BTreeMap::new();
    if scanners.is_empty() || runs.is_empty() {
        return Ok(out);
    }
    let scratch = store.private().scratch_dir("secret-scan-")?;
    let files = scratch.path().join("files");
    let mut written: Vec<(RunId, SharedText)> = vec![];
    for run in runs {
        for_each_shared(store, run, &mut |shared| {
            let to = files
                .join(written.len().to_string())
                .join(file_name(&shared.place));
            let parent = to.parent().unwrap_or(&files);
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
            std::fs::write(&to, &shared.text).map_err(|e| Error::io(&to, e))?;
            written.push((run.clone(), shared));
            Ok(())
        })?;
    }
    for &scanner in scanners {
        let reported = match scanner {
            Scanner::Gitleaks => gitleaks(scratch.path(), &files)?,
            Scanner::Trufflehog => trufflehog(scratch.path(), &files)?,
        };
        for r in reported {
            let (run, shared) = index_of(&r.file)
                .and_then(|i| written.get(i))
                .ok_or_else(|| {
                    Error::refused(format!(
                        "{} reported a finding in {:?}, a file it was not given: nothing was pushed",
                        scanner.program(),
                        r.file
                    ))
                })?;
            if shared.added(r.line) {
                let rule = format!("{}:{}", scanner.program(), r.rule);
                out.entry(run.clone()).or_default().push(SecretFinding::new(
                    shared.commit,
                    shared.place.clone(),
                    rule,
                    r.line,
                ));
            }
        }
    }
    Ok(out)
}

/// The name a text is written under: a file's own name (so a scanner's rules on names and
/// extensions apply), never a path that could leave the folder.
fn file_name(place: &str) -> String {
    let name = match place {
        "commit message" => "COMMIT_EDITMSG",
        p if p.starts_with("note") => "note.txt",
        p => p.rsplit('/').next().unwrap_or(p),
    };
    match name {
        "" | "." | ".." => "file".to_string(),
        n => n.replace('\\', "_"),
    }
}

/// Which written text (its index) a scanner's file name points at: `…/files/<index>/<name>`,
/// however the scanner spells the folder (absolute, relative, through a symbolic link).
fn index_of(reported: &str) -> Option<usize> {
    let p = Path::new(reported);
    let folder = p.parent()?;
    if folder.parent()?.file_name()? != "files" {
        return None;
    }
    folder.file_name()?.to_str()?.parse().ok()
}

/// Start `scanner` with `args` in `dir`; its output whatever its exit status. Not installed
/// is an error that names the setting.
fn start(scanner: Scanner, dir: &Path, args: &[&std::ffi::OsStr]) -> Result<std::process::Output> {
    let name = scanner.program();
    let mut cmd = command(Purpose::SecretScanner, name);
    cmd.args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null());
    cmd.output().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::refused(format!(
            "agentRewind.secretScanner names {name}, which is not installed (not found on PATH): nothing was pushed"
        ))
        .with_hint(format!(
            "install {name}, or stop running it: git config --unset-all agentRewind.secretScanner"
        )),
        _ => Error::refused(format!("could not run {name}: {e}; nothing was pushed")),
    })
}

/// A scanner that exited with neither "nothing found" nor "found": its last words.
fn failed(scanner: Scanner, out: &std::process::Output) -> Error {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
    Error::refused(format!(
        "{} failed ({}){}: nothing was pushed",
        scanner.program(),
        out.status,
        last.map(|l| format!(": {}", l.trim())).unwrap_or_default()
    ))
}

/// `gitleaks detect --no-git --source <files> --report-format json --report-path <file>`:
/// its JSON report, an array of findings with `RuleID`, `File` and `StartLine`.
fn gitleaks(dir: &Path, files: &Path) -> Result<Vec<Reported>> {
    let report: PathBuf = dir.join("gitleaks-report.json");
    let exit_code = GITLEAKS_FOUND.to_string();
    let args: Vec<&std::ffi::OsStr> = vec![
        "detect".as_ref(),
        "--no-git".as_ref(),
        "--source".as_ref(),
        files.as_os_str(),
        "--report-format".as_ref(),
        "json".as_ref(),
        "--report-path".as_ref(),
        report.as_os_str(),
        "--exit-code".as_ref(),
        exit_code.as_ref(),
        "--redact".as_ref(),
        "--no-banner".as_ref(),
    ];
    let out = start(Scanner::Gitleaks, dir, &args)?;
    match out.status.code() {
        Some(0) if !report.exists() => return Ok(vec![]),
        Some(0 | GITLEAKS_FOUND) => {}
        _ => return Err(failed(Scanner::Gitleaks, &out)),
    }
    let bytes = std::fs::read(&report).map_err(|e| Error::io(&report, e))?;
    let doc: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        Error::refused(format!(
            "gitleaks wrote a report that is not JSON ({e}): nothing was pushed"
        ))
    })?;
    let list = doc.as_array().ok_or_else(|| {
        Error::refused("gitleaks wrote a report that is not a list of findings: nothing was pushed")
    })?;
    Ok(list
        .iter()
        .map(|f| Reported {
            file: f["File"].as_str().unwrap_or("").to_string(),
            line: f["StartLine"].as_u64().unwrap_or(0) as usize,
            rule: f["RuleID"].as_str().unwrap_or("finding").to_string(),
        })
        .collect())
}

/// `trufflehog filesystem <files> --json --no-verification --no-update --fail`: one JSON
/// object a line, with `DetectorName` and `SourceMetadata.Data.Filesystem.{file,line}`.
fn trufflehog(dir: &Path, files: &Path) -> Result<Vec<Reported>> {
    let args: Vec<&std::ffi::OsStr> = vec![
        "filesystem".as_ref(),
        files.as_os_str(),
        "--json".as_ref(),
        "--no-verification".as_ref(),
        "--no-update".as_ref(),
        "--fail".as_ref(),
    ];
    let out = start(Scanner::Trufflehog, dir, &args)?;
    if !matches!(out.status.code(), Some(0 | TRUFFLEHOG_FOUND)) {
        return Err(failed(Scanner::Trufflehog, &out));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut found = vec![];
    for line in stdout.lines().filter(|l| l.trim_start().starts_with('{')) {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let fs = &v["SourceMetadata"]["Data"]["Filesystem"];
        found.push(Reported {
            file: fs["file"].as_str().unwrap_or("").to_string(),
            line: fs["line"].as_u64().unwrap_or(0) as usize,
            rule: v["DetectorName"].as_str().unwrap_or("finding").to_string(),
        });
    }
    if found.is_empty() && out.status.code() == Some(TRUFFLEHOG_FOUND) {
        return Err(Error::refused(
            "trufflehog reported results but printed none that could be read: nothing was pushed",
        ));
    }
    Ok(found)
}
