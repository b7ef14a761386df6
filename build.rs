//! Link settings of the binary only (no code generation here).
//!
//! On Linux the binary is linked as a position-dependent executable (`-no-pie`): a
//! position-independent one makes the dynamic loader apply ~18,000 relocations at every
//! start, which was ~8% of the instructions of a small `diff` and most of the start-up
//! difference with git (docs/PERFORMANCE.md, "small commands"). The library and the tests
//! are unaffected.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
