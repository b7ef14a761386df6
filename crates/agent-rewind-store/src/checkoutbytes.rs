//! The bytes a checkout writes for a blob: what `git checkout` would write at that path,
//! byte for byte. gix's filter pipeline does the work (`text`, `eol`, `crlf`, `filter`
//! drivers), except for the two conversions where gix-filter 0.36 and git differ:
//!
//! - `ident`: gix writes `$Id: <sha>$`, git `$Id: <sha> $` (and git also rewrites an
//!   already expanded `$Id: … $`);
//! - `working-tree-encoding`: gix encodes with `encoding_rs`, which cannot encode UTF-16 or
//!   UTF-32 (it writes UTF-8 instead), and whose legacy encoders are WHATWG's, not iconv's.
//!
//! A path with either attribute in effect is converted by git itself (`git cat-file
//! --filters`), with the same attribute sources as the pipeline (worktree, then index).
//! Never writes anything: callers write the bytes.

use crate::repository::Store;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::quote::quote_path;
use agent_rewind_scan::gixerror::from_gix;
use gix::ObjectId;
use gix::bstr::{BStr, ByteSlice};
use std::io::Read;

/// Converts blobs to their worktree bytes, one path at a time (see the module's doc).
pub(crate) struct CheckoutBytes<'s> {
    store: &'s Store,
    pipeline: gix::filter::plumbing::Pipeline,
    attributes: gix::worktree::Stack,
    /// `ident` and `working-tree-encoding` at the current path, reused between paths.
    git_converts: gix::attrs::search::Outcome,
}

impl<'s> CheckoutBytes<'s> {
    pub(crate) fn new(store: &'s Store) -> Result<Self> {
        let (pipeline, _index) = store.repo.filter_pipeline(None).map_err(from_gix)?;
        let (pipeline, attributes) = pipeline.into_parts();
        let git_converts =
            attributes.selected_attribute_matches(["ident", "working-tree-encoding"]);
        Ok(CheckoutBytes {
            store,
            pipeline,
            attributes,
            git_converts,
        })
    }

    /// The bytes `git checkout` writes at `path` for the blob `id` whose content is `data`.
    pub(crate) fn for_worktree(
        &mut self,
        id: ObjectId,
        data: &[u8],
        path: &BStr,
    ) -> Result<Vec<u8>> {
        let shown = quote_path(path);
        let filter_failed =
            |e: &dyn std::fmt::Display| Error::other(format!("filter failed for {shown}: {e}"));
        let entry = self
            .attributes
            .at_entry(path, None, &self.store.repo.objects)
            .map_err(|e| filter_failed(&e).with_source(e))?;
        self.git_converts.reset();
        entry.matching_attributes(&mut self.git_converts);
        let by_git = self.git_converts.iter_selected().any(|m| {
            match m.assignment.name.as_str() {
                // Without `$Id` in the blob, git's ident conversion changes nothing.
                "ident" => m.assignment.state.is_set() && data.find(b"$Id").is_some(),
                _ => matches!(m.assignment.state, gix::attrs::StateRef::Value(_)),
            }
        });
        if by_git {
            return self.store.git_checkout_bytes(id, path);
        }
        let mut out = self
            .pipeline
            .convert_to_worktree(
                data,
                path,
                &mut |_, attrs| {
                    entry.matching_attributes(attrs);
                },
                Default::default(),
            )
            .map_err(|e| filter_failed(&e))?;
        let mut bytes = Vec::with_capacity(data.len());
        out.read_to_end(&mut bytes)
            .map_err(|e| filter_failed(&e).with_source(e))?;
        Ok(bytes)
    }
}

impl Store {
    /// What `git checkout` writes at `path` for the blob `id`: git's own conversions
    /// (`ident`, `working-tree-encoding`, eol, smudge filters), by `git cat-file --filters`.
    pub(crate) fn git_checkout_bytes(
        &self,
        id: gix::ObjectId,
        path: &gix::bstr::BStr,
    ) -> Result<Vec<u8>> {
        let dir = self.git_run_dir();
        let args = ["cat-file", "--filters"];
        let mut path_arg = std::ffi::OsString::from("--path=");
        path_arg.push(agent_rewind_core::quote::rel_path(path).as_os_str());
        let out = self
            .git_command(dir, &args)
            .arg(path_arg)
            .arg(id.to_string())
            .output()
            .map_err(crate::gitprocess::could_not_run)?;
        crate::gitprocess::stdout_bytes_of(&args, out)
    }
}
