//! One "why" line under each starred row: what the counters taken with the
//! figure (and, where both sides were profiled, the functions whose share of
//! the stack samples changed: `stats::profile_shift`) say changed with it,
//! from the data (`lat.pipe [up -> noht]:
//! +0.93 migrations/op (0.001 -> 0.93), +1.0 ctx-switches/op (2.0 -> 3.0)`).
//!
//! For a starred row (column i against column 0), each counter derived
//! from the two results ([`super::counters::derive`]) is compared as a
//! figure is ([`stats::compare_sides`]: threshold, rank test, rounds); a
//! counter that is zero on one side has no ratio, and counts as changed when
//! the rank test alone says so. The changed counters are listed by the size
//! of their change (the log of the ratio; a count per operation read no
//! lower than one event in a sample, so 0 -> 0.0006/op, under one event a
//! sample, ranks below 0.002 -> 2/op), at most
//! [`TERMS`] of them. A row whose counters did not change gets no line:
//! nothing is said that the data do not show.

use super::counters::derive;
use super::table::Table;
use crate::model::record::ResultRecord;
use crate::stats::compare::{mann_whitney_p, Side};
use crate::stats::summary::median;
use crate::stats::CompareOptions;

/// Most terms in one line.
pub(crate) const TERMS: usize = 3;

/// A counter that changed between two results.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Shift {
    /// `migrations`, `IPC`, ...
    pub(crate) label: String,
    /// `/op`, `ns/op`, `/run`, `insn/cycle`.
    pub(crate) unit: String,
    pub(crate) a: f64,
    pub(crate) b: f64,
    /// For a count per operation (`/op`), one event in a sample of the side
    /// with fewer operations per sample: what a count can resolve; else 0.
    pub(crate) floor: f64,
}

impl Shift {
    /// How large the change is: |ln(b/a)|, each side read no lower than
    /// `floor`; infinite from or to zero where there is no floor.
    fn size(&self) -> f64 {
        let (a, b) = (self.a.max(self.floor), self.b.max(self.floor));
        if a == 0.0 || b == 0.0 {
            f64::INFINITY
        } else {
            (b / a).ln().abs()
        }
    }

    /// `+0.93 migrations/op (0.001 -> 0.93)`, `task-clock +1.2 ns/op (...)`, `IPC 1.5 -> 0.9`.
    pub(crate) fn describe(&self) -> String {
        let d = self.b - self.a;
        let (a, b) = (num(self.a), num(self.b));
        match self.unit.as_str() {
            u if u.starts_with('/') => format!("{}{} {}{u} ({a} -> {b})", sign(d), num(d.abs()), self.label),
            u if u.contains('/') && self.label != "IPC" => {
                format!("{} {}{} {u} ({a} -> {b})", self.label, sign(d), num(d.abs()))
            }
            _ => format!("{} {a} -> {b}", self.label),
        }
    }
}

fn sign(d: f64) -> &'static str {
    if d < 0.0 {
        "-"
    } else {
        "+"
    }
}

/// A figure with about three significant digits.
fn num(x: f64) -> String {
    let a = x.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// The counters that changed from `a` to `b`, largest change first.
pub(crate) fn shifts(a: &ResultRecord, b: &ResultRecord, opt: &CompareOptions) -> Vec<Shift> {
    let db = derive(b);
    let per_sample = |r: &ResultRecord| median(&super::counters::ops(r));
    let one_event = 1.0 / per_sample(a).min(per_sample(b)).max(1.0);
    let mut out = Vec::new();
    for x in derive(a) {
        let Some(y) = db.iter().find(|y| y.benchmark == x.benchmark) else { continue };
        let ((va, sa), (vb, sb)) = (Side::of(&x), Side::of(y));
        if va.is_empty() || vb.is_empty() {
            continue;
        }
        let (ma, mb) = (median(&va), median(&vb));
        let changed = if ma > 0.0 && mb > 0.0 {
            crate::stats::compare::compare_results(&x, y, opt).is_some_and(|c| c.significant)
        } else if ma != mb {
            !(sa.noisy || sb.noisy || sa.busy || sb.busy) && mann_whitney_p(&va, &vb).is_some_and(|p| p < opt.alpha)
        } else {
            false
        };
        if changed {
            let label = x.benchmark.strip_prefix(&a.benchmark).unwrap_or(&x.benchmark).trim().to_string();
            let floor = if x.unit.starts_with('/') { one_event } else { 0.0 };
            out.push(Shift { label, unit: x.unit.clone(), a: ma, b: mb, floor });
        }
    }
    out.sort_by(|p, q| q.size().total_cmp(&p.size()));
    out
}

/// The why lines of a report's tables: one per starred row and column
/// whose counters changed.
pub(crate) fn lines(tables: &[Table], opt: &CompareOptions) -> Vec<String> {
    let mut out = Vec::new();
    for t in tables {
        for row in t.rows.iter().filter(|r| r.counter.is_none()) {
            for (i, c) in row.changes.iter().enumerate() {
                if !c.as_ref().is_some_and(|c| c.significant) {
                    continue;
                }
                let key = (row.benchmark.clone(), row.params.clone());
                let find = |col: usize| t.columns[col].results.iter().find(|r| r.point_key() == key);
                let (Some(a), Some(b)) = (find(0), find(i + 1)) else { continue };
                let mut terms: Vec<String> = shifts(a, b, opt).iter().take(TERMS).map(Shift::describe).collect();
                // What the profiles say, where both sides were profiled.
                if let (Some(pa), Some(pb)) = (&a.profile, &b.profile) {
                    let moved = crate::stats::profile_shift::shifts(pa, pb, crate::stats::profile_shift::ALPHA);
                    terms.extend(moved.iter().take(TERMS).map(|s| s.describe()));
                }
                if terms.is_empty() {
                    continue;
                }
                let params: Vec<String> =
                    row.params.shown().map(|(k, v)| format!(" {k}={}", crate::model::params::one_line(v))).collect();
                out.push(format!(
                    "why {}{} [{} -> {}]: {}",
                    row.benchmark,
                    params.concat(),
                    t.columns[0].name,
                    t.columns[i + 1].name,
                    terms.join(", ")
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(config: &str, us: &[f64], per_sample: &[(&str, &[u64])]) -> ResultRecord {
        super::super::counters::tests::counted_in(config, us, 100, per_sample)
    }

    #[test]
    fn a_starred_row_gets_the_counters_that_changed_and_only_those() {
        let n = 12;
        let up = counted(
            "up",
            &vec![4.0; n].iter().enumerate().map(|(i, v)| v + i as f64 * 0.01).collect::<Vec<_>>(),
            &[
                ("cpu-migrations", &[0; 12]),
                ("context-switches", &[200, 200, 201, 200, 200, 202, 200, 200, 200, 201, 200, 200]),
                ("minor-faults", &[5, 6, 5, 6, 5, 6, 5, 6, 5, 6, 5, 6]),
            ],
        );
        let noht = counted(
            "noht",
            &vec![40.0; n].iter().enumerate().map(|(i, v)| v + i as f64 * 0.1).collect::<Vec<_>>(),
            &[
                ("cpu-migrations", &[90, 95, 91, 93, 92, 94, 90, 96, 91, 93, 92, 95]),
                ("context-switches", &[300, 301, 302, 300, 300, 303, 300, 301, 300, 302, 300, 301]),
                ("minor-faults", &[6, 5, 6, 5, 6, 5, 6, 5, 6, 5, 6, 5]),
            ],
        );
        let opt = CompareOptions::default();
        let s = shifts(&up, &noht, &opt);
        let labels: Vec<&str> = s.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["migrations", "ctx-switches"], "faults did not change: {s:?}");
        assert_eq!(s[0].describe(), "+0.925 migrations/op (0 -> 0.925)");
        assert_eq!(s[1].describe(), "+1.00 ctx-switches/op (2.00 -> 3.00)");
        // The same results against themselves: nothing changed, no terms.
        assert!(shifts(&up, &up.clone(), &opt).is_empty());
        // A table with the row starred gets one line naming both columns.
        let cols = vec![
            super::super::model::Column { name: "up".into(), cpus: "0".into(), results: vec![up] },
            super::super::model::Column { name: "noht".into(), cpus: "0-1".into(), results: vec![noht] },
        ];
        let t = Table::build(cols, &opt);
        assert!(t.rows[0].changes[0].as_ref().unwrap().significant);
        assert_eq!(
            lines(&[t], &opt),
            ["why lat.pipe [up -> noht]: +0.925 migrations/op (0 -> 0.925), +1.00 ctx-switches/op (2.00 -> 3.00)"]
        );
    }

    #[test]
    fn a_change_from_zero_under_one_event_a_sample_ranks_below_a_large_one() {
        // 100 operations a sample: one event is 0.01/op.
        let shift = |label: &str, a: f64, b: f64| Shift { label: label.into(), unit: "/op".into(), a, b, floor: 0.01 };
        let tiny = shift("migrations", 0.0, 0.006);
        let large = shift("remote-wakeups", 0.02, 1.99);
        let from_zero = shift("ctx-switches", 0.0, 1.0);
        assert!(large.size() > tiny.size() && from_zero.size() > tiny.size());
        assert!((from_zero.size() - 100f64.ln()).abs() < 1e-9);
        // Without a floor (a time per operation), zero is infinitely far.
        let ns = Shift { label: "task-clock".into(), unit: "ns/op".into(), a: 0.0, b: 5.0, floor: 0.0 };
        assert!(ns.size().is_infinite());
    }

    #[test]
    fn figures_read_at_about_three_digits() {
        assert_eq!(num(1234.5), "1234");
        assert_eq!(num(12.34), "12.3");
        assert_eq!(num(1.234), "1.23");
        assert_eq!(num(0.01234), "0.012");
        let ipc = Shift { label: "IPC".into(), unit: "insn/cycle".into(), a: 1.5, b: 0.9, floor: 0.0 };
        assert_eq!(ipc.describe(), "IPC 1.50 -> 0.900");
        let clock = Shift { label: "task-clock".into(), unit: "ns/op".into(), a: 900.0, b: 1500.0, floor: 0.0 };
        assert_eq!(clock.describe(), "task-clock +600 ns/op (900 -> 1500)");
    }
}
