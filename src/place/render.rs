//! `kdelta place`'s output: a result, or the SMT rate, as text or JSON.

use super::runner::PlacePolicy;
use super::session::{PlaceResult, SmtRateResult};
use crate::model::fmt::TextOrJson;
use std::fmt::Write as _;

/// `--measure-smt-rate`'s answer as text or JSON.
pub(crate) fn render_rate(format: TextOrJson, r: &SmtRateResult) -> String {
    if format == TextOrJson::Json {
        return serde_json::to_string_pretty(r).unwrap_or_default() + "\n";
    }
    match (r.smt_rate, r.cpus, r.alone_seconds, r.pair_seconds) {
        (Some(s), Some((a, b)), Some(ta), Some(tp)) => format!(
            "SMT rate s = {s:.3} (one job alone on CPU {a}: {ta:.3} s; two at once on siblings {a} and {b}: {tp:.3} s each; medians of 3)\nfeed it to the simulator: kdelta simulate --smt-rate {s:.2}\n"
        ),
        _ => format!("SMT rate not measured: {}\n", r.reason.as_deref().unwrap_or("unknown reason")),
    }
}

/// A place result as text or JSON.
pub(crate) fn render_place(format: TextOrJson, r: &PlaceResult) -> String {
    if format == TextOrJson::Json {
        return serde_json::to_string_pretty(r).unwrap_or_default() + "\n";
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "place: policy {}, {} loops x {} iterations of {}",
        r.policy.name(),
        r.loops,
        r.iterations_per_loop,
        r.job
    );
    if let Some(n) = &r.topology_note {
        let _ = writeln!(s, "note: {n}");
    }
    if let Some(n) = &r.note {
        let _ = writeln!(s, "note: {n}");
    }
    if r.interrupted {
        let _ = writeln!(s, "interrupted: partial results");
    }
    match &r.iteration {
        Some(d) => {
            let _ = writeln!(
                s,
                "iteration wall time: min {:.3} s, median {:.3} s, mean {:.3} s, max {:.3} s (n = {}, spread max/min {:.2})",
                d.min,
                d.median,
                d.mean,
                d.max,
                d.n,
                d.max / d.min
            );
            let most = r.histogram.iter().map(|b| b.count).max().unwrap_or(1).max(1);
            for b in &r.histogram {
                let _ = writeln!(
                    s,
                    "  {:>8.3}-{:<8.3} {:>5} {}",
                    b.lo,
                    b.hi,
                    b.count,
                    "#".repeat((b.count * 40).div_ceil(most))
                );
            }
        }
        None => {
            let _ = writeln!(s, "no iteration completed successfully");
        }
    }
    if r.failed_iterations > 0 {
        let _ = writeln!(s, "failed iterations (non-zero exit or killed): {}", r.failed_iterations);
    }
    match r.shared_fraction {
        Some(f) => {
            let _ = writeln!(
                s,
                "two loops shared a core while another core ran none: {} of {} samples ({:.1}%)",
                r.shared_samples,
                r.samples,
                f * 100.0
            );
        }
        None => {
            let _ = writeln!(s, "core sharing: no sample had two loops running");
        }
    }
    if r.policy == PlacePolicy::SmtAware {
        let _ = writeln!(s, "monitor re-pins: {}", r.repins);
    }
    s
}
