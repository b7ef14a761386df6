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
// Unix by nature: kills the binary with signals at each crash point.
#[cfg(unix)]
mod crash_points;
mod diff_inprocess;
mod external;
mod fetch_one_run;
// Unix by nature: permission bits, byte file names and unreadable folders, exactly.
#[cfg(unix)]
mod fidelity;
mod fsmonitor;
mod git_env;
// Unix by nature: git and agent hooks are shell scripts with the executable bit.
#[cfg(unix)]
mod hooks;
mod hostile;
// Unix by nature: modes and byte paths as git keeps them.
#[cfg(unix)]
mod interop;
mod layers;
mod list_cache;
// Unix by nature: processes killed by a signal while they hold locks.
#[cfg(unix)]
mod locks;
mod maintenance;
mod many_runs;
mod mcp;
mod never_panics;
mod notes_compat;
mod object_packs;
// Unix by nature: mode bits, as revert's tests.
#[cfg(unix)]
mod pick;
// Unix by nature: npm's shims and the packages' mode bits.
#[cfg(unix)]
mod packaging;
mod pickaxe;
mod private_files;
mod read_commands;
mod reftable;
// Unix by nature: modes and symlinks taken back exactly.
#[cfg(unix)]
mod revert;
// Unix by nature: modes, symlinks, byte names and stat data restored exactly; killed processes.
#[cfg(unix)]
mod rewind;
mod screens;
mod secrets;
mod sha256;
mod sharing;
mod small_commands;
// Unix by nature: the unix stat check.
#[cfg(unix)]
mod snapshot_stat;
mod state;
mod step_ref_lag;
mod storage;
mod surface;
// Unix by nature: scripts run by bash, with their mode bits.
#[cfg(unix)]
mod test_script;
mod untracked_cache;
mod view;
mod watch;
// Unix by nature: steps run by `sh -c` in process groups; a pseudo-terminal.
#[cfg(unix)]
mod workflow;
// Unix by nature: signals, a pseudo-terminal.
#[cfg(unix)]
mod wrap;
