//! One MCP message is at most 16 MiB (its newline included): a larger one is answered with
//! a JSON-RPC error naming the limit, under its own id, and the server goes on serving the
//! same connection.

use super::Client;
use crate::common::Repo;
use serde_json::{Value, json};
use std::io::Write;

const LIMIT: usize = 16 * 1024 * 1024;

/// A `tools/call` request of exactly `bytes` bytes with its newline, its `id` after the
/// bulk of it (so finding it means reading the whole line).
fn request_of(bytes: usize, id: u64) -> Vec<u8> {
    let head =
        r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"status","arguments":{"pad":""#;
    let tail = format!(r#""}}}},"id":{id}}}"#);
    let pad = bytes - head.len() - tail.len() - 1;
    let mut line = Vec::with_capacity(bytes);
    line.extend_from_slice(head.as_bytes());
    line.resize(head.len() + pad, b'x');
    line.extend_from_slice(tail.as_bytes());
    line.push(b'\n');
    assert_eq!(line.len(), bytes);
    line
}

/// Send raw `line`, then a `tools/list` with id `next`; every message up to the answer to
/// `next`.
fn send_then_list(c: &mut Client, line: &[u8], next: u64) -> Vec<Value> {
    c.stdin.write_all(line).unwrap();
    c.send(&json!({"jsonrpc": "2.0", "id": next, "method": "tools/list", "params": {}}));
    c.stdin.flush().unwrap();
    let mut seen = vec![];
    loop {
        let msg = c.receive();
        let done = msg["id"] == next;
        seen.push(msg);
        if done {
            return seen;
        }
    }
}

#[test]
fn a_message_over_16_mib_is_answered_with_an_error_naming_the_limit_and_serving_goes_on() {
    let repo = Repo::new();
    let (mut c, _) = Client::start(&repo, "claude-code");

    let too_large = request_of(LIMIT + 1, 701);
    let seen = send_then_list(&mut c, &too_large, 702);
    let answer = seen
        .iter()
        .find(|m| m["id"] == 701)
        .unwrap_or_else(|| panic!("no answer to the request over the limit: {seen:#?}"));
    assert_eq!(answer["error"]["code"], -32600, "{answer:#}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("16 MiB") && message.contains(&LIMIT.to_string()),
        "{message}"
    );
    assert_eq!(answer["error"]["data"]["limit"], LIMIT);
    assert_eq!(answer["error"]["data"]["bytes"], LIMIT + 1);
    let listed = seen.last().unwrap();
    assert!(listed["result"]["tools"].is_array(), "{listed:#}");

    // A message of exactly the limit is read and answered as usual.
    let at_limit = request_of(LIMIT, 703);
    let seen = send_then_list(&mut c, &at_limit, 704);
    let answer = seen.iter().find(|m| m["id"] == 703).expect("answered");
    assert_eq!(answer["result"]["isError"], false, "{answer:#}");

    // A notification over the limit is no request: nothing answers it, and the server
    // still serves.
    let mut note = request_of(LIMIT + 10, 0);
    let at = note.windows(7).position(|w| w == b",\"id\":0").unwrap();
    note.drain(at..at + 7);
    let seen = send_then_list(&mut c, &note, 705);
    assert_eq!(seen.len(), 1, "{seen:#?}");
}
