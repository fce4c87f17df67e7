//! Workloads for the simulator: `loops` (Molnar's compile loops) and `make` (a parallel build).

pub(crate) mod loops;
pub(crate) mod make;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// A log-normal draw with the given median and shape `sigma` (Box-Muller).
pub(crate) fn lognormal(rng: &mut ChaCha8Rng, median: f64, sigma: f64) -> f64 {
    let u1: f64 = rng.gen_range(f64::EPSILON..1.0);
    let u2: f64 = rng.gen();
    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
    median * (sigma * z).exp()
}

/// An exponential draw with the given mean.
pub(crate) fn exponential(rng: &mut ChaCha8Rng, mean: f64) -> f64 {
    let u: f64 = rng.gen_range(f64::EPSILON..1.0);
    -mean * u.ln()
}
