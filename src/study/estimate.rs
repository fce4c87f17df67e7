//! How long a study's plan should take here, estimated from the plan alone
//! (before anything runs): for every point and configuration, its workers'
//! fixed costs (start-up, the run's warm-up, a benchmark's own set-up such as
//! a build's project and warm-up build) plus its samples times the expected
//! length of one sample, taken from the point's parameters where they say
//! (AIM9's `period`, dbench's `time`, a build's files and jobs over the
//! configuration's CPUs, place's jobs) and the run's sample time for loops of
//! a primitive. The low end takes every sample once; the high end allows for
//! the most the harness may take (disturbed samples retaken, `--runs auto`
//! up to 3x). An estimate, and said so; `kdelta study` prints the measured
//! wall time at the end.

use crate::harness::plan::{split_rounds, Item, Plan, Request, Runs};
use crate::model::Params;
use std::time::Duration;

/// A worker's start-up: fork, exec, the job file, calibration.
const WORKER_S: f64 = 0.1;

/// The most samples a point takes for each one wanted: a disturbed sample
/// is retaken, and `--runs auto` samples up to 3x as many.
const MOST: f64 = 3.0;

/// Wall seconds to compile one file of `build.make`'s generated project at
/// -j1 (0.1 s: measured with `kdelta run build.make --param files=40` on a
/// busy 2-CPU VM of the 2020s, where the compilers' CPU time was 0.05 s a
/// file; a quiet or faster machine takes less).
const BUILD_FILE_CPU_S: f64 = 0.1;

/// Seconds of one turn of a paced chat room (a message sent and received by
/// every other user before the next is sent): about 22 ms, bound by
/// delayed acknowledgements with Nagle's algorithm on (measured: 4 rooms x
/// 20 users x 100 messages took 45 s a sample on a 2-CPU VM).
const PACED_TURN_S: f64 = 0.0225;

/// What one point costs in one configuration of `cpus` CPUs.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Cost {
    /// Seconds each worker spends before and beside its samples.
    per_worker: f64,
    /// Seconds one sample takes.
    per_sample: f64,
}

/// Seconds per million rounds of `kdelta place`'s built-in job, measured
/// here and now (about 40 ms).
fn spin_secs_per_million() -> f64 {
    static ONCE: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *ONCE.get_or_init(|| {
        let rounds = crate::place::job::calibrate(Duration::from_millis(100)).max(1);
        0.1 / rounds as f64 * 1e6
    })
}

fn cost(name: &str, p: &Params, cpus: usize, req: &Request) -> Cost {
    let dur = |k: &str| p.duration(k).map(|d| d.as_secs_f64()).ok();
    let n = |k: &str, d: u64| p.u64(k).unwrap_or(d) as f64;
    let cpus = cpus.max(1) as f64;
    let warmup = dur("warmup").unwrap_or(0.0);
    match name.split('.').next().unwrap_or("") {
        // Whole runs of a fixed period (AIM9).
        _ if dur("period").is_some() => {
            Cost { per_worker: WORKER_S + req.warmup.as_secs_f64(), per_sample: dur("period").unwrap_or(0.0) }
        }
        // dbench, tbench: a warm-up phase per worker, then timed phases.
        _ if dur("time").is_some() => Cost { per_worker: WORKER_S + warmup, per_sample: dur("time").unwrap_or(0.0) },
        // A clean build of `files` files at -jN on the configuration's CPUs;
        // each worker generates the project and, with warmup=true, builds it once untimed.
        "build" => {
            let build = n("files", 300) * BUILD_FILE_CPU_S / n("jobs", 1).min(cpus).max(1.0);
            let warm = if p.bool("warmup").unwrap_or(false) { build } else { 0.0 };
            Cost { per_worker: WORKER_S + 0.01 * n("files", 300) + warm, per_sample: build + 0.1 }
        }
        // `iterations` jobs per loop, the loops sharing the CPUs.
        "place" => {
            let job = n("work", 100) * spin_secs_per_million();
            Cost { per_worker: WORKER_S, per_sample: n("iterations", 4) * job * (n("loops", 2) / cpus).max(1.0) }
        }
        // Paced (VolanoMark): each room's users x messages turns one after
        // the other, the rooms at once; else rooms x users x messages
        // relayed to the room's other users.
        "chat" if p.str("pacing").is_ok_and(|v| v == "room") => {
            Cost { per_worker: WORKER_S, per_sample: n("users", 20) * n("messages", 100) * PACED_TURN_S }
        }
        "chat" => Cost {
            per_worker: WORKER_S,
            per_sample: (n("rooms", 20) * n("users", 20) * n("messages", 100) * n("users", 20) / 400_000.0).max(0.2),
        },
        // A loop of a primitive: the run's warm-up, then samples of the run's sample time.
        _ => Cost { per_worker: WORKER_S + req.warmup.as_secs_f64(), per_sample: req.sample_time.as_secs_f64() },
    }
}

/// Samples a point takes by the plan.
fn wanted(req: &Request, it: &Item) -> usize {
    match req.runs {
        Runs::Fixed(n) => n,
        _ if req.quick => it.info.quick_samples.max(1),
        _ => it.info.samples.max(1),
    }
}

/// (low, high) seconds of one part: every sample once, and the most the
/// harness may take.
pub(crate) fn estimate(req: &Request, plan: &Plan) -> (f64, f64) {
    let configs = crate::harness::run::ready_configs(plan);
    let (mut lo, mut hi) = (0.0, 0.0);
    for it in plan.items.iter().filter(|i| i.unsupported.is_none()) {
        let samples = wanted(req, it);
        let workers = split_rounds(samples).len() as f64;
        for c in &configs {
            let k = cost(it.info.name, &it.params, c.cpus.len(), req);
            lo += workers * k.per_worker + samples as f64 * k.per_sample;
            hi += workers * k.per_worker + MOST * samples as f64 * k.per_sample;
        }
    }
    (lo, hi)
}

/// (low, high) seconds of every part of a study.
pub(crate) fn study(stages: &[crate::study::run::Stage]) -> (f64, f64) {
    stages.iter().map(|s| estimate(&s.req, &s.plan)).fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y))
}

/// `about 4 min` or `4 min to 12 min`.
pub(crate) fn describe((lo, hi): (f64, f64)) -> String {
    let one = |s: f64| {
        if s < 90.0 {
            format!("{:.0} s", s.max(1.0))
        } else if s < 5400.0 {
            format!("{:.0} min", s / 60.0)
        } else {
            format!("{:.1} h", s / 3600.0)
        }
    };
    if one(lo) == one(hi) {
        format!("about {}", one(lo))
    } else {
        format!("{} to {}", one(lo), one(hi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(quick: bool) -> Request {
        Request {
            quick,
            sample_time: Duration::from_millis(10),
            warmup: Duration::from_millis(100),
            ..Default::default()
        }
    }

    #[test]
    fn sample_length_comes_from_the_parameters() {
        let r = req(false);
        let mut p = Params::default();
        p.set("period", "200ms");
        assert_eq!(cost("aim9.sieve", &p, 2, &r), Cost { per_worker: 0.2, per_sample: 0.2 });
        let mut p = Params::default();
        p.set("time", "3s");
        p.set("warmup", "1s");
        assert_eq!(cost("dbench.throughput", &p, 2, &r), Cost { per_worker: 1.1, per_sample: 3.0 });
        assert_eq!(cost("lat.syscall", &Params::default(), 2, &r), Cost { per_worker: 0.2, per_sample: 0.01 });
    }

    #[test]
    fn a_build_costs_its_files_over_the_cpus_it_can_use_and_its_set_up() {
        let r = req(true);
        let mut p = Params::default();
        p.set("files", "40");
        p.set("jobs", "5");
        p.set("warmup", "false");
        let two = cost("build.make", &p, 2, &r);
        let one = cost("build.make", &p, 1, &r);
        assert!(
            (one.per_sample - 0.1 - 2.0 * (two.per_sample - 0.1)).abs() < 1e-9,
            "-j5 on 1 CPU takes twice as long as on 2"
        );
        p.set("warmup", "true");
        let warm = cost("build.make", &p, 2, &r);
        assert!(
            (warm.per_worker - two.per_worker - (two.per_sample - 0.1)).abs() < 1e-9,
            "the warm-up build is a fixed cost per worker"
        );
    }

    #[test]
    fn a_paced_chat_costs_its_turns() {
        let r = req(true);
        let mut p = Params::default();
        for (k, v) in [("rooms", "4"), ("users", "20"), ("messages", "100"), ("pacing", "room")] {
            p.set(k, v);
        }
        assert!((cost("chat.rooms", &p, 2, &r).per_sample - 45.0).abs() < 1e-9);
        p.set("pacing", "none");
        assert!(cost("chat.rooms", &p, 2, &r).per_sample < 5.0);
    }

    #[test]
    fn described_in_people_units() {
        assert_eq!(describe((30.0, 30.0)), "about 30 s");
        assert_eq!(describe((240.0, 720.0)), "4 min to 12 min");
        assert_eq!(describe((7200.0, 7200.0)), "about 2.0 h");
    }
}
