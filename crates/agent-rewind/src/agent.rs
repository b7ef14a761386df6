//! The coding agents whose turns we record (Claude Code, Codex CLI, Gemini CLI, Cursor,
//! OpenCode, Qwen Code, GitHub Copilot CLI, Pi, Augment's Auggie, Kilo, Factory Droid): their
//! names as written in the `agent` field
//! of a checkpoint line, and the command that resumes one of their conversations.
//!
//! Plain data, below every other layer: the hook adapters (`hooks`), `rewind`/`fork` and
//! `status` all read it. It must never run anything or touch the repository.

use agent_rewind_core::error::{Error, Result};
use serde::Serialize;

/// An agent whose hooks we install and whose payloads we read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Agent {
    Claude,
    Codex,
    Gemini,
    Cursor,
    Opencode,
    Qwen,
    Copilot,
    Pi,
    Auggie,
    Kilo,
    Droid,
}

impl Agent {
    pub const ALL: [Agent; 11] = [
        Agent::Claude,
        Agent::Codex,
        Agent::Gemini,
        Agent::Cursor,
        Agent::Opencode,
        Agent::Qwen,
        Agent::Copilot,
        Agent::Pi,
        Agent::Auggie,
        Agent::Kilo,
        Agent::Droid,
    ];

    /// The name in the `agent` field, in `hook <name>` and in `--agent <name>`.
    pub fn name(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::Cursor => "cursor",
            Agent::Opencode => "opencode",
            Agent::Qwen => "qwen",
            Agent::Copilot => "copilot",
            Agent::Pi => "pi",
            Agent::Auggie => "auggie",
            Agent::Kilo => "kilo",
            Agent::Droid => "droid",
        }
    }

    /// The product's own name, for labels and messages.
    pub fn display(self) -> &'static str {
        match self {
            Agent::Claude => "Claude Code",
            Agent::Codex => "Codex CLI",
            Agent::Gemini => "Gemini CLI",
            Agent::Cursor => "Cursor",
            Agent::Opencode => "OpenCode",
            Agent::Qwen => "Qwen Code",
            Agent::Copilot => "GitHub Copilot CLI",
            Agent::Pi => "Pi",
            Agent::Auggie => "Auggie",
            Agent::Kilo => "Kilo",
            Agent::Droid => "Factory Droid",
        }
    }

    /// The agent of a `hook <name>` argument or an `agent` field; `None` for anything else.
    pub fn from_name(s: &str) -> Option<Agent> {
        match s.trim().to_ascii_lowercase().as_str() {
            "claude" | "claude-code" => Some(Agent::Claude),
            "codex" => Some(Agent::Codex),
            "gemini" | "gemini-cli" => Some(Agent::Gemini),
            "cursor" => Some(Agent::Cursor),
            "opencode" => Some(Agent::Opencode),
            "qwen" | "qwen-code" => Some(Agent::Qwen),
            "copilot" | "copilot-cli" | "github-copilot" => Some(Agent::Copilot),
            "pi" | "pi-coding-agent" => Some(Agent::Pi),
            "auggie" | "augment" => Some(Agent::Auggie),
            "kilo" | "kilocode" | "kilo-code" => Some(Agent::Kilo),
            "droid" | "factory" | "factory-droid" => Some(Agent::Droid),
            _ => None,
        }
    }

    /// One `--agent` value: a name, or `all`.
    pub fn parse_many(s: &str) -> Result<Vec<Agent>> {
        if s.trim().eq_ignore_ascii_case("all") {
            return Ok(Agent::ALL.to_vec());
        }
        Agent::from_name(s).map(|a| vec![a]).ok_or_else(|| {
            Error::usage(format!("unknown agent {:?}", s.trim())).with_hint(
                "supported agents: claude, codex, gemini, cursor, opencode, qwen, copilot, pi, \
                 auggie, kilo, droid, all",
            )
        })
    }

    /// The shell command that resumes conversation `session` of this agent, where the agent
    /// offers one (Cursor: its CLI only; a conversation of the editor is reopened there).
    pub fn resume_command(self, session: &str) -> String {
        command_line(&self.resume_argv(session))
    }

    /// [`Self::resume_command`] as a program and its arguments.
    fn resume_argv(self, session: &str) -> Vec<String> {
        let words: [&str; 2] = match self {
            Agent::Claude => ["claude", "--resume"],
            Agent::Codex => ["codex", "resume"],
            Agent::Gemini => ["gemini", "--resume"],
            Agent::Cursor => ["cursor-agent", "--resume"],
            Agent::Opencode => ["opencode", "--session"],
            Agent::Qwen => ["qwen", "--resume"],
            // Copilot's `--resume` takes its value only when joined to it: without one it
            // opens a picker of sessions.
            Agent::Copilot => return vec!["copilot".into(), format!("--resume={session}")],
            Agent::Pi => ["pi", "--session"],
            Agent::Auggie => ["auggie", "--resume"],
            Agent::Kilo => ["kilo", "--session"],
            Agent::Droid => ["droid", "--resume"],
        };
        vec![words[0].into(), words[1].into(), session.into()]
    }
}

/// How an agent's conversation continues after a rewind or fork to one of its turns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Continuation {
    /// The shell command that continues it.
    pub command: String,
    /// The same command as a program and its arguments (what `--agent-resume` runs).
    #[serde(skip)]
    pub argv: Vec<String>,
    /// The agent's pointer the command forks the conversation at; `None` when it continues
    /// the conversation at its end (the agent offers no way to fork at a turn).
    pub forks_at: Option<String>,
    /// In words: what the command does, and on what it rests.
    pub note: String,
}

impl Agent {
    /// The command that continues a **fork** of conversation `session` as of the turn whose
    /// pointer is `at` (`meta.conversation_at`), where the agent offers a way; else the one
    /// that continues it at its end, saying so.
    pub fn continue_command(self, session: &str, at: Option<&str>) -> Continuation {
        match (self, at) {
            // `--resume-session-at` is the CLI's spelling of the Agent SDK's documented
            // `resumeSessionAt` option; the CLI's --help does not list it. Checked with
            // Claude Code 2.1.197 and 2.1.337 (docs/HOOKS.md).
            (Agent::Claude, Some(at)) => {
                let argv: Vec<String> = [
                    "claude",
                    "--resume",
                    session,
                    "--fork-session",
                    "--resume-session-at",
                    at,
                ]
                .map(str::to_string)
                .to_vec();
                Continuation {
                    command: command_line(&argv),
                    argv,
                    forks_at: Some(at.to_string()),
                    note: format!(
                        "a new Claude Code session forked from {session} at message {at} \
                         (--resume-session-at: the Agent SDK's resumeSessionAt, not in claude \
                         --help; checked with 2.1.197)"
                    ),
                }
            }
            // Codex's `fork`, OpenCode's `--fork`, Qwen Code's `--fork-session` and Pi's
            // `--fork` copy the whole session: no turn to fork at from the command line
            // (checked with Codex CLI 0.171.0, OpenCode 1.19.5, Qwen Code 0.24.4 and Pi
            // 0.73.1; Pi forks at an entry only in its own interactive `/fork` and `/tree`, or
            // through its RPC mode and SDK).
            // Kilo (an OpenCode fork) keeps OpenCode's `--fork`; Factory Droid's `--fork <id>`
            // copies the whole session too (checked with Kilo 7.7.9 and Droid 0.225.2).
            (
                Agent::Codex
                | Agent::Opencode
                | Agent::Qwen
                | Agent::Pi
                | Agent::Kilo
                | Agent::Droid,
                at,
            ) => {
                let (words, flag, pointer): (&[&str], &str, &str) = match self {
                    Agent::Codex => (&["codex", "fork", session], "fork", "turn"),
                    Agent::Qwen => (
                        &["qwen", "--resume", session, "--fork-session"],
                        "--fork-session",
                        "prompt",
                    ),
                    Agent::Pi => (&["pi", "--fork", session], "--fork", "entry"),
                    Agent::Kilo => (
                        &["kilo", "--session", session, "--fork"],
                        "--fork",
                        "message",
                    ),
                    Agent::Droid => (&["droid", "--fork", session], "--fork", "message"),
                    _ => (
                        &["opencode", "--session", session, "--fork"],
                        "--fork",
                        "message",
                    ),
                };
                let argv: Vec<String> = words.iter().map(|w| w.to_string()).collect();
                Continuation {
                    command: command_line(&argv),
                    argv,
                    forks_at: None,
                    note: format!(
                        "a new {} session forked from {session} at its end: its {flag} copies \
                         the whole session, so it holds the later turns too{}",
                        self.display(),
                        at.map(|m| format!(" (this turn was {pointer} {m})"))
                            .unwrap_or_default()
                    ),
                }
            }
            // Copilot CLI forks (`/fork`) and rewinds (`/rewind`) only interactively (checked
            // with 1.0.102).
            (Agent::Copilot, _) => Continuation {
                command: self.resume_command(session),
                argv: self.resume_argv(session),
                forks_at: None,
                note: format!(
                    "{} continues session {session} at its end: its command line forks at no \
                     turn (its /fork and /rewind are interactive only)",
                    self.display()
                ),
            },
            _ => Continuation {
                command: self.resume_command(session),
                argv: self.resume_argv(session),
                forks_at: None,
                note: format!(
                    "{} continues conversation {session} at its end: no turn of it was \
                     recorded that its CLI can fork at",
                    self.display()
                ),
            },
        }
    }
}

impl std::fmt::Display for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The resume command for what a checkpoint line recorded (`agent`, `sdk_session_id`).
pub fn resume_command(agent: Option<&str>, session: Option<&str>) -> Option<String> {
    Some(Agent::from_name(agent?)?.resume_command(session?))
}

/// `argv` as one POSIX shell command line.
fn command_line(argv: &[String]) -> String {
    argv.iter()
        .map(|w| shell_word(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `s` as one POSIX shell word: bare when it is plainly safe, else single-quoted. An `=` is
/// plain: only before the program's name would it make an assignment, and the program comes
/// first.
fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':' | b'/' | b'=')
        });
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for a in Agent::ALL {
            assert_eq!(Agent::from_name(a.name()), Some(a));
        }
        assert_eq!(Agent::parse_many("all").unwrap().len(), Agent::ALL.len());
        assert!(Agent::parse_many("aider").is_err());
    }

    #[test]
    fn resume_commands_quote() {
        assert_eq!(
            resume_command(Some("codex"), Some("0199a1b2-c3d4")).as_deref(),
            Some("codex resume 0199a1b2-c3d4")
        );
        assert_eq!(
            resume_command(Some("copilot"), Some("2df1-b4")).as_deref(),
            Some("copilot --resume=2df1-b4")
        );
        assert_eq!(
            Agent::Copilot.resume_command("a b"),
            "copilot '--resume=a b'"
        );
        assert_eq!(
            Agent::Claude.resume_command("a b'c"),
            r"claude --resume 'a b'\''c'"
        );
        assert_eq!(resume_command(Some("vim"), Some("x")), None);
        assert_eq!(resume_command(Some("claude"), None), None);
    }

    #[test]
    fn claude_forks_at_a_message_and_the_others_say_they_continue_at_the_end() {
        let c = Agent::Claude.continue_command("s-1", Some("m-2"));
        assert_eq!(
            c.command,
            "claude --resume s-1 --fork-session --resume-session-at m-2"
        );
        assert_eq!(c.forks_at.as_deref(), Some("m-2"));
        let c = Agent::Claude.continue_command("s 1", Some("m;2"));
        assert_eq!(
            c.command,
            "claude --resume 's 1' --fork-session --resume-session-at 'm;2'"
        );
        for a in [Agent::Claude, Agent::Gemini, Agent::Copilot, Agent::Auggie] {
            let c = a.continue_command("s-1", None);
            assert_eq!(c.command, a.resume_command("s-1"));
            assert!(
                c.forks_at.is_none() && c.note.contains("at its end"),
                "{c:?}"
            );
        }
        // Codex and OpenCode fork the whole session, and say so.
        for (a, command) in [
            (Agent::Codex, "codex fork s-1"),
            (Agent::Opencode, "opencode --session s-1 --fork"),
            (Agent::Qwen, "qwen --resume s-1 --fork-session"),
            (Agent::Pi, "pi --fork s-1"),
            (Agent::Kilo, "kilo --session s-1 --fork"),
            (Agent::Droid, "droid --fork s-1"),
        ] {
            let c = a.continue_command("s-1", Some("m-2"));
            assert_eq!(c.command, command);
            assert!(c.forks_at.is_none(), "{c:?}");
            assert!(
                c.note.contains("at its end") && c.note.contains("m-2"),
                "{c:?}"
            );
        }
    }
}
