//! Processes: whether one that left a lock is certainly gone, and starting a child in its
//! own process group (so that Ctrl-C in the terminal does not reach work we detached).
//!
//! Whether a process is gone is known only where `/proc` is mounted (Linux); elsewhere
//! (macOS, Windows) the answer is always "not certain", so a lock or temp file a killed
//! process left is kept for the user to remove, never swept on a guess. A new process group
//! exists on unix only; on Windows the child stays in ours (docs/LIMITS.md).

use std::path::Path;

/// Whether process `pid` certainly no longer exists (only known where `/proc` is mounted).
pub fn process_is_gone(pid: u32) -> bool {
    Path::new("/proc/self").exists() && !Path::new(&format!("/proc/{pid}")).exists()
}

/// The name the child of `cmd` sees as its `argv[0]` (unix; elsewhere the program's path).
pub fn set_arg0(cmd: &mut std::process::Command, name: &std::ffi::OsStr) {
    #[cfg(unix)]
    std::os::unix::process::CommandExt::arg0(cmd, name);
    #[cfg(not(unix))]
    let _ = (cmd, name);
}

/// Start `cmd`'s child in a process group of its own (unix; nothing elsewhere).
pub fn own_process_group(cmd: &mut std::process::Command) {
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(cmd, 0);
    #[cfg(not(unix))]
    let _ = cmd;
}
