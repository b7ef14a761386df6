//! `git diff --stat`'s text for files whose added and deleted line counts are known, byte
//! for byte as git's `show_stats` (diff.c) prints it with its defaults: no
//! `diff.statNameWidth`/`diff.statGraphWidth`, names as they are (the caller only passes
//! names git prints unquoted), text files only.
//!
//! It only renders; whether git would print exactly this is decided by `patch.rs`.

/// One file's line: its path and how many lines were added and deleted.
pub(super) struct StatLine<'a> {
    pub path: &'a [u8],
    pub added: i64,
    pub deleted: i64,
}

/// The whole `--stat` text for `files` (in git's order) on a `columns`-wide terminal.
pub(super) fn stat_text(files: &[StatLine], columns: i64) -> Vec<u8> {
    let mut out = Vec::new();
    if files.is_empty() {
        return out;
    }
    let max_len = files.iter().map(|f| f.path.len() as i64).max().unwrap_or(0);
    let max_change = files.iter().map(|f| f.added + f.deleted).max().unwrap_or(0);
    let number_width = decimal_width(max_change);
    let width = columns.max(16 + 6 + number_width);
    let mut graph_width = max_change;
    let mut name_width = max_len;
    if name_width + number_width + 6 + graph_width > width {
        if graph_width > width * 3 / 8 - number_width - 6 {
            graph_width = (width * 3 / 8 - number_width - 6).max(6);
        }
        if name_width > width - number_width - 6 - graph_width {
            name_width = width - number_width - 6 - graph_width;
        } else {
            graph_width = width - number_width - 6 - name_width;
        }
    }
    for f in files {
        let mut name = f.path;
        let mut prefix: &[u8] = b"";
        let mut len = name_width;
        if name_width < name.len() as i64 {
            prefix = b"...";
            len = (len - 3).max(0);
            // Drop leading characters until it fits, then back to the next folder boundary.
            let cut = (name.len() as i64 - len).max(0) as usize;
            name = &name[cut.min(name.len())..];
            if let Some(slash) = name.iter().position(|&b| b == b'/') {
                name = &name[slash..];
            }
        }
        let padding = (len - name.len() as i64).max(0) as usize;
        let (mut add, mut del) = (f.added, f.deleted);
        if graph_width <= max_change {
            let mut total = scale_linear(add + del, graph_width, max_change);
            if total < 2 && add > 0 && del > 0 {
                total = 2;
            }
            if add < del {
                add = scale_linear(add, graph_width, max_change);
                del = total - add;
            } else {
                del = scale_linear(del, graph_width, max_change);
                add = total - del;
            }
        }
        let changed = f.added + f.deleted;
        out.push(b' ');
        out.extend_from_slice(prefix);
        out.extend_from_slice(name);
        out.extend(std::iter::repeat_n(b' ', padding));
        out.extend_from_slice(format!(" | {changed:>w$}", w = number_width as usize).as_bytes());
        if changed > 0 {
            out.push(b' ');
        }
        out.extend(std::iter::repeat_n(b'+', add.max(0) as usize));
        out.extend(std::iter::repeat_n(b'-', del.max(0) as usize));
        out.push(b'\n');
    }
    let n = files.len();
    let adds: i64 = files.iter().map(|f| f.added).sum();
    let dels: i64 = files.iter().map(|f| f.deleted).sum();
    let mut s = format!(" {n} file{} changed", if n == 1 { "" } else { "s" });
    if adds != 0 || dels == 0 {
        s += &format!(", {adds} insertion{}(+)", if adds == 1 { "" } else { "s" });
    }
    if dels != 0 || adds == 0 {
        s += &format!(", {dels} deletion{}(-)", if dels == 1 { "" } else { "s" });
    }
    s.push('\n');
    out.extend_from_slice(s.as_bytes());
    out
}

/// At least one column for any change: scaled as if one column shorter, plus one.
fn scale_linear(it: i64, width: i64, max_change: i64) -> i64 {
    if it == 0 {
        return 0;
    }
    1 + it * (width - 1) / max_change
}

fn decimal_width(mut n: i64) -> i64 {
    let mut w = 1;
    while n >= 10 {
        n /= 10;
        w += 1;
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_are_cut_at_a_folder_and_graphs_scaled() {
        let long = format!("{}/tail/name.txt", "dir".repeat(30));
        let files = [
            StatLine {
                path: long.as_bytes(),
                added: 500,
                deleted: 20,
            },
            StatLine {
                path: b"a.txt",
                added: 0,
                deleted: 0,
            },
        ];
        let text = String::from_utf8(stat_text(&files, 80)).unwrap();
        let first = text.lines().next().unwrap();
        assert!(first.starts_with(" .../tail/name.txt"), "{first}");
        assert!(first.len() <= 80, "{first}");
        assert!(text.ends_with(" 2 files changed, 500 insertions(+), 20 deletions(-)\n"));
    }
}
