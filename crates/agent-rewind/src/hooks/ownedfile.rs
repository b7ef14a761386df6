//! A file that is ours as a whole and that an agent loads from the project: OpenCode's
//! plugin, Pi's extension. Recognised by its first line; installing writes it (or refreshes
//! an older copy of ours), uninstalling deletes it with the folders it leaves empty. A file
//! of that name that is not ours is refused and left untouched, and no other file of the
//! agent's folder is ever touched.

use super::Agent;
use super::install::{FileAction, write_atomic};
use super::settings::SettingsChange;
use crate::store::Store;
use agent_rewind_core::error::{Error, Result};
use std::path::{Path, PathBuf};

/// One such file: who loads it, where it goes, its text and how to know it is ours.
#[derive(Debug, Clone, Copy)]
pub struct OwnedFile {
    pub agent: Agent,
    /// Where it goes, relative to the worktree root.
    pub path: &'static str,
    /// The file as installed (a function: one agent's file may be another's template,
    /// rendered once).
    pub text: fn() -> &'static str,
    /// How its first line starts, in every version we wrote.
    pub first_line: &'static str,
    /// The agent's events it forwards.
    pub events: &'static [&'static str],
}

impl OwnedFile {
    /// The file of ours an agent without JSON hooks loads: Pi's extension, Kilo's and
    /// OpenCode's plugins (`None` for an agent whose hooks are JSON entries).
    pub fn of(agent: Agent) -> Option<&'static OwnedFile> {
        match agent {
            Agent::Pi => Some(&super::pi::FILE),
            Agent::Kilo => Some(&super::kilo::FILE),
            Agent::Opencode => Some(&super::opencode::FILE),
            _ => None,
        }
    }

    fn path(&self, store: &Store) -> Result<PathBuf> {
        Ok(store.worktree().root()?.join(self.path))
    }

    /// Whether `text` is a file of ours (any version).
    pub fn is_ours(&self, text: &str) -> bool {
        text.lines()
            .next()
            .is_some_and(|l| l.starts_with(self.first_line))
    }

    fn change(&self, path: &Path, action: FileAction, events: bool) -> SettingsChange {
        SettingsChange {
            agent: self.agent,
            path: path.display().to_string(),
            action,
            events: match events {
                true => self.events.iter().map(|e| e.to_string()).collect(),
                false => vec![],
            },
        }
    }

    /// What installing would do, or why it is refused (nothing written).
    pub fn check(&self, store: &Store) -> Result<FileAction> {
        self.check_at(&self.path(store)?)
    }

    /// [`OwnedFile::check`] of the file at `path`.
    pub fn check_at(&self, path: &Path) -> Result<FileAction> {
        Ok(match std::fs::read(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => FileAction::Created,
            Err(e) => {
                return Err(Error::other(format!(
                    "could not read {}: {e}",
                    path.display()
                )));
            }
            Ok(bytes) if bytes == (self.text)().as_bytes() => FileAction::Unchanged,
            Ok(bytes) if self.is_ours(&String::from_utf8_lossy(&bytes)) => FileAction::Updated,
            Ok(_) => {
                return Err(Error::refused(format!(
                    "{} exists and is not ours; left it untouched",
                    path.display()
                ))
                .with_hint(format!(
                    "move it aside, then run `git agent-rewind hooks install --agent {}` again",
                    self.agent.name()
                )));
            }
        })
    }

    /// Write the file.
    pub fn install(&self, store: &Store) -> Result<SettingsChange> {
        self.install_at(&self.path(store)?)
    }

    /// [`OwnedFile::install`] at `path`.
    pub fn install_at(&self, path: &Path) -> Result<SettingsChange> {
        let action = self.check_at(path)?;
        if action != FileAction::Unchanged {
            let dir = path.parent().expect("has a parent");
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::other(format!("could not create {}: {e}", dir.display())))?;
            write_atomic(path, (self.text)(), 0o644)?;
        }
        Ok(self.change(path, action, action != FileAction::Unchanged))
    }

    /// Delete the file (only when it is ours), and the two folders above it when that leaves
    /// them empty.
    pub fn uninstall(&self, store: &Store) -> Result<SettingsChange> {
        self.uninstall_at(&self.path(store)?, 2)
    }

    /// [`OwnedFile::uninstall`] at `path`, removing up to `folders` folders above it that it
    /// leaves empty.
    pub fn uninstall_at(&self, path: &Path, folders: usize) -> Result<SettingsChange> {
        match std::fs::read(path) {
            Ok(bytes) if self.is_ours(&String::from_utf8_lossy(&bytes)) => {
                std::fs::remove_file(path).map_err(|e| {
                    Error::other(format!("could not remove {}: {e}", path.display()))
                })?;
                super::settings::remove_empty_dirs(path, folders);
                Ok(self.change(path, FileAction::Deleted, true))
            }
            _ => Ok(self.change(path, FileAction::Absent, false)),
        }
    }
}
