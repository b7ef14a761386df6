//! A real smart-HTTP remote for the tests: Debian's `lighttpd` in front of git's own
//! `git http-backend` (CGI), serving the repositories of a folder on 127.0.0.1, pushes
//! allowed (`http.receivepack`). Started by the test, stopped when dropped.

use crate::common::git_in;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub struct HttpServer {
    child: Child,
    pub port: u16,
    _conf: tempfile::TempDir,
}

impl HttpServer {
    /// Serve the repositories under `base` at `http://127.0.0.1:<port>/git/<repo>`.
    pub fn start(base: &Path) -> HttpServer {
        use std::net::{TcpListener, TcpStream};
        let exec_path = PathBuf::from(git_in(base, &["--exec-path"]).trim());
        let backend = exec_path.join("git-http-backend");
        assert!(backend.exists(), "no {}", backend.display());
        let conf = tempfile::tempdir().unwrap();
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let file = conf.path().join("lighttpd.conf");
            std::fs::write(
                &file,
                format!(
                    r#"server.document-root = "{base}"
server.bind = "127.0.0.1"
server.port = {port}
server.errorlog = "{conf}/error.log"
server.modules = ("mod_alias", "mod_setenv", "mod_cgi")
alias.url = ("/git" => "{backend}")
$HTTP["url"] =~ "^/git" {{
    cgi.assign = ("" => "")
    setenv.add-environment = (
        "GIT_PROJECT_ROOT" => "{base}",
        "GIT_HTTP_EXPORT_ALL" => "1",
        "GIT_CONFIG_NOSYSTEM" => "1",
        "GIT_CONFIG_GLOBAL" => "/dev/null",
        "PATH" => "{path}"
    )
}}
"#,
                    base = base.display(),
                    conf = conf.path().display(),
                    backend = backend.display(),
                    path = std::env::var("PATH").unwrap_or_default(),
                ),
            )
            .unwrap();
            let mut child = Command::new("lighttpd")
                .args(["-D", "-f"])
                .arg(&file)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("lighttpd (Debian's package) is installed");
            // Ready when it accepts connections (or gone: the port was taken meanwhile).
            for _ in 0..200 {
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return HttpServer {
                        child,
                        port,
                        _conf: conf,
                    };
                }
                if child.try_wait().ok().flatten().is_some() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("lighttpd did not start");
    }

    /// The URL of the repository `repo` (a folder under `base`).
    pub fn url(&self, repo: &str) -> String {
        format!("http://127.0.0.1:{}/git/{repo}", self.port)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
