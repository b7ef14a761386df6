//! Permission bits and the executable bit: what a backup records, what a restored file and
//! an installed hook get, and whether a file counts as executable for the snapshot.
//!
//! Windows has no permission bits, only a read-only flag: the bits read as 0o444 for a
//! read-only file and 0o666 otherwise, setting bits without any write bit sets the flag
//! (and with one clears it), a created file gets the default, and no file is executable
//! (git for Windows runs with `core.fileMode=false`, which keeps the index's bit).

use std::fs::{File, Metadata, OpenOptions};

/// The permission bits of `md` (`st_mode & 0o7777` on unix).
pub fn permission_bits(md: &Metadata) -> u32 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        md.permissions().mode() & 0o7777
    }
    #[cfg(not(unix))]
    {
        if md.permissions().readonly() {
            0o444
        } else {
            0o666
        }
    }
}

/// Whether `md` is a regular file with its owner's executable bit set.
pub fn is_executable(md: &Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        md.is_file() && md.permissions().mode() & 0o100 != 0
    }
    #[cfg(not(unix))]
    {
        let _ = md;
        false
    }
}

/// Whether any of the executable bits of `md` is set (a regular file or not).
pub fn any_executable_bit(md: &Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        md.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        let _ = md;
        false
    }
}

/// Give the open file `f` exactly the permission bits `bits`.
pub fn set_permission_bits(f: &File, bits: u32) -> std::io::Result<()> {
    f.set_permissions(permissions(f.metadata()?, bits))
}

/// Give the file at `path` exactly the permission bits `bits`.
pub fn set_path_permission_bits(
    path: impl AsRef<std::path::Path>,
    bits: u32,
) -> std::io::Result<()> {
    let path = path.as_ref();
    std::fs::set_permissions(path, permissions(std::fs::metadata(path)?, bits))
}

fn permissions(md: Metadata, bits: u32) -> std::fs::Permissions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = md;
        std::fs::Permissions::from_mode(bits)
    }
    #[cfg(not(unix))]
    {
        let mut p = md.permissions();
        p.set_readonly(bits & 0o222 == 0);
        p
    }
}

/// A file that `opts` creates gets `bits` (less the umask) from its first moment.
pub fn create_with_bits(opts: &mut OpenOptions, bits: u32) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(bits)
    }
    #[cfg(not(unix))]
    {
        let _ = bits;
        opts
    }
}
