//! The report's charts, from a [`Report`]'s results and tables:
//! - lines over a swept numeric parameter (thread count, copy size), one per
//!   configuration, median with min-max whiskers, and the cache regimes as
//!   bands when the results carry their cache sizes (`caches` and
//!   `working_set_bytes` extras, which a benchmark may record);
//! - grouped bars per configuration for the rest (the 2003 article's
//!   figures 1-3), one chart per family and unit, at most [`BARS_PER_CHART`]
//!   rows each;
//! - the speedup of each compared column against the first, per row, with
//!   its 95% bootstrap interval.
//!
//! Every chart names its axes with units, says which way is better and has
//! a legend naming the configurations and their CPU sets.

use super::super::grid::ParamView;
use super::super::model::{Report, Row, Table};
use super::super::sweep;
use super::escape::{html_write, Html};
use super::svg::{color, cut, Frame, Key, Labels, Scale, Ticks};
use crate::model::fmt::fmt_num;
use crate::model::record::{ResultRecord, Status};
use crate::model::Better;

/// Rows per bar or speedup chart; longer tables are split.
pub(crate) const BARS_PER_CHART: usize = 16;

const WIDTH: f64 = 860.0;

fn better_text(b: Better) -> &'static str {
    match b {
        Better::Lower => "lower is better",
        _ => "higher is better",
    }
}

/// Every chart of one run's report, in order: lines, bars, speedups.
pub(crate) fn for_run(rep: &Report) -> Vec<Html> {
    let (mut out, rest) = lines(&rep.results);
    out.extend(bars(&rest));
    for t in &rep.tables {
        out.extend(speedups(t));
    }
    out
}

/// Line charts for benchmarks swept over a numeric parameter; the results
/// that are not are returned for the bar charts.
fn lines(results: &[ResultRecord]) -> (Vec<Html>, Vec<&ResultRecord>) {
    let (sweeps, rest) = sweep::split(results, |r| {
        if r.cpus.is_empty() {
            r.config.clone()
        } else {
            format!("{} [cpus {}]", r.config, r.cpus)
        }
    });
    (sweeps.iter().map(line_chart).collect(), rest)
}

fn line_chart(sw: &sweep::Sweep) -> Html {
    let (name, x, is_bytes, rs, series) = (sw.benchmark, sw.x, sw.x_is_bytes, &sw.results, &sw.series);
    let first = rs[0];
    let f = Frame::new(WIDTH, 300.0, 78.0, series.len());
    let xs: Vec<f64> = series.iter().flat_map(|l| l.points.iter().map(|p| p.x)).collect();
    let ys: Vec<f64> = series.iter().flat_map(|l| l.points.iter().flat_map(|p| [p.median, p.min, p.max])).collect();
    let xt = if is_bytes { Ticks::Bytes } else { Ticks::Plain };
    let mut sx = Scale::fit(&xs, 63.0, false, f.left, f.right(), xt);
    if !sx.log && xs.iter().all(|v| *v >= 0.0) && sx.lo < 0.0 {
        sx.lo = 0.0;
    }
    let sy = Scale::fit(&ys, 200.0, true, f.bottom(), f.top, Ticks::Plain);
    let mut body = Html::new();
    body.push(&bands(rs, x, &sx, &f));
    body.push(&f.x_axis(&sx));
    body.push(&f.y_axis(&sy));
    for (i, l) in series.iter().enumerate() {
        let c = Html::lit(color(i));
        let mut pts = Html::new();
        for (k, p) in l.points.iter().enumerate() {
            html_write!(pts, "{}{:.1},{:.1}", Html::lit(if k == 0 { "" } else { " " }), sx.map(p.x), sy.map(p.median));
        }
        html_write!(body, r#"<polyline class="series" points="{}" fill="none" stroke="{}" stroke-width="2"/>"#, pts, c);
        for p in &l.points {
            let (px, lo, hi) = (sx.map(p.x), sy.map(p.min), sy.map(p.max));
            html_write!(body, r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}"/>"#, px, lo, px, hi, c);
            let what = format!(
                "{} {x}={}: median {} {}",
                l.name,
                if is_bytes { super::svg::bytes(p.x) } else { fmt_num(p.x) },
                fmt_num(p.median),
                first.unit
            );
            html_write!(
                body,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}"><title>{}</title></circle>"#,
                px,
                sy.map(p.median),
                c,
                Html::text(&what)
            );
        }
    }
    let legend: Vec<Key> =
        series.iter().enumerate().map(|(i, l)| Key { color: color(i), text: l.name.clone(), line: true }).collect();
    let x_name = if is_bytes {
        format!("{x} (bytes{})", if sx.log { ", log scale" } else { "" })
    } else {
        format!("{x}{}", if sx.log { " (log scale)" } else { "" })
    };
    let y_name = format!("median {}{}", first.unit, if sy.log { " (log)" } else { "" });
    let better = format!("{}; whiskers: min to max of the clean samples", better_text(first.better));
    let title = format!("{name} over {x}");
    let labels = Labels { kind: "lines", title: &title, better: &better, x_name: &x_name, y_name: &y_name };
    f.svg(&labels, &body, &legend)
}

/// Shaded cache-regime bands (L1, L2, ..., memory) along a size axis, from
/// the caches a result recorded and its working set per unit of `x`.
fn bands(rs: &[&ResultRecord], x: &str, sx: &Scale, f: &Frame) -> Html {
    let r = rs[0];
    let (Some(caches), Some(ws)) = (&r.extras.caches, r.extras.working_set_bytes.as_ref().and_then(|w| w.as_f64()))
    else {
        return Html::new();
    };
    let Some((xv, _)) = r.params.0.get(x).and_then(|v| sweep::numeric(v)) else { return Html::new() };
    if xv <= 0.0 || ws <= 0.0 {
        return Html::new();
    }
    let per = ws / xv;
    let mut levels: Vec<(u64, f64)> = caches.iter().filter_map(|c| Some((c.level, c.bytes.as_f64()? / per))).collect();
    levels.sort_by(|a, b| a.1.total_cmp(&b.1));
    let mut s = Html::new();
    let mut from = sx.lo;
    let mut edges: Vec<(String, f64, f64)> = Vec::new();
    for (l, cap) in &levels {
        edges.push((format!("L{l}"), from, *cap));
        from = *cap;
    }
    edges.push(("memory".into(), from, sx.hi));
    for (i, (name, a, b)) in edges.iter().enumerate() {
        let (xa, xb) = (sx.clamp(*a), sx.clamp(*b));
        if xb - xa < 1.0 {
            continue;
        }
        let fill = if i % 2 == 0 { "#eef3f8" } else { "#f8f4ea" };
        html_write!(
            s,
            r#"<rect class="band" x="{:.1}" y="{}" width="{:.1}" height="{}" fill="{}"/>"#,
            xa,
            f.top,
            xb - xa,
            f.plot_h,
            Html::lit(fill)
        );
        html_write!(
            s,
            r##"<text x="{:.1}" y="{}" text-anchor="middle" fill="#666" font-size="11">{}</text>"##,
            (xa + xb) / 2.0,
            f.top + 13.0,
            Html::text(name)
        );
    }
    s
}

/// Grouped bars: per family, unit and direction, one group of bars per row
/// (benchmark and parameters), one bar per configuration.
fn bars(rest: &[&ResultRecord]) -> Vec<Html> {
    let pv = ParamView::new(rest.iter().map(|r| (r.benchmark.as_str(), &r.params)));
    let mut groups: Vec<(String, String, Better)> = Vec::new();
    for r in rest {
        let k = (r.family.clone(), r.unit.clone(), r.better);
        if !groups.contains(&k) {
            groups.push(k);
        }
    }
    let mut out = Vec::new();
    for (fam, unit, better) in groups {
        let rs: Vec<&ResultRecord> =
            rest.iter().copied().filter(|r| r.family == fam && r.unit == unit && r.better == better).collect();
        let mut configs: Vec<(String, String)> = Vec::new();
        let mut cats: Vec<(String, crate::model::Params, String)> = Vec::new();
        for r in &rs {
            if !configs.iter().any(|c| c.0 == r.config) {
                configs.push((r.config.clone(), r.cpus.clone()));
            }
            let shown = pv.show(&r.benchmark, &r.params);
            let label = if shown.is_empty() { r.benchmark.clone() } else { format!("{} {shown}", r.benchmark) };
            if !cats.iter().any(|c| c.0 == r.benchmark && c.1 == r.params) {
                cats.push((r.benchmark.clone(), r.params.clone(), label));
            }
        }
        let parts = cats.len().div_ceil(BARS_PER_CHART);
        for (pi, chunk) in cats.chunks(BARS_PER_CHART).enumerate() {
            let title = if parts > 1 {
                format!("{fam} ({unit}), part {} of {parts}", pi + 1)
            } else {
                format!("{fam} ({unit})")
            };
            out.push(bar_chart(&title, &unit, better, &configs, chunk, &rs));
        }
    }
    out
}

fn bar_chart(
    title: &str,
    unit: &str,
    better: Better,
    configs: &[(String, String)],
    cats: &[(String, crate::model::Params, String)],
    rs: &[&ResultRecord],
) -> Html {
    let find = |c: &(String, crate::model::Params, String), cfg: &str| {
        rs.iter().copied().find(|r| r.benchmark == c.0 && r.params == c.1 && r.config == cfg)
    };
    let group_h = (configs.len() as f64 * 11.0 + 10.0).max(18.0);
    let f = Frame::new(WIDTH, group_h * cats.len() as f64, 250.0, configs.len());
    let vals: Vec<f64> = cats
        .iter()
        .flat_map(|c| configs.iter().filter_map(move |(cfg, _)| find(c, cfg)))
        .filter(|r| sweep::drawable(r))
        .map(|r| r.summary.as_ref().unwrap().median)
        .collect();
    let sx = Scale::fit(&vals, 100.0, true, f.left, f.right(), Ticks::Plain);
    let mut body = f.x_axis(&sx);
    for (ci, c) in cats.iter().enumerate() {
        let y0 = f.top + group_h * ci as f64;
        html_write!(
            body,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            f.left - 6.0,
            y0 + group_h / 2.0 + 4.0,
            Html::text(&cut(&c.2, 38))
        );
        for (k, (cfg, _)) in configs.iter().enumerate() {
            let y = y0 + 5.0 + 11.0 * k as f64;
            match find(c, cfg) {
                Some(r) if sweep::drawable(r) => {
                    let m = r.summary.as_ref().unwrap().median;
                    let x0 = sx.clamp(if sx.log { sx.lo } else { 0.0 });
                    let x1 = sx.clamp(m);
                    // The configuration name is text like any other: escaped.
                    let what = format!("{} [{cfg}]: {} {unit}", c.2, fmt_num(m));
                    html_write!(
                        body,
                        r#"<rect class="bar" x="{:.1}" y="{:.1}" width="{:.1}" height="9" fill="{}"><title>{}</title></rect>"#,
                        x0.min(x1),
                        y,
                        (x1 - x0).abs().max(1.0),
                        Html::lit(color(k)),
                        Html::text(&what)
                    );
                }
                Some(r) => {
                    let what = match (r.below_resolution, r.status) {
                        (Some(b), _) => format!("< {} (below resolution)", fmt_num(b)),
                        (None, Status::Ok) => "no figure".to_string(),
                        (None, s) => format!("{s:?}").to_lowercase(),
                    };
                    html_write!(
                        body,
                        r##"<text x="{}" y="{:.1}" fill="#666" font-size="10">{}</text>"##,
                        f.left + 4.0,
                        y + 8.0,
                        Html::text(&format!("{cfg} {what}"))
                    );
                }
                None => {}
            }
        }
    }
    let legend: Vec<Key> = configs
        .iter()
        .enumerate()
        .map(|(i, (n, cpus))| Key {
            color: color(i),
            text: format!("{n} [cpus {}]", if cpus.is_empty() { "-" } else { cpus }),
            line: false,
        })
        .collect();
    let x_name = format!("median {unit}{}", if sx.log { " (log scale)" } else { "" });
    let labels = Labels { kind: "bars", title, better: better_text(better), x_name: &x_name, y_name: "benchmark" };
    f.svg(&labels, &body, &legend)
}

/// The speedup of each column against the first, per row, with its 95%
/// bootstrap interval; a filled dot is a significant change.
pub(crate) fn speedups(t: &Table) -> Vec<Html> {
    let pv = ParamView::new(t.rows.iter().map(|r| (r.benchmark.as_str(), &r.params)));
    let rows: Vec<_> = t.rows.iter().filter(|r| r.changes.iter().any(|c| c.is_some())).collect();
    if rows.is_empty() || t.columns.len() < 2 {
        return Vec::new();
    }
    let base = &t.columns[0].name;
    let parts = rows.len().div_ceil(BARS_PER_CHART);
    let title = |pi: usize| {
        if parts > 1 {
            format!("speedup against {base}, part {} of {parts}", pi + 1)
        } else {
            format!("speedup against {base}")
        }
    };
    rows.chunks(BARS_PER_CHART).enumerate().map(|(pi, chunk)| speedup_chart(t, chunk, &pv, &title(pi))).collect()
}

/// One speedup chart of the rows `chunk`.
fn speedup_chart(t: &Table, chunk: &[&Row], pv: &ParamView, title: &str) -> Html {
    let base = &t.columns[0];
    let k = t.columns.len() - 1;
    let group_h = (k as f64 * 12.0 + 10.0).max(20.0);
    let f = Frame::new(WIDTH, group_h * chunk.len() as f64, 250.0, k);
    let mut vals = vec![1.0];
    for r in chunk {
        for c in r.changes.iter().flatten() {
            vals.extend([Some(c.speedup), c.ci_low, c.ci_high].into_iter().flatten());
        }
    }
    let sx = Scale::fit(&vals, 20.0, false, f.left, f.right(), Ticks::Plain);
    let mut body = f.x_axis(&sx);
    let one = sx.map(1.0);
    html_write!(body, r##"<line x1="{:.1}" y1="{}" x2="{:.1}" y2="{}" stroke="#000"/>"##, one, f.top, one, f.bottom());
    for (ri, r) in chunk.iter().enumerate() {
        let y0 = f.top + group_h * ri as f64;
        let shown = pv.show(&r.benchmark, &r.params);
        let label = if shown.is_empty() { r.benchmark.clone() } else { format!("{} {shown}", r.benchmark) };
        html_write!(
            body,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            f.left - 6.0,
            y0 + group_h / 2.0 + 4.0,
            Html::text(&cut(&label, 38))
        );
        speedup_dots(&mut body, t, r, &label, &sx, y0);
    }
    let legend: Vec<Key> = t.columns[1..]
        .iter()
        .enumerate()
        .map(|(i, c)| Key {
            color: color(i),
            text: format!(
                "{} [cpus {}] against {} [cpus {}]",
                c.name,
                or_dash(&c.cpus),
                base.name,
                or_dash(&base.cpus)
            ),
            line: true,
        })
        .collect();
    let better = "higher is better: above 1 the configuration is faster than the first; filled dot: significant; bar: 95% bootstrap interval";
    let x_name = format!("speedup (ratio of medians{})", if sx.log { ", log scale" } else { "" });
    f.svg(&Labels { kind: "speedup", title, better, x_name: &x_name, y_name: "benchmark" }, &body, &legend)
}

/// Row `r`'s speedups, one dot per compared column from `y0` down, each with
/// its interval when it has one.
fn speedup_dots(body: &mut Html, t: &Table, r: &Row, label: &str, sx: &Scale, y0: f64) {
    for (i, c) in r.changes.iter().enumerate() {
        let Some(c) = c else { continue };
        if !c.speedup.is_finite() {
            continue;
        }
        let y = y0 + 8.0 + 12.0 * i as f64;
        let col = Html::lit(color(i));
        if let (Some(lo), Some(hi)) = (c.ci_low, c.ci_high) {
            html_write!(
                body,
                r#"<line class="ci" x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="2"/>"#,
                sx.clamp(lo),
                y,
                sx.clamp(hi),
                y,
                col
            );
        }
        let fill = Html::lit(if c.significant { color(i) } else { "#fff" });
        let ci = match (c.ci_low, c.ci_high) {
            (Some(lo), Some(hi)) => format!(", 95% interval {}..{}", fmt_num(lo), fmt_num(hi)),
            _ => String::new(),
        };
        let what = format!(
            "{label} [{}]: speedup {}{ci}{}",
            t.columns[i + 1].name,
            fmt_num(c.speedup),
            if c.significant { ", significant" } else { "" }
        );
        html_write!(
            body,
            r#"<circle class="speedup" cx="{:.1}" cy="{:.1}" r="4" fill="{}" stroke="{}" stroke-width="2"><title>{}</title></circle>"#,
            sx.clamp(c.speedup),
            y,
            fill,
            col,
            Html::text(&what)
        );
    }
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() {
        "-"
    } else {
        s
    }
}
