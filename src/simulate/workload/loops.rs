//! `loops`: K independent loops of a CPU-bound job (Molnar's "compile floppy.c
//! in an infinite loop"). Each iteration is a new task, as a shell loop starts
//! a new compiler process every time, so placement is decided again each
//! iteration; the new task carries its predecessor's CPU as a hint (what an
//! affinity-aware scheduler may use). Work per iteration is `work` seconds at
//! rate 1, times a uniform factor in `1 ± jitter` (real compile times vary a
//! little, which also keeps the loops from running in lock step).

use crate::simulate::engine::{Engine, Phase, TaskId, Workload};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct LoopsCfg {
    pub(crate) loops: usize,
    /// Seconds of work per iteration at rate 1.
    pub(crate) work: f64,
    pub(crate) iterations: usize,
    /// Relative spread of the work per iteration (0.01 = ±1%).
    pub(crate) jitter: f64,
}

/// One finished iteration.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Iteration {
    pub(crate) lp: usize,
    pub(crate) start: f64,
    pub(crate) end: f64,
    pub(crate) work: f64,
}

impl Iteration {
    pub(crate) fn time(&self) -> f64 {
        self.end - self.start
    }
}

pub(crate) struct Loops {
    cfg: LoopsCfg,
    rng: ChaCha8Rng,
    started: Vec<usize>,
    work_of: Vec<f64>,
    pub(crate) done: Vec<Iteration>,
}

impl Loops {
    pub(crate) fn new(cfg: LoopsCfg, rng: ChaCha8Rng) -> Loops {
        Loops { cfg, rng, started: vec![0; cfg.loops], work_of: Vec::new(), done: Vec::new() }
    }

    fn spawn(&mut self, sim: &mut Engine, lp: usize, hint: Option<usize>) {
        let j = self.cfg.jitter;
        let f = if j > 0.0 { 1.0 + self.rng.gen_range(-j..=j) } else { 1.0 };
        let w = self.cfg.work * f;
        self.started[lp] += 1;
        let id = sim.spawn(vec![Phase::Cpu(w)], lp as u64, hint);
        if self.work_of.len() <= id {
            self.work_of.resize(id + 1, 0.0);
        }
        self.work_of[id] = w;
    }
}

impl Workload for Loops {
    fn start(&mut self, sim: &mut Engine) {
        for lp in 0..self.cfg.loops {
            if self.cfg.iterations > 0 {
                self.spawn(sim, lp, None);
            }
        }
    }

    fn exited(&mut self, sim: &mut Engine, task: TaskId) {
        let t = &sim.st.tasks[task];
        let lp = t.tag as usize;
        let (start, last) = (t.created, t.last_cpu);
        self.done.push(Iteration { lp, start, end: sim.now(), work: self.work_of[task] });
        if self.started[lp] < self.cfg.iterations {
            self.spawn(sim, lp, last);
        }
    }
}
