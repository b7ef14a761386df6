//! Paths as git stores them (bytes, `/`-separated) and as the filesystem takes them.
//!
//! On unix a path is its bytes, both ways. On Windows a path is text: bytes that are UTF-8
//! (what git for Windows writes) become that text; bytes that are not cannot name a file
//! there, so they become a path Windows refuses (it holds a NUL), and writing it fails with
//! an error instead of writing a file under another name. Back to bytes, a Windows path is
//! its text with `\` turned into `/`.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::path::Path;

/// A worktree-relative path (bytes, `/`-separated) as a filesystem path.
pub fn rel_path(rel: &[u8]) -> Cow<'_, Path> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Cow::Borrowed(Path::new(OsStr::from_bytes(rel)))
    }
    #[cfg(not(unix))]
    {
        match std::str::from_utf8(rel) {
            Ok(text) => Cow::Borrowed(Path::new(text)),
            Err(_) => {
                let mut text = String::from_utf8_lossy(rel).into_owned();
                text.push('\0');
                Cow::Owned(text.into())
            }
        }
    }
}

/// A file name or path from the filesystem as git's bytes.
pub fn os_bytes(name: &OsStr) -> Cow<'_, [u8]> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Cow::Borrowed(name.as_bytes())
    }
    #[cfg(not(unix))]
    {
        match name.to_string_lossy() {
            Cow::Borrowed(s) if !s.contains('\\') => Cow::Borrowed(s.as_bytes()),
            other => Cow::Owned(other.replace('\\', "/").into_bytes()),
        }
    }
}
