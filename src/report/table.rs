//! A comparison table: its columns, rows and cells, and how a row is
//! judged (`stats::compare_sides` through `Table::build`).

use crate::model::record::{ResultRecord, Status};
use crate::model::{Better, Params};
use crate::stats::trust::PlacementGroup;
use crate::stats::{self, CompareOptions, Comparison, Warning};
use serde::Serialize;

/// One column of a table: a configuration of a run, or a whole run.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Column {
    /// `up`, or `run 12 (baseline)`.
    pub(crate) name: String,
    /// The CPU set the configuration resolved to.
    pub(crate) cpus: String,
    #[serde(skip)]
    pub(crate) results: Vec<ResultRecord>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Cell {
    pub(crate) status: Status,
    pub(crate) median: Option<f64>,
    pub(crate) cv: Option<f64>,
    pub(crate) n: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
    /// Warnings and notes, as text.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) remarks: Vec<String>,
    /// A net figure below resolution: shown as `< X`, never as its median.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) below_resolution: Option<f64>,
    /// Fewer clean samples than wanted.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) noisy: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) placement: Vec<PlacementGroup>,
    #[serde(skip)]
    pub(crate) warnings: Vec<Warning>,
    #[serde(skip)]
    pub(crate) notes: Vec<String>,
    #[serde(skip)]
    pub(crate) disturbed: usize,
    #[serde(skip)]
    pub(crate) retaken: usize,
    #[serde(skip)]
    pub(crate) wanted: usize,
    /// Clean samples (`n` counts every sample when none was clean).
    #[serde(skip)]
    pub(crate) clean: usize,
    /// The 99th percentile of the clean samples (the median is the 50th).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) p99: Option<f64>,
    /// Under a CPU limit (`+cpu.max=`): how much the worker's cgroup was throttled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) throttling: Option<Throttled>,
    /// Sampling stopped early: a comparison of this result was still
    /// unknown, and the most samples the budget allowed could not settle
    /// it (`Quality::futile`).
    #[serde(skip)]
    pub(crate) futile: bool,
}

/// A result's throttling, over the samples its figure uses.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Throttled {
    /// Samples in which the cgroup was throttled at least once, of `of`.
    pub(crate) samples: usize,
    pub(crate) of: usize,
    /// Periods throttled, and seconds held off the CPU in all of them (each
    /// sample's at most its wall time).
    pub(crate) periods: u64,
    pub(crate) secs: f64,
    /// `secs` as a share of those samples' wall time, 0..1.
    pub(crate) share: f64,
}

/// [`Throttled`] of a result whose samples recorded throttling.
fn throttled(r: &ResultRecord) -> Option<Throttled> {
    let used = crate::model::sample::used(&r.samples_meta, r.samples.len());
    let metas: Vec<&crate::model::sample::SampleMeta> =
        r.samples_meta.iter().zip(&used).filter(|(_, u)| **u).map(|(m, _)| m).collect();
    let ts: Vec<_> = metas.iter().filter_map(|m| m.throttling).collect();
    if ts.is_empty() {
        return None;
    }
    let wall: f64 = metas.iter().filter(|m| m.throttling.is_some()).map(|m| m.wall_s).sum();
    // Each sample's held-off time within its own wall time (`cpu.stat` adds
    // a throttled stretch when it ends, maybe after the sample began).
    let secs: f64 = metas.iter().filter_map(|m| m.throttling.map(|t| t.secs.min(m.wall_s))).sum();
    Some(Throttled {
        samples: ts.iter().filter(|t| t.periods > 0).count(),
        of: ts.len(),
        periods: ts.iter().map(|t| t.periods).sum(),
        secs,
        share: if wall > 0.0 { secs / wall } else { 0.0 },
    })
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Row {
    pub(crate) family: String,
    pub(crate) benchmark: String,
    pub(crate) params: Params,
    pub(crate) unit: String,
    pub(crate) better: Better,
    /// One per column.
    pub(crate) cells: Vec<Option<Cell>>,
    /// Column i (i >= 1) against column 0; `None` where either failed.
    pub(crate) changes: Vec<Option<Comparison>>,
    /// The perf event a derived counter row counts (`report::counters`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) counter: Option<String>,
}

/// Geometric means of one family: of each column's medians (when the family
/// has one unit) and of the speedups against column 0, lower-is-better ratios
/// inverted first.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct GeoRow {
    pub(crate) family: String,
    pub(crate) unit: Option<String>,
    pub(crate) values: Vec<Option<f64>>,
    /// (speedup - 1) x 100 per column i >= 1.
    pub(crate) change_pct: Vec<Option<f64>>,
    /// Rows used: those with a figure in every column, none below resolution.
    pub(crate) rows: usize,
    /// Rows of the family in the table.
    pub(crate) of: usize,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Table {
    pub(crate) columns: Vec<Column>,
    pub(crate) rows: Vec<Row>,
    pub(crate) geomeans: Vec<GeoRow>,
    /// A CPU limit is compared (a result recorded throttling): the 99th
    /// percentile is shown beside each median, since a quota moves the tail first.
    pub(crate) tail: bool,
}

pub(crate) fn cell_of(r: &ResultRecord) -> Cell {
    let mut remarks: Vec<String> = r.warnings.iter().map(|w| w.to_string()).collect();
    remarks.extend(r.notes.iter().cloned());
    let q = r.quality.clone().unwrap_or_default();
    Cell {
        status: r.status,
        median: r.summary.as_ref().map(|s| s.median).filter(|_| r.status == Status::Ok),
        cv: r.summary.as_ref().map(|s| s.cv).filter(|_| r.status == Status::Ok),
        n: r.summary.as_ref().map(|s| s.n).or(r.quality.as_ref().map(|q| q.clean)).unwrap_or(r.samples.len()),
        // A stored reason (a command's stderr) shown, never obeyed.
        reason: r.reason.as_deref().map(|r| crate::model::text::printable(r).into_owned()),
        remarks,
        below_resolution: r.below_resolution,
        noisy: q.noisy && r.status == Status::Ok,
        placement: r.placement.clone(),
        warnings: r.warnings.clone(),
        notes: r.notes.clone(),
        disturbed: q.disturbed,
        retaken: q.retaken,
        wanted: q.wanted,
        clean: r.quality.as_ref().map_or(r.samples.len(), |q| q.clean),
        p99: r.summary.as_ref().map(|s| s.p99).filter(|_| r.status == Status::Ok),
        throttling: throttled(r),
        futile: q.futile,
    }
}

impl Table {
    /// Rows keyed on (benchmark, parameters), in first-seen order.
    pub(crate) fn build(columns: Vec<Column>, opt: &CompareOptions) -> Table {
        let mut keys: Vec<(String, Params)> = Vec::new();
        for c in &columns {
            for r in &c.results {
                let k = r.point_key();
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
        }
        let rows: Vec<Row> = keys.iter().map(|k| Row::build(&columns, k, opt)).collect();
        let mut families: Vec<String> = Vec::new();
        for r in &rows {
            if !families.contains(&r.family) {
                families.push(r.family.clone());
            }
        }
        let geomeans = families.into_iter().filter_map(|fam| GeoRow::build(&rows, fam, columns.len())).collect();
        let tail = rows.iter().any(|r| r.cells.iter().flatten().any(|c| c.throttling.is_some()));
        Table { columns, rows, geomeans, tail }
    }
}

impl Row {
    /// The row of point `k`: each column's result there, and each column
    /// against column 0.
    fn build(columns: &[Column], k: &(String, Params), opt: &CompareOptions) -> Row {
        let found: Vec<Option<&ResultRecord>> =
            columns.iter().map(|c| c.results.iter().find(|r| &r.point_key() == k)).collect();
        let any = found.iter().flatten().next().expect("key came from some column");
        let base = found[0].filter(|r| r.status == Status::Ok);
        let changes = found
            .iter()
            .skip(1)
            .map(|f| match (base, f.filter(|r| r.status == Status::Ok)) {
                // A figure below resolution has no ratio worth printing.
                (Some(a), Some(b)) if a.below_resolution.is_none() && b.below_resolution.is_none() => {
                    stats::compare::compare_results(a, b, opt)
                }
                _ => None,
            })
            .collect();
        Row {
            family: any.family.clone(),
            benchmark: any.benchmark.clone(),
            params: any.params.clone(),
            unit: any.unit.clone(),
            better: any.better,
            cells: found.iter().map(|f| f.map(cell_of)).collect(),
            changes,
            counter: any.extras.counter.clone(),
        }
    }
}

impl GeoRow {
    /// The geometric means of family `fam` over its rows with a figure in
    /// every column; none with fewer than two such rows.
    fn build(rows: &[Row], fam: String, ncol: usize) -> Option<GeoRow> {
        // Counter rows are not figures of the family.
        let of = rows.iter().filter(|r| r.family == fam && r.counter.is_none()).count();
        let fr: Vec<&Row> = rows
            .iter()
            .filter(|r| {
                r.family == fam
                    && r.counter.is_none()
                    && r.cells
                        .iter()
                        .all(|c| c.as_ref().is_some_and(|c| c.median.is_some() && c.below_resolution.is_none()))
            })
            .collect();
        if fr.len() < 2 {
            return None;
        }
        let median = |r: &Row, i: usize| r.cells[i].as_ref().unwrap().median.unwrap();
        let one_unit = fr.iter().all(|r| r.unit == fr[0].unit);
        let values = (0..ncol)
            .map(|i| if one_unit { stats::geomean(&fr.iter().map(|r| median(r, i)).collect::<Vec<_>>()) } else { None })
            .collect();
        let change_pct = (1..ncol)
            .map(|i| {
                let sp: Vec<f64> =
                    fr.iter().map(|r| stats::compare::speedup_of(median(r, 0), median(r, i), r.better)).collect();
                stats::geomean(&sp).map(|g| (g - 1.0) * 100.0)
            })
            .collect();
        Some(GeoRow {
            family: fam,
            unit: if one_unit { Some(fr[0].unit.clone()) } else { None },
            values,
            change_pct,
            rows: fr.len(),
            of,
        })
    }
}
