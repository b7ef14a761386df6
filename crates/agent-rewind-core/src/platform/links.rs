//! Symbolic links: creating one where a checkpoint holds one.
//!
//! Windows creates a symlink only with the privilege for it (an administrator, or Developer
//! Mode); without it the write is refused with an error that says so, never replaced by a
//! plain file holding the target as git for Windows does with `core.symlinks=false`.

use std::path::Path;

/// Create a symlink at `link` pointing at `target`.
pub fn create_symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) -> std::io::Result<()> {
    let (target, link) = (target.as_ref(), link.as_ref());
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(target, link)
    }
    #[cfg(windows)]
    {
        std::os::windows::fs::symlink_file(target, link).map_err(|e| {
            if e.kind() == std::io::ErrorKind::PermissionDenied || e.raw_os_error() == Some(1314) {
                std::io::Error::new(
                    e.kind(),
                    "Windows refuses to create a symlink without the privilege for it \
                     (run as administrator or turn on Developer Mode)",
                )
            } else {
                e
            }
        })
    }
    #[cfg(not(any(unix, windows)))]
    {
        let _ = (target, link);
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "symlinks are not supported on this platform",
        ))
    }
}
