//! Flame graphs of stored profiles, drawn by `inferno`: one profile's
//! ([`flame`]), or the differential one from profile A to profile B
//! ([`differential`]: B's stacks, each frame red where B spends a larger
//! share of its samples there than A, blue where a smaller one, A scaled to
//! B's sample count first).
//!
//! Two forms: the file `kdelta profile` writes (inferno's own SVG, its
//! search and zoom script included: a file opened on its own), and the
//! inline one of the report's page ([`Flame::inline`]): no script and no
//! handler, inferno's page-wide style replaced by one that reaches only
//! flame graphs, and element ids made unique to the graph, so many can sit
//! in one page. Every frame name and title is neutralised
//! ([`crate::model::text::neutral`]) before inferno writes it, and inferno
//! escapes it as XML text.

use crate::model::profile::Profile;
use crate::stats::profile_shift;
use anyhow::{Context, Result};

/// A flame graph as inferno drew it.
pub(crate) struct Flame(String);

/// inferno's options for kdelta: titles and counts named, colours from
/// the frame names (the same function gets the same colour in every graph).
fn options(title: &str, subtitle: &str) -> inferno::flamegraph::Options<'static> {
    let mut o = inferno::flamegraph::Options::default();
    o.title = crate::model::text::printable(title).into_owned();
    o.subtitle = Some(crate::model::text::printable(subtitle).into_owned());
    o.count_name = "samples".into();
    o.hash = true;
    o.deterministic = true;
    o.min_width = 0.1;
    o
}

/// The folded lines of `p`, names neutralised: bidirectional controls, and
/// control characters, which XML 1.0 does not allow even escaped (a viewer
/// stops drawing at the first), shown as `\x01`.
fn lines(p: &Profile) -> Vec<String> {
    p.folded().into_iter().map(|l| crate::model::text::printable(&l).into_owned()).collect()
}

/// The flame graph of one profile.
pub(crate) fn flame(p: &Profile, title: &str, subtitle: &str) -> Result<Flame> {
    let mut o = options(title, subtitle);
    let mut out = Vec::new();
    let lines = lines(p);
    inferno::flamegraph::from_lines(&mut o, lines.iter().map(String::as_str), &mut out)
        .context("drawing a flame graph")?;
    Ok(Flame(String::from_utf8(out).context("inferno wrote no UTF-8")?))
}

/// The differential flame graph from `a` to `b`: `b`'s stacks, coloured
/// by the change of each frame's share from `a` (red: more, blue: fewer),
/// only where that function's share changed significantly
/// ([`profile_shift::significant`]); every other frame is grey, and when no
/// function changed significantly the subtitle begins with "no significant
/// change".
pub(crate) fn differential(a: &Profile, b: &Profile, title: &str, subtitle: &str) -> Result<Flame> {
    let diff = differential_folded(a, b)?;
    let sig = profile_shift::significant(a, b, profile_shift::ALPHA);
    let subtitle = if sig.is_empty() {
        format!("no significant change: no function's share of samples changed significantly; {subtitle}")
    } else {
        format!("{subtitle}; grey: no significant change")
    };
    let mut o = options(title, &subtitle);
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut o, diff.iter().map(String::as_str), &mut out)
        .context("drawing a differential flame graph")?;
    let svg = String::from_utf8(out).context("inferno wrote no UTF-8")?;
    let names: Vec<String> = sig.iter().map(|x| xml_text(&crate::model::text::printable(&x.function))).collect();
    Ok(Flame(grey_unless(&svg, &names)))
}

/// The differential folded lines from `a` to `b` (`stack A B`, `a` scaled
/// to `b`'s sample count), as FlameGraph's `difffolded.pl` writes them.
pub(crate) fn differential_folded(a: &Profile, b: &Profile) -> Result<Vec<String>> {
    let (la, lb) = (lines(a).join("\n"), lines(b).join("\n"));
    let mut diff = Vec::new();
    let dopt = inferno::differential::Options { normalize: true, ..Default::default() };
    inferno::differential::from_readers(dopt, la.as_bytes(), lb.as_bytes(), &mut diff)
        .context("comparing two profiles")?;
    Ok(String::from_utf8_lossy(&diff).lines().map(str::to_string).collect())
}

/// The folded lines of one profile, names made printable.
pub(crate) fn folded(p: &Profile) -> Vec<String> {
    lines(p)
}

/// The fill of a frame whose function's share did not change significantly.
const GREY: &str = "rgb(225,225,225)";

/// `svg` with every frame grey whose function (its title up to ` (`, as
/// XML text) is not in `keep`.
fn grey_unless(svg: &str, keep: &[String]) -> String {
    let mut out = String::with_capacity(svg.len());
    let mut rest = svg;
    while let Some(i) = rest.find("<g><title>") {
        let (head, tail) = rest.split_at(i);
        out.push_str(head);
        let Some(end) = tail.find("</g>") else {
            rest = tail;
            break;
        };
        let frame = &tail[..end];
        let title = &frame["<g><title>".len()..frame.find("</title>").unwrap_or(frame.len())];
        let name = title.rfind(" (").map_or(title, |j| &title[..j]);
        match frame.find("fill=\"rgb(") {
            Some(f) if !keep.iter().any(|k| k == name) => {
                let close = frame[f..].find(')').map_or(frame.len(), |c| f + c + 1);
                out.push_str(&frame[..f]);
                out.push_str(&format!("fill=\"{GREY}"));
                out.push_str(&frame[close..]);
            }
            _ => out.push_str(frame),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// `s` escaped as inferno escapes XML text.
fn xml_text(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&apos;")
}

/// What the inline graphs share in the page: inferno's rules, reaching
/// only `svg.flame`.
pub(crate) const CSS: &str = "svg.flame{display:block;max-width:100%;height:auto;margin:8px 0;border:1px solid #eee}\
svg.flame text{font-family:Verdana,sans-serif;font-size:12px}svg.flame .fg-title{text-anchor:middle;font-size:17px}\
svg.flame .fg-subtitle{text-anchor:middle;fill:#555}svg.flame .fg-frames>g:hover{stroke:#000;stroke-width:.5}";

impl Flame {
    /// The SVG file: inferno's own, its script included.
    pub(crate) fn file(self) -> String {
        self.0
    }

    /// The graph inside a page: from `<svg` on, without script, handlers,
    /// comments or inferno's style, the ids prefixed with `id`, whose
    /// characters must be `[A-Za-z0-9-]`.
    pub(crate) fn inline(&self, id: &str) -> String {
        debug_assert!(id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
        let s = &self.0[self.0.find("<svg").unwrap_or(0)..];
        let s = drop_between(s, "<!--", "-->");
        let s = drop_between(&s, "<script", "</script>");
        let s = drop_between(&s, "<style", "</style>");
        // The search and zoom controls do nothing without the script.
        let mut s = s.replace(" onload=\"init(evt)\"", "").replacen("<svg ", "<svg class=\"flame\" ", 1);
        for control in ["details", "unzoom", "search", "matched"] {
            s = drop_element(&s, &format!("<text id=\"{control}\""));
        }
        s.replace("id=\"title\"", "class=\"fg-title\"")
            .replace("id=\"subtitle\"", "class=\"fg-subtitle\"")
            .replace("id=\"frames\"", "class=\"fg-frames\"")
            .replace("id=\"background\"", &format!("id=\"{id}-bg\""))
            .replace("url(#background)", &format!("url(#{id}-bg)"))
    }
}

/// `s` without every stretch from `open` to the next `close`, both included.
fn drop_between(s: &str, open: &str, close: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(open) {
        out.push_str(&rest[..i]);
        match rest[i..].find(close) {
            Some(j) => rest = &rest[i + j + close.len()..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// `s` without the `<text ...>...</text>` element starting with `start`.
fn drop_element(s: &str, start: &str) -> String {
    match s.find(start) {
        Some(i) => match s[i..].find("</text>") {
            Some(j) => format!("{}{}", &s[..i], &s[i + j + "</text>".len()..]),
            None => s.to_string(),
        },
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(text: &str) -> Profile {
        let mut p = Profile { event: "cpu-clock".into(), hz: 1999, ..Default::default() };
        p.add_folded(text);
        p
    }

    #[test]
    fn an_inline_graph_has_no_script_and_its_own_ids() {
        let p = profile("kdelta;main;pipe_write_[k];try_to_wake_up_[k] 30\nkdelta;main;read 10\n");
        let f = flame(&p, "lat.pipe [up] <b>", "40 samples").unwrap();
        let file = f.file();
        assert!(file.contains("<script"), "the file keeps inferno's script");
        let f = flame(&p, "lat.pipe [up] <b>", "40 samples").unwrap();
        let s = f.inline("fg-1");
        assert!(s.starts_with("<svg class=\"flame\" "), "{}", &s[..80]);
        for bad in ["<script", "onload", "onclick", "onmouse", "<style", "<!--", "id=\"background\"", "<b>", "<?xml"] {
            assert!(!s.contains(bad), "{bad} in the inline graph");
        }
        assert!(s.contains("url(#fg-1-bg)") && s.contains("id=\"fg-1-bg\""));
        assert!(s.contains("<title>try_to_wake_up (30 samples"), "kernel frames are drawn");
        assert_eq!(s.matches("class=").filter(|_| true).count(), s.matches("class=").count());
        assert_eq!(s.matches("<svg class=\"flame\"").count(), 1, "one outer graph");
        assert!(s.contains("&lt;b&gt;"), "the title is escaped");
        // Every frame's sample count is in its title; the root's is the sum.
        assert!(s.contains("all (40 samples, 100%)"), "{s}");
    }

    #[test]
    fn a_differential_graph_colours_growth_red_and_shrinkage_blue() {
        let a = profile("k;main;do_idle_[k] 10\nk;main;work 90\n");
        let b = profile("k;main;do_idle_[k] 60\nk;main;work 40\n");
        let s = differential(&a, &b, "up -> noht", "").unwrap().inline("d");
        let frame = |name: &str| {
            let i = s.find(&format!("<title>{name} (")).unwrap_or_else(|| panic!("{name} not drawn: {s}"));
            let rest = &s[i..];
            let fill = rest.find("fill=\"rgb(").unwrap();
            let rgb = &rest[fill + 10..fill + 10 + rest[fill + 10..].find(')').unwrap()];
            let v: Vec<u32> = rgb.split(',').map(|x| x.trim().parse().unwrap()).collect();
            (v[0], v[2])
        };
        let (r, b) = frame("do_idle");
        assert!(r > b, "more time in do_idle: red ({r}, {b})");
        let (r, b) = frame("work");
        assert!(b > r, "less time in work: blue ({r}, {b})");
    }

    #[test]
    fn a_differential_graph_of_noise_says_so_and_stays_grey() {
        let a = profile("k;main;do_idle_[k] 11\nk;main;work 89\n");
        let b = profile("k;main;do_idle_[k] 13\nk;main;work 87\n");
        let s = differential(&a, &b, "up -> noht", "100 samples").unwrap().file();
        assert!(s.contains("no significant change"), "the caption says so");
        let fills: Vec<&str> =
            s.match_indices("fill=\"rgb(").map(|(i, _)| &s[i + 6..i + s[i..].find(')').unwrap() + 1]).collect();
        // Black: inferno's text, not frames.
        let frames: Vec<&&str> = fills.iter().filter(|f| **f != "rgb(0,0,0)").collect();
        assert!(frames.len() >= 3 && frames.iter().all(|f| **f == GREY), "{fills:?}");
        // A significant change keeps its colour, with no such caption.
        let c = profile("k;main;do_idle_[k] 10\nk;main;work 90\n");
        let d = profile("k;main;do_idle_[k] 60\nk;main;work 40\n");
        let s = differential(&c, &d, "t", "").unwrap().file();
        assert!(!s.contains("no significant change: no function"), "no caption when something changed");
        assert!(s.contains(GREY), "main did not change: grey");
    }

    #[test]
    fn control_characters_in_names_leave_valid_xml() {
        let p = profile("k;ma\u{1}in\u{1b}[2J;wo\u{7f}rk 10\n");
        let file = flame(&p, "t\u{0}", "s\u{8}").unwrap().file();
        let bad: Vec<char> = file.chars().filter(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\r')).collect();
        assert!(bad.is_empty(), "{bad:?}");
        assert!(file.contains("ma\\x01in\\x1b[2J"), "the name is shown, escaped");
    }

    #[test]
    fn cutting_helpers() {
        assert_eq!(drop_between("a<!--x-->b<!--y-->c", "<!--", "-->"), "abc");
        assert_eq!(drop_between("a<!--x", "<!--", "-->"), "a");
        assert_eq!(drop_element("x<text id=\"search\" a>S</text>y", "<text id=\"search\""), "xy");
    }
}
