//! `modern`: what current Linux (CFS/EEVDF with an SMT sched domain) does, simplified.
//!
//! One run queue per logical CPU, but placement and balancing know the cores:
//! - Wake-up and fork placement (`select_idle_sibling` / `select_idle_core`):
//!   a fully idle core first (the previous CPU's core if it is idle, else the
//!   first idle core scanning from it), then an idle logical CPU on the
//!   previous CPU's core, then any idle logical CPU, else the least loaded
//!   queue (the previous CPU on a tie).
//! - Balancing: an idle CPU pulls a queued task from the longest queue
//!   (new-idle and periodic balancing), and SMT group balancing moves a
//!   running task off a core that runs two while another core is fully idle
//!   (the kernel's active balance for `prefer_sibling` / group imbalance).

use super::{spread_onto_core_of, spread_running, Action, CpuQueues, Policy};
use crate::simulate::state::{State, TaskId};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

pub(crate) struct Modern {
    queues: CpuQueues,
}

impl Modern {
    pub(crate) fn new(ncpus: usize) -> Self {
        Modern { queues: CpuQueues::new(ncpus) }
    }

    fn free(&self, st: &State, cpu: usize) -> bool {
        !st.busy(cpu) && self.queues.at(cpu).is_empty()
    }

    fn select_cpu(&self, st: &State, task: TaskId) -> usize {
        let sh = st.shape;
        let t = &st.tasks[task];
        let prev = t.last_cpu.or(t.hint_cpu).unwrap_or(0);
        let pcore = sh.core_of(prev);
        let core_free = |c: usize| sh.cpus_of(c).all(|cpu| self.free(st, cpu));
        // select_idle_core: scan cores starting at the previous CPU's.
        let n = sh.ncores();
        if let Some(c) = (0..n).map(|i| (pcore + i) % n).find(|&c| core_free(c)) {
            return if sh.cpus_of(c).contains(&prev) { prev } else { sh.cpus_of(c).start };
        }
        // An idle sibling of the previous CPU (the previous CPU itself first).
        if self.free(st, prev) {
            return prev;
        }
        if let Some(cpu) = sh.cpus_of(pcore).find(|&c| self.free(st, c)) {
            return cpu;
        }
        // Any idle logical CPU, scanning from the previous one.
        let m = sh.ncpus();
        if let Some(cpu) = (0..m).map(|i| (prev + i) % m).find(|&c| self.free(st, c)) {
            return cpu;
        }
        let least = (0..m).map(|c| self.queues.nr_running(st, c)).min().unwrap_or(0);
        if self.queues.nr_running(st, prev) == least {
            prev
        } else {
            (0..m).find(|&c| self.queues.nr_running(st, c) == least).unwrap_or(prev)
        }
    }
}

impl Policy for Modern {
    #[cfg(test)]
    fn name(&self) -> &'static str {
        "modern"
    }

    fn enqueue(&mut self, st: &State, task: TaskId, _new: bool, _rng: &mut ChaCha8Rng) {
        let cpu = self.select_cpu(st, task);
        self.queues.at_mut(cpu).push_back(task);
    }

    fn queue(&self, _st: &State, cpu: usize) -> &VecDeque<TaskId> {
        self.queues.at(cpu)
    }

    fn queue_mut(&mut self, _st: &State, cpu: usize) -> &mut VecDeque<TaskId> {
        self.queues.at_mut(cpu)
    }

    fn balance(&mut self, st: &State, _rng: &mut ChaCha8Rng) -> Vec<Action> {
        for cpu in 0..self.queues.len() {
            if self.queues.nr_running(st, cpu) == 0 {
                self.queues.pull(st, cpu);
            }
        }
        spread_running(st, None)
    }

    fn idle_balance(&mut self, st: &State, cpu: usize, _rng: &mut ChaCha8Rng) -> Vec<Action> {
        if self.queues.pull(st, cpu) {
            return Vec::new();
        }
        spread_onto_core_of(st, cpu)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    fn placed(st: &State, p: &mut Modern, t: TaskId) -> usize {
        p.enqueue(st, t, true, &mut rng());
        (0..st.shape.ncpus()).find(|&c| !p.queues.at(c).is_empty()).unwrap()
    }

    #[test]
    fn idle_core_first_then_idle_sibling_of_previous() {
        let mut st = state("2x1x2", &[0]);
        let t = add_task(&mut st);
        st.tasks[t].last_cpu = Some(1);
        assert_eq!(placed(&st, &mut Modern::new(4), t), 2);
        let mut st = state("2x1x2", &[0, 2]);
        let t = add_task(&mut st);
        st.tasks[t].last_cpu = Some(3);
        assert_eq!(placed(&st, &mut Modern::new(4), t), 3);
        let mut st = state("2x4x2", &[0, 2, 4, 6, 8, 10, 12, 14]);
        let t = add_task(&mut st);
        st.tasks[t].last_cpu = Some(4);
        assert_eq!(placed(&st, &mut Modern::new(16), t), 5);
    }

    #[test]
    fn idle_core_pulls_running_task() {
        let st = state("2x1x2", &[2, 3]);
        let mut p = Modern::new(4);
        assert_eq!(p.idle_balance(&st, 0, &mut rng()), vec![Action::MigrateRunning { from: 3, to: 0 }]);
    }
}
