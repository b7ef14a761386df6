//! `stats` (issue 32 item 3).
