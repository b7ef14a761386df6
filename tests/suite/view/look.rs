//! How the view page looks in headless Chromium: screenshots compared by pixels in a region
//! (the graph between the header's border and its own, or the header), with DOM and text
//! checks where those are simpler and exact. Captions stay in their column, archived runs
//! and their edges appear only when the box is ticked, and counts read as English.

use super::{browser, dump_dom, fixture, write_page};
use crate::common::Repo;
use std::ops::Range;
use std::path::Path;

/// The width of the caption column (`LABEL` in page.js): every dot and edge is right of it.
const CAPTION_COLUMN: usize = 320;
/// The height of one lane (`DY` in page.js).
const LANE: usize = 30;
/// The colour of the page's borders (`--line` in page.css).
const BORDER: [u8; 3] = [0xd9, 0xdd, 0xe5];

/// A screenshot as rows of RGB pixels.
struct Shot {
    width: usize,
    rgb: Vec<[u8; 3]>,
}

impl Shot {
    fn at(&self, x: usize, y: usize) -> [u8; 3] {
        self.rgb[y * self.width + x]
    }

    fn height(&self) -> usize {
        self.rgb.len() / self.width
    }

    /// Rows drawn wholly in the border colour: the header's border, then the graph's.
    fn border_rows(&self) -> Vec<usize> {
        (0..self.height())
            .filter(|&y| (0..self.width).all(|x| self.at(x, y) == BORDER))
            .collect()
    }

    /// The rows of the graph: between the header's border and the graph's own.
    fn graph_rows(&self) -> Range<usize> {
        let rows = self.border_rows();
        assert!(rows.len() >= 2, "no header and graph borders: {rows:?}");
        rows[0] + 1..rows[1]
    }

    /// The rows of the header, above its border.
    fn header_rows(&self) -> Range<usize> {
        0..self.border_rows()[0]
    }

    /// The pixels of a region, row by row.
    fn region(&self, xs: Range<usize>, ys: Range<usize>) -> Vec<[u8; 3]> {
        ys.flat_map(|y| xs.clone().map(move |x| (x, y)))
            .map(|(x, y)| self.at(x, y))
            .collect()
    }
}

/// The page (written to `dir`) as Chromium draws it, with `fragment` as its address.
fn screenshot(html: &str, dir: &Path, fragment: &str) -> Shot {
    let page = dir.join("look.html");
    std::fs::write(&page, html).unwrap();
    let profile = tempfile::tempdir().unwrap();
    let shot = profile.path().join("shot.png");
    let out = browser(profile.path())
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}#{fragment}", page.display()))
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let samples = info.color_type.samples();
    assert!(samples >= 3, "a colour screenshot: {:?}", info.color_type);
    let rgb = buf[..info.buffer_size()]
        .chunks(samples)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    Shot {
        width: info.width as usize,
        rgb,
    }
}

/// Pixels of the rewound edge's orange (`--int`, drawn over white or a selected lane),
/// and of nothing else on the page.
fn rewound_orange(p: &[u8; 3]) -> bool {
    let [r, g, b] = p.map(i32::from);
    r >= 200 && b <= 100 && g - b >= 60 && (60..=110).contains(&(r - g))
}

/// A caption longer than its column: a long label, and a long session id in the line below.
#[test]
fn lane_captions_never_run_under_dots_or_over_edges() {
    let long_label = "fix the login timeout that users report after a long idle session on mobile";
    let long_session = "session-0123456789abcdef0123456789abcdef-0123456789abcdef";
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1", "--label", long_label]);
    repo.ok(&[
        "step",
        "begin",
        "plan",
        "--kind",
        "agent",
        "--session-id",
        long_session,
    ]);
    repo.write("plan.md", "plan\n");
    repo.ok(&["step", "end", "plan", "--status", "completed"]);
    repo.ok(&["step", "begin", "build", "--kind", "agent"]);
    repo.write("code.rs", "fn main() {}\n");
    repo.ok(&["step", "end", "build", "--status", "completed"]);
    // A fork from plan: its edge runs down from r1's lane past r2's caption to r2's lane.
    repo.ok(&[
        "fork",
        "r1",
        "--to",
        "plan",
        "--after",
        "--run",
        "r2",
        "--label",
        long_label,
        "--no-checkout",
    ]);
    let (_, html) = write_page(&repo, &[]);
    assert!(html.contains(long_label) && html.contains(long_session));
    // The same page with short captions: everything right of the caption column must be
    // the same pixels, dots and edges alike.
    let short = html.replace(long_label, "x").replace(long_session, "s");
    let dir = tempfile::tempdir().unwrap();
    let long_shot = screenshot(&html, dir.path(), "");
    let short_shot = screenshot(&short, dir.path(), "");
    let rows = long_shot.graph_rows();
    assert_eq!(rows.len(), 2 * LANE, "two lanes");
    assert_eq!(short_shot.graph_rows(), rows);
    let right = CAPTION_COLUMN..long_shot.width;
    let (a, b) = (
        long_shot.region(right.clone(), rows.clone()),
        short_shot.region(right, rows.clone()),
    );
    let differ = a.iter().zip(&b).filter(|(p, q)| p != q).count();
    assert_eq!(
        differ, 0,
        "{differ} pixels right of the caption column change with the captions' length"
    );
    // The captions are there, cut short with an ellipsis, and whole in their tooltip.
    let dom = dump_dom(&repo.path().join("page.html"), "");
    assert!(
        dom.contains(&format!("<title>{long_label}\nr2 · ")),
        "the whole caption in the tooltip: {dom}"
    );
    let texts = |class: &str| {
        dom.split(&format!("class=\"{class}\">"))
            .skip(1)
            .map(|t| t.split('<').next().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let names = texts("run-name");
    assert_eq!(names.len(), 2, "{dom}");
    for name in &names {
        let kept = name.strip_suffix('…').unwrap_or_else(|| panic!("{name:?}"));
        assert!(!kept.is_empty() && long_label.starts_with(kept), "{name:?}");
    }
    let subs = texts("run-sub");
    assert_eq!(subs.len(), 2, "{dom}");
    for sub in &subs {
        assert!(
            sub.ends_with('…') && sub.contains(" · session-0123"),
            "{sub:?}"
        );
    }
}

/// r1 archived (rewound into r2, forked into r3): with the box unticked there is no lane
/// for r1 and no edge from it; ticked (as a browser restores it on reload), r1's lane with
/// its checkpoints and both edges.
#[test]
fn archived_lanes_and_their_edges_appear_only_when_the_box_is_ticked() {
    let f = fixture();
    let (page, html) = write_page(&f.repo, &[]);
    let dir = tempfile::tempdir().unwrap();

    let unticked = screenshot(&html, dir.path(), "");
    let rows = unticked.graph_rows();
    assert_eq!(rows.len(), 2 * LANE, "only r2 and r3 have a lane");
    let graph = unticked.region(CAPTION_COLUMN..unticked.width, rows);
    let orange = graph.iter().filter(|p| rewound_orange(p)).count();
    assert_eq!(orange, 0, "a rewound edge with no lane to start from");
    let dom = dump_dom(&page, "");
    assert!(!dom.contains("data-run=\"r1\""), "r1 has a lane: {dom}");
    assert!(dom.contains("data-run=\"r2\"") && dom.contains("data-run=\"r3\""));
    assert!(!dom.contains("class=\"edge "), "an edge from r1: {dom}");
    assert!(!dom.contains("class=\"fold\""));
    assert!(dom.contains("show 1 archived run<"), "{dom}");

    let box_markup = "<input id=\"archived\" type=\"checkbox\">";
    assert!(html.contains(box_markup));
    let ticked = html.replace(
        box_markup,
        "<input id=\"archived\" type=\"checkbox\" checked>",
    );
    let shot = screenshot(&ticked, dir.path(), "");
    let rows = shot.graph_rows();
    assert_eq!(rows.len(), 3 * LANE, "r1, r2 and r3 have a lane");
    let graph = shot.region(CAPTION_COLUMN..shot.width, rows);
    let orange = graph.iter().filter(|p| rewound_orange(p)).count();
    assert!(orange >= 5, "the rewound edge is drawn ({orange} pixels)");
    std::fs::write(&page, &ticked).unwrap();
    let dom = dump_dom(&page, "");
    assert!(dom.contains("data-run=\"r1\""));
    assert!(!dom.contains("class=\"fold\""), "r1 folded away: {dom}");
    for cp in f.repo.json(&["list", "r1"]).as_array().unwrap() {
        let id = cp["checkpoint"].as_str().unwrap();
        assert!(dom.contains(&format!("data-id=\"{id}\"")), "r1's node {id}");
    }
    assert!(dom.contains("class=\"edge rewound\"") && dom.contains("class=\"edge forked\""));
}

/// "1 run", "2 runs", "show 1 archived run", "show 2 archived runs", and no box at all
/// when there is nothing archived (the header then looks as it does with the box hidden).
#[test]
fn counts_read_as_english_and_the_box_is_there_only_when_needed() {
    let repo = Repo::new();
    repo.ok(&["start", "--run", "r1"]);
    let (page, html) = write_page(&repo, &[]);
    let dom = dump_dom(&page, "");
    assert!(
        dom.contains("<span id=\"stats\">1 run · 1 checkpoint · "),
        "{dom}"
    );
    assert!(
        dom.contains("<label id=\"archived-toggle\" hidden=\"\">"),
        "{dom}"
    );
    // The same page with the box hidden by its markup: the header must look the same.
    assert_eq!(html.matches("<label").count(), 1);
    let without_box = html.replace("<label", "<label hidden");
    let dir = tempfile::tempdir().unwrap();
    let (with, without) = (
        screenshot(&html, dir.path(), ""),
        screenshot(&without_box, dir.path(), ""),
    );
    let header = with.header_rows();
    assert_eq!(without.header_rows(), header);
    let differ = with
        .region(0..with.width, header.clone())
        .iter()
        .zip(&without.region(0..with.width, header))
        .filter(|(p, q)| p != q)
        .count();
    assert_eq!(differ, 0, "the box shows though nothing is archived");

    // One archived run, then two.
    repo.ok(&["checkpoint", "one"]);
    repo.ok(&["rewind", "r1", "--to", "r1@0", "--run", "r2"]);
    repo.ok(&["checkpoint", "two"]);
    repo.ok(&["rewind", "r2", "--to", "r2@0", "--run", "r3"]);
    let archived = |run: &str| {
        repo.json(&["list", "--all"])
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["run"] == run && r["archived"] == true)
    };
    assert!(archived("r1") && archived("r2"));
    let (page, _) = write_page(&repo, &[]);
    let dom = dump_dom(&page, "");
    assert!(dom.contains("<span id=\"stats\">3 runs · "), "{dom}");
    assert!(dom.contains("show 2 archived runs<"), "{dom}");
    assert!(dom.contains("<label id=\"archived-toggle\">"), "{dom}");
}
