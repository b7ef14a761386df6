//! One file per command (or per small family of commands): its clap arguments and the
//! function that runs it. Handlers call the library and render; they decide nothing.

pub mod approve;
pub mod blame;
pub mod checkpoint;
pub mod completions;
pub mod delete;
pub mod diff;
pub mod gc;
pub mod gitai;
pub mod hook;
pub mod hooks;
pub mod hooks_global;
pub mod init;
pub mod list;
pub mod log;
pub mod manpages;
pub mod mcp;
pub mod pick;
pub mod restore;
pub mod revert;
pub mod rewind;
pub mod run;
pub mod share;
pub mod show;
pub mod start;
pub mod stats;
pub mod status;
pub mod steer;
pub mod step;
pub mod trust;
pub mod undo;
pub mod verify;
pub mod view;
pub mod watch;
pub mod wrap;
