//! Hand-written SVG for the HTML report: scales (linear or logarithmic) with
//! readable ticks, the frame every chart shares (title, "higher/lower is
//! better", axis labels with units, a legend naming the configurations and
//! their CPU sets). Pure string building: deterministic output for snapshot
//! tests, nothing fetched, no script; every piece is [`Html`].

use super::escape::{html_format, html_write, Html};

/// Colour-blind-safe series colours (Okabe and Ito), then repeats.
pub(crate) const PALETTE: [&str; 8] =
    ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"];

pub(crate) fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// A label cut to `n` characters, with an ellipsis when cut.
pub(crate) fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n.saturating_sub(1)).collect::<String>() + "…"
    }
}

/// How tick labels are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ticks {
    Plain,
    /// Byte counts: `4K`, `1M`, as kdelta's sizes are written.
    Bytes,
}

/// A value axis mapped onto pixels `px0 .. px1` (px1 < px0 for a y axis).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scale {
    pub(crate) lo: f64,
    pub(crate) hi: f64,
    pub(crate) log: bool,
    pub(crate) px0: f64,
    pub(crate) px1: f64,
    pub(crate) ticks: Ticks,
}

impl Scale {
    /// A scale covering `values`: logarithmic when they are all positive and
    /// span more than `log_from` times; linear ones start at zero when
    /// `from_zero`.
    pub(crate) fn fit(values: &[f64], log_from: f64, from_zero: bool, px0: f64, px1: f64, ticks: Ticks) -> Scale {
        let vs: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let mut lo = vs.iter().copied().fold(f64::INFINITY, f64::min);
        let mut hi = vs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if vs.is_empty() {
            (lo, hi) = (0.0, 1.0);
        }
        let log = lo > 0.0 && hi / lo > log_from;
        if log {
            let base: f64 = if ticks == Ticks::Bytes { 2.0 } else { 10.0 };
            lo = base.powf((lo.log(base) - 0.01).floor());
            hi = base.powf((hi.log(base) + 0.01).ceil());
        } else {
            if from_zero {
                lo = lo.min(0.0);
            }
            let span = if hi > lo { hi - lo } else { hi.abs().max(1.0) };
            hi += span * 0.08;
            if !from_zero || lo < 0.0 {
                lo -= span * 0.08;
            }
            let step = nice_step((hi - lo) / 5.0);
            lo = (lo / step).floor() * step;
            hi = (hi / step).ceil() * step;
        }
        Scale { lo, hi, log, px0, px1, ticks }
    }

    pub(crate) fn map(&self, v: f64) -> f64 {
        let f = if self.log {
            (v.max(self.lo * 1e-3).ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        self.px0 + f * (self.px1 - self.px0)
    }

    /// Positions clamped to the axis (a bar or band that runs off the chart).
    pub(crate) fn clamp(&self, v: f64) -> f64 {
        let (a, b) = if self.px0 < self.px1 { (self.px0, self.px1) } else { (self.px1, self.px0) };
        self.map(v).clamp(a, b)
    }

    pub(crate) fn ticks(&self) -> Vec<(f64, String)> {
        let mut out = Vec::new();
        if self.log {
            let base: f64 = if self.ticks == Ticks::Bytes { 2.0 } else { 10.0 };
            let (a, b) = (self.lo.log(base).round() as i32, self.hi.log(base).round() as i32);
            let every = (((b - a) as f64) / 8.0).ceil().max(1.0) as i32;
            for e in (a..=b).filter(|e| (e - a) % every == 0) {
                let v = base.powi(e);
                out.push((v, self.label(v)));
            }
        } else {
            let step = nice_step((self.hi - self.lo) / 5.0);
            let mut v = self.lo;
            while v <= self.hi + step * 1e-6 {
                let v0 = if v.abs() < step * 1e-9 { 0.0 } else { v };
                out.push((v0, self.label(v0)));
                v += step;
            }
        }
        out
    }

    fn label(&self, v: f64) -> String {
        match self.ticks {
            Ticks::Bytes => bytes(v),
            Ticks::Plain => tick_num(v),
        }
    }
}

/// A tick label: as short as the value allows (`0.1`, `250`, `2e6`).
pub(crate) fn tick_num(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-3..1e6).contains(&a) {
        format!("{v:e}")
    } else {
        format!("{}", (v * 1e6).round() / 1e6)
    }
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw.is_nan() || raw <= 0.0 || raw.is_infinite() {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * p).find(|s| *s >= raw * 0.999).unwrap_or(10.0 * p)
}

/// `512`, `4K`, `1M`, `2G` (binary units, as kdelta's size parameters).
pub(crate) fn bytes(v: f64) -> String {
    for (u, m) in [("G", 1u64 << 30), ("M", 1 << 20), ("K", 1 << 10)] {
        let m = m as f64;
        if v >= m {
            let x = v / m;
            return format!("{}{u}", tick_num((x * 100.0).round() / 100.0));
        }
    }
    tick_num(v)
}

/// One legend entry: a swatch colour and its text (`up [0]`).
pub(crate) struct Key {
    pub(crate) color: &'static str,
    pub(crate) text: String,
    /// Drawn as a line with a dot (a line chart) rather than a block.
    pub(crate) line: bool,
}

/// The words of one chart, as [`Frame::svg`] writes them.
#[derive(Clone, Copy)]
pub(crate) struct Labels<'a> {
    /// Names the chart for tests and the browser check (`data-kind`).
    pub(crate) kind: &'static str,
    pub(crate) title: &'a str,
    /// Which way is better, and what the marks mean.
    pub(crate) better: &'a str,
    /// The horizontal axis, with its unit.
    pub(crate) x_name: &'a str,
    /// The vertical axis, with its unit.
    pub(crate) y_name: &'a str,
}

/// Geometry of one chart; `plot` is where data is drawn.
pub(crate) struct Frame {
    pub(crate) width: f64,
    pub(crate) height: f64,
    pub(crate) left: f64,
    pub(crate) top: f64,
    pub(crate) plot_w: f64,
    pub(crate) plot_h: f64,
    /// Room added between the tick labels and the horizontal axis's name,
    /// for what a chart writes under its plot.
    pub(crate) below: f64,
}

impl Frame {
    /// A frame with room for `legend` entries below the plot.
    pub(crate) fn new(width: f64, plot_h: f64, left: f64, legend: usize) -> Frame {
        Frame::with_room_below(width, plot_h, left, legend, 0.0)
    }

    /// A frame as [`Frame::new`] with `below` pixels more under the tick
    /// labels.
    pub(crate) fn with_room_below(width: f64, plot_h: f64, left: f64, legend: usize, below: f64) -> Frame {
        let top = 52.0;
        let legend_rows = legend.div_ceil(2) as f64;
        let height = top + plot_h + 48.0 + below + 18.0 * legend_rows + 8.0;
        Frame { width, height, left, top, plot_w: width - left - 24.0, plot_h, below }
    }

    pub(crate) fn bottom(&self) -> f64 {
        self.top + self.plot_h
    }

    pub(crate) fn right(&self) -> f64 {
        self.left + self.plot_w
    }

    /// The whole `<svg>`: title, direction, axis names, `body`, the legend.
    /// The texts are escaped here.
    pub(crate) fn svg(&self, labels: &Labels, body: &Html, legend: &[Key]) -> Html {
        let Labels { kind, title, better, x_name, y_name } = *labels;
        let mut s = Html::new();
        html_write!(
            s,
            r#"<svg class="chart" data-kind="{}" role="img" width="{}" height="{}" viewBox="0 0 {} {}" font-family="sans-serif" font-size="12"><title>{}</title>"#,
            Html::lit(kind),
            self.width,
            self.height,
            self.width,
            self.height,
            Html::text(title)
        );
        html_write!(s, r##"<rect x="0" y="0" width="{}" height="{}" fill="#fff"/>"##, self.width, self.height);
        html_write!(
            s,
            r#"<text x="{}" y="20" font-size="15" font-weight="bold">{}</text>"#,
            self.left,
            Html::text(&cut(title, 90))
        );
        html_write!(s, r##"<text class="better" x="{}" y="38" fill="#444">{}</text>"##, self.left, Html::text(better));
        s.push(body);
        html_write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            self.left + self.plot_w / 2.0,
            self.bottom() + 38.0 + self.below,
            Html::text(x_name)
        );
        let (yx, yy) = (14.0, self.top + self.plot_h / 2.0);
        html_write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle" transform="rotate(-90 {} {})">{}</text>"#,
            yx,
            yy,
            yx,
            yy,
            Html::text(y_name)
        );
        let col_w = (self.width - self.left) / 2.0;
        for (i, k) in legend.iter().enumerate() {
            let x = self.left + col_w * (i % 2) as f64;
            let y = self.bottom() + 58.0 + self.below + 18.0 * (i / 2) as f64;
            let c = Html::lit(k.color);
            if k.line {
                html_write!(
                    s,
                    r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2"/><circle cx="{}" cy="{}" r="3" fill="{}"/>"#,
                    x,
                    y,
                    x + 18.0,
                    y,
                    c,
                    x + 9.0,
                    y,
                    c
                );
            } else {
                html_write!(s, r#"<rect x="{}" y="{}" width="18" height="10" fill="{}"/>"#, x, y - 5.0, c);
            }
            html_write!(s, r#"<text x="{}" y="{}">{}</text>"#, x + 24.0, y + 4.0, Html::text(&cut(&k.text, 60)));
        }
        s.push_lit("</svg>");
        s
    }

    /// Grid lines and tick labels of a horizontal value axis along the bottom.
    pub(crate) fn x_axis(&self, sc: &Scale) -> Html {
        let mut s = Html::new();
        for (v, l) in sc.ticks() {
            let x = sc.map(v);
            html_write!(
                s,
                r##"<line x1="{:.1}" y1="{}" x2="{:.1}" y2="{}" stroke="#ddd"/>"##,
                x,
                self.top,
                x,
                self.bottom()
            );
            html_write!(
                s,
                r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
                x,
                self.bottom() + 16.0,
                Html::text(&l)
            );
        }
        s.push(&self.outline());
        s
    }

    /// Grid lines and tick labels of a vertical value axis along the left.
    pub(crate) fn y_axis(&self, sc: &Scale) -> Html {
        let mut s = Html::new();
        for (v, l) in sc.ticks() {
            let y = sc.map(v);
            html_write!(
                s,
                r##"<line x1="{}" y1="{:.1}" x2="{}" y2="{:.1}" stroke="#ddd"/>"##,
                self.left,
                y,
                self.right(),
                y
            );
            html_write!(
                s,
                r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
                self.left - 6.0,
                y + 4.0,
                Html::text(&l)
            );
        }
        s.push(&self.outline());
        s
    }

    fn outline(&self) -> Html {
        html_format!(
            r##"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#888"/>"##,
            self.left,
            self.top,
            self.plot_w,
            self.plot_h
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_pick_log_for_wide_ranges_and_nice_ticks() {
        let s = Scale::fit(&[0.5, 900.0], 100.0, true, 0.0, 100.0, Ticks::Plain);
        assert!(s.log);
        assert_eq!((s.lo, s.hi), (0.1, 1000.0));
        assert_eq!(s.ticks().iter().map(|t| t.1.as_str()).collect::<Vec<_>>(), ["0.1", "1", "10", "100", "1000"]);
        let l = Scale::fit(&[3.0, 47.0], 100.0, true, 0.0, 100.0, Ticks::Plain);
        assert!(!l.log);
        assert_eq!(l.lo, 0.0);
        assert!(l.hi >= 47.0 && l.ticks().len() >= 3);
        assert!((l.map(l.lo) - 0.0).abs() < 1e-9 && (l.map(l.hi) - 100.0).abs() < 1e-9);
        let b = Scale::fit(&[4096.0, 64.0 * 1048576.0], 64.0, false, 0.0, 1.0, Ticks::Bytes);
        assert!(b.log);
        let t = b.ticks();
        assert!(t.len() <= 9, "{t:?}");
        assert_eq!(t[0].1, "2K", "a power of two gets headroom below");
        assert_eq!(bytes(1536.0), "1.5K");
        assert_eq!(tick_num(2_000_000.0), "2e6");
        assert_eq!(tick_num(0.3), "0.3");
    }

    #[test]
    fn cutting() {
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
    }
}
