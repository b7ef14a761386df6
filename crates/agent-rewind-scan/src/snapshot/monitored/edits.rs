//! Turning the paths a filesystem monitor reported into edits of the last checkpoint's
//! tree, as the full pass would decide each path (see the parent module's comment). It
//! reads the worktree and writes only objects; any doubt is a reason for the full pass.

use super::MAX_PATHS;
use crate::ScanContext;
use crate::gixerror::from_gix;
use crate::rawindex::{RawEntry, RawIndex};
use crate::snapshot::Excluded;
use crate::snapshot::{NewFile, Policy, TreeEdits, new_file};
use agent_rewind_core::error::Result;
use gix::ObjectId;
use gix::bstr::{BStr, BString, ByteSlice};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

/// The paths to look at, gathered from the monitor's report.
pub(super) struct Work<'a> {
    ctx: &'a ScanContext<'a>,
    repo: &'a gix::Repository,
    workdir: PathBuf,
    last: ObjectId,
    reported: &'a [BString],
    /// Paths to look at as files (gone ones included).
    pub files: BTreeSet<BString>,
    /// Paths that were not folders of the last tree but are folders now: the index must hold
    /// nothing below them.
    new_dirs: Vec<BString>,
    /// Folders of the last tree that are gone or replaced.
    removed: Vec<BString>,
    /// Folders of the last tree that were listed.
    listed: Vec<BString>,
    excludes: Option<gix::AttributeStack<'a>>,
    ignored_dirs: HashMap<BString, bool>,
    /// Folders known to be real folders of this worktree, or not ([`Work::real_dir`]).
    real_dirs: HashMap<BString, bool>,
    pub dirs_read: usize,
}

/// A reason for the full pass, or the value.
pub(super) type Why<T> = std::result::Result<T, &'static str>;

/// The kind of a path on disk.
enum Found {
    Gone,
    Dir,
    /// A regular file or a symlink.
    File,
}

impl<'a> Work<'a> {
    pub(super) fn new(
        ctx: &'a ScanContext<'a>,
        last: ObjectId,
        reported: &'a [BString],
    ) -> Result<Work<'a>> {
        Ok(Work {
            ctx,
            repo: ctx.repo(),
            workdir: ctx.workdir().to_path_buf(),
            last,
            reported,
            files: BTreeSet::new(),
            new_dirs: Vec::new(),
            removed: Vec::new(),
            listed: Vec::new(),
            excludes: None,
            ignored_dirs: HashMap::new(),
            real_dirs: HashMap::new(),
            dirs_read: 0,
        })
    }

    fn full(&self, rela: &BStr) -> PathBuf {
        self.workdir.join(agent_rewind_core::quote::rel_path(rela))
    }

    /// What is at `rela` on disk. Below a symlink or a file nothing of the worktree is (as
    /// git sees it); below a nested repository the full pass decides.
    fn on_disk(&mut self, rela: &BStr) -> Why<Found> {
        if let Some(i) = rela.rfind_byte(b'/')
            && !self.real_dir(rela[..i].as_bstr())?
        {
            return Ok(Found::Gone);
        }
        match std::fs::symlink_metadata(self.full(rela)) {
            Ok(md) if md.is_dir() => Ok(Found::Dir),
            Ok(md) if md.is_file() || md.file_type().is_symlink() => Ok(Found::File),
            Ok(_) => Err("a kind of file a tree cannot hold"),
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    || e.kind() == std::io::ErrorKind::NotADirectory =>
            {
                Ok(Found::Gone)
            }
            Err(_) => Err("a reported path cannot be looked at"),
        }
    }

    /// Whether `dir` and every folder above it are folders of this worktree: real folders
    /// (not symlinks), none the top of a nested repository (an error: the full pass decides).
    fn real_dir(&mut self, dir: &BStr) -> Why<bool> {
        if let Some(yes) = self.real_dirs.get(dir) {
            return Ok(*yes);
        }
        let above = match dir.rfind_byte(b'/') {
            Some(i) => self.real_dir(dir[..i].as_bstr())?,
            None => true,
        };
        let full = self.full(dir);
        let yes = above && std::fs::symlink_metadata(&full).is_ok_and(|md| md.is_dir());
        if yes && std::fs::symlink_metadata(full.join(".git")).is_ok() {
            return Err("a nested repository");
        }
        self.real_dirs.insert(dir.to_owned(), yes);
        Ok(yes)
    }

    /// The entry of `tree` at `rela`: its mode and id.
    fn in_tree(
        &self,
        tree: ObjectId,
        rela: &BStr,
    ) -> Option<(gix::objs::tree::EntryMode, ObjectId)> {
        let tree = self.repo.find_tree(tree).ok()?;
        let entry = tree.lookup_entry(rela.split_str("/")).ok()??;
        Some((entry.mode(), entry.object_id()))
    }

    /// Turn the report into files to look at (see the module comment).
    pub(super) fn gather(&mut self) -> Why<()> {
        for p in self.reported {
            let p = p.as_bstr();
            check_name(p)?;
            self.classify(p)?;
            if self.files.len() + self.new_dirs.len() > MAX_PATHS {
                return Err("too many paths below new folders");
            }
        }
        Ok(())
    }

    fn classify(&mut self, p: &BStr) -> Why<()> {
        match self.on_disk(p)? {
            Found::Gone | Found::File => {
                self.files.insert(p.to_owned());
            }
            Found::Dir => match self.in_tree(self.last, p) {
                Some((mode, id)) if mode.is_tree() => self.list_against_tree(p, id)?,
                other => {
                    if other.is_some() {
                        self.removed.push(p.to_owned());
                    }
                    if !self.is_ignored_dir(p)? {
                        self.expand(p)?;
                    }
                }
            },
        }
        Ok(())
    }

    /// A reported folder of the last tree: names on disk that tree lacks, and names of
    /// that tree gone from disk, are looked at too (the monitor reports them; this only
    /// makes sure).
    fn list_against_tree(&mut self, p: &BStr, tree: ObjectId) -> Why<()> {
        let names = self.read_dir(p)?;
        self.listed.push(p.to_owned());
        let tree = self
            .repo
            .find_tree(tree)
            .map_err(|_| "a folder of the last tree cannot be read")?;
        let decoded = tree
            .decode()
            .map_err(|_| "a folder of the last tree cannot be read")?;
        let in_tree: BTreeSet<&BStr> = decoded.entries.iter().map(|e| e.filename).collect();
        for (name, _) in &names {
            let child = join(p, name.as_bstr());
            if !in_tree.contains(name.as_bstr()) && !self.is_reported(child.as_bstr()) {
                check_name(child.as_bstr())?;
                self.classify(child.as_bstr())?;
            }
        }
        let on_disk: BTreeSet<&BStr> = names.iter().map(|(n, _)| n.as_bstr()).collect();
        for name in in_tree.iter().filter(|n| !on_disk.contains(*n)) {
            let child = join(p, name);
            if !self.is_reported(child.as_bstr()) {
                check_name(child.as_bstr())?;
                self.files.insert(child);
            }
        }
        Ok(())
    }

    /// A new folder: everything in it that is not in an ignored folder.
    fn expand(&mut self, p: &BStr) -> Why<()> {
        self.new_dirs.push(p.to_owned());
        for (name, is_dir) in self.read_dir(p)? {
            let child = join(p, name.as_bstr());
            check_name(child.as_bstr())?;
            if is_dir {
                if !self.is_ignored_dir(child.as_bstr())? {
                    self.expand(child.as_bstr())?;
                }
            } else {
                self.files.insert(child);
            }
            if self.files.len() + self.new_dirs.len() > MAX_PATHS {
                return Err("too many paths below new folders");
            }
        }
        Ok(())
    }

    /// The names in folder `p`, and whether each is a folder (not through a symlink).
    fn read_dir(&mut self, p: &BStr) -> Why<Vec<(BString, bool)>> {
        self.dirs_read += 1;
        let mut out = Vec::new();
        let dir = std::fs::read_dir(self.full(p)).map_err(|_| "a folder cannot be read")?;
        for entry in dir {
            let entry = entry.map_err(|_| "a folder cannot be read")?;
            let kind = entry.file_type().map_err(|_| "a folder cannot be read")?;
            let name = gix::path::os_str_into_bstr(&entry.file_name())
                .map_err(|_| "a name that is not UTF-8")?
                .to_owned();
            out.push((name, kind.is_dir()));
        }
        Ok(out)
    }

    fn is_reported(&self, p: &BStr) -> bool {
        self.reported
            .binary_search_by(|r| r.as_bstr().cmp(p))
            .is_ok()
    }

    /// Whether folder `p` or one above it is ignored.
    fn is_ignored_dir(&mut self, p: &BStr) -> Why<bool> {
        if let Some(yes) = self.ignored_dirs.get(p) {
            return Ok(*yes);
        }
        let above = match p.rfind_byte(b'/') {
            Some(i) => self.is_ignored_dir(p[..i].as_bstr())?,
            None => false,
        };
        let yes = above || self.matches_ignore(p, gix::index::entry::Mode::DIR)?;
        self.ignored_dirs.insert(p.to_owned(), yes);
        Ok(yes)
    }

    /// Whether the untracked file `p` is ignored (itself, or a folder above it).
    fn is_ignored_file(&mut self, p: &BStr) -> Why<bool> {
        if let Some(i) = p.rfind_byte(b'/')
            && self.is_ignored_dir(p[..i].as_bstr())?
        {
            return Ok(true);
        }
        self.matches_ignore(p, gix::index::entry::Mode::FILE)
    }

    fn matches_ignore(&mut self, p: &BStr, mode: gix::index::entry::Mode) -> Why<bool> {
        if self.excludes.is_none() {
            // A plain index has no skip-worktree `.gitignore`: they are all read from disk.
            let empty = gix::index::State::new(self.repo.object_hash());
            self.excludes = self
                .repo
                .excludes(
                    &empty,
                    None,
                    gix::worktree::stack::state::ignore::Source::WorktreeThenIdMappingIfNotSkipped,
                )
                .ok();
        }
        let stack = self
            .excludes
            .as_mut()
            .ok_or("the ignore rules cannot be read")?;
        stack
            .at_entry(p, Some(mode))
            .map(|m| m.is_excluded())
            .map_err(|_| "the ignore rules cannot be read")
    }

    /// The new tree and what the policy leaves out, or why the full pass must decide (an
    /// index entry below a new folder: files a walk of it would have to take as tracked).
    pub(super) fn edit(
        &mut self,
        policy: &Policy,
        head_tree: ObjectId,
        raw: &RawIndex,
        mut excluded: Vec<Excluded>,
    ) -> Result<Why<Edited>> {
        let files: Vec<BString> = self.files.iter().cloned().collect();
        self.new_dirs.sort();
        let (entries, below) = raw.lookup(&files, &self.new_dirs);
        agent_rewind_core::trace::mark("snapshot: index entries looked up");
        // Every index entry below a new folder must be one of the files looked at: the walk
        // of the folder skips ignored folders, where a tracked file may be.
        for (dir, in_index) in self.new_dirs.iter().zip(&below) {
            let looked_at = files
                .iter()
                .zip(&entries)
                .filter(|(p, e)| e.is_some() && is_below(p.as_bstr(), dir.as_bstr()))
                .count();
            if looked_at != *in_index {
                return Ok(Err("an index entry below a new folder"));
            }
        }
        let repo = self.repo;
        let fs = repo.filesystem_options().map_err(from_gix)?;
        let empty = gix::index::State::new(repo.object_hash());
        let attributes = repo
            .attributes_only(
                &empty,
                gix::worktree::stack::state::attributes::Source::WorktreeThenIdMapping,
            )
            .map_err(from_gix)?;
        let mut pipeline =
            gix::filter::Pipeline::new(repo, attributes.detach()).map_err(from_gix)?;
        let protect = self.ctx.protect_options();
        agent_rewind_core::trace::mark("snapshot: filters ready");
        let mut upserts = Vec::new();
        let mut removals: Vec<BString> = std::mem::take(&mut self.removed);
        let mut left_out = Vec::new();
        for (p, entry) in files.iter().zip(entries) {
            let p = p.as_bstr();
            let on_disk = match self.on_disk(p) {
                Ok(d) => d,
                Err(why) => return Ok(Err(why)),
            };
            match (on_disk, entry) {
                (Found::Gone, _) => removals.push(p.to_owned()),
                (Found::Dir, _) => {
                    // Came from a listing: a name of the last tree that is now a folder the
                    // monitor did not report. Should not happen; the full pass decides.
                    return Ok(Err("a file of the last tree is a folder now"));
                }
                (Found::File, Some(e)) => {
                    if let Some(pattern) = policy.excluded_pattern(&p.to_str_lossy())
                        && self.in_tree(head_tree, p).is_none()
                    {
                        // A staged new file matching a secret pattern, as the full pass.
                        left_out.push((p.to_owned(), format!("matches secret pattern {pattern}")));
                        removals.push(p.to_owned());
                        continue;
                    }
                    match tracked_blob(repo, &mut pipeline, &e, fs.symlink, fs.executable_bit)? {
                        Some(blob) => upserts.push((p.to_owned(), blob)),
                        None => removals.push(p.to_owned()),
                    }
                }
                (Found::File, None) => {
                    let ignored = match self.is_ignored_file(p) {
                        Ok(yes) => yes,
                        Err(why) => return Ok(Err(why)),
                    };
                    if ignored {
                        removals.push(p.to_owned());
                        continue;
                    }
                    match new_file(policy, protect, &self.workdir, &mut pipeline, &empty, p)? {
                        NewFile::Blob(id, kind) => upserts.push((p.to_owned(), (id, kind))),
                        NewFile::Excluded(reason) => {
                            left_out.push((p.to_owned(), reason));
                            removals.push(p.to_owned());
                        }
                        NewFile::Gone => removals.push(p.to_owned()),
                    }
                }
            }
        }
        agent_rewind_core::trace::mark("snapshot: files hashed");
        let mut editor = TreeEdits::new(repo, self.last)?;
        for p in &removals {
            editor.remove(p.as_bstr())?;
        }
        for (p, (id, kind)) in &upserts {
            editor.upsert(p.as_bstr(), *kind, *id)?;
        }
        let tree = editor.write()?;
        // What was left out before stays so, unless its path was looked at again: a file,
        // or anything below a folder gone or walked whole; a folder listed was readable.
        let looked_at: Vec<String> = files
            .iter()
            .chain(removals.iter())
            .chain(self.new_dirs.iter())
            .map(|p| agent_rewind_core::quote::text_path(p))
            .collect();
        let listed: Vec<String> = self
            .listed
            .iter()
            .map(|p| format!("{}/", agent_rewind_core::quote::text_path(p)))
            .collect();
        excluded.retain(|x| {
            !listed.contains(&x.path)
                && !looked_at.iter().any(|p| {
                    x.path == *p
                        || (x.path.starts_with(p.as_str())
                            && x.path.as_bytes().get(p.len()) == Some(&b'/'))
                })
        });
        excluded.extend(left_out.into_iter().map(|(p, reason)| Excluded {
            path: agent_rewind_core::quote::text_path(&p),
            reason,
        }));
        excluded.sort_by(|a, b| a.path.cmp(&b.path));
        excluded.dedup_by(|a, b| a.path == b.path);
        Ok(Ok(Edited { tree, excluded }))
    }
}

pub(super) struct Edited {
    pub tree: ObjectId,
    pub excluded: Vec<Excluded>,
}

/// The tracked file at `e.path` as the full pass takes it: hashed, and its index entry kept
/// when the content and (by the repository's rules) the mode still match it. `None` when it
/// went away meanwhile.
fn tracked_blob(
    repo: &gix::Repository,
    pipeline: &mut gix::filter::Pipeline<'_>,
    e: &RawEntry,
    symlinks: bool,
    executable_bit: bool,
) -> Result<Option<(ObjectId, gix::objs::tree::EntryKind)>> {
    use gix::index::entry::{Flags, Mode, Stat};
    let mode = Mode::from_bits_truncate(e.mode);
    // The entry alone: the filters ask the index for it (`core.autocrlf`'s "safer" rule).
    let mut one = gix::index::State::new(repo.object_hash());
    one.dangerously_push_entry(
        Stat::default(),
        e.id,
        Flags::empty(),
        mode,
        e.path.as_bstr(),
    );
    let Some((id, kind, md)) = crate::snapshot::retry_object_write(|| {
        pipeline.worktree_file_to_object(e.path.as_bstr(), &one)
    })
    .map_err(from_gix)?
    else {
        return Ok(None);
    };
    let executable = agent_rewind_core::platform::mode::is_executable(&md);
    let mode_change = mode.change_to_match_fs_with_values(
        md.is_file(),
        md.is_dir(),
        md.file_type().is_symlink(),
        executable,
        symlinks,
        executable_bit,
    );
    if id == e.id
        && mode_change.is_none()
        && let Some(kind) = mode.to_tree_entry_mode().map(|m| m.kind())
    {
        return Ok(Some((e.id, kind)));
    }
    Ok(Some((id, kind)))
}

/// Names this never decides itself: the full pass does.
fn check_name(p: &BStr) -> Why<()> {
    if p.to_str().is_err() {
        return Err("a name that is not UTF-8");
    }
    for c in p.split_str("/") {
        if c == b".git" {
            return Err("a .git inside the worktree");
        }
    }
    match p.rsplit_str("/").next() {
        Some(b".gitignore") => Err("a .gitignore changed"),
        Some(b".gitattributes") => Err("a .gitattributes changed"),
        _ => Ok(()),
    }
}

fn is_below(p: &BStr, dir: &BStr) -> bool {
    p.len() > dir.len() && p.starts_with(dir) && p[dir.len()] == b'/'
}

fn join(dir: &BStr, name: &BStr) -> BString {
    if dir.is_empty() {
        return name.to_owned();
    }
    let mut out = dir.to_owned();
    out.push(b'/');
    out.extend_from_slice(name);
    out
}
