//! `kdelta simulate`'s output: the text report and the JSON document.

use super::summary::PolicyResult;
use super::workload::loops::LoopsCfg;
use super::workload::make::MakeCfg;
use super::{SimConfig, WorkloadCfg};
use serde::Serialize;
use std::fmt::Write as _;

#[derive(Serialize)]
struct Doc<'a> {
    simulated: bool,
    config: &'a SimConfig,
    results: &'a [PolicyResult],
}

/// The JSON document: `{"simulated": true, "config": .., "results": [..]}`.
pub(crate) fn render_json(cfg: &SimConfig, results: &[PolicyResult]) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(&Doc { simulated: true, config: cfg, results })?)
}

/// The text report.
pub(crate) fn render_text(cfg: &SimConfig, results: &[PolicyResult]) -> String {
    let mut s = String::new();
    let e = &cfg.engine;
    let _ = writeln!(
        s,
        "SIMULATED (not measured): topology {} ({} logical CPUs), smt-rate {}, cross-core rate {}, balance {} ms, slice {} ms, seed {}",
        cfg.shape,
        cfg.shape.ncpus(),
        e.smt_rate,
        e.cross_core_rate,
        e.balance * 1e3,
        e.timeslice * 1e3,
        cfg.seed
    );
    match cfg.workload {
        WorkloadCfg::Loops(l) => render_loops(&mut s, &l, cfg.reps, results),
        WorkloadCfg::Make(m) => render_make(&mut s, &m, cfg.reps, results),
    }
    let _ = writeln!(s, "\n(doubled s: simulated time a core ran two tasks while another core was fully idle)");
    for r in results {
        let _ = writeln!(
            s,
            "{}: {} events in {:.3} s wall = {:.0} events/s, {} running-task migrations",
            r.policy, r.events, r.wall_seconds, r.events_per_sec, r.migrations_running
        );
    }
    for r in results {
        for rep in &r.reps {
            if let Some(tr) = &rep.trace {
                let _ = writeln!(s, "\ntrace of {} (rep {}): start - end  cpu  task(tag)  end", r.policy, rep.rep);
                for seg in tr {
                    let _ = writeln!(
                        s,
                        "  {:>11.6} - {:>11.6}  cpu{:<3} {}({})  {}",
                        seg.start, seg.end, seg.cpu, seg.task, seg.tag, seg.end_reason
                    );
                }
            }
        }
    }
    s
}

/// The loops workload: its line, the iteration times per policy and a
/// histogram of them for each policy.
fn render_loops(s: &mut String, l: &LoopsCfg, reps: usize, results: &[PolicyResult]) {
    let _ = writeln!(
        s,
        "workload: {} loops x {} iterations of {} s work (±{}%), {} rep(s)\n",
        l.loops,
        l.iterations,
        l.work,
        l.jitter * 100.0,
        reps
    );
    let _ = writeln!(
        s,
        "{:<14} {:>8} {:>8} {:>8} {:>8} {:>7}   {:>10}",
        "policy", "min s", "median", "mean", "max", "n", "doubled s"
    );
    for r in results {
        if let Some(l) = &r.loops {
            let d = &l.iteration;
            let _ = writeln!(
                s,
                "{:<14} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>7}   {:>10.3}",
                r.policy, d.min, d.median, d.mean, d.max, d.n, r.doubled_time
            );
        }
    }
    for r in results {
        if let Some(l) = &r.loops {
            let _ = writeln!(s, "\n{} iteration times:", r.policy);
            let most = l.histogram.iter().map(|b| b.count).max().unwrap_or(1).max(1);
            for b in &l.histogram {
                let bar = "#".repeat((b.count * 40).div_ceil(most));
                let _ = writeln!(s, "  {:>7.3}-{:<7.3} {:>6} {}", b.lo, b.hi, b.count, bar);
            }
        }
    }
}

/// The make workload: its line and the build times per policy.
fn render_make(s: &mut String, m: &MakeCfg, reps: usize, results: &[PolicyResult]) {
    let _ = writeln!(s, "workload: make -j{} of {} compile jobs, {} seeded rep(s)\n", m.parallel, m.jobs, reps);
    let _ = writeln!(s, "{:<14} {:>9} {:>9} {:>9}   {:>10}", "policy", "best s", "mean", "worst", "doubled s");
    for r in results {
        if let Some(mk) = &r.make {
            let _ = writeln!(
                s,
                "{:<14} {:>9.2} {:>9.2} {:>9.2}   {:>10.2}",
                r.policy, mk.best, mk.mean, mk.worst, r.doubled_time
            );
        }
    }
}
