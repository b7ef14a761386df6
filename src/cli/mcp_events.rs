//! What follows an operation the MCP server applied (a `revert` or a `restore` with its
//! plan id): the user's `post-agent-rewind` hook runs, as after the same command on the
//! command line, and a client that asked for them is sent a notification with the same facts
//! the hook gets (docs/MCP.md, "Notifications"; the decisions in docs/design/mcp.md).
//!
//! A client asks with the experimental capability [`EVENTS_CAPABILITY`]: in `initialize`'s
//! `capabilities.experimental`, or, for a client of the stateless protocol (no
//! `initialize`), in the request's `_meta` client capabilities. The notification is a
//! JSON-RPC notification (no id), [`OPERATION_METHOD`], written before the tool's answer.
//!
//! Owns when a notification is sent and what it says; never sends one to a client that did
//! not ask, never lets the hook's output reach standard output (the protocol's), and never
//! changes the operation's outcome (a failing hook or a closed client leaves it done).

use agent_rewind::ops::post_rewind::{RewindEvent, run_hook};
use agent_rewind::store::Store;
use rmcp::RoleServer;
use rmcp::model::{ClientCapabilities, CustomNotification, ServerNotification};
use rmcp::service::RequestContext;
use serde_json::{Value, json};

/// The experimental capability a client declares to be told of the server's operations
/// (and that the server declares in its own capabilities, to say it offers them).
pub const EVENTS_CAPABILITY: &str = "agent-rewind/events";

/// The method of the notification sent after each operation.
pub const OPERATION_METHOD: &str = "notifications/agent-rewind/operation";

/// A tool's answer, and the notification its operation calls for (none for a plan).
pub struct Done {
    pub answer: Value,
    pub event: Option<Value>,
}

impl Done {
    /// An answer that applied nothing.
    pub fn plan(answer: Value) -> Done {
        Done {
            answer,
            event: None,
        }
    }
}

/// After `event` was applied by `by`: run the user's hook (its failure a warning in the
/// answer and on stderr), and make the notification's parameters.
pub fn applied(store: &Store, event: &RewindEvent, by: &str, mut answer: Value) -> Done {
    if let Some(warning) = run_hook(store, event) {
        crate::cli::render::warn(&warning);
        answer["warnings"] = json!([warning]);
    }
    Done {
        answer,
        event: Some(json!({
            "operation": event.operation,
            "source": event.source,
            "target": event.target,
            "backup": event.backup,
            "by": by,
        })),
    }
}

/// Send the notification `done` calls for when the client asked for it; the answer.
pub async fn notify(
    request: &RequestContext<RoleServer>,
    done: agent_rewind_core::error::Result<Done>,
) -> agent_rewind_core::error::Result<Value> {
    let done = done?;
    if let Some(params) = done.event
        && wants_events(request)
    {
        let note = CustomNotification::new(OPERATION_METHOD, Some(params));
        // A client that went away misses the notification; the operation is done anyway.
        let _ = request
            .peer
            .send_notification(ServerNotification::CustomNotification(note))
            .await;
    }
    Ok(done.answer)
}

/// Whether the client declared [`EVENTS_CAPABILITY`], in `initialize` or in this request.
fn wants_events(request: &RequestContext<RoleServer>) -> bool {
    let asked = |c: &ClientCapabilities| {
        c.experimental
            .as_ref()
            .is_some_and(|e| e.contains_key(EVENTS_CAPABILITY))
    };
    request
        .peer
        .peer_info()
        .is_some_and(|i| asked(&i.capabilities))
        || request
            .meta
            .client_capabilities()
            .is_some_and(|c| asked(&c))
}
