//! Results grouped for charts, shared by the SVG charts (`chart.rs`) and the
//! HTML report's (`html/charts.rs`): per benchmark, in the order the
//! benchmarks first appear, either a sweep (the results vary a numeric
//! parameter: one series per configuration and other varying parameters,
//! points sorted along that parameter) or left for bar charts.

use crate::model::params::parse_size;
use crate::model::record::{ResultRecord, Status};

/// A parameter value as a number, and whether it was written as a size
/// (`4K`, `16M`), so an axis can be labelled in bytes.
pub(super) fn numeric(v: &str) -> Option<(f64, bool)> {
    v.parse::<f64>().ok().map(|x| (x, false)).or_else(|| parse_size(v).ok().map(|b| (b as f64, true)))
}

/// Whether a result has a point to draw: it ran, it has a summary, and its
/// figure is not below resolution (the table shows `< X` for that).
pub(super) fn drawable(r: &ResultRecord) -> bool {
    r.status == Status::Ok && r.summary.is_some() && r.below_resolution.is_none()
}

/// The parameters that vary among one benchmark's results, and the one to
/// put on a chart's x axis: the first varying one whose every value is a
/// number or a size. `None` when nothing numeric is swept (a bar chart).
pub(super) fn swept<'a>(rs: &[&'a ResultRecord]) -> (Vec<&'a String>, Option<&'a String>) {
    let Some(first) = rs.first() else { return (Vec::new(), None) };
    let varying: Vec<&String> =
        first.params.0.keys().filter(|k| rs.iter().any(|r| r.params.0.get(*k) != first.params.0.get(*k))).collect();
    let x = varying.iter().find(|k| rs.iter().all(|r| r.params.0.get(**k).and_then(|v| numeric(v)).is_some())).copied();
    (varying, x)
}

/// One point: the swept value and the result's median, min and max.
pub(super) struct Point {
    pub(crate) x: f64,
    pub(crate) median: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
}

pub(super) struct Series {
    pub(crate) name: String,
    pub(crate) points: Vec<Point>,
}

/// One benchmark swept over `x`.
pub(super) struct Sweep<'a> {
    pub(crate) benchmark: &'a str,
    pub(crate) x: &'a str,
    /// The swept values were written as sizes.
    pub(crate) x_is_bytes: bool,
    /// The drawable results, in the order given.
    pub(crate) results: Vec<&'a ResultRecord>,
    pub(crate) series: Vec<Series>,
}

/// Split results into sweeps and the rest. A series is named by `head(r)`
/// (the configuration, as the caller wants it shown) followed by the other
/// varying parameters as `k=v`. The rest holds every result of a benchmark
/// that is not swept or has nothing drawable, drawable or not, in order.
pub(super) fn split<'a>(
    results: &'a [ResultRecord],
    head: impl Fn(&ResultRecord) -> String,
) -> (Vec<Sweep<'a>>, Vec<&'a ResultRecord>) {
    let mut names: Vec<&str> = Vec::new();
    for r in results {
        if !names.contains(&r.benchmark.as_str()) {
            names.push(&r.benchmark);
        }
    }
    let mut sweeps = Vec::new();
    let mut rest = Vec::new();
    for name in names {
        let all: Vec<&ResultRecord> = results.iter().filter(|r| r.benchmark == name).collect();
        let rs: Vec<&ResultRecord> = all.iter().copied().filter(|r| drawable(r)).collect();
        let (varying, x) = swept(&rs);
        let Some(x) = x else {
            rest.extend(all);
            continue;
        };
        let mut series: Vec<Series> = Vec::new();
        let mut x_is_bytes = false;
        for r in &rs {
            let others: Vec<String> = r
                .params
                .0
                .iter()
                .filter(|(k, _)| *k != x && varying.contains(k))
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let label = if others.is_empty() { head(r) } else { format!("{} {}", head(r), others.join(" ")) };
            let s = r.summary.as_ref().expect("drawable results have a summary");
            let (px, bytes) = numeric(&r.params.0[x]).expect("swept values are numeric");
            x_is_bytes |= bytes;
            let p = Point { x: px, median: s.median, min: s.min, max: s.max };
            match series.iter_mut().find(|l| l.name == label) {
                Some(l) => l.points.push(p),
                None => series.push(Series { name: label, points: vec![p] }),
            }
        }
        for l in &mut series {
            l.points.sort_by(|a, b| a.x.total_cmp(&b.x));
        }
        sweeps.push(Sweep { benchmark: name, x, x_is_bytes, results: rs, series });
    }
    (sweeps, rest)
}
