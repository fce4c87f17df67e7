//! Which interleave gives tighter pairs on this machine: compared values
//! taken one after the other on one CPU (`--interleave samples`), or at the
//! same moment on two CPUs that swap each pair (`--interleave duet`, Bulej
//! et al., ICPE 2020). Duet cancels what moves the whole machine; it loses
//! where the two CPUs slow each other (vCPUs that share a core), which a
//! topology cannot tell. So it is measured: pairs of two identical shell
//! loops (`interfere.rs`'s front-end-bound kind, about 6 ms each), taken
//! both ways in alternating blocks so that drift falls on both, and the
//! robust spread (1.4826 x MAD) of each way's log ratios compared. A run
//! with no `--interleave` takes the tighter way
//! (`measure::interfere::Pairing::best_of`: duet only when clearly tighter).

use super::interfere::{calibrate, sample};
use crate::cpuset::CpuSet;
use crate::measure::interfere::Pairing;
use std::sync::{Arc, Barrier, Mutex};

/// Pairs each way.
const PAIRS: usize = 60;
/// Pairs of one way before the other way takes its turn.
const BLOCK: usize = 10;
/// Each sample is this many of `calibrate`'s 2 ms lengths.
const LENGTHS: u64 = 3;
/// The loop kind both ways time.
const KIND: &str = "shell";

/// The robust spread of log ratios, percent; `None` with fewer than 6.
pub(crate) fn spread_pct(log_ratios: &[f64]) -> Option<f64> {
    if log_ratios.len() < 6 {
        return None;
    }
    Some(crate::stats::summary::scaled_mad(log_ratios) * 100.0)
}

/// Measure both ways on `cpus[0]` and `cpus[1]`; `None` when a way got too
/// few pairs (the threads were not let run through their samples).
pub(crate) fn measure(cpus: [u32; 2]) -> Option<Pairing> {
    let n = {
        let pin = CpuSet::from_iter([cpus[0]]);
        std::thread::spawn(move || {
            let _ = crate::sys::set_affinity(&pin);
            calibrate(KIND, &mut []) * LENGTHS
        })
        .join()
        .ok()?
    };
    let (mut alt, mut duet) = (Vec::new(), Vec::new());
    for _ in 0..PAIRS / BLOCK {
        alt.extend(alternating(cpus[0], n, BLOCK));
        duet.extend(at_once(cpus, n, BLOCK));
    }
    let (a, d) = (spread_pct(&alt)?, spread_pct(&duet)?);
    Some(Pairing {
        cpus,
        alternating_pct: a,
        duet_pct: d,
        pairs: alt.len().min(duet.len()) as u32,
        best: Pairing::best_of(a, d),
    })
}

/// `pairs` log ratios of two samples one after the other on `cpu`.
fn alternating(cpu: u32, n: u64, pairs: usize) -> Vec<f64> {
    let pin = CpuSet::from_iter([cpu]);
    std::thread::spawn(move || {
        let _ = crate::sys::set_affinity(&pin);
        (0..2 * pairs)
            .filter_map(|_| Some((sample(KIND, n, &mut [])?, sample(KIND, n, &mut [])?)))
            .take(pairs)
            .map(|(x, y)| (y / x).ln())
            .collect()
    })
    .join()
    .unwrap_or_default()
}

/// `pairs` log ratios of two samples at the same moment, one on each of
/// `cpus`, the threads swapping CPUs each pair.
fn at_once(cpus: [u32; 2], n: u64, pairs: usize) -> Vec<f64> {
    let meet = Arc::new(Barrier::new(2));
    let times: Arc<Mutex<Vec<[Option<f64>; 2]>>> = Arc::new(Mutex::new(vec![[None, None]; pairs]));
    let side = |who: usize| {
        let (meet, times) = (meet.clone(), times.clone());
        std::thread::spawn(move || {
            for i in 0..pairs {
                let _ = crate::sys::set_affinity(&CpuSet::from_iter([cpus[(who + i) % 2]]));
                meet.wait();
                let t = sample(KIND, n, &mut []);
                if let Ok(mut v) = times.lock() {
                    v[i][who] = t;
                }
            }
        })
    };
    let (a, b) = (side(0), side(1));
    let _ = (a.join(), b.join());
    let v = times.lock().map(|v| v.clone()).unwrap_or_default();
    v.into_iter().filter_map(|[x, y]| Some((y? / x?).ln())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::interfere::PairingMode;

    #[test]
    fn the_spread_is_robust_and_needs_six_ratios() {
        assert_eq!(spread_pct(&[0.0; 5]), None);
        // MAD of (-0.02, -0.01, 0, 0.01, 0.02, 0.5) around 0.005 is 0.015.
        let s = spread_pct(&[-0.02, -0.01, 0.0, 0.01, 0.02, 0.5]).unwrap();
        assert!((s - 1.4826 * 1.5).abs() < 1e-9, "{s}");
    }

    #[test]
    fn duet_is_the_default_only_where_clearly_tighter() {
        assert_eq!(Pairing::best_of(6.0, 12.0), PairingMode::Alternate);
        assert_eq!(Pairing::best_of(6.0, 5.5), PairingMode::Alternate);
        assert_eq!(Pairing::best_of(6.0, 4.0), PairingMode::Duet);
    }
}
