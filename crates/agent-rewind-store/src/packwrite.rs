//! Writing a checkpoint's new objects as one small pack instead of a loose file each.
//!
//! A checkpoint writes ~30 objects (blobs, trees, the commit, the note); as loose objects
//! that is ~30 temp files, renames and zlib set-ups, most of a small checkpoint's time. Here
//! they go into one version-2 pack (whole objects, no deltas) with its version-2 index, the
//! format git itself writes, so every git and gix reads it. `git gc` folds these small packs
//! into the main one like any other, copying each object's compressed bytes as they are
//! (`pack.reuseObject`): so they are compressed at the level git packs with
//! (`pack.compression`, default zlib's 6), never at a faster one that `gc` would keep.
//!
//! The pack is renamed into place before its index: readers only use packs that have an
//! index, so no reader ever sees an index without its pack. Refs must be published only
//! after this returns. It never writes anything but the two files.

use crate::checksum::digest;
use agent_rewind_core::error::{Error, IoResultExt, Result};
use agent_rewind_core::platform::mode::create_with_bits;
use gix::ObjectId;
use std::path::Path;

/// An object to store: its id, kind and uncompressed data.
pub type PackEntry = (ObjectId, gix::objs::Kind, Vec<u8>);

/// Write `objects` into `<objects_dir>/pack/pack-<checksum>.{pack,idx}`.
pub fn write_pack(
    objects_dir: &Path,
    hash: gix::hash::Kind,
    level: gix::zlib::Compression,
    mut objects: Vec<PackEntry>,
) -> Result<()> {
    if objects.is_empty() {
        return Ok(());
    }
    objects.sort_by_key(|o| o.0);
    objects.dedup_by(|a, b| a.0 == b.0);

    let mut pack =
        Vec::with_capacity(objects.iter().map(|o| o.2.len() / 2 + 32).sum::<usize>() + 32);
    pack.extend_from_slice(b"PACK");
    pack.extend_from_slice(&2u32.to_be_bytes());
    pack.extend_from_slice(&(objects.len() as u32).to_be_bytes());
    let mut compressor = gix::zlib::stream::deflate::Compress::new(level);
    let mut entries = Vec::with_capacity(objects.len());
    for (id, kind, data) in &objects {
        let offset = pack.len();
        if offset > u32::MAX as usize >> 1 {
            return Err(Error::other(
                "a checkpoint's objects exceed 2 GiB in one pack",
            ));
        }
        encode_entry_header(&mut pack, pack_type(*kind), data.len() as u64);
        deflate_into(&mut compressor, data, &mut pack)?;
        entries.push((*id, offset as u32, crc32(&pack[offset..])));
    }
    let pack_checksum = digest(hash, &pack)?;
    pack.extend_from_slice(pack_checksum.as_slice());

    let mut idx = Vec::with_capacity(8 + 256 * 4 + entries.len() * (hash.len_in_bytes() + 8) + 40);
    idx.extend_from_slice(&[0xff, b't', b'O', b'c']);
    idx.extend_from_slice(&2u32.to_be_bytes());
    let mut fanout = [0u32; 256];
    for (id, _, _) in &entries {
        fanout[id.as_slice()[0] as usize] += 1;
    }
    let mut running = 0u32;
    for count in fanout {
        running += count;
        idx.extend_from_slice(&running.to_be_bytes());
    }
    for (id, _, _) in &entries {
        idx.extend_from_slice(id.as_slice());
    }
    for (_, _, crc) in &entries {
        idx.extend_from_slice(&crc.to_be_bytes());
    }
    for (_, offset, _) in &entries {
        idx.extend_from_slice(&offset.to_be_bytes());
    }
    idx.extend_from_slice(pack_checksum.as_slice());
    let idx_checksum = digest(hash, &idx)?;
    idx.extend_from_slice(idx_checksum.as_slice());

    let dir = objects_dir.join("pack");
    std::fs::create_dir_all(&dir).at(&dir)?;
    let name = format!("pack-{pack_checksum}");
    install(&dir, &format!("{name}.pack"), &pack)?;
    install(&dir, &format!("{name}.idx"), &idx)?;
    Ok(())
}

/// Write `bytes` to a temp file in `dir`, then rename it to `name` (read-only, as git's).
fn install(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let tmp = dir.join(temp_name(name, nanos));
    let written = (|| -> std::io::Result<()> {
        let mut f = create_with_bits(
            std::fs::OpenOptions::new().write(true).create_new(true),
            0o444,
        )
        .open(&tmp)?;
        f.write_all(bytes)?;
        std::fs::rename(&tmp, dir.join(name))
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::other(format!(
            "could not write {}: {e}",
            dir.join(name).display()
        )));
    }
    Ok(())
}

/// The temp file for `name`: `tmp_…`, which git leaves alone while it is fresh, and no
/// `.pack`/`.idx` ending until the rename: `git gc` deletes an `*.idx` in the pack folder
/// that has no `*.pack` of the same name as garbage (it did, mid-write, in the bench).
fn temp_name(name: &str, nanos: u32) -> String {
    format!(
        "tmp_agent_rewind_{}_{nanos}_{}",
        std::process::id(),
        name.replace('.', "_")
    )
}

fn pack_type(kind: gix::objs::Kind) -> u8 {
    match kind {
        gix::objs::Kind::Commit => 1,
        gix::objs::Kind::Tree => 2,
        gix::objs::Kind::Blob => 3,
        gix::objs::Kind::Tag => 4,
    }
}

/// Type and size: 3 bits of type and 4 of size, then 7 bits of size per byte.
fn encode_entry_header(out: &mut Vec<u8>, kind: u8, mut size: u64) {
    let mut byte = (kind << 4) | (size & 0x0f) as u8;
    size >>= 4;
    while size > 0 {
        out.push(byte | 0x80);
        byte = (size & 0x7f) as u8;
        size >>= 7;
    }
    out.push(byte);
}

fn deflate_into(
    compressor: &mut gix::zlib::stream::deflate::Compress,
    data: &[u8],
    out: &mut Vec<u8>,
) -> Result<()> {
    use gix::zlib::Status;
    use gix::zlib::stream::deflate::FlushCompress;
    compressor.reset();
    let mut buf = vec![0u8; data.len() + 64];
    let mut consumed = 0;
    loop {
        let before_in = compressor.total_in();
        let before_out = compressor.total_out();
        let status = compressor
            .compress(&data[consumed..], &mut buf, FlushCompress::Finish)
            .map_err(|e| Error::other(format!("compression failed: {e}")))?;
        consumed += (compressor.total_in() - before_in) as usize;
        let produced = (compressor.total_out() - before_out) as usize;
        out.extend_from_slice(&buf[..produced]);
        match status {
            Status::StreamEnd => return Ok(()),
            Status::Ok | Status::BufError => {}
        }
    }
}

/// CRC-32 (IEEE), as pack indexes store for each entry.
fn crc32(bytes: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (i, slot) in t.iter_mut().enumerate() {
            let mut c = i as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xedb8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *slot = c;
        }
        t
    });
    !bytes.iter().fold(!0u32, |c, b| {
        table[((c ^ u32::from(*b)) & 0xff) as usize] ^ (c >> 8)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn temp_files_never_look_like_pack_files_to_git() {
        for name in ["pack-0123.pack", "pack-0123.idx"] {
            let tmp = temp_name(name, 42);
            assert!(tmp.starts_with("tmp_"), "{tmp}");
            for ext in [".pack", ".idx", ".rev", ".keep", ".bitmap", ".mtimes"] {
                assert!(!tmp.ends_with(ext), "{tmp}");
            }
        }
    }

    #[test]
    fn entry_headers_encode_type_and_size_like_git() {
        let mut out = vec![];
        encode_entry_header(&mut out, 3, 15);
        assert_eq!(out, [0x3f]);
        out.clear();
        encode_entry_header(&mut out, 1, 16);
        assert_eq!(out, [0x90, 0x01]);
        out.clear();
        encode_entry_header(&mut out, 2, 1000);
        assert_eq!(out, [0xa8, 0x3e]);
    }
}
