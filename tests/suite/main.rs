//! The integration suite: one test binary (as cargo's own `tests/testsuite`), a module for
//! each area. Every test drives the built `git-agent-rewind` through temporary
//! repositories and checks the result with the real `git`; `common` holds the helpers.
//! One binary links once and runs every test on all cores, where one binary per file
//! linked 44 times and ran them one binary after another.
// The tests start git and the tool at will; the library crates may not (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

mod addressing;
mod agents_real;
mod attribution;
mod bad_input;
mod checkout_bytes;
mod closed_pipes;
mod concurrency;
mod crash;
mod crash_points;
mod diff_inprocess;
mod external;
mod fetch_one_run;
mod fidelity;
mod fsmonitor;
mod git_env;
mod hooks;
mod hostile;
mod interop;
mod layers;
mod list_cache;
mod locks;
mod maintenance;
mod many_runs;
mod mcp;
mod never_panics;
mod notes_compat;
mod object_packs;
mod packaging;
mod private_files;
mod read_commands;
mod reftable;
mod revert;
mod rewind;
mod screens;
mod secrets;
mod sha256;
mod sharing;
mod small_commands;
mod snapshot_stat;
mod state;
mod step_ref_lag;
mod storage;
mod surface;
mod test_script;
mod untracked_cache;
mod view;
mod watch;
mod workflow;
