//! Everything that differs between unix and Windows, one module per concern: file identity
//! and link counts ([`fileid`]), permission bits and the executable bit ([`mode`]), paths as
//! git's bytes ([`paths`]), symbolic links ([`links`]), processes ([`process`]) and the signals a wrapper survives
//! or passes on ([`signals`]). Each
//! module holds a unix implementation and a Windows (non-unix) one that either does the
//! same or says, in its comment and in docs/LIMITS.md, how it degrades or what it refuses.
//!
//! Must never: be bypassed (no `std::os::unix` outside these modules in the library crates),
//! panic where a platform lacks something, or differ silently: a degradation is documented
//! and a refusal is an error that names the platform.

pub mod fileid;
pub mod links;
pub mod mode;
pub mod paths;
pub mod process;
pub mod signals;
