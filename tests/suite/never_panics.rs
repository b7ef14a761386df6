//! Every parser of foreign input returns an error or a value, never a panic: note lines and
//! whole notes (arbitrary bytes, arbitrary JSON values, valid lines with one field replaced),
//! the name grammar, checkpoint addresses, timestamps and ages, globs, the TOML workflow
//! schema, Claude Code's hook payload, the post-rewrite mapping, and the secret detectors.
//! Kept fast: a few hundred cases per property.

use agent_rewind::agent::Agent;
use agent_rewind::hooks::{handlers, payload};
use agent_rewind::model::{Note, NoteLine};
use agent_rewind::{store, workflow};
use agent_rewind_core::ids::{CheckpointSpec, RemoteName, RunId, StepName};
use agent_rewind_core::{redact, time};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use std::path::Path;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Short strings biased towards the characters parsers care about.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        prop::collection::vec(
            prop::sample::select(vec![
                'a', 'Z', '0', '9', '.', '-', '_', '/', '@', ':', 'T', 'Z', '+', ' ', '\n', '\t',
                '\0', 'é', '\u{1b}', '"', '\\', '[', ']', '=', '#', '{', '}', '*', '~', 'H', 'E',
                'A', 'D',
            ]),
            0..40,
        )
        .prop_map(|v| v.into_iter().collect()),
        Just("HEAD".to_string()),
        Just("2026-12-01T10:00:00é1:00".to_string()),
        Just("-----BEGIN ".to_string()),
    ]
}

/// Arbitrary JSON values (bounded depth and size).
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(text(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A valid checkpoint line as written by this tool.
fn valid_line() -> Value {
    json!({
        "type": "checkpoint", "schema": "agent-rewind/checkpoint/v1", "run": "r1",
        "step": "plan", "attempt": 1, "seq": 2, "event": "finish", "step_kind": "agent",
        "status": "completed", "sdk_session_id": null,
        "git_commit_sha": "0123456789abcdef0123456789abcdef01234567", "head_ref": "refs/heads/main",
        "artifacts": [{"path": "a", "oid": "0123456789abcdef0123456789abcdef01234567"}],
        "inputs_hash": null, "idempotency_key": null,
        "rewound_from": {"run": "r0", "step": "plan", "checkpoint": "0123456789abcdef0123456789abcdef01234567"},
        "excluded": [{"path": ".env", "reason": "secret"}],
        "started_at": "2026-01-01T00:00:00.000Z", "finished_at": "2026-01-01T00:00:01.000Z",
        "ts": "2026-01-01T00:00:01.000Z", "writer": "me@host", "next_action": null,
        "meta": {"k": "v"}, "message": "m", "label": "l", "run_root": "0123456789abcdef0123456789abcdef01234567",
        "exit_code": 0
    })
}

const LINE_TYPES: &[&str] = &[
    "checkpoint",
    "status",
    "run-status",
    "label",
    "approval",
    "redaction",
    "rewrite",
    "future",
];

/// Whatever parses must serialize and parse again (no panic on either side).
fn parse_line_round_trip(s: &str) {
    if let Ok(line) = NoteLine::parse(s) {
        let again = line.to_line();
        NoteLine::parse(&again).expect("a line we wrote parses back");
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn note_lines_from_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let s = String::from_utf8_lossy(&bytes);
        parse_line_round_trip(&s);
        let _ = Note::parse(&s);
    }

    #[test]
    fn note_lines_from_arbitrary_json(v in json_value(), ty in prop::sample::select(LINE_TYPES)) {
        parse_line_round_trip(&v.to_string());
        // The same value with a known type, when it is an object.
        if let Value::Object(mut m) = v {
            m.insert("type".into(), json!(ty));
            let s = Value::Object(m).to_string();
            parse_line_round_trip(&s);
            if let Ok(note) = Note::parse(&format!("{s}\n{s}\n")) {
                let _ = note.effective_status();
                let _ = note.run_status();
                let _ = note.label();
                let _ = note.approvals().count();
                let _ = note.to_body();
            }
        }
    }

    #[test]
    fn checkpoint_lines_with_one_field_replaced(
        field in prop::sample::select(valid_line().as_object().unwrap().keys().cloned().collect::<Vec<_>>()),
        value in json_value(),
    ) {
        let mut line = valid_line();
        line[field.as_str()] = value;
        parse_line_round_trip(&line.to_string());
        if let Ok(note) = Note::parse(&line.to_string()) {
            let _ = note.effective_status();
            if let Some(c) = note.checkpoint() {
                let _ = c.origin();
                let _ = c.same_facts(c);
            }
        }
    }

    #[test]
    fn names_addresses_times_and_sizes(s in text()) {
        let _ = RunId::new(s.clone());
        let _ = StepName::new(s.clone());
        let _ = RemoteName::new(s.clone());
        let _ = CheckpointSpec::parse(&s);
        let _ = time::Timestamp::parse(&s);
        let _ = time::parse_age(&s);
        let _ = store::glob_match(&s, "a/b/c.txt");
        let _ = store::glob_match("*.txt", &s);
        // A step is never HEAD, in any case.
        if s.eq_ignore_ascii_case("head") {
            prop_assert!(StepName::new(s.clone()).is_err());
        }
    }

    #[test]
    fn secret_detectors(key in text(), value in text(), bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let (out, hit) = redact::redact_value(&key, &value);
        if hit {
            prop_assert_eq!(out.as_str(), redact::REDACTED);
        } else {
            prop_assert_eq!(&out, &value);
        }
        let _ = redact::looks_secret(&value);
        let _ = redact::looks_random(&value);
        let _ = redact::content_holds_secret(&bytes, 100, &key);
        let _ = redact::content_holds_secret(value.as_bytes(), 7, "a.yaml");
    }

    #[test]
    fn workflow_schema(text in text(), v in json_value()) {
        let p = Path::new("flow.toml");
        let _ = workflow::schema::parse(p, &text);
        // Structured input: TOML made from an arbitrary JSON object, and a near-valid file.
        if let Ok(t) = toml::to_string(&v) {
            let _ = workflow::schema::parse(p, &t);
        }
        let near = format!(
            "[workflow]\nname = \"w\"\n[[steps]]\nname = {}\nkind = \"deterministic\"\nrun = \"true\"\ninputs = [\"src/**\"]\n",
            toml::Value::String(text.clone())
        );
        let _ = workflow::schema::parse(p, &near);
    }

    #[test]
    fn hook_payloads(bytes in prop::collection::vec(any::<u8>(), 0..300), v in json_value()) {
        let _ = handlers::parse_mapping(&bytes);
        for agent in Agent::ALL {
            let _ = payload::parse(agent, &bytes, &[]);
            let _ = payload::parse(agent, v.to_string().as_bytes(), &[]);
            // Codex's legacy `notify` passes the payload as the last argument.
            let _ = payload::parse(agent, b"", &[v.to_string()]);
            if let Value::Object(m) = &v {
                // Every event name each agent sends, with the rest of the payload arbitrary.
                for event in [
                    "SessionStart", "Stop", "SubagentStop", "PostToolUse", "AfterAgent",
                    "AfterTool", "SessionEnd", "stop", "afterFileEdit", "session.idle",
                    "file.edited", "tool.execute.after", "agent-turn-complete",
                ] {
                    let mut m = m.clone();
                    m.insert("hook_event_name".into(), json!(event));
                    m.insert("type".into(), json!(event));
                    m.insert("session_id".into(), json!("s1"));
                    let _ = payload::parse(agent, Value::Object(m).to_string().as_bytes(), &[]);
                }
            }
        }
    }
}
