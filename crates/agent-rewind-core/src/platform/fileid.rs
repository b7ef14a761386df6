//! Which file a path is (device and inode) and how many names it has (its link count): what
//! the claimed ref locks use to tell a lock of ours, linked to its claim, from anyone
//! else's.
//!
//! Windows: std gives neither on stable Rust, so both answer `None`; the callers then
//! sweep no stale lock (a lock left by a killed process stays until removed by hand, as
//! git's own) and never guess (docs/LIMITS.md).

use std::fs::Metadata;

/// The device and inode of `md`, or `None` where the platform does not give them.
pub fn file_id(md: &Metadata) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((md.dev(), md.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = md;
        None
    }
}

/// How many hard links name the file of `md`, or `None` where it cannot be known.
pub fn link_count(md: &Metadata) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(md.nlink())
    }
    #[cfg(not(unix))]
    {
        let _ = md;
        None
    }
}
