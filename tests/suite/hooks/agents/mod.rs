//! Hooks of every agent (Codex CLI, Gemini CLI, Cursor, OpenCode, Claude Code, Qwen Code,
//! GitHub Copilot CLI, Pi, Auggie, Kilo, Factory Droid): the payloads of `fixtures/<agent>/` fed through the binary start
//! a run, note edited files and record turns carrying the agent, its session, its transcript
//! and the touched paths; each agent's project configuration is merged and unmerged without
//! losing anything of the user's; bad payloads exit 0 and write nothing.

mod auggie_kilo_droid;
mod bad_payloads;
mod claude;
mod install;
mod opencode;
mod pi;
mod qwen_copilot;
mod recording;
mod usage;
