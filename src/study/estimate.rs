//! How long a study's plan should take here, estimated from the plan alone
//! (before anything runs): workers x a start-up cost, plus samples x the
//! length of one sample, taken from the point's parameters where it has
//! them (AIM9's `period`, dbench's `warmup` + `time`) and from a rough
//! figure per kind of benchmark where it does not. An estimate, and said so.

use crate::harness::plan::{split_rounds, Plan, Request, Runs};
use crate::model::Params;
use std::time::Duration;

/// A worker's start-up: fork, exec, calibration, warm-up.
const WORKER_S: f64 = 0.4;

/// Seconds for one sample of `name` at `p` (a sample of a micro-benchmark
/// is the run's sample time).
fn sample_secs(name: &str, p: &Params, sample_time: Duration) -> f64 {
    let dur = |k: &str| p.duration(k).map(|d| d.as_secs_f64()).ok();
    if let Some(period) = dur("period") {
        return period;
    }
    if let Some(time) = dur("time") {
        return time;
    }
    match name.split('.').next().unwrap_or("") {
        // A build of `files` C files: about a quarter of a second a file
        // on a loaded 2-CPU machine (40 files: 10 to 12 s).
        "build" => 0.25 * p.u64("files").unwrap_or(100) as f64,
        // rooms x users x messages relayed to the room's other users.
        "chat" => {
            let n = |k: &str, d: u64| p.u64(k).unwrap_or(d) as f64;
            (n("rooms", 20) * n("users", 20) * n("messages", 100) * n("users", 20) / 400_000.0).max(0.2)
        }
        _ => sample_time.as_secs_f64(),
    }
}

/// Extra time per worker: a whole-run benchmark's own warm-up.
fn worker_secs(p: &Params) -> f64 {
    WORKER_S + p.duration("warmup").map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// (low, high) seconds: the planned samples, and with `--runs auto` (a
/// full comparing study) up to three times as many.
pub fn estimate(req: &Request, plan: &Plan) -> (f64, f64) {
    let configs = crate::harness::run::ready_configs(plan).len() as f64;
    let mut secs = 0.0;
    for it in plan.items.iter().filter(|i| i.unsupported.is_none()) {
        let samples = match req.runs {
            Runs::Fixed(n) => n,
            _ if req.quick => it.info.quick_samples.max(1),
            _ => it.info.samples.max(1),
        };
        let workers = split_rounds(samples).len() as f64;
        secs += configs * (workers * worker_secs(&it.params) + samples as f64 * sample_secs(it.info.name, &it.params, req.sample_time));
    }
    let auto = !req.quick && !matches!(req.runs, Runs::Fixed(_));
    (secs, if auto { secs * 3.0 } else { secs })
}

/// `about 4 min` or `4 min to 12 min`.
pub fn describe((lo, hi): (f64, f64)) -> String {
    let one = |s: f64| if s < 90.0 { format!("{:.0} s", s.max(1.0)) } else if s < 5400.0 { format!("{:.0} min", s / 60.0) } else { format!("{:.1} h", s / 3600.0) };
    if (hi - lo).abs() < 1.0 {
        format!("about {}", one(lo))
    } else {
        format!("{} to {}", one(lo), one(hi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_length_comes_from_the_parameters() {
        let mut p = Params::default();
        p.set("period", "200ms");
        assert!((sample_secs("aim9.sieve", &p, Duration::from_millis(10)) - 0.2).abs() < 1e-9);
        let mut p = Params::default();
        p.set("time", "3s");
        p.set("warmup", "1s");
        assert!((sample_secs("dbench.throughput", &p, Duration::from_millis(10)) - 3.0).abs() < 1e-9);
        assert!((worker_secs(&p) - 1.4).abs() < 1e-9);
        assert!((sample_secs("lat.syscall", &Params::default(), Duration::from_millis(10)) - 0.01).abs() < 1e-9);
    }

    #[test]
    fn described_in_people_units() {
        assert_eq!(describe((30.0, 30.0)), "about 30 s");
        assert_eq!(describe((240.0, 720.0)), "4 min to 12 min");
        assert_eq!(describe((7200.0, 7200.0)), "about 2.0 h");
    }
}
