//! git-ai's own example notes, written out inline (never a fetched file): the three
//! complete examples of its standard (git-ai-project/git-ai
//! `specs/git_ai_standard_v3.0.0.md` §1.2.5-1.2.7) and the expected output of its serializer
//! test `test_file_names_with_spaces`
//! (`src/authorship/snapshots/…__file_names_with_spaces.snap`). Used by `gitai.rs`.

/// §1.2.5, "Complete Example (Sessions Format)".
pub const SESSIONS_EXAMPLE: &str = r#"src/main.rs
  s_c9883b05a2487d::t_9f8e7d6c5b4a32 1-10,15-20
  s_c9883b05a2487d::t_a1b2c3d4e5f678 25,30-35
  h_31dce776f88375 42-50
src/lib.rs
  s_e7f2a90b31cc48::t_deadbeef012345 1-50
---
{
  "schema_version": "authorship/3.0.0",
  "git_ai_version": "1.4.5",
  "base_commit_sha": "7734793b756b3921c88db5375a8c156e9532447b",
  "prompts": {},
  "humans": {
    "h_31dce776f88375": {
      "author": "Developer <dev@example.com>"
    }
  },
  "sessions": {
    "s_c9883b05a2487d": {
      "agent_id": {
        "tool": "cursor",
        "id": "6ef2299e-a67f-432b-aa80-3d2fb4d28999",
        "model": "claude-sonnet-4-5-20250514"
      },
      "human_author": "dev@example.com"
    },
    "s_e7f2a90b31cc48": {
      "agent_id": {
        "tool": "claude",
        "id": "conv_abc123def456",
        "model": "claude-sonnet-4-5-20250514"
      },
      "human_author": "dev@example.com",
      "custom_attributes": {
        "team": "backend"
      }
    }
  }
}"#;

/// §1.2.6, "Complete Example (Legacy Format)".
pub const LEGACY_EXAMPLE: &str = r#"src/main.rs
  abcd1234abcd1234 1-10,15-20
  ef0b5678ef0b5678 25,30-35
src/lib.rs
  abcd1234abcd1234 1-50
---
{
  "schema_version": "authorship/3.0.0",
  "git_ai_version": "1.0.23",
  "base_commit_sha": "7734793b756b3921c88db5375a8c156e9532447b",
  "prompts": {
    "abcd1234abcd1234": {
      "agent_id": {
        "tool": "cursor",
        "id": "6ef2299e-a67f-432b-aa80-3d2fb4d28999",
        "model": "claude-4.5-opus"
      },
      "human_author": "Developer <dev@example.com>",
      "total_additions": 25,
      "total_deletions": 5,
      "accepted_lines": 20,
      "overriden_lines": 0
    },
    "ef0b5678ef0b5678": {
      "agent_id": {
        "tool": "cursor",
        "id": "a1b2c3d4-e5f6-7890-abcd-ef1234567890",
        "model": "claude-3-sonnet"
      },
      "human_author": "Developer <dev@example.com>",
      "total_additions": 6,
      "total_deletions": 0,
      "accepted_lines": 6,
      "overriden_lines": 0
    }
  }
}"#;

/// §1.2.7, "Complete Example (Mixed Format)".
pub const MIXED_EXAMPLE: &str = r#"src/main.rs
  s_c9883b05a2487d::t_9f8e7d6c5b4a32 1-10
  h_31dce776f88375 15-20
src/lib.rs
  abcd1234abcd1234 1-50
---
{
  "schema_version": "authorship/3.0.0",
  "git_ai_version": "1.4.5",
  "base_commit_sha": "7734793b756b3921c88db5375a8c156e9532447b",
  "prompts": {
    "abcd1234abcd1234": {
      "agent_id": {
        "tool": "cursor",
        "id": "old_session_id",
        "model": "gpt-4"
      },
      "human_author": "Developer <dev@example.com>",
      "total_additions": 50,
      "total_deletions": 0,
      "accepted_lines": 50,
      "overriden_lines": 0
    }
  },
  "humans": {
    "h_31dce776f88375": {
      "author": "Developer <dev@example.com>"
    }
  },
  "sessions": {
    "s_c9883b05a2487d": {
      "agent_id": {
        "tool": "claude",
        "id": "conv_abc123",
        "model": "claude-sonnet-4-5-20250514"
      },
      "human_author": "dev@example.com"
    }
  }
}"#;

/// git-ai's serializer snapshot `file_names_with_spaces`: quoted paths, a legacy prompt
/// with a null author and zero counts.
pub const SPACES_EXAMPLE: &str = "\"src/my file.rs\"\n  c9883b05a2487d6d 1-10\n\"docs/README (copy).md\"\n  c9883b05a2487d6d 5\ntest/file-with-dashes.js\n  c9883b05a2487d6d 20-25\n---\n{\n  \"schema_version\": \"authorship/3.0.0\",\n  \"git_ai_version\": \"development\",\n  \"base_commit_sha\": \"\",\n  \"prompts\": {\n    \"c9883b05a2487d6d\": {\n      \"agent_id\": {\n        \"tool\": \"cursor\",\n        \"id\": \"session_123\",\n        \"model\": \"claude-3-sonnet\"\n      },\n      \"human_author\": null,\n      \"total_additions\": 0,\n      \"total_deletions\": 0,\n      \"accepted_lines\": 0,\n      \"overriden_lines\": 0\n    }\n  }\n}";
