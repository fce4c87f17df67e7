//! `make`: a parallel build of J compile jobs with N at once (`make -jN`).
//!
//! The build descends into directories one after the other, as 2.5-era kbuild
//! did: a directory holds a uniform 4..=24 files; its compile jobs run N at a
//! time, and once all are done one link job (`ld -r` of the directory) runs
//! alone before the next directory starts. So the build has serial stretches
//! and ragged ends where fewer than N jobs run, as a real `-j2` build does.
//!
//! A compile job is `cpp`, `cc1` and `as` in turn: CPU bursts of 15%, 75% and
//! 10% of its work, separated by short blocking phases (reading headers,
//! writing the object) drawn from an exponential of mean 4 ms. Its work is
//! log-normal with median `COMPILE_MEDIAN` and shape 0.8 (a few large files,
//! many small). A link job (`ld -r` plus make's own serial work for the
//! directory) does `LINK_BASE` + `LINK_PER_FILE` per file of CPU work followed
//! by a write of mean 10 ms. Plan (sizes, work) is fixed per seed; the I/O
//! waits are redrawn per repetition.
//!
//! Calibration (done by running the simulator, not measured on hardware):
//! the serial share (`LINK_*`) was raised until `ht-aware-2002` beat
//! `stock-2002` at `-j2` by about 10% best-of-10 (Molnar: 45.3 s against
//! 41.3 s, 8.8%), then all work was scaled so that the default build
//! (J = 400, seed 1) with `-j2` under `stock-2002` on Molnar's box (`2x1x2`,
//! smt-rate 0.55, cross-core rate 0.98) takes 45 s on average over 10
//! repetitions. `simulate::tests::make_bars` checks it. The next job's task
//! carries the CPU of the job that just exited as its hint (make is woken by
//! the child's exit there and forks the next one).

use super::{exponential, lognormal};
use crate::simulate::engine::{Engine, Phase, TaskId, Workload};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Median CPU work of one compile job, seconds at rate 1 (see the calibration note).
pub(crate) const COMPILE_MEDIAN: f64 = 0.088;
/// Shape of the log-normal work distribution.
pub(crate) const COMPILE_SIGMA: f64 = 0.8;
/// Mean of a blocking (I/O) phase, seconds.
pub(crate) const IO_MEAN: f64 = 0.004;
/// Serial link work per directory: a base plus a part per file, seconds.
pub(crate) const LINK_BASE: f64 = 0.11;
pub(crate) const LINK_PER_FILE: f64 = 0.022;
/// Default number of compile jobs.
pub(crate) const DEFAULT_JOBS: usize = 400;

#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct MakeCfg {
    /// N of `-jN`.
    pub(crate) parallel: usize,
    /// J, the number of compile jobs.
    pub(crate) jobs: usize,
}

struct Dir {
    files: Vec<Vec<Phase>>,
    link: Vec<Phase>,
}

pub(crate) struct Make {
    cfg: MakeCfg,
    dirs: Vec<Dir>,
    dir: usize,
    next_file: usize,
    running: usize,
    linking: bool,
    pub(crate) finished_jobs: usize,
}

const LINK_TAG: u64 = u64::MAX;

impl Make {
    /// Draw the whole build plan from `rng` (so every policy sees the same build for a seed).
    /// `plan` draws the build (directory sizes, work per file): the same build
    /// for every repetition of a seed. `noise` draws the I/O waits, which
    /// differ from run to run as on a real machine.
    pub(crate) fn new(cfg: MakeCfg, mut rng: ChaCha8Rng, mut noise: ChaCha8Rng) -> Make {
        let mut dirs = Vec::new();
        let mut left = cfg.jobs;
        while left > 0 {
            let n = rng.gen_range(4..=24usize).min(left);
            left -= n;
            let files = (0..n)
                .map(|_| {
                    let w = lognormal(&mut rng, COMPILE_MEDIAN, COMPILE_SIGMA);
                    vec![
                        Phase::Cpu(0.15 * w),
                        Phase::Block(exponential(&mut noise, IO_MEAN)),
                        Phase::Cpu(0.75 * w),
                        Phase::Block(exponential(&mut noise, IO_MEAN)),
                        Phase::Cpu(0.10 * w),
                    ]
                })
                .collect();
            let link = vec![
                Phase::Cpu(LINK_BASE + LINK_PER_FILE * n as f64),
                Phase::Block(exponential(&mut noise, 2.5 * IO_MEAN)),
            ];
            dirs.push(Dir { files, link });
        }
        Make { cfg, dirs, dir: 0, next_file: 0, running: 0, linking: false, finished_jobs: 0 }
    }

    fn fill(&mut self, sim: &mut Engine, hint: Option<usize>) {
        while self.dir < self.dirs.len() {
            let d = &self.dirs[self.dir];
            if self.next_file < d.files.len() {
                if self.running >= self.cfg.parallel.max(1) {
                    return;
                }
                let ph = d.files[self.next_file].clone();
                sim.spawn(ph, self.next_file as u64, hint);
                self.next_file += 1;
                self.running += 1;
            } else if self.running > 0 {
                return; // wait for the directory's last compiles
            } else if !self.linking {
                let ph = d.link.clone();
                self.linking = true;
                self.running += 1;
                sim.spawn(ph, LINK_TAG, hint);
                return;
            } else {
                // Link done: next directory.
                self.linking = false;
                self.dir += 1;
                self.next_file = 0;
            }
        }
    }
}

impl Workload for Make {
    fn start(&mut self, sim: &mut Engine) {
        self.fill(sim, None);
    }

    fn exited(&mut self, sim: &mut Engine, task: TaskId) {
        self.running -= 1;
        self.finished_jobs += 1;
        let hint = sim.st.tasks[task].last_cpu;
        self.fill(sim, hint);
    }
}
