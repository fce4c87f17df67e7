//! Modes by run: a series of runs (`kdelta history`) whose medians fall
//! into two speeds that take turns in time.
//!
//! On a VM a whole run can settle at one of two speeds, as a worker can
//! (`speeds.rs`): thirty runs of one shell loop a second apart had medians
//! near 30 ms or near 55 ms. A change-point search over such a series sees
//! noise as wide as the gap and misses a 7 % step inside a speed, or finds
//! a "change" where the mix of fast and slow runs shifted. So where the
//! runs split into two speeds ([`speeds::split`]) that alternate (the series
//! goes from one to the other and back at least [`MIN_SWITCHES`] times; a
//! series that moves once from one speed to the other is a change point,
//! not two modes), each speed's runs are searched on their own.

use super::speeds::{self, Speeds};

/// Switches between the speeds, in run order, that make them modes rather
/// than a step.
pub(crate) const MIN_SWITCHES: usize = 3;

/// A series in two speeds: the speeds, and each run's (true: the faster
/// in value terms, i.e. the higher median).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunModes {
    pub(crate) speeds: Speeds,
    pub(crate) high: Vec<bool>,
    pub(crate) switches: usize,
}

impl RunModes {
    /// The positions (in run order) of the runs in one speed.
    pub(crate) fn positions(&self, high: bool) -> Vec<usize> {
        self.high.iter().enumerate().filter(|(_, &h)| h == high).map(|(i, _)| i).collect()
    }
}

/// The modes of `medians` (in run order), when they split and alternate.
pub(crate) fn of(medians: &[f64]) -> Option<RunModes> {
    let speeds = speeds::split(medians)?;
    // The split is at the widest gap: every median at or above the high
    // speed's lowest member is high. Recover that boundary from the sorted
    // values: the largest low median.
    let mut sorted: Vec<f64> = medians.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let top_low = sorted[speeds.low.workers - 1];
    let high: Vec<bool> = medians.iter().map(|&x| x > top_low).collect();
    let switches = high.windows(2).filter(|w| w[0] != w[1]).count();
    (switches >= MIN_SWITCHES).then_some(RunModes { speeds, high, switches })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alternating_speeds_are_modes_and_a_step_is_not() {
        // Runs near 30 or near 55 ms, taking turns irregularly.
        let x = [30.1, 54.8, 30.4, 30.0, 55.2, 55.0, 29.9, 54.7, 30.2, 55.3];
        let m = of(&x).expect("two alternating speeds");
        assert_eq!(m.speeds.low.workers, 5);
        assert_eq!(m.positions(true), vec![1, 4, 5, 7, 9]);
        assert_eq!(m.switches, 7);
        // The same values as one step: a change point, not modes.
        let mut step = x;
        step.sort_by(|a, b| a.total_cmp(b));
        assert_eq!(of(&step), None);
        // One excursion and back (two switches): still not modes.
        assert_eq!(of(&[30.0, 30.2, 55.0, 55.1, 30.1, 29.9]), None);
        // One speed: nothing.
        assert_eq!(of(&[30.0, 30.5, 29.8, 30.2, 30.1, 29.9]), None);
    }
}
