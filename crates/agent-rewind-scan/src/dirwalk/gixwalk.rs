//! gix's directory walk as `gix::Repository::dirwalk` runs it (no patterns, nothing to
//! delete), but with ignore and attribute stacks built from the index's `.gitignore` and
//! `.gitattributes` entries only, which is all gix takes from the index for them. It only
//! reads; the walk's decisions and its cache are `scan::dirwalk`'s.

use gix::bstr::{BString, ByteSlice};
use std::sync::atomic::AtomicBool;

/// `repo.dirwalk(index, [], …)` (gix's own, for a walk with no patterns that deletes
/// nothing), but with the ignore stack built from the index's `.gitignore` entries only: gix
/// looks for them among every entry of the index, which costs milliseconds in a large one.
pub(super) fn dirwalk(
    repo: &gix::Repository,
    index: &gix::index::State,
    interrupt: &AtomicBool,
    options: gix::dirwalk::Options,
    delegate: &mut dyn gix::dir::walk::Delegate,
) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let workdir = repo.workdir().ok_or("a directory walk needs a worktree")?;
    let ignore_files = entries_named(repo, index, b".gitignore");
    let mut excludes = repo
        .excludes(
            ignore_files.as_ref().unwrap_or(index),
            None,
            gix::worktree::stack::state::ignore::Source::WorktreeThenIdMappingIfNotSkipped,
        )?
        .detach();
    let (mut search, _) = repo
        .pathspec(
            false,
            Vec::<BString>::new(),
            true,
            index,
            gix::worktree::stack::state::attributes::Source::WorktreeThenIdMapping,
        )?
        .into_parts();
    let git_dir_realpath = gix::path::realpath_opts(
        repo.git_dir(),
        repo.current_dir(),
        gix::path::realpath::MAX_SYMLINKS,
    )?;
    let fs_caps = repo.filesystem_options()?;
    let accelerate_lookup = fs_caps.ignore_case.then(|| index.prepare_icase_backing());
    gix::dir::walk(
        workdir,
        gix::dir::walk::Context {
            should_interrupt: Some(interrupt),
            git_dir_realpath: git_dir_realpath.as_ref(),
            current_dir: repo.current_dir(),
            index,
            ignore_case_index_lookup: accelerate_lookup.as_ref(),
            pathspec: &mut search,
            // No patterns, so no attributes in patterns: never asked.
            pathspec_attributes: &mut |_, _, _, _| false,
            excludes: Some(&mut excludes),
            objects: &repo.objects,
            explicit_traversal_root: Some(workdir),
        },
        options.into(),
        delegate,
    )?;
    Ok(())
}

/// The entries of `index` whose file name is `name` (`.gitignore`, `.gitattributes`), in a
/// state of their own, for gix's ignore and attribute stacks, which take nothing else from
/// the index. `None` (use the whole index) when names compare without case
/// (`core.ignoreCase`).
pub(crate) fn entries_named(
    repo: &gix::Repository,
    index: &gix::index::State,
    name: &[u8],
) -> Option<gix::index::State> {
    if repo
        .config_snapshot()
        .boolean("core.ignoreCase")
        .unwrap_or(false)
    {
        return None;
    }
    let mut only = gix::index::State::new(index.object_hash());
    if index.path_backing().find(name).is_none() {
        return Some(only);
    }
    let last = name.last().copied();
    for e in index.entries() {
        let path = e.path(index);
        // The last byte first: it rules out nearly every path without a call to memcmp.
        if path.last().copied() == last
            && path.ends_with(name)
            && (path.len() == name.len() || path[path.len() - name.len() - 1] == b'/')
        {
            only.dangerously_push_entry(e.stat, e.id, e.flags, e.mode, path);
        }
    }
    Some(only)
}
