//! `hooks install|uninstall --agent <a> --global`: our entries in each agent's **user-level**
//! configuration, so that the agent calls `git agent-rewind hook <agent>` in every folder it
//! works in, without an install per repository.
//!
//! | agent | file (default; the variable that moves the agent's folder) |
//! |---|---|
//! | Claude Code | `~/.claude/settings.json` (`CLAUDE_CONFIG_DIR`) |
//! | Codex CLI | `~/.codex/hooks.json` (`CODEX_HOME`) |
//! | Gemini CLI | `~/.gemini/settings.json` (`GEMINI_CLI_HOME` replaces `~`) |
//! | Cursor | `~/.cursor/hooks.json` |
//! | OpenCode | `~/.config/opencode/plugins/git-agent-rewind.js` (`XDG_CONFIG_HOME`) |
//! | Qwen Code | `~/.qwen/settings.json` (`QWEN_HOME`) |
//! | GitHub Copilot CLI | `~/.copilot/hooks/agent-rewind.json` (`COPILOT_HOME`) |
//! | Pi | `~/.pi/agent/extensions/agent-rewind.ts` (`PI_CODING_AGENT_DIR`) |
//!
//! The merge is the project level's ([`super::settings`], [`super::ownedfile`]); what this
//! module adds is where the files are, and exactness: the bytes and mode of a file we add to
//! are kept beside it ([`BACKUP_SUFFIX`]) and written back by uninstall when taking our entries
//! out leaves exactly what they held; every file is read and checked before the first is
//! written, and a failed write puts back the files already written. Git hooks belong to one
//! repository: nothing here touches them, nor any repository.

use super::Agent;
use super::install::FileAction;
use super::ownedfile::OwnedFile;
use super::settings::{JsonConfig, SettingsChange};
use agent_rewind_core::error::{Error, IoResultExt, Result};
use agent_rewind_core::platform::mode::permission_bits;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Appended to the name of a configuration file for the copy of it taken before our first
/// install added to it.
pub const BACKUP_SUFFIX: &str = ".before-git-agent-rewind";

/// OpenCode's plugin below its user folder: the name the project level uses, in the folder
/// OpenCode globs (`{plugin,plugins}/*.{ts,js}`).
const OPENCODE_PLUGIN: &str = "plugins/git-agent-rewind.js";

/// Where an agent reads its user-level configuration.
#[derive(Debug, Clone)]
pub struct UserFile {
    pub agent: Agent,
    /// The file holding our entries.
    pub path: PathBuf,
    /// How many folders above it uninstall may remove when it leaves them empty: those of
    /// the agent's own folder, never one a variable names (it is the user's).
    pub folders: usize,
}

/// The environment that places the agents' folders.
pub struct UserDirs {
    home: PathBuf,
    vars: Vec<(&'static str, OsString)>,
}

/// The variables that move an agent's user-level folder.
const VARS: [&str; 7] = [
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "GEMINI_CLI_HOME",
    "XDG_CONFIG_HOME",
    "QWEN_HOME",
    "COPILOT_HOME",
    "PI_CODING_AGENT_DIR",
];

impl UserDirs {
    /// From this process's environment: `HOME` must be an absolute path.
    pub fn from_env() -> Result<UserDirs> {
        let home = std::env::var_os("HOME")
            .filter(|h| Path::new(h).is_absolute())
            .ok_or_else(|| {
                Error::usage("HOME is not set to an absolute path: no user-level configuration")
                    .with_hint("set HOME to your home folder, then retry")
            })?;
        let vars = VARS
            .iter()
            .filter_map(|k| {
                std::env::var_os(k)
                    .filter(|v| Path::new(v).is_absolute())
                    .map(|v| (*k, v))
            })
            .collect();
        Ok(UserDirs {
            home: PathBuf::from(home),
            vars,
        })
    }

    /// The user's home folder.
    pub fn home(&self) -> &Path {
        &self.home
    }

    fn var(&self, key: &str) -> Option<PathBuf> {
        self.vars
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| PathBuf::from(v))
    }

    /// The agent's own folder of user-level files, and whether a variable named it.
    fn own(&self, var: &str, default: &str) -> (PathBuf, bool) {
        match self.var(var) {
            Some(dir) => (dir, true),
            None => (self.home.join(default), false),
        }
    }

    /// Codex's folder (`CODEX_HOME`, else `~/.codex`), where it keeps its trust too.
    pub fn codex_home(&self) -> PathBuf {
        self.own("CODEX_HOME", ".codex").0
    }

    /// The folder Gemini CLI puts its `.gemini` in (`GEMINI_CLI_HOME`, else the home).
    pub fn gemini_home(&self) -> PathBuf {
        self.var("GEMINI_CLI_HOME")
            .unwrap_or_else(|| self.home.clone())
    }

    /// Qwen Code's folder (`QWEN_HOME`, else `~/.qwen`).
    pub fn qwen_home(&self) -> PathBuf {
        self.own("QWEN_HOME", ".qwen").0
    }

    /// Copilot CLI's folder (`COPILOT_HOME`, else `~/.copilot`).
    pub fn copilot_home(&self) -> PathBuf {
        self.own("COPILOT_HOME", ".copilot").0
    }

    /// Pi's agent folder (`PI_CODING_AGENT_DIR`, else `~/.pi/agent`).
    pub fn pi_agent_dir(&self) -> PathBuf {
        self.own("PI_CODING_AGENT_DIR", ".pi/agent").0
    }

    /// Where `agent` reads its user-level hooks (checked in each CLI's sources).
    pub fn file(&self, agent: Agent) -> UserFile {
        // (the agent's folder, whether a variable named it, the file below it, how many
        // folders of the default above the agent's folder are the agent's own too)
        let (dir, named, rel, above) = match agent {
            Agent::Claude => {
                let (d, n) = self.own("CLAUDE_CONFIG_DIR", ".claude");
                (d, n, "settings.json", 0)
            }
            Agent::Codex => {
                let (d, n) = self.own("CODEX_HOME", ".codex");
                (d, n, "hooks.json", 0)
            }
            // `.gemini` is Gemini's own below GEMINI_CLI_HOME as below the home.
            Agent::Gemini => (
                self.gemini_home().join(".gemini"),
                false,
                "settings.json",
                0,
            ),
            Agent::Cursor => (self.home.join(".cursor"), false, "hooks.json", 0),
            // `~/.config` is left empty by nothing but us when we created it; a folder
            // XDG_CONFIG_HOME names is the user's. Kilo, OpenCode's fork, reads its user
            // plugins there too (and in `~/.kilo`).
            Agent::Opencode | Agent::Kilo => {
                let (config, named) = self.own("XDG_CONFIG_HOME", ".config");
                let own = if agent == Agent::Kilo {
                    "kilo"
                } else {
                    "opencode"
                };
                (
                    config.join(own),
                    false,
                    OPENCODE_PLUGIN,
                    usize::from(!named),
                )
            }
            Agent::Droid => (self.home.join(".factory"), false, "settings.json", 0),
            Agent::Auggie => (self.home.join(".augment"), false, "settings.json", 0),
            Agent::Qwen => {
                let (d, n) = self.own("QWEN_HOME", ".qwen");
                (d, n, "settings.json", 0)
            }
            Agent::Copilot => {
                let (d, n) = self.own("COPILOT_HOME", ".copilot");
                (d, n, "hooks/agent-rewind.json", 0)
            }
            Agent::Pi => {
                let (d, n) = self.own("PI_CODING_AGENT_DIR", ".pi/agent");
                // `~/.pi` holds nothing but Pi's own.
                (d, n, "extensions/agent-rewind.ts", usize::from(!n))
            }
        };
        let below = rel.matches('/').count();
        UserFile {
            agent,
            path: dir.join(rel),
            folders: below + if named { 0 } else { 1 + above },
        }
    }
}

/// What installing would write for one agent, checked before anything is written.
enum Planned {
    Json(super::settings::Prepared),
    Owned(&'static OwnedFile, PathBuf),
}

/// How an agent holds its hooks: entries in a JSON file, or a file of ours it loads.
enum Holder {
    Json(JsonConfig),
    Owned(&'static OwnedFile),
}

/// How `agent` holds its hooks (OpenCode's plugin and Pi's extension are files of ours).
fn holder(agent: Agent) -> Holder {
    match (JsonConfig::of(agent), agent) {
        (Some(config), _) => Holder::Json(config),
        (None, _) => Holder::Owned(OwnedFile::of(agent).unwrap_or(&super::opencode::FILE)),
    }
}

/// A file as it was before this command wrote it, to put back if a later write fails.
struct Written {
    path: PathBuf,
    /// Bytes and mode; `None`: the file did not exist.
    before: Option<(Vec<u8>, u32)>,
    /// The backup this command wrote (removed again on failure).
    backup: Option<PathBuf>,
    folders: usize,
}

/// The bytes and mode of `path`, `None` when it does not exist.
fn read_with_mode(path: &Path) -> Result<Option<(Vec<u8>, u32)>> {
    match std::fs::read(path) {
        Ok(bytes) => {
            let mode = permission_bits(&std::fs::metadata(path).at(path)?);
            Ok(Some((bytes, mode)))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::other(format!(
            "could not read {}: {e}",
            path.display()
        ))),
    }
}

/// The backup file of the configuration file at `path`.
pub fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(BACKUP_SUFFIX);
    path.with_file_name(name)
}

/// Install `agents`' hooks at the user level.
pub fn install(dirs: &UserDirs, agents: &[Agent]) -> Result<Vec<SettingsChange>> {
    let mut planned = vec![];
    for &agent in agents {
        let file = dirs.file(agent);
        planned.push(match holder(agent) {
            Holder::Json(config) => {
                let prepared = config.prepare_at(file.path.clone())?;
                (file, Planned::Json(prepared))
            }
            Holder::Owned(owned) => {
                owned.check_at(&file.path)?;
                let path = file.path.clone();
                (file, Planned::Owned(owned, path))
            }
        });
    }
    let mut written: Vec<Written> = vec![];
    let mut out = vec![];
    for (file, plan) in planned {
        match write_one(&file, plan, &mut written) {
            Ok(change) => out.push(change),
            Err(e) => {
                put_back(written);
                return Err(e);
            }
        }
    }
    Ok(out)
}

/// Write one agent's file, noting what it was first.
fn write_one(file: &UserFile, plan: Planned, written: &mut Vec<Written>) -> Result<SettingsChange> {
    let changes = match &plan {
        Planned::Json(p) => p.changes(),
        Planned::Owned(owned, path) => owned.check_at(path)? != FileAction::Unchanged,
    };
    if !changes {
        return match plan {
            Planned::Json(p) => p.write(),
            Planned::Owned(owned, path) => owned.install_at(&path),
        };
    }
    let before = read_with_mode(&file.path)?;
    // Noted before anything is written, so that a failure below is put back too.
    written.push(Written {
        path: file.path.clone(),
        before: before.clone(),
        backup: None,
        folders: file.folders,
    });
    // The copy of a file we add to, taken once: before the first install that adds to it.
    if let (Planned::Json(_), Some((bytes, mode)), Holder::Json(config)) =
        (&plan, &before, holder(file.agent))
        && config.installed_at(&file.path).is_empty()
    {
        let backup = backup_path(&file.path);
        agent_rewind_core::private::write_atomic(&backup, bytes, Some(*mode))?;
        if let Some(w) = written.last_mut() {
            w.backup = Some(backup);
        }
    }
    if let Some(dir) = file.path.parent() {
        std::fs::create_dir_all(dir).at(dir)?;
    }
    match plan {
        Planned::Json(p) => p.write(),
        Planned::Owned(owned, path) => owned.install_at(&path),
    }
}

/// After a failed install: every file this command wrote back as it was, its backups gone.
fn put_back(written: Vec<Written>) {
    for w in written.into_iter().rev() {
        match &w.before {
            Some((bytes, mode)) => {
                let _ = agent_rewind_core::private::write_atomic(&w.path, bytes, Some(*mode));
            }
            None => {
                if std::fs::remove_file(&w.path).is_ok() {
                    super::settings::remove_empty_dirs(&w.path, w.folders);
                }
            }
        }
        if let Some(b) = &w.backup {
            let _ = std::fs::remove_file(b);
        }
    }
}

/// Remove `agents`' hooks from the user level: exactly our entries; a file we added to is
/// written back byte for byte when nothing else changed in it since.
pub fn uninstall(dirs: &UserDirs, agents: &[Agent]) -> Result<Vec<SettingsChange>> {
    // Every file read and parsed before the first is changed.
    for &agent in agents {
        if let Holder::Json(config) = holder(agent) {
            config.check_readable(&dirs.file(agent).path)?;
        }
    }
    let mut out = vec![];
    for &agent in agents {
        let file = dirs.file(agent);
        let change = match holder(agent) {
            Holder::Json(config) => {
                let backup = backup_path(&file.path);
                let original = read_with_mode(&backup)?;
                let change = config.uninstall_at(
                    &file.path,
                    file.folders,
                    original.as_ref().map(|(b, m)| (b.as_slice(), *m)),
                )?;
                // The copy is of no use once our entries are out (or were taken out by hand).
                if original.is_some() {
                    std::fs::remove_file(&backup).at(&backup)?;
                }
                change
            }
            Holder::Owned(owned) => owned.uninstall_at(&file.path, file.folders)?,
        };
        out.push(change);
    }
    Ok(out)
}

/// The events our entries hold in `agent`'s user-level file (empty: not installed there),
/// and the file.
pub fn installed(dirs: &UserDirs, agent: Agent) -> (PathBuf, Vec<String>) {
    let file = dirs.file(agent);
    let events = match holder(agent) {
        Holder::Json(config) => config.installed_at(&file.path),
        Holder::Owned(owned) => match std::fs::read_to_string(&file.path) {
            Ok(t) if owned.is_ours(&t) => owned.events.iter().map(|e| e.to_string()).collect(),
            _ => vec![],
        },
    };
    (file.path, events)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs(vars: &[(&'static str, &str)]) -> UserDirs {
        UserDirs {
            home: PathBuf::from("/h"),
            vars: vars.iter().map(|(k, v)| (*k, OsString::from(v))).collect(),
        }
    }

    #[test]
    fn each_agents_user_file_and_the_folders_that_are_its_own() {
        let d = dirs(&[]);
        let f = |a| {
            let f = d.file(a);
            (f.path.display().to_string(), f.folders)
        };
        assert_eq!(f(Agent::Claude), ("/h/.claude/settings.json".into(), 1));
        assert_eq!(f(Agent::Codex), ("/h/.codex/hooks.json".into(), 1));
        assert_eq!(f(Agent::Gemini), ("/h/.gemini/settings.json".into(), 1));
        assert_eq!(f(Agent::Cursor), ("/h/.cursor/hooks.json".into(), 1));
        assert_eq!(
            f(Agent::Opencode),
            ("/h/.config/opencode/plugins/git-agent-rewind.js".into(), 3)
        );
        assert_eq!(f(Agent::Qwen), ("/h/.qwen/settings.json".into(), 1));
        assert_eq!(f(Agent::Droid), ("/h/.factory/settings.json".into(), 1));
        assert_eq!(f(Agent::Auggie), ("/h/.augment/settings.json".into(), 1));
        assert_eq!(
            f(Agent::Kilo),
            ("/h/.config/kilo/plugins/git-agent-rewind.js".into(), 3)
        );
        assert_eq!(
            f(Agent::Copilot),
            ("/h/.copilot/hooks/agent-rewind.json".into(), 2)
        );
        assert_eq!(
            f(Agent::Pi),
            ("/h/.pi/agent/extensions/agent-rewind.ts".into(), 3)
        );
        let d = dirs(&[("CODEX_HOME", "/c"), ("PI_CODING_AGENT_DIR", "/p")]);
        assert_eq!(d.file(Agent::Codex).path, Path::new("/c/hooks.json"));
        assert_eq!(d.file(Agent::Codex).folders, 0, "the user's folder stays");
        assert_eq!(d.file(Agent::Pi).folders, 1);
    }
}
