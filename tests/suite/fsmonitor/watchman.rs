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
        let out = w.client().arg("get-sockname").output().expect(
            "watchman must be installed (Debian package `watchman`; scripts/test installs it)",
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

    /// Shuts the server down and waits until its process is gone, as a restart would: a
    /// server started while the old one still holds its pid file cannot run, and Watchman
    /// 4.9's CLI then retries for two minutes.
    pub fn shutdown(&self) {
        let pid = self.server_pid();
        let out = self.cmd().arg("shutdown-server").output().unwrap();
        assert!(out.status.success());
        let proc_dir = Path::new("/proc").join(pid.to_string());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while proc_dir.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "watchman {pid} still runs a minute after shutdown-server"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// The server's process id, from its pid file (`<TMPDIR>/<user>-state/pid`).
    fn server_pid(&self) -> u32 {
        let state = std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().ends_with("-state"))
            .expect("watchman's state folder");
        let text = std::fs::read_to_string(state.join("pid")).unwrap();
        text.trim().parse().unwrap()
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
