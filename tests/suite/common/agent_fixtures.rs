//! The agents' hook payloads of `fixtures/<agent>/`, pointed at a test's repository, and
//! the hook command fed one: shared by the hook tests, the attribution tests and the
//! workflow tests that record turns of an agent.

use super::tool_stdin;
use serde_json::Value;
use std::path::Path;

/// The project root every fixture names.
const FIXTURE_ROOT: &str = "/home/dev/src/shop-api";

pub(crate) fn fixture(agent: &str, name: &str) -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(agent)
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every string under `v` naming the fixture project moved to `repo` (also inside a text,
/// as a patch names its files).
pub(crate) fn retarget(v: &mut Value, repo: &Path) {
    match v {
        Value::String(s) if s.contains(FIXTURE_ROOT) => {
            *s = s.replace(FIXTURE_ROOT, &repo.display().to_string());
        }
        Value::Array(a) => a.iter_mut().for_each(|x| retarget(x, repo)),
        Value::Object(o) => o.values_mut().for_each(|x| retarget(x, repo)),
        _ => {}
    }
}

/// A fixture pointed at `repo`, its transcript (when it names one) at `transcript`.
pub(crate) fn payload(agent: &str, name: &str, repo: &Path, transcript: &Path) -> Vec<u8> {
    let mut v = fixture(agent, name);
    retarget(&mut v, repo);
    if v.get("transcript_path").is_some_and(Value::is_string) {
        v["transcript_path"] = transcript.to_str().unwrap().into();
    }
    serde_json::to_vec(&v).unwrap()
}

/// `hook <agent> --json` from a directory outside the repository (the payload decides),
/// exit 0, its outcome.
pub(crate) fn hook(agent: &str, input: &[u8], args: &[&str]) -> Value {
    let elsewhere = tempfile::tempdir().unwrap();
    let mut a = vec!["--json", "hook", agent];
    a.extend_from_slice(args);
    let out = tool_stdin(elsewhere.path(), &a, input, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
