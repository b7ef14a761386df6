//! The history-rewriting matrix (issue 32 item 2).
