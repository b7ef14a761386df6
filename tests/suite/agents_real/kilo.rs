//! Kilo, the real CLI (its Linux x64 package, pinned in tests/agents), an OpenCode fork:
//! `hooks install --agent kilo` writes OpenCode's plugin calling `hook kilo`, and the
//! scenarios of OpenCode's tests run through `kilo run`. Offline it needs its own
//! configuration file (`~/.config/kilo/kilo.json`: it does not read OpenCode's) and its
//! telemetry off (`KILO_TELEMETRY_LEVEL`: otherwise every exit waits on PostHog's flush).

use super::opencode::{
    Cli, a_turn_whose_hook_outlasts_the_cli_is_recorded_when_it_returns,
    two_turns_a_rewind_a_compaction_a_revert_and_an_uninstall,
};
use crate::common::HANG_TIMEOUT;
use std::time::Duration;

const KILO: Cli = Cli {
    agent: "kilo",
    binary: "@kilocode/cli-linux-x64/bin/kilo",
    config: ".config/kilo/kilo.json",
    folder: ".kilo",
    env: &[
        ("KILO_DISABLE_MODELS_FETCH", "1"),
        ("KILO_DISABLE_AUTOUPDATE", "1"),
        ("KILO_TELEMETRY_LEVEL", "off"),
        ("KILO_DISABLE_CODEBASE_INDEXING", "1"),
        ("KILO_DISABLE_SESSION_INGEST", "1"),
        ("KILO_DISABLE_LSP_DOWNLOAD", "1"),
        ("npm_config_offline", "true"),
    ],
    name: "Kilo",
    // Each run spends about 10 s of CPU before its first request (compiling its bundle and
    // collecting garbage; strace shows no network wait), which a machine busy with other
    // tests can stretch past the common bound.
    hang_bound: Duration::from_secs(3 * HANG_TIMEOUT.as_secs()),
};

#[test]
fn two_turns_a_rewind_a_compaction_a_revert_and_an_uninstall_kilo() {
    two_turns_a_rewind_a_compaction_a_revert_and_an_uninstall(&KILO);
}

#[test]
fn a_turn_whose_hook_outlasts_kilo_is_recorded_when_it_returns() {
    a_turn_whose_hook_outlasts_the_cli_is_recorded_when_it_returns(&KILO);
}
