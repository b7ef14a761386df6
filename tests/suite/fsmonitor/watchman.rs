//! A Watchman server of the test's own, and the environment that makes `watchman` (ours,
//! and git's hook) talk to it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A Watchman server of our own (state, socket and log in a temp dir), shut down on drop.
pub struct Watchman {
    dir: tempfile::TempDir,
    pub watched: std::cell::RefCell<Vec<PathBuf>>,
}

impl Watchman {
    pub fn start() -> Watchman {
        let dir = tempfile::tempdir().unwrap();
        let w = Watchman {
            dir,
            watched: Default::default(),
        };
        // Starts the server (`<TMPDIR>/<user>-state/`) and waits until it answers.
        let out =
            w.client().arg("get-sockname").output().expect(
                "watchman must be installed (Debian package `watchman`; .ci/run installs it)",
            );
        assert!(
            out.status.success(),
            "watchman did not start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        w
    }

    /// The environment that makes `watchman` (ours, and the hook's) use our server: Watchman
    /// 4.9 keeps its state and socket under `$TMPDIR`.
    pub fn env(&self) -> (&'static str, &Path) {
        ("TMPDIR", self.dir.path())
    }

    fn client(&self) -> Command {
        let mut c = Command::new("watchman");
        let (k, v) = self.env();
        c.env(k, v);
        c
    }

    /// `watchman` talking to our server only (never starting one, nor answering itself).
    pub fn cmd(&self) -> Command {
        let mut c = self.client();
        c.args(["--no-spawn", "--no-local"]);
        c
    }

    pub fn watch_del(&self, root: &Path) -> std::process::Output {
        self.cmd().arg("watch-del").arg(root).output().unwrap()
    }
}

impl Drop for Watchman {
    fn drop(&mut self) {
        for root in self.watched.borrow().iter() {
            let _ = self.watch_del(root);
        }
        let _ = self.cmd().arg("shutdown-server").output();
    }
}
