//! The differences between two trees as text, the way `git diff` prints them: rendered
//! in-process when that is certain to equal git's output (`patch`), else by git itself. It
//! reads only; it never writes the worktree or the index.

use crate::gitprocess::stdout_bytes_of;
use crate::repository::Store;
use agent_rewind_core::error::Result;
use std::path::Path;

/// The differences between two trees, as text.
#[derive(Clone, Copy)]
pub struct Diff<'s> {
    pub(crate) store: &'s Store,
}

impl Diff<'_> {
    /// `git diff` between two trees as git prints it (`diff --git a/… b/…`, index and mode
    /// lines, the user's diff drivers), or its `--stat`, as `how` asks.
    pub fn text(&self, from: &str, to: &str, how: &DiffText<'_>) -> Result<Vec<u8>> {
        let mut args = vec![
            "diff",
            "--no-ext-diff",
            if how.color {
                "--color=always"
            } else {
                "--no-color"
            },
        ];
        if how.as_user_in.is_none() {
            args.extend(["--src-prefix=a/", "--dst-prefix=b/"]);
        }
        if how.stat {
            args.push("--stat");
        }
        args.extend([from, to, "--"]);
        // Paths are the worktree's (from its top) whatever folder git runs in, and never
        // patterns.
        let paths: Vec<String> = how
            .paths
            .iter()
            .map(|p| match p.as_str() {
                "." | "" => ":(top)".to_string(),
                p => format!(":(top,literal){p}"),
            })
            .collect();
        args.extend(paths.iter().map(String::as_str));
        let top = self.store.git_run_dir();
        // In the user's folder, git applies `diff.relative` itself, as their `git diff` would.
        let dir = match how.as_user_in {
            Some(d) if d.starts_with(top) => d,
            _ => top,
        };
        stdout_bytes_of(&args, self.store.git_output_in(dir, &args)?)
    }

    /// What `git diff --no-ext-diff --no-color --src-prefix=a/ --dst-prefix=b/ [--stat]
    /// <from> <to>` prints (run by us, its output a pipe), when it can be rendered here
    /// with certainty; `None` when git must run.
    pub fn text_inprocess(&self, from: &str, to: &str, stat: bool) -> Result<Option<Vec<u8>>> {
        self.store.diff_text_inprocess(from, to, stat)
    }
}

/// What [`Diff::text`] prints.
#[derive(Debug, Clone, Copy, Default)]
pub struct DiffText<'a> {
    /// git's `--stat` instead of the patch.
    pub stat: bool,
    /// git's colour codes.
    pub color: bool,
    /// Only these paths (files or folders, relative to the worktree's top).
    pub paths: &'a [String],
    /// Print what the user's own `git diff` prints when run in this folder: their prefix
    /// settings (`diff.noprefix`, `diff.srcPrefix`, `diff.dstPrefix`) and `diff.relative`
    /// apply. `None`: `a/` and `b/` and paths from the top whatever the configuration, for a
    /// program that reads the patch.
    pub as_user_in: Option<&'a Path>,
}
