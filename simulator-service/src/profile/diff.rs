//! Differential flame graphs: what changed between two profiles of one server
//! (a before and an after), drawn by inferno as the other flame graphs are.
//!
//! Brendan Gregg's two views (`difffolded.pl`): [`View::After`] draws the
//! after's widths, a frame red where it grew and blue where it shrank;
//! [`View::Before`] draws the before's widths with the hues turned round, so
//! a frame that vanished is still there to see. The before is first scaled to
//! the after's total (`difffolded.pl -n`): two profiles of different lengths
//! compare by share, not by count.
//!
//! What the users of inferno and Grafana's drilldown asked for (inferno#293,
//! profiles-drilldown#332), done here around inferno: a stack whose change is
//! under `grey_under` of its larger count draws grey, so an unchanged frame is
//! not painted pale red by rounding (a frame with only such stacks below it
//! has no change); and each frame's tooltip says its count before and after,
//! the change in its unit (samples, µs, bytes) and relative to its before. The module's own
//! hand-written part is that retelling: inferno has no option for it.

use super::folded::Folded;

/// Which profile's widths a differential flame graph draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// The after's widths, red where a frame grew, blue where it shrank.
    After,
    /// The before's widths, hues turned round: what shrank or vanished.
    Before,
}

/// The grey of a frame with no change (inferno draws it near-white).
const GREY: &str = "rgb(214,214,214)";

/// How a differential flame graph is drawn: its title, the view, the share
/// of a stack's larger count under which it draws grey, and what the counts
/// count (`samples` of CPU, `us` off the CPU, `bytes` of heap).
#[derive(Debug, Clone)]
pub struct Drawing<'a> {
    pub title: &'a str,
    pub view: View,
    pub grey_under: f64,
    pub unit: &'a str,
}

/// The differential flame graph of `before` and `after`, as an SVG.
pub fn svg(before: &Folded, after: &Folded, drawing: &Drawing<'_>) -> Vec<u8> {
    let Drawing {
        title,
        view,
        grey_under,
        unit,
    } = *drawing;
    let lines = lines(before, after, view, grey_under);
    let mut options = inferno::flamegraph::Options::default();
    title.clone_into(&mut options.title);
    unit.clone_into(&mut options.count_name);
    options.negate_differentials = view == View::Before;
    let mut out = Vec::new();
    if inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut out)
        .is_err()
    {
        return b"<svg xmlns=\"http://www.w3.org/2000/svg\"/>".to_vec();
    }
    retitle(&String::from_utf8_lossy(&out), before, after, unit).into_bytes()
}

/// `stack FIRST SECOND` lines for inferno: the widths from SECOND, the hue
/// from SECOND - FIRST. The before is scaled to the after's total first.
fn lines(before: &Folded, after: &Folded, view: View, grey_under: f64) -> Vec<String> {
    let scale = after.total() as f64 / before.total().max(1) as f64;
    let mut stacks: Vec<&String> = before.stacks.keys().chain(after.stacks.keys()).collect();
    stacks.sort();
    stacks.dedup();
    stacks
        .into_iter()
        .map(|stack| {
            let b = (*before.stacks.get(stack).unwrap_or(&0) as f64 * scale).round() as u64;
            let a = *after.stacks.get(stack).unwrap_or(&0);
            // Under the threshold: no change at all, so the frame draws grey.
            let small = (a.abs_diff(b) as f64) < grey_under * a.max(b) as f64;
            let b = if small { a } else { b };
            match view {
                View::After => format!("{stack} {b} {a}"),
                View::Before => format!("{stack} {a} {b}"),
            }
        })
        .collect()
}

/// One frame of inferno's drawing: where its title is in the SVG, its name,
/// its depth (the SVG's `y`) and its span of samples (`fg:x`, `fg:w`).
struct Frame {
    title: std::ops::Range<usize>,
    name: String,
    y: u64,
    x: u64,
    w: u64,
}

/// The frames of inferno's SVG, in the order drawn.
fn frames(svg: &str) -> Vec<Frame> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = svg[from..].find("<g><title>") {
        let start = from + at + "<g><title>".len();
        let Some(len) = svg[start..].find("</title>") else {
            break;
        };
        let title = start..start + len;
        let rect_end = svg[title.end..]
            .find("/>")
            .map_or(svg.len(), |e| title.end + e);
        let rect = &svg[title.end..rect_end];
        let attr = |name: &str| -> Option<u64> {
            let at = rect.find(&format!(" {name}=\""))? + name.len() + 3;
            rect[at..].split('"').next()?.parse().ok()
        };
        let text = &svg[title.clone()];
        let name = text.rfind(" (").map_or(text, |open| &text[..open]);
        if let (Some(y), Some(x), Some(w)) = (attr("y"), attr("fg:x"), attr("fg:w")) {
            out.push(Frame {
                title,
                name: unescape(name),
                y,
                x,
                w,
            });
        }
        from = rect_end;
    }
    out
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// Each frame's path from the root, `a;b;c`, from the drawing's geometry: a
/// frame's parent is the frame one row below whose span holds its start.
/// The root (`all`) has the empty path.
fn paths(frames: &[Frame]) -> Vec<String> {
    let mut rows: Vec<u64> = frames.iter().map(|f| f.y).collect();
    rows.sort_unstable_by(|a, b| b.cmp(a));
    rows.dedup();
    let depth = |y: u64| rows.iter().position(|r| *r == y).unwrap_or(0);
    let mut order: Vec<usize> = (0..frames.len()).collect();
    order.sort_by_key(|&i| (depth(frames[i].y), frames[i].x));
    let mut paths = vec![String::new(); frames.len()];
    let mut below: Vec<(u64, u64, String)> = Vec::new();
    let mut current_depth = 0;
    let mut this_row: Vec<(u64, u64, String)> = Vec::new();
    for i in order {
        let f = &frames[i];
        let d = depth(f.y);
        if d != current_depth {
            below = std::mem::take(&mut this_row);
            current_depth = d;
        }
        let path = match d {
            0 => String::new(),
            _ => {
                let parent = below
                    .iter()
                    .find(|(x, w, _)| f.x >= *x && f.x < x + w)
                    .map_or("", |(_, _, p)| p.as_str());
                match parent.is_empty() {
                    true => f.name.clone(),
                    false => format!("{parent};{}", f.name),
                }
            }
        };
        this_row.push((f.x, f.w, path.clone()));
        paths[i] = path;
    }
    paths
}

/// Every path's samples, each stack counted in each of its prefixes.
fn by_path(folded: &Folded, scale: f64) -> std::collections::HashMap<String, f64> {
    let mut sums = std::collections::HashMap::new();
    for (stack, count) in &folded.stacks {
        let count = *count as f64 * scale;
        *sums.entry(String::new()).or_insert(0.0) += count;
        let mut end = 0;
        for frame in stack.split(';') {
            end += frame.len();
            *sums.entry(stack[..end].to_owned()).or_insert(0.0) += count;
            end += 1;
        }
    }
    sums
}

/// Each frame's tooltip told again from both profiles: `NAME (before B,
/// after A: +K UNIT, +R %)`, B the before's own count (and, where the
/// before was scaled, `B, S at the after's total;`), the change between
/// the scaled before and the after. inferno's own title gives the frame's
/// self change only (Gregg's colours are of it), and a frame's total is what
/// a reader asks first. Frames with no change draw grey. No parenthesis
/// inside ours: inferno's script labels each frame with its tooltip less the
/// last parenthesised group that holds none, which must be all we added.
fn retitle(svg: &str, before: &Folded, after: &Folded, unit: &str) -> String {
    let scale = after.total() as f64 / before.total().max(1) as f64;
    let (was, now) = (by_path(before, 1.0), by_path(after, 1.0));
    let frames = frames(svg);
    let paths = paths(&frames);
    let mut out = String::with_capacity(svg.len() + frames.len() * 40);
    let mut copied = 0;
    for (frame, path) in frames.iter().zip(&paths) {
        let counted = was.get(path).copied().unwrap_or(0.0);
        let scaled = (counted * scale).round() as i64;
        let after = now.get(path).copied().unwrap_or(0.0).round() as i64;
        let delta = after - scaled;
        let relative = match scaled {
            0 => "new".to_owned(),
            b => format!("{:+.1} %", delta as f64 * 100.0 / b as f64),
        };
        let before = match counted.round() as i64 == scaled {
            true => format!("before {scaled},"),
            false => format!("before {}, {scaled} at the after's total;", counted.round()),
        };
        let name = &svg[frame.title.start..frame.title.start + escaped_len(svg, frame)];
        out.push_str(&svg[copied..frame.title.start]);
        out.push_str(&format!(
            "{name} ({before} after {after}: {delta:+} {unit}, {relative})"
        ));
        copied = frame.title.end;
    }
    out.push_str(&svg[copied..]);
    out.replace("fill=\"rgb(250,250,250)\"", &format!("fill=\"{GREY}\""))
}

/// The length of a frame's name in its (escaped) title.
fn escaped_len(svg: &str, frame: &Frame) -> usize {
    let text = &svg[frame.title.clone()];
    text.rfind(" (").unwrap_or(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(text: &str) -> Folded {
        Folded::parse(text).unwrap()
    }

    /// Drawn as `compare --flame` draws CPU samples.
    fn drawn(before: &Folded, after: &Folded, title: &str, view: View) -> Vec<u8> {
        let drawing = Drawing {
            title,
            view,
            grey_under: 0.05,
            unit: "samples",
        };
        svg(before, after, &drawing)
    }

    #[test]
    fn the_before_is_scaled_to_the_afters_total_and_small_changes_are_none() {
        let before = folded("main;a 50\nmain;b 50\n");
        let after = folded("main;a 102\nmain;b 298\n");
        let scaled = lines(&before, &after, View::After, 0.05);
        // Scaled by 4: a's 200 against 102, b's 200 against 298.
        assert_eq!(scaled, ["main;a 200 102", "main;b 200 298"]);
        let same = folded("main;a 101\nmain;b 99\n");
        let unchanged = lines(&before, &same, View::After, 0.05);
        assert_eq!(
            unchanged,
            ["main;a 101 101", "main;b 99 99"],
            "under 5 %: no change"
        );
    }

    #[test]
    fn a_hot_frame_is_red_with_its_counts_and_an_unchanged_one_grey() {
        let before = folded("main;hot 10\nmain;cold 90\nmain;same 100\n");
        let after = folded("main;hot 60\nmain;cold 40\nmain;same 100\n");
        let svg = String::from_utf8(drawn(&before, &after, "diff", View::After)).unwrap();
        for frame in [
            "hot (before 10, after 60: +50 samples, +500.0 %)",
            "cold (before 90, after 40: -50 samples, -55.6 %)",
            "same (before 100, after 100: +0 samples, +0.0 %)",
        ] {
            assert!(svg.contains(frame), "{frame}: {svg}");
        }
        assert!(svg.contains(GREY), "the unchanged frame is grey");
        let back = String::from_utf8(svg_before(&before, &after)).unwrap();
        assert!(
            back.contains("hot (before 10, after 60: +50 samples"),
            "{back}"
        );
        // Profiles of different lengths compare by share.
        let longer = folded("main;hot 20\nmain;cold 180\nmain;same 200\n");
        let scaled = String::from_utf8(drawn(&longer, &after, "diff", View::After)).unwrap();
        let hot = "hot (before 20, 10 at the after's total; after 60";
        assert!(scaled.contains(hot), "{scaled}");
    }

    #[test]
    fn a_frame_above_the_leaves_is_told_its_whole_change() {
        // inferno colours a frame by its own (self) change; its tooltip here
        // says the change of all below it too, found from the drawing.
        let before = folded("main;f<u8, fn(&u8) -> bool>;hot 300\nmain;idle 20\n");
        let after = folded("main;other 1\nmain;idle 19\n");
        let svg = String::from_utf8(drawn(&before, &after, "x", View::Before)).unwrap();
        let middle = "f&lt;u8, fn(&amp;u8) -&gt; bool&gt; (before 300, 19 at the after's total; after 0: -19 samples, -100.0 %)";
        assert!(svg.contains(middle), "{svg}");
        assert!(
            svg.contains("main (before 320, 20 at the after's total; after 20: +0 samples"),
            "{svg}"
        );
    }

    /// Each frame's label, as inferno's script makes it from the tooltip:
    /// the title less its last `(...)` that holds no `(`.
    #[test]
    fn each_label_is_the_frames_name_alone() {
        let before = folded("main;f(x);hot 20\nmain;cold 180\n");
        let after = folded("main;f(x);hot 60\nmain;cold 40\n");
        let svg = String::from_utf8(drawn(&before, &after, "diff", View::After)).unwrap();
        let titles: Vec<&str> = svg
            .split("<title>")
            .skip(1)
            .filter_map(|t| t.split("</title>").next())
            .filter(|t| t.contains("before"))
            .collect();
        assert!(titles.len() >= 4, "{titles:?}");
        for title in titles {
            let open = title.rfind('(').unwrap();
            let label = title[..open].trim_end();
            assert!(
                ["all", "main", "f(x)", "hot", "cold"].contains(&label),
                "{title:?} labels as {label:?}"
            );
        }
    }

    fn svg_before(before: &Folded, after: &Folded) -> Vec<u8> {
        drawn(before, after, "diff", View::Before)
    }

    #[test]
    fn a_heap_differential_counts_bytes() {
        let before = folded("main;kept 1000\nmain;buffer 1000\n");
        let after = folded("main;kept 3000\nmain;buffer 1000\n");
        let drawing = Drawing {
            title: "heap",
            view: View::After,
            grey_under: 0.05,
            unit: "bytes",
        };
        let svg = String::from_utf8(svg(&before, &after, &drawing)).unwrap();
        let kept =
            "kept (before 1000, 2000 at the after's total; after 3000: +1000 bytes, +50.0 %)";
        assert!(svg.contains(kept), "{svg}");
        assert!(svg.contains(" bytes"), "inferno's own counts say bytes");
    }
}
