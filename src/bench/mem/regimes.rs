//! Cache regimes and the per-regime speedup table (the study's tables, for
//! memory routines): pure functions over results, no measuring.
//!
//! A size's regime is the smallest cache level its working set fits in
//! (`L1`, `L2`, `L3`, ... or `memory`), from the sysfs data-cache sizes. The
//! working set is the size times the buffers the routine touches (2 for a
//! copy: source and destination, 1 for a fill or strlen). With `cache=cold`
//! the data comes from memory at every size; the regime then says where it
//! *would* fit.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

/// Data-cache capacities by level, ascending (instruction caches excluded).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheSizes {
    levels: Vec<(u32, u64)>,
}

impl CacheSizes {
    /// From `(level, bytes)` pairs in any order; a level listed twice keeps
    /// its largest size.
    pub fn new(pairs: impl IntoIterator<Item = (u32, u64)>) -> CacheSizes {
        let mut m: BTreeMap<u32, u64> = BTreeMap::new();
        for (l, b) in pairs {
            let e = m.entry(l).or_insert(0);
            *e = (*e).max(b);
        }
        CacheSizes { levels: m.into_iter().filter(|&(_, b)| b > 0).collect() }
    }

    /// Replace the last level's size (or add a level 3) with `llc`: the
    /// sampler's last-level cache wins over what was read.
    pub fn with_llc(mut self, llc: u64) -> CacheSizes {
        match self.levels.last_mut() {
            Some(last) => last.1 = llc,
            None => self.levels.push((3, llc)),
        }
        self
    }

    pub fn levels(&self) -> &[(u32, u64)] {
        &self.levels
    }

    pub fn llc(&self) -> Option<u64> {
        self.levels.last().map(|l| l.1)
    }

    /// The regime of a working set of `bytes`.
    pub fn regime(&self, bytes: u64) -> Regime {
        self.levels.iter().find(|&&(_, cap)| bytes <= cap).map(|&(l, _)| Regime::Cache(l)).unwrap_or(Regime::Memory)
    }
}

/// Where a working set lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Regime {
    Cache(u32),
    Memory,
}

impl fmt::Display for Regime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Regime::Cache(l) => write!(f, "L{l}"),
            Regime::Memory => f.write_str("memory"),
        }
    }
}

/// One ratio of two implementations at one size (tuned over libc, say),
/// however it was taken: the median of paired samples or of each side.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SizeRatio {
    pub(crate) size: u64,
    pub(crate) ratio: f64,
    /// The 95 % interval of `ratio` when it is the median of paired
    /// samples (`stats::paired`); `None` for a ratio of two medians.
    pub(crate) interval: Option<(f64, f64)>,
}

/// The three columns of the table, each its ratios size by size.
#[derive(Debug, Clone, Default)]
pub(crate) struct Columns {
    pub(crate) tuned_over_naive: Vec<SizeRatio>,
    pub(crate) libc_over_naive: Vec<SizeRatio>,
    pub(crate) tuned_over_libc: Vec<SizeRatio>,
}

/// One row of the table. A ratio is `None` when the regime lacks a size
/// measured with both implementations.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct SpeedupRow {
    /// `L1`, `L2`, `L3`, `memory`, or `geomean` for the last row.
    pub(crate) regime: String,
    /// Sizes in the regime (for the geomean row: regimes).
    pub(crate) points: usize,
    pub(crate) tuned_over_naive: Option<f64>,
    pub(crate) libc_over_naive: Option<f64>,
    pub(crate) tuned_over_libc: Option<f64>,
}

/// Per-regime speedups: each column's size-by-size ratios, then their
/// geometric mean over the sizes of a regime. The last row, `geomean`, is
/// the geometric mean of the regime rows (each regime weighs the same,
/// however densely it was swept). Non-positive or non-finite ratios are
/// ignored. `buffers` is how many buffers of `size` the routine touches (2
/// for memcpy), so a size's regime is that of its working set.
pub(crate) fn speedups(cols: &Columns, caches: &CacheSizes, buffers: u64) -> Vec<SpeedupRow> {
    let regime = |size: u64| caches.regime(size.saturating_mul(buffers.max(1)));
    let ok = |r: &&SizeRatio| r.ratio.is_finite() && r.ratio > 0.0;
    let all = [&cols.tuned_over_naive, &cols.libc_over_naive, &cols.tuned_over_libc];
    // regime -> the sizes with any ratio in it.
    let mut sizes: BTreeMap<Regime, Vec<u64>> = BTreeMap::new();
    for r in all.iter().flat_map(|c| c.iter()).filter(ok) {
        let e = sizes.entry(regime(r.size)).or_default();
        if !e.contains(&r.size) {
            e.push(r.size);
        }
    }
    let mean_in = |col: &[SizeRatio], reg: Regime| -> Option<f64> {
        let logs: Vec<f64> = col.iter().filter(ok).filter(|r| regime(r.size) == reg).map(|r| r.ratio.ln()).collect();
        geomean_of_logs(&logs)
    };
    let mut rows: Vec<SpeedupRow> = sizes
        .iter()
        .map(|(&reg, in_it)| SpeedupRow {
            regime: reg.to_string(),
            points: in_it.len(),
            tuned_over_naive: mean_in(&cols.tuned_over_naive, reg),
            libc_over_naive: mean_in(&cols.libc_over_naive, reg),
            tuned_over_libc: mean_in(&cols.tuned_over_libc, reg),
        })
        .collect();
    let col = |f: fn(&SpeedupRow) -> Option<f64>| -> Option<f64> {
        let logs: Vec<f64> = rows.iter().filter_map(f).map(f64::ln).collect();
        geomean_of_logs(&logs)
    };
    let g = SpeedupRow {
        regime: "geomean".into(),
        points: rows.len(),
        tuned_over_naive: col(|r| r.tuned_over_naive),
        libc_over_naive: col(|r| r.libc_over_naive),
        tuned_over_libc: col(|r| r.tuned_over_libc),
    };
    rows.push(g);
    rows
}

/// Buffers of `size` a `mem.*` benchmark touches per call (the `buffers`
/// argument of [`speedups`]): 2 for `mem.memcpy`, 1 for the others.
pub(crate) fn buffers_of(bench: &str) -> u64 {
    if bench == "mem.memcpy" {
        2
    } else {
        1
    }
}

/// The geometric mean of values given by their logarithms.
pub(crate) fn geomean_of_logs(logs: &[f64]) -> Option<f64> {
    (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caches() -> CacheSizes {
        CacheSizes::new([(1, 32 << 10), (2, 1 << 20), (3, 32 << 20)])
    }
    fn close(a: Option<f64>, b: f64) -> bool {
        a.map(|a| (a - b).abs() < 1e-9).unwrap_or(false)
    }

    #[test]
    fn regimes_from_sizes() {
        let c = caches();
        assert_eq!(c.regime(64), Regime::Cache(1));
        assert_eq!(c.regime(32 << 10), Regime::Cache(1));
        assert_eq!(c.regime((32 << 10) + 1), Regime::Cache(2));
        assert_eq!(c.regime(32 << 20), Regime::Cache(3));
        assert_eq!(c.regime(64 << 20), Regime::Memory);
        assert_eq!(Regime::Memory.to_string(), "memory");
        assert_eq!(CacheSizes::default().regime(1), Regime::Memory);
        assert_eq!(c.clone().with_llc(16 << 20).llc(), Some(16 << 20));
        assert_eq!(CacheSizes::new([(2, 5), (2, 9), (1, 0)]).levels(), &[(2, 9)]);
    }

    #[test]
    fn speedup_table() {
        let r = |size: u64, ratio: f64| SizeRatio { size, ratio, interval: None };
        let cols = Columns {
            // L1 (a copy of 4K or 8K touches 8K or 16K): 4x and 2x.
            tuned_over_naive: vec![r(4096, 4.0), r(8192, 2.0), r(64 << 20, f64::NAN)],
            libc_over_naive: vec![r(4096, 2.0), r(8192, 2.0)],
            // L1 2x and 1x; memory 1.5x.
            tuned_over_libc: vec![r(4096, 2.0), r(8192, 1.0), r(64 << 20, 1.5)],
        };
        let rows = speedups(&cols, &caches(), 2);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].regime, "L1");
        assert_eq!(rows[0].points, 2);
        assert!(close(rows[0].tuned_over_naive, 8.0f64.sqrt()), "{:?}", rows[0]);
        assert!(close(rows[0].libc_over_naive, 2.0));
        assert!(close(rows[0].tuned_over_libc, 2.0f64.sqrt()));
        assert_eq!(rows[1].regime, "memory");
        assert_eq!(rows[1].points, 1);
        assert_eq!(rows[1].tuned_over_naive, None, "a NaN ratio is left out");
        assert!(close(rows[1].tuned_over_libc, 1.5));
        let g = &rows[2];
        assert_eq!(g.regime, "geomean");
        assert!(close(g.tuned_over_libc, (2.0f64.sqrt() * 1.5).sqrt()));
        assert!(close(g.libc_over_naive, 2.0));
        // With one buffer 8K stays L1 and 64 MiB memory.
        assert_eq!(speedups(&cols, &caches(), 1).len(), 3);
        // A working set of 2 x 32 MiB is past L3: 32M alone is L3.
        let big = Columns { tuned_over_libc: vec![r(32 << 20, 1.0)], ..Columns::default() };
        assert_eq!(speedups(&big, &caches(), 2)[0].regime, "memory");
        assert_eq!(speedups(&big, &caches(), 1)[0].regime, "L3");
        assert_eq!(speedups(&Columns::default(), &caches(), 1).len(), 1);
        assert_eq!((buffers_of("mem.memcpy"), buffers_of("mem.strlen")), (2, 1));
    }
}
