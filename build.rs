//! Link settings of the binary only (no code generation here).
//!
//! On Linux the binary stays position-independent (the executable's code at a random
//! address, as distributions build git), but its ~18,000 relative relocations are packed
//! (`-z pack-relative-relocs`, DT_RELR): the dynamic loader otherwise applies them one by
//! one at every start, ~8% of the instructions of a small `diff` (docs/PERFORMANCE.md,
//! "small commands"). The flag needs binutils ≥ 2.38 and glibc ≥ 2.36, so it is used only
//! when the C toolchain that links us accepts it without a word: an older one builds the
//! ordinary binary. The library and the tests are unaffected.

// A build script runs the C compiler; it is not part of any crate the rule is about.
#![allow(clippy::disallowed_methods)]

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CC");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let native = std::env::var("TARGET").ok() == std::env::var("HOST").ok();
    if os == "linux" && env == "gnu" && native && linker_packs_relocations() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether `cc` links a program with `-z pack-relative-relocs` cleanly: success and nothing
/// on stderr (an older `ld` ignores an unknown `-z` keyword with a warning).
fn linker_packs_relocations() -> bool {
    let Some(dir) = std::env::var_os("OUT_DIR").map(std::path::PathBuf::from) else {
        return false;
    };
    let source = dir.join("relr-probe.c");
    let program = dir.join("relr-probe");
    if std::fs::write(&source, "int main(void) { return 0; }\n").is_err() {
        return false;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let probe = Command::new(cc)
        .arg("-Wl,-z,pack-relative-relocs")
        .arg("-o")
        .arg(&program)
        .arg(&source)
        .output();
    matches!(probe, Ok(out) if out.status.success() && out.stderr.is_empty())
}
