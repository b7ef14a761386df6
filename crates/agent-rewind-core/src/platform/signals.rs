//! The signals of a wrapper that runs a command on the user's terminal (`wrap`): the
//! command stays in the terminal's foreground process group, so a Ctrl-C or Ctrl-\ at the
//! terminal reaches it directly; the wrapper only has to survive those itself (a handler
//! that does nothing, not "ignore", which the command would inherit through exec). SIGTERM
//! and SIGHUP sent to the wrapper alone are passed on to the command, which decides how to
//! end.
//!
//! It owns only signals: it never starts or waits for a process, and never sends a signal
//! to anything but the process id it is given.

use std::process::ExitStatus;

/// The signals a wrapper passes on, as numbers (SIGTERM, SIGHUP).
#[cfg(unix)]
const FORWARDED: [i32; 2] = [signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP];

/// Installed handlers: the wrapper survives SIGINT and SIGQUIT, and notes SIGTERM and
/// SIGHUP to pass on. The handlers stay for the rest of the process (the final checkpoint
/// after the command ended is not interrupted by a late Ctrl-C either).
pub struct Relay {
    #[cfg(unix)]
    pending: Vec<(i32, std::sync::Arc<std::sync::atomic::AtomicBool>)>,
}

impl Relay {
    /// Install the handlers. Where a handler cannot be installed the signal keeps its
    /// default (the wrapper would end with the command): nothing to report.
    pub fn install() -> Relay {
        #[cfg(unix)]
        {
            use signal_hook::consts::{SIGINT, SIGQUIT};
            use std::sync::Arc;
            use std::sync::atomic::AtomicBool;
            for survived in [SIGINT, SIGQUIT] {
                let _ = signal_hook::flag::register(survived, Arc::new(AtomicBool::new(false)));
            }
            let pending = FORWARDED
                .iter()
                .map(|&sig| {
                    let flag = Arc::new(AtomicBool::new(false));
                    let _ = signal_hook::flag::register(sig, flag.clone());
                    (sig, flag)
                })
                .collect();
            Relay { pending }
        }
        #[cfg(not(unix))]
        Relay {}
    }

    /// Send the command (`pid`) every forwarded signal that came since the last call, once
    /// each; returns their numbers.
    pub fn forward(&self, pid: u32) -> Vec<i32> {
        #[cfg(unix)]
        {
            use std::sync::atomic::Ordering;
            let mut sent = vec![];
            for (sig, flag) in &self.pending {
                if flag.swap(false, Ordering::SeqCst) {
                    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
                    let _ = unsafe { libc::kill(pid as libc::pid_t, *sig) };
                    sent.push(*sig);
                }
            }
            sent
        }
        #[cfg(not(unix))]
        {
            let _ = pid;
            vec![]
        }
    }
}

/// The exit status a shell reports for `status`: the command's exit code, or 128 + the
/// number of the signal that ended it.
pub fn shell_exit_code(status: ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return 128 + sig;
        }
    }
    1
}

/// The number of the signal that ended the process of `status`, if one did (unix only).
pub fn ended_by_signal(status: ExitStatus) -> Option<i32> {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        status.signal()
    }
    #[cfg(not(unix))]
    {
        let _ = status;
        None
    }
}

/// The name of signal `sig` (`SIGTERM`), for messages.
pub fn signal_name(sig: i32) -> String {
    #[cfg(unix)]
    if let Some(name) = signal_hook::low_level::signal_name(sig) {
        return name.to_string();
    }
    format!("signal {sig}")
}
