//! One module per user-facing operation. Each takes plain arguments, returns plain data
//! (serializable for `--json`), and never prints: rendering is the CLI's job.

pub mod address;
pub mod approve;
pub mod blame;
pub mod bundle;
pub mod checkpoint;
pub mod delete;
pub mod diff;
pub mod external;
pub mod fetch;
pub mod gc;
pub mod gitai;
pub mod init;
pub mod list;
pub mod log;
pub mod maintenance;
pub mod post_rewind;
pub mod push;
pub mod restore;
pub mod retention;
pub mod revert;
pub mod rewind;
pub mod run;
mod runcache;
pub mod show;
pub mod signatures;
pub mod start;
pub mod stats;
pub mod status;
pub mod steer;
pub mod tombstones;
pub mod trace;
pub mod trust;
pub mod undo;
pub mod view;
pub mod watch;
pub mod wrap;
