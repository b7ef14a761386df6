//! Phase timings on stderr when `AGENT_REWIND_TRACE` is set: where a command spends its time
//! (`AGENT_REWIND_TRACE=1 git agent-rewind checkpoint …`). Milliseconds since the first
//! mark; with `AGENT_REWIND_TRACE=rss` also the resident and peak memory so far (Linux). It
//! must never print anything when the variable is unset, and never fail.

use std::sync::OnceLock;
use std::time::Instant;

/// Print `label` with the time since the first mark, when tracing is on.
pub fn mark(label: &str) {
    static START: OnceLock<Option<(Instant, bool)>> = OnceLock::new();
    if let Some((start, rss)) = START.get_or_init(|| {
        std::env::var_os("AGENT_REWIND_TRACE").map(|v| (Instant::now(), v == "rss"))
    }) {
        let memory = if *rss { memory() } else { String::new() };
        // A stderr nobody reads (a closed pipe) drops the line: tracing never fails.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "agent-rewind trace: {:>8.2} ms  {label}{memory}",
            start.elapsed().as_secs_f64() * 1000.0
        );
    }
}

/// `  (rss N MiB, peak M MiB)` from `/proc/self/status`, or nothing where there is none.
fn memory() -> String {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return String::new();
    };
    let kib = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |k| k / 1024)
    };
    format!("  (rss {} MiB, peak {} MiB)", kib("VmRSS:"), kib("VmHWM:"))
}
