//! Phase timings on stderr when `AGENT_REWIND_TRACE` is set: where a command spends its time
//! (`AGENT_REWIND_TRACE=1 git agent-rewind checkpoint …`). Milliseconds since the first
//! mark. It must never print anything when the variable is unset, and never fail.

use std::sync::OnceLock;
use std::time::Instant;

/// Print `label` with the time since the first mark, when tracing is on.
pub fn mark(label: &str) {
    static START: OnceLock<Option<Instant>> = OnceLock::new();
    if let Some(start) =
        START.get_or_init(|| std::env::var_os("AGENT_REWIND_TRACE").map(|_| Instant::now()))
    {
        eprintln!(
            "agent-rewind trace: {:>8.2} ms  {label}",
            start.elapsed().as_secs_f64() * 1000.0
        );
    }
}
