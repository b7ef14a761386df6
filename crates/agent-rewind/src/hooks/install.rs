//! `hooks install` / `hooks uninstall`: our blocks in the git hook files of the hooks folder
//! git actually uses (`core.hooksPath` honoured, shared by linked worktrees), and the agent
//! settings (delegated to [`super::settings`]).
//!
//! A block sits between [`MARKER_BEGIN`] and [`MARKER_END`], right after the shebang line, so
//! an existing hook that ends with `exec …` or `exit` still lets it run. Installing twice
//! changes nothing; uninstalling removes exactly our block, and the file too when nothing but
//! a shebang is left. It must never touch a line outside our markers, never turn an existing
//! hook into something else, and never write a hook that can fail the user's operation.

use super::ownedfile::OwnedFile;
use super::settings::{JsonConfig, SettingsChange};
use super::{Agent, GIT_HOOKS, GitHook, MARKER_BEGIN, MARKER_END, OPT_IN_HOOKS};
use crate::store::Store;
use agent_rewind_core::error::IoResultExt;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::platform::mode::permission_bits;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Placeholder in the templates for the shell-quoted absolute path of the binary.
const BIN_PLACEHOLDER: &str = "@AGENT_REWIND_BIN@";

/// What to install or uninstall.
#[derive(Debug, Clone, Default)]
pub struct HooksOptions {
    pub git: bool,
    pub agents: Vec<Agent>,
    /// The opt-in `prepare-commit-msg` hook adding `Assisted-by:` trailers.
    pub assisted_by: bool,
    /// The binary the hooks fall back to when `git-agent-rewind` is not on `PATH`
    /// (default: the running executable).
    pub binary: Option<PathBuf>,
    /// Also our MCP server in each agent's MCP configuration ([`super::mcp_config`]).
    pub mcp: bool,
}

/// What happened to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileAction {
    /// A new file with our block.
    Created,
    /// Our block added to an existing file.
    Added,
    /// Our block replaced by the current one.
    Updated,
    /// Already as it should be.
    Unchanged,
    /// Our block removed, the rest of the file kept.
    Removed,
    /// Our block removed and the file deleted (nothing else was in it).
    Deleted,
    /// Nothing of ours was there.
    Absent,
}

#[derive(Debug, Clone, Serialize)]
pub struct HookFileChange {
    pub hook: &'static str,
    pub path: String,
    pub action: FileAction,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct HooksOutcome {
    /// The hooks folder (when git hooks were handled).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hooks_dir: Option<String>,
    pub git: Vec<HookFileChange>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<SettingsChange>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Install the git hooks and/or the agent settings.
pub fn install(store: &Store, opts: &HooksOptions) -> Result<HooksOutcome> {
    let mut out = HooksOutcome::default();
    // Agent settings first: they can refuse (invalid JSON) before any hook file is written.
    // Every configuration is read and checked before any is written.
    let mut prepared = vec![];
    for agent in &opts.agents {
        match JsonConfig::of(*agent) {
            Some(c) => prepared.push((*agent, Some(c.prepare(store)?))),
            None => {
                plugin_check(store, *agent)?;
                prepared.push((*agent, None));
            }
        }
        if opts.mcp && has_mcp(*agent) {
            super::mcp_config::check(store, *agent)?;
        }
    }
    for (agent, p) in prepared {
        let updated = p.as_ref().map(|p| p.updated().to_vec()).unwrap_or_default();
        let change = match p {
            Some(p) => p.write()?,
            None => plugin_install(store, agent)?,
        };
        if change.agent == Agent::Codex {
            out.warnings
                .extend(codex_trust_warnings(store, &change.path, &updated)?);
        }
        if change.agent == Agent::Copilot {
            out.warnings
                .push(super::copilot::install_warning(store.worktree().root()?));
        }
        out.agents.push(change);
    }
    if opts.mcp {
        for agent in &opts.agents {
            if has_mcp(*agent) {
                out.agents.push(super::mcp_config::install(store, *agent)?);
            } else {
                out.warnings.push(super::pi::NO_MCP.to_string());
            }
            if *agent == Agent::Qwen {
                out.warnings.push(format!(
                    "Qwen Code starts a project's MCP server only once you approve it: run \
                     `qwen mcp approve {}` (until then it is pending approval)",
                    super::mcp_config::SERVER_NAME
                ));
            }
        }
    }
    if opts.git || opts.assisted_by {
        let dir = store.config().hooks_dir()?;
        std::fs::create_dir_all(&dir).at(&dir)?;
        out.warnings.extend(shared_dir_warning(store, &dir));
        let binary = match &opts.binary {
            Some(b) => Some(b.clone()),
            None => std::env::current_exe().ok(),
        };
        let wanted = GIT_HOOKS.iter().filter(|_| opts.git);
        let opt_in = OPT_IN_HOOKS.iter().filter(|_| opts.assisted_by);
        for &hook in wanted.chain(opt_in) {
            let path = dir.join(hook.name());
            let (action, warning) = install_file(&path, hook, binary.as_deref())?;
            out.warnings.extend(warning);
            out.git.push(HookFileChange {
                hook: hook.name(),
                path: path.display().to_string(),
                action,
            });
        }
        out.hooks_dir = Some(dir.display().to_string());
    }
    Ok(out)
}

/// Remove our git hook blocks and/or agent settings entries.
pub fn uninstall(store: &Store, opts: &HooksOptions) -> Result<HooksOutcome> {
    let mut out = HooksOutcome::default();
    for agent in &opts.agents {
        out.agents.push(match JsonConfig::of(*agent) {
            Some(c) => c.uninstall(store)?,
            None => {
                let file = OwnedFile::of(*agent).ok_or_else(|| no_holder(*agent))?;
                let change = file.uninstall(store)?;
                out.warnings.extend(match agent {
                    Agent::Kilo => super::kilo::left_behind(store)?,
                    Agent::Opencode => super::opencode::left_behind(store)?,
                    _ => None,
                });
                change
            }
        });
        if opts.mcp && has_mcp(*agent) {
            out.agents
                .push(super::mcp_config::uninstall(store, *agent)?);
        }
    }
    if opts.git || opts.assisted_by {
        let dir = store.config().hooks_dir()?;
        let wanted = GIT_HOOKS.iter().filter(|_| opts.git);
        for &hook in wanted.chain(OPT_IN_HOOKS.iter()) {
            let path = dir.join(hook.name());
            let action = uninstall_file(&path)?;
            // An opt-in hook is named only when it was there (or asked for).
            if OPT_IN_HOOKS.contains(&hook) && action == FileAction::Absent && !opts.assisted_by {
                continue;
            }
            out.git.push(HookFileChange {
                hook: hook.name(),
                path: path.display().to_string(),
                action,
            });
        }
        out.hooks_dir = Some(dir.display().to_string());
    }
    Ok(out)
}

/// Whether `agent` reads MCP servers at all (Pi does not, by design).
fn has_mcp(agent: Agent) -> bool {
    super::mcp_config::config_path(agent).is_some()
}

/// What installing the file of an agent without JSON hooks (OpenCode's and Kilo's plugins,
/// Pi's extension) would do, or why it is refused.
fn plugin_check(store: &Store, agent: Agent) -> Result<FileAction> {
    OwnedFile::of(agent)
        .ok_or_else(|| no_holder(agent))?
        .check(store)
}

fn plugin_install(store: &Store, agent: Agent) -> Result<SettingsChange> {
    OwnedFile::of(agent)
        .ok_or_else(|| no_holder(agent))?
        .install(store)
}

/// An agent with neither JSON hooks nor a file of ours: a gap in this module, never input.
fn no_holder(agent: Agent) -> Error {
    Error::other(format!(
        "{} has no hook configuration to write",
        agent.name()
    ))
}

/// What Codex needs before it runs the hooks at `path` (checked with Codex CLI 0.171.0): the
/// project trusted, and each hook definition trusted by the user, who alone may grant it
/// (never written here). Codex keys that trust to a hash of each definition, so an entry of
/// ours this install changed (`updated`) is untrusted again.
fn codex_trust_warnings(store: &Store, path: &str, updated: &[String]) -> Result<Vec<String>> {
    let root = store.worktree().root()?;
    let mut out = vec![format!(
        "Codex runs these hooks only once you trust them: the project must be trusted \
         ([projects.\"{}\"] trust_level = \"trusted\" in ~/.codex/config.toml, which Codex \
         offers on first use), and each hook definition too: open Codex here and trust them \
         with /hooks (Codex stores a hash of each in ~/.codex/config.toml). Until then `codex \
         exec` skips them without a word and nothing is recorded",
        root.display()
    )];
    if !updated.is_empty() {
        out.push(format!(
            "Codex will ask for trust again: our {} hook definition{} in {path} changed, and \
             Codex trusts a hook by a hash of its definition; trust {} again with /hooks in Codex",
            updated.join(", "),
            if updated.len() == 1 { "" } else { "s" },
            if updated.len() == 1 { "it" } else { "them" },
        ));
    }
    Ok(out)
}

/// A hooks folder outside the repository (a global `core.hooksPath`) serves other
/// repositories too: say so, since our block then runs there as well (doing nothing
/// without an active run).
fn shared_dir_warning(store: &Store, dir: &Path) -> Option<String> {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let dir = canon(dir);
    let inside = |root: &Path| dir.starts_with(canon(root));
    let in_repo =
        inside(store.worktree().common_dir()) || store.worktree().root().is_ok_and(inside);
    (!in_repo).then(|| {
        format!(
            "core.hooksPath points outside this repository ({}): the hooks run for every repository using that folder (they do nothing where no run is active)",
            dir.display()
        )
    })
}

/// The block for `hook`, with the fallback path of the binary filled in.
pub fn render_block(hook: GitHook, binary: Option<&Path>) -> String {
    let quoted = match binary {
        Some(b) => shell_quote(&b.to_string_lossy()),
        None => "''".to_string(),
    };
    hook.template().replace(BIN_PLACEHOLDER, &quoted)
}

/// `'…'` with embedded single quotes escaped, for POSIX sh.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Where our block is in `text`: the byte range from the start of the begin-marker line to
/// the end of the end-marker line (including its newline). Unbalanced markers are an error.
fn find_block(text: &str, path: &Path) -> Result<Option<std::ops::Range<usize>>> {
    let mut begin = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_end_matches(['\n', '\r']).trim();
        if trimmed == MARKER_BEGIN {
            if begin.is_some() {
                return Err(unbalanced(path));
            }
            begin = Some(offset);
        } else if trimmed == MARKER_END {
            let Some(b) = begin else {
                return Err(unbalanced(path));
            };
            let end = offset + line.len();
            // A second block after this one would be ambiguous.
            if text[end..].contains(MARKER_BEGIN) || text[end..].contains(MARKER_END) {
                return Err(unbalanced(path));
            }
            return Ok(Some(b..end));
        }
        offset += line.len();
    }
    match begin {
        Some(_) => Err(unbalanced(path)),
        None => Ok(None),
    }
}

fn unbalanced(path: &Path) -> Error {
    Error::refused(format!(
        "{} has unbalanced git-agent-rewind markers; not touching it",
        path.display()
    ))
    .with_hint(format!(
        "edit it so it has one `{MARKER_BEGIN}` … `{MARKER_END}` block (or none), then retry"
    ))
}

/// The interpreter of a shebang line, if it is not a POSIX-compatible shell.
fn foreign_interpreter(first_line: &str) -> Option<String> {
    let rest = first_line.strip_prefix("#!")?.trim();
    let mut words = rest.split_whitespace();
    let mut prog = words.next()?;
    if prog.rsplit('/').next() == Some("env") {
        prog = words.find(|w| !w.starts_with('-'))?;
    }
    let name = prog.rsplit('/').next().unwrap_or(prog);
    const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "busybox"];
    (!SHELLS.contains(&name)).then(|| name.to_string())
}

/// The file to edit: `path` itself, or what a symlink at `path` points to.
fn resolve(path: &Path) -> Result<Option<PathBuf>> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::other(format!(
            "could not read {}: {e}",
            path.display()
        ))),
        Ok(md) if md.file_type().is_symlink() => match std::fs::canonicalize(path) {
            Ok(target) => Ok(Some(target)),
            Err(_) => Err(Error::refused(format!(
                "{} is a symlink to a file that does not exist",
                path.display()
            ))
            .with_hint("remove the dangling symlink or fix its target, then retry")),
        },
        Ok(md) if md.is_dir() => Err(Error::refused(format!(
            "{} is a directory, not a hook file",
            path.display()
        ))),
        Ok(_) => Ok(Some(path.to_path_buf())),
    }
}

fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).at(path)?;
    String::from_utf8(bytes)
        .ok()
        .filter(|s| !s.contains('\0'))
        .ok_or_else(|| {
            Error::refused(format!(
                "{} is not a text script; cannot add a block to it",
                path.display()
            ))
            .with_hint(chain_hint(path))
        })
}

fn chain_hint(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    format!(
        "move it aside (e.g. to {name}.local), run `git agent-rewind hooks install` again, then call {name}.local from the new hook"
    )
}

/// Add or refresh our block in the hook file at `path`.
fn install_file(
    path: &Path,
    hook: GitHook,
    binary: Option<&Path>,
) -> Result<(FileAction, Option<String>)> {
    let block = render_block(hook, binary);
    let Some(target) = resolve(path)? else {
        write_atomic(path, &format!("#!/bin/sh\n{block}"), 0o755)?;
        return Ok((FileAction::Created, None));
    };
    let text = read_text(&target)?;
    let mode = permission_bits(&std::fs::metadata(&target).at(&target)?);
    let (new_text, action) = match find_block(&text, &target)? {
        Some(range) if text[range.clone()] == block => (text.clone(), FileAction::Unchanged),
        Some(range) => {
            let mut t = text.clone();
            t.replace_range(range, &block);
            (t, FileAction::Updated)
        }
        None => {
            if let Some(interp) = text.lines().next().and_then(foreign_interpreter) {
                return Err(Error::refused(format!(
                    "{} is a {interp} script; cannot add a shell block to it",
                    target.display()
                ))
                .with_hint(chain_hint(&target)));
            }
            let mut t = text.clone();
            let at = match (t.starts_with("#!"), t.find('\n')) {
                (false, _) => 0,
                (true, Some(i)) => i + 1,
                (true, None) => {
                    t.push('\n');
                    t.len()
                }
            };
            t.insert_str(at, &block);
            (t, FileAction::Added)
        }
    };
    if action != FileAction::Unchanged {
        write_atomic(&target, &new_text, mode)?;
    }
    let warning = (mode & 0o111 == 0).then(|| {
        format!(
            "{} is not executable, so git does not run it (nor our block in it); `chmod +x` it if it should run",
            target.display()
        )
    });
    Ok((action, warning))
}

/// Remove our block from the hook file at `path`.
fn uninstall_file(path: &Path) -> Result<FileAction> {
    let Some(target) = resolve(path)? else {
        return Ok(FileAction::Absent);
    };
    let Ok(text) = read_text(&target) else {
        return Ok(FileAction::Absent);
    };
    let Some(range) = find_block(&text, &target)? else {
        return Ok(FileAction::Absent);
    };
    let mut rest = text.clone();
    rest.replace_range(range, "");
    let only_shebang = rest
        .lines()
        .enumerate()
        .all(|(i, l)| l.trim().is_empty() || (i == 0 && l.starts_with("#!")));
    if only_shebang {
        // `path` itself: a symlink to a file that only held our block goes too.
        std::fs::remove_file(&target).at(&target)?;
        if target != path {
            let _ = std::fs::remove_file(path);
        }
        return Ok(FileAction::Deleted);
    }
    let mode = permission_bits(&std::fs::metadata(&target).at(&target)?);
    write_atomic(&target, &rest, mode)?;
    Ok(FileAction::Removed)
}

/// Write `text` to `path` atomically with `mode`.
pub(super) fn write_atomic(path: &Path, text: &str, mode: u32) -> Result<()> {
    agent_rewind_core::private::write_atomic(path, text.as_bytes(), Some(mode))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_one_block() {
        for hook in GIT_HOOKS {
            let b = render_block(hook, Some(Path::new("/opt/it's here/git-agent-rewind")));
            assert!(b.starts_with(MARKER_BEGIN), "{b}");
            assert!(b.ends_with(&format!("{MARKER_END}\n")), "{b}");
            assert_eq!(
                find_block(&b, Path::new("x")).unwrap(),
                Some(0..b.len()),
                "{b}"
            );
            assert!(b.contains(r"'/opt/it'\''s here/git-agent-rewind'"));
            assert!(!b.contains(BIN_PLACEHOLDER));
        }
    }

    #[test]
    fn interpreters() {
        assert_eq!(foreign_interpreter("#!/bin/sh"), None);
        assert_eq!(foreign_interpreter("#!/usr/bin/env bash"), None);
        assert_eq!(foreign_interpreter("#!/usr/bin/env -S bash -e"), None);
        assert_eq!(foreign_interpreter("#! /bin/zsh -f"), None);
        assert_eq!(
            foreign_interpreter("#!/usr/bin/env python3").as_deref(),
            Some("python3")
        );
        assert_eq!(
            foreign_interpreter("#!/usr/bin/node").as_deref(),
            Some("node")
        );
        assert_eq!(foreign_interpreter("echo hi"), None);
    }

    #[test]
    fn unbalanced_markers_are_refused() {
        let p = Path::new("hook");
        assert!(find_block(&format!("x\n{MARKER_BEGIN}\ny\n"), p).is_err());
        assert!(find_block(&format!("{MARKER_END}\n"), p).is_err());
        let two = format!("{MARKER_BEGIN}\n{MARKER_END}\n{MARKER_BEGIN}\n{MARKER_END}\n");
        assert!(find_block(&two, p).is_err());
        assert_eq!(find_block("#!/bin/sh\necho\n", p).unwrap(), None);
    }
}
