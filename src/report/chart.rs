//! Charts (SVG, through plotters): for each benchmark swept over one numeric
//! parameter, a line per configuration (median, with min-max whiskers as
//! points); for the rest, one bar panel of speedups against the first
//! configuration (1.0 = same, above = better), like the 2003 study's figures.

use super::model::Report;
use super::sweep::{self, Series};
use super::Renderer;
use crate::model::record::ResultRecord;
use anyhow::Result;
use plotters::prelude::*;

/// The run has nothing a chart can show (the caller's mistake, not a failure).
#[derive(Debug, thiserror::Error)]
#[error("nothing to chart: the run has no swept numeric parameter and a single configuration")]
pub(crate) struct NothingToChart;

struct Panel {
    title: String,
    x_label: String,
    y_label: String,
    lines: Vec<Series>,
}

/// Line panels for swept benchmarks; the drawable rest is returned for the
/// bar panel.
fn sweeps(results: &[ResultRecord]) -> (Vec<Panel>, Vec<&ResultRecord>) {
    let (sweeps, mut rest) = sweep::split(results, |r| r.config.clone());
    rest.retain(|r| sweep::drawable(r));
    let panels = sweeps
        .into_iter()
        .map(|s| {
            let first = s.results[0];
            let dir = if first.better == crate::model::Better::Lower { "lower is better" } else { "higher is better" };
            Panel {
                title: s.benchmark.to_string(),
                x_label: s.x.to_string(),
                y_label: format!("{} ({dir})", first.unit),
                lines: s.series,
            }
        })
        .collect();
    (panels, rest)
}

/// The charts of a run as one SVG document: line panels for its sweeps, a bar
/// panel for the rest. A run with nothing to chart is a [`NothingToChart`] error.
pub(crate) struct Chart;

impl Renderer for Chart {
    fn render(&self, reports: &[Report]) -> Result<String> {
        svg(super::single(reports, "SVG chart")?)
    }
}

/// One bar group: its label and the speedup of every configuration but the
/// first (NaN where one has no figure).
type Bars = Vec<(String, Vec<f64>)>;

/// Speedups of every other configuration against the first, per benchmark
/// and parameter point; no bars with a single configuration.
fn bars<'a>(rest: &[&'a ResultRecord]) -> (Vec<&'a str>, Bars) {
    let mut configs: Vec<&str> = Vec::new();
    for r in rest {
        if !configs.contains(&r.config.as_str()) {
            configs.push(&r.config);
        }
    }
    let mut bars: Bars = Vec::new();
    if configs.len() < 2 {
        return (configs, bars);
    }
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in rest {
        let k = (r.benchmark.clone(), r.params.display());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    for (b, p) in keys {
        let med = |c: &str| {
            rest.iter()
                .find(|r| r.benchmark == b && r.params.display() == p && r.config == c)
                .and_then(|r| r.summary.as_ref().map(|s| (s.median, r.better)))
        };
        if let Some((a, better)) = med(configs[0]) {
            let v: Vec<f64> = configs[1..]
                .iter()
                .map(|c| med(c).map(|(m, _)| crate::stats::compare::speedup_of(a, m, better)).unwrap_or(f64::NAN))
                .collect();
            bars.push((if p.is_empty() { b } else { format!("{b} {p}") }, v));
        }
    }
    (configs, bars)
}

/// The charts as one SVG document. plotters escapes the markup characters of
/// every text it draws; bidirectional controls (a configuration or label
/// with a right-to-left override) are shown as `[U+202E]`.
fn svg(rep: &Report) -> Result<String> {
    let (panels, rest) = sweeps(&rep.results);
    let (configs, bars) = bars(&rest);
    if panels.is_empty() && bars.is_empty() {
        return Err(NothingToChart.into());
    }
    let bar_h = if bars.is_empty() { 0 } else { 120 + 22 * bars.len() as u32 };
    let height = 380 * panels.len() as u32 + bar_h;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (900, height.max(200))).into_drawing_area();
        root.fill(&WHITE)?;
        let (lines_area, bar_area) = root.split_vertically(380 * panels.len() as u32);
        let areas = if panels.is_empty() { Vec::new() } else { lines_area.split_evenly((panels.len(), 1)) };
        for (panel, area) in panels.iter().zip(areas) {
            draw_panel(panel, &area)?;
        }
        if !bars.is_empty() {
            draw_bars(&configs, &bars, &bar_area)?;
        }
        root.present()?;
    }
    Ok(crate::model::text::neutral(&out).into_owned())
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// One sweep: a line of medians per configuration, min and max as dots;
/// the x axis logarithmic when it spans 64 times or more.
fn draw_panel(panel: &Panel, area: &Area) -> Result<()> {
    let xs: Vec<f64> = panel.lines.iter().flat_map(|l| l.points.iter().map(|p| p.x)).collect();
    let ys: Vec<f64> = panel.lines.iter().flat_map(|l| l.points.iter().flat_map(|p| [p.min, p.max])).collect();
    let (x0, x1) =
        (xs.iter().cloned().fold(f64::INFINITY, f64::min), xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max));
    let y1 = ys.iter().cloned().fold(0.0, f64::max) * 1.1;
    let log_x = x0 > 0.0 && x1 / x0 >= 64.0;
    let mut builder = ChartBuilder::on(area);
    let chart =
        builder.caption(&panel.title, ("sans-serif", 20)).margin(12).x_label_area_size(40).y_label_area_size(70);
    let color = |i: usize| Palette99::pick(i).to_rgba();
    macro_rules! draw {
        ($c:expr) => {{
            let mut c = $c;
            c.configure_mesh().x_desc(panel.x_label.as_str()).y_desc(panel.y_label.as_str()).draw()?;
            for (i, l) in panel.lines.iter().enumerate() {
                let col = color(i);
                c.draw_series(LineSeries::new(l.points.iter().map(|p| (p.x, p.median)), col.stroke_width(2)))?
                    .label(l.name.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(2)));
                c.draw_series(l.points.iter().flat_map(|p| {
                    [Circle::new((p.x, p.min), 2, col.filled()), Circle::new((p.x, p.max), 2, col.filled())]
                }))?;
            }
            c.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
        }};
    }
    if log_x {
        draw!(chart.build_cartesian_2d((x0..x1).log_scale(), 0.0..y1.max(1e-12))?);
    } else {
        let pad = ((x1 - x0) * 0.05).max(0.5);
        draw!(chart.build_cartesian_2d((x0 - pad)..(x1 + pad), 0.0..y1.max(1e-12))?);
    }
    Ok(())
}

/// The bar panel: per label, one bar per configuration but the first, and a
/// rule at 1 (the same speed).
fn draw_bars(configs: &[&str], bars: &Bars, area: &Area) -> Result<()> {
    let ymax = bars.iter().flat_map(|b| b.1.iter().cloned()).filter(|v| v.is_finite()).fold(1.0, f64::max) * 1.15;
    let n = bars.len();
    let mut c = ChartBuilder::on(area)
        .caption(format!("speedup against {} (above 1 = better)", configs[0]), ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(10)
        .build_cartesian_2d(0.0..ymax, 0.0..n as f64)?;
    c.configure_mesh().disable_y_mesh().y_labels(0).x_desc("speedup").draw()?;
    let k = configs.len() - 1;
    for (ci, cname) in configs[1..].iter().enumerate() {
        let col = Palette99::pick(ci).to_rgba();
        let h = 0.8 / k as f64;
        c.draw_series(bars.iter().enumerate().filter(|(_, b)| b.1[ci].is_finite()).map(|(i, b)| {
            let y = i as f64 + 0.1 + h * ci as f64;
            Rectangle::new([(0.0, y), (b.1[ci], y + h)], col.filled())
        }))?
        .label(*cname)
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 15, y + 5)], col.filled()));
    }
    c.draw_series(std::iter::once(PathElement::new(vec![(1.0, 0.0), (1.0, n as f64)], BLACK.stroke_width(1))))?;
    c.draw_series(bars.iter().enumerate().map(|(i, b)| {
        Text::new(b.0.clone(), (ymax * 0.01, i as f64 + 0.5), ("sans-serif", 13).into_font().color(&BLACK))
    }))?;
    c.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    Ok(())
}
