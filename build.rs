//! Link settings of the binary only (no code generation here).
//!
//! On Linux the binary stays position-independent (the executable's code at a random
//! address, as distributions build git), but its ~18,000 relative relocations are packed
//! (`-z pack-relative-relocs`, DT_RELR): the dynamic loader otherwise applies them one by
//! one at every start, ~8% of the instructions of a small `diff` (docs/PERFORMANCE.md,
//! "small commands"). The flag needs binutils ≥ 2.38 and glibc ≥ 2.36, so it is used only
//! when the C toolchain that links us accepts it without a word: an older one builds the
//! ordinary binary. The library and the tests are unaffected.
//!
//! A release build on Linux is also linked with `link/hot-text.ld` (written by
//! `scripts/hot-text`), which lays out the functions the short commands execute side by
//! side at the start of the code: a 5-file `diff` then takes ~75 fewer code page faults.
//! It is a linker script that only adds an output section (`INSERT BEFORE .text`), accepted
//! by GNU ld and LLD alike, and a pattern that matches nothing changes nothing; it too is
//! used only when the C toolchain links a probe with it cleanly, and not when the build
//! names a linker of its own.

// A build script runs the C compiler; it is not part of any crate the rule is about.
#![allow(clippy::disallowed_methods)]

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CC");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let native = std::env::var("TARGET").ok() == std::env::var("HOST").ok();
    println!("cargo:rerun-if-changed=link/hot-text.ld");
    if os != "linux" || env != "gnu" || !native {
        return;
    }
    if links_cleanly(&["-Wl,-z,pack-relative-relocs"]) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    // `PROFILE` is "release" for `cargo build --release` and `cargo install`; the debug
    // binary the tests run has other symbol names and is left as the linker lays it out.
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default();
    let hot_text = std::path::Path::new(&manifest_dir).join("link/hot-text.ld");
    if std::env::var("PROFILE").as_deref() == Ok("release")
        && hot_text.is_file()
        && !linker_chosen()
    {
        let arg = format!("-Wl,-T,{}", hot_text.display());
        if links_cleanly(&[&arg]) {
            println!("cargo:rustc-link-arg-bins={arg}");
        }
    }
}

/// Whether the build names its own linker (`target.<triple>.linker`, `-C linker=…`,
/// `-fuse-ld=…`): the probe links with `cc`'s default, and a linker such as mold reads only
/// part of the linker script language, so the layout is then left out.
fn linker_chosen() -> bool {
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    std::env::var_os("RUSTC_LINKER").is_some()
        || flags
            .split('\x1f')
            .any(|f| f.contains("linker") || f.contains("fuse-ld"))
}

/// Whether `cc` links a program with `flags` cleanly: success and nothing on stderr (an
/// older `ld` ignores an unknown `-z` keyword with a warning).
fn links_cleanly(flags: &[&str]) -> bool {
    let Some(dir) = std::env::var_os("OUT_DIR").map(std::path::PathBuf::from) else {
        return false;
    };
    let source = dir.join("link-probe.c");
    let program = dir.join("link-probe");
    if std::fs::write(&source, "int main(void) { return 0; }\n").is_err() {
        return false;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let probe = Command::new(cc)
        .args(flags)
        .arg("-o")
        .arg(&program)
        .arg(&source)
        .output();
    matches!(probe, Ok(out) if out.status.success() && out.stderr.is_empty())
}
