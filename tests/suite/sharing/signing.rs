//! Signed checkpoints: checkpoint and notes commits signed through git's
//! own signing configuration with real `ssh-keygen` keys and a real gpg key, checked by
//! `verify` (and by `git verify-commit`), and shown by `show` (`signed_fetch.rs`: required
//! by `fetch --require-signed`). HOME and GNUPGHOME are a temporary folder of each test.

use super::stderr;
use crate::common::{Repo, git_cmd, refs, tool_cmd};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A home of its own (HOME and GNUPGHOME) with ssh keys `alice` and `mallory`, and an
/// allowed-signers file that lists only alice.
pub(super) struct Keys {
    home: tempfile::TempDir,
}

impl Keys {
    pub(super) fn new() -> Keys {
        let home = tempfile::tempdir().unwrap();
        let gnupg = home.path().join("gnupg");
        std::fs::create_dir(&gnupg).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&gnupg, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        let k = Keys { home };
        for who in ["alice", "mallory"] {
            let key = k.key(who);
            let out = std::process::Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-C", who, "-f"])
                .arg(&key)
                .env("HOME", k.home.path())
                .output()
                .expect("ssh-keygen (openssh-client) is installed");
            assert!(out.status.success(), "{}", stderr(&out));
        }
        let public = std::fs::read_to_string(k.key("alice").with_extension("pub")).unwrap();
        std::fs::write(k.allowed(), format!("alice@example.com {}", public.trim())).unwrap();
        k
    }
    fn key(&self, who: &str) -> PathBuf {
        self.home.path().join(format!("{who}_key"))
    }
    fn allowed(&self) -> PathBuf {
        self.home.path().join("allowed_signers")
    }
    fn env(&self) -> [(&'static str, PathBuf); 2] {
        [
            ("HOME", self.home.path().to_path_buf()),
            ("GNUPGHOME", self.home.path().join("gnupg")),
        ]
    }
    /// A passphrase-less gpg key for `Bob <bob@example.com>` in this GNUPGHOME.
    fn gpg_key(&self) {
        let out = std::process::Command::new("gpg")
            .args(["--batch", "--passphrase", "", "--quick-gen-key"])
            .args(["Bob <bob@example.com>", "ed25519", "sign", "never"])
            .envs(self.env())
            .output()
            .expect("gpg (gnupg) is installed");
        assert!(out.status.success(), "{}", stderr(&out));
    }
    /// The tool in `dir` with this home.
    pub(super) fn run(&self, dir: &Path, args: &[&str]) -> Output {
        tool_cmd(dir).envs(self.env()).args(args).output().unwrap()
    }
    pub(super) fn ok(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.run(dir, args);
        assert!(
            out.status.success(),
            "{args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            stderr(&out)
        );
        String::from_utf8(out.stdout).unwrap()
    }
    pub(super) fn json(&self, dir: &Path, args: &[&str]) -> Value {
        let mut a = vec!["--json"];
        a.extend_from_slice(args);
        let out = self.run(dir, &a);
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): {}{}",
                String::from_utf8_lossy(&out.stdout),
                stderr(&out)
            )
        })
    }
    /// `git verify-commit` with this home: whether git accepts the signature.
    pub(super) fn git_verifies(&self, dir: &Path, commit: &str) -> bool {
        git_cmd(dir)
            .envs(self.env())
            .args(["verify-commit", commit])
            .output()
            .unwrap()
            .status
            .success()
    }
    /// Sign with the ssh key of `who`, checking against the allowed-signers file.
    pub(super) fn use_ssh(&self, r: &Path, who: &str) {
        let key = self.key(who);
        for (k, v) in [
            ("agentRewind.sign", "true"),
            ("gpg.format", "ssh"),
            ("user.signingKey", key.to_str().unwrap()),
        ] {
            crate::common::git_in(r, &["config", k, v]);
        }
        self.trust_signers(r);
    }
    /// Check ssh signatures in `r` against the allowed-signers file.
    pub(super) fn trust_signers(&self, r: &Path) {
        let allowed = self.allowed();
        crate::common::git_in(
            r,
            &[
                "config",
                "gpg.ssh.allowedSignersFile",
                allowed.to_str().unwrap(),
            ],
        );
    }
}

/// A run `run` of a few checkpoints.
pub(super) fn record(k: &Keys, dir: &Path, run: &str) {
    k.ok(dir, &["start", "--run", run]);
    crate::common::write_in(dir, &format!("{run}.txt"), "one\n");
    k.ok(dir, &["checkpoint", "plan", "--run", run]);
    crate::common::write_in(dir, &format!("{run}.txt"), "two\n");
    k.ok(dir, &["checkpoint", "build", "--run", run]);
}

fn verdicts(v: &Value, kind: &str) -> Vec<(String, String)> {
    v["runs"][0][kind]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["verdict"].as_str().unwrap().to_string(),
                c["signer"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn ssh_signed_checkpoints_and_notes_verify_and_show_their_signer() {
    let k = Keys::new();
    let r = Repo::new();
    k.use_ssh(r.path(), "alice");
    record(&k, r.path(), "r1");
    // git itself accepts every checkpoint and the notes commit.
    for c in [
        "refs/agent-runs/r1/HEAD",
        "refs/agent-runs/r1/HEAD~1",
        "refs/notes/agent-runs/r1",
    ] {
        assert!(k.git_verifies(r.path(), c), "git verify-commit {c}");
    }
    let v = k.json(r.path(), &["verify", "r1"]);
    assert_eq!(v["ok"], true, "{v:#}");
    let cps = verdicts(&v, "checkpoints");
    assert_eq!(cps.len(), 3, "{v:#}");
    assert!(
        cps.iter()
            .all(|(verdict, who)| verdict == "good" && who == "alice@example.com"),
        "{cps:?}"
    );
    assert!(
        verdicts(&v, "notes")
            .iter()
            .all(|(verdict, _)| verdict == "good"),
        "{v:#}"
    );
    let human = k.ok(r.path(), &["verify", "r1"]);
    assert!(human.contains("run r1: signed"), "{human}");
    let shown = k.json(r.path(), &["show", "r1"]);
    assert_eq!(
        shown["signature"]["signer"], "alice@example.com",
        "{shown:#}"
    );
    assert!(
        k.ok(r.path(), &["show", "r1"])
            .contains("signed:       good, by alice@example.com")
    );
    // The view page names the signer of each checkpoint.
    let page = r.path().join(".git/page.html");
    k.ok(r.path(), &["view", "r1", "-o", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("good, by alice@example.com (key SHA256:"),
        "no signer in the page"
    );

    // A key the allowed-signers file does not list: a good signature git does not accept.
    k.use_ssh(r.path(), "mallory");
    k.ok(r.path(), &["checkpoint", "test", "--run", "r1"]);
    assert!(!k.git_verifies(r.path(), "refs/agent-runs/r1/HEAD"));
    let out = k.run(r.path(), &["--json", "verify", "r1"]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(verdicts(&v, "checkpoints")[3].0, "untrusted", "{v:#}");
    // Signing off: an unsigned checkpoint says so.
    crate::common::git_in(r.path(), &["config", "agentRewind.sign", "false"]);
    k.ok(r.path(), &["checkpoint", "ship", "--run", "r1"]);
    let out = k.run(r.path(), &["--json", "verify", "r1"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(verdicts(&v, "checkpoints")[4].0, "unsigned", "{v:#}");
    assert_eq!(k.json(r.path(), &["show", "r1"])["signature"], Value::Null);
    r.assert_fsck();
    assert_eq!(r.git(&["status", "--porcelain"]), "?? r1.txt\n");
}

#[test]
fn gpg_signs_when_asked_and_commit_gpgsign_counts_only_when_opted_in() {
    let k = Keys::new();
    k.gpg_key();
    let r = Repo::new();
    r.git(&["config", "user.signingKey", "bob@example.com"]);
    // git's commit.gpgSign alone does not sign checkpoints.
    r.git(&["config", "commit.gpgSign", "true"]);
    record(&k, r.path(), "plain");
    let v = k.json(r.path(), &["verify", "plain"]);
    assert!(
        verdicts(&v, "checkpoints")
            .iter()
            .all(|(v, _)| v == "unsigned"),
        "{v:#}"
    );
    // Opted in: agentRewind.sign = commit.gpgSign follows it.
    r.git(&["config", "agentRewind.sign", "commit.gpgSign"]);
    record(&k, r.path(), "r1");
    assert!(k.git_verifies(r.path(), "refs/agent-runs/r1/HEAD"));
    let v = k.json(r.path(), &["verify", "r1"]);
    assert_eq!(v["ok"], true, "{v:#}");
    assert!(
        verdicts(&v, "checkpoints")
            .iter()
            .all(|(v, who)| v == "good" && who == "Bob <bob@example.com>"),
        "{v:#}"
    );
    r.git(&["config", "commit.gpgSign", "false"]);
    k.ok(r.path(), &["checkpoint", "more", "--run", "r1"]);
    let out = k.run(r.path(), &["--json", "verify", "r1"]);
    assert_eq!(out.status.code(), Some(1));
    // A key gpg does not have: the checkpoint is not recorded, and nothing changed.
    r.git(&["config", "agentRewind.sign", "true"]);
    r.git(&["config", "user.signingKey", "nobody@example.com"]);
    let before = refs(r.path(), "refs/");
    let out = k.run(r.path(), &["checkpoint", "fails", "--run", "r1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("failed to sign"), "{}", stderr(&out));
    assert_eq!(before, refs(r.path(), "refs/"));
    r.assert_fsck();
}

/// A real `ssh-agent` on a socket of its own, holding the keys added with [`Agent::add`];
/// stopped when dropped.
struct Agent {
    child: std::process::Child,
    sock: PathBuf,
    _dir: tempfile::TempDir,
}

impl Agent {
    fn start() -> Agent {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("agent.sock");
        let mut child = std::process::Command::new("ssh-agent")
            .arg("-D")
            .arg("-a")
            .arg(&sock)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("ssh-agent (openssh-client) is installed");
        // Ready when its socket exists (or gone: it could not start).
        for _ in 0..200 {
            if sock.exists() {
                return Agent {
                    child,
                    sock,
                    _dir: dir,
                };
            }
            assert!(child.try_wait().unwrap().is_none(), "ssh-agent exited");
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        let _ = child.kill();
        panic!("ssh-agent did not start");
    }
    fn ssh_add(&self, args: &[&std::ffi::OsStr]) {
        let out = std::process::Command::new("ssh-add")
            .args(args)
            .env("SSH_AUTH_SOCK", &self.sock)
            .output()
            .unwrap();
        assert!(out.status.success(), "ssh-add: {}", stderr(&out));
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn ssh_signing_without_a_signing_key_uses_the_key_gpg_ssh_default_key_command_prints() {
    let k = Keys::new();
    let agent = Agent::start();
    agent.ssh_add(&[k.key("alice").as_os_str()]);
    let r = Repo::new();
    for (key, v) in [
        ("agentRewind.sign", "true"),
        ("gpg.format", "ssh"),
        ("gpg.ssh.defaultKeyCommand", "ssh-add -L"),
        ("gpg.ssh.allowedSignersFile", k.allowed().to_str().unwrap()),
    ] {
        r.git(&["config", key, v]);
    }
    let run = |args: &[&str]| {
        tool_cmd(r.path())
            .envs(k.env())
            .env("SSH_AUTH_SOCK", &agent.sock)
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["start", "--run", "r1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    r.write("a.txt", "one\n");
    let out = run(&["checkpoint", "plan", "--run", "r1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Signed by the agent's key, which git accepts too.
    let out = run(&["--json", "verify", "r1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let fingerprint = String::from_utf8(
        std::process::Command::new("ssh-keygen")
            .arg("-lf")
            .arg(k.key("alice").with_extension("pub"))
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .split_whitespace()
    .nth(1)
    .unwrap()
    .to_string();
    for c in v["runs"][0]["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .chain(v["runs"][0]["notes"].as_array().unwrap())
    {
        assert_eq!(c["verdict"], "good", "{v:#}");
        assert_eq!(c["signer"], "alice@example.com", "{v:#}");
        assert_eq!(c["key"], fingerprint.as_str(), "{v:#}");
    }
    assert_eq!(v["runs"][0]["checkpoints"].as_array().unwrap().len(), 2);
    let git_verifies = git_cmd(r.path())
        .envs(k.env())
        .args(["verify-commit", "refs/agent-runs/r1/HEAD"])
        .output()
        .unwrap();
    assert!(git_verifies.status.success(), "{}", stderr(&git_verifies));

    // user.signingKey wins, as in git: mallory's key is not an allowed signer.
    let mallory = k.key("mallory");
    r.git(&["config", "user.signingKey", mallory.to_str().unwrap()]);
    let out = run(&["checkpoint", "build", "--run", "r1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&run(&["--json", "verify", "r1"]).stdout).unwrap();
    assert_eq!(
        v["runs"][0]["checkpoints"][2]["verdict"], "untrusted",
        "{v:#}"
    );
    r.git(&["config", "--unset", "user.signingKey"]);

    // An agent without keys: `ssh-add -L` fails, so nothing is recorded, and the error says
    // why.
    agent.ssh_add(&["-D".as_ref()]);
    let before = refs(r.path(), "refs/");
    r.write("a.txt", "two\n");
    let out = run(&["checkpoint", "ship", "--run", "r1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("gpg.ssh.defaultKeyCommand failed"),
        "{}",
        stderr(&out)
    );
    assert_eq!(refs(r.path(), "refs/"), before);
    r.assert_fsck();
}
