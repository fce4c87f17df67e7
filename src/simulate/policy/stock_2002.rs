//! `stock-2002`: the Linux 2.5.31 O(1) scheduler as it treated an SMT box.
//!
//! One run queue per logical CPU; the scheduler does not know which logical
//! CPUs share a core.
//! - A new task goes to the least loaded logical CPU by run-queue length
//!   (running + queued), ties broken at random. On Molnar's 2x1x2 box with one
//!   loop running, the second loop's task lands on the busy CPU's sibling with
//!   probability 1/3.
//! - A woken task goes back on the queue of the CPU it last ran on (2.5.31 did
//!   not migrate on wake-up).
//! - Balancing (periodic, and when a CPU goes idle) compares logical CPUs only,
//!   so 1-1 on one core against 0-0 on another looks balanced; and it only
//!   moves queued tasks, never a running one.

use super::{argmin_random, Action, CpuQueues, Policy};
use crate::simulate::state::{State, TaskId};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

pub(crate) struct Stock2002 {
    queues: CpuQueues,
}

impl Stock2002 {
    pub(crate) fn new(ncpus: usize) -> Self {
        Stock2002 { queues: CpuQueues::new(ncpus) }
    }
}

impl Policy for Stock2002 {
    #[cfg(test)]
    fn name(&self) -> &'static str {
        "stock-2002"
    }

    fn enqueue(&mut self, st: &State, task: TaskId, new: bool, rng: &mut ChaCha8Rng) {
        let last = st.tasks[task].last_cpu;
        let cpu = match (new, last) {
            (false, Some(c)) => c,
            _ => argmin_random(0..self.queues.len(), |c| self.queues.nr_running(st, c), rng).expect("at least one CPU"),
        };
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
            while self.queues.pull(st, cpu) {}
        }
        Vec::new()
    }

    fn idle_balance(&mut self, st: &State, cpu: usize, _rng: &mut ChaCha8Rng) -> Vec<Action> {
        self.queues.pull(st, cpu);
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    #[test]
    fn new_task_avoids_busy_cpu_but_not_its_sibling() {
        // One loop on CPU 0 of 2x1x2: the next new task lands on 1, 2 or 3 at random.
        let mut st = state("2x1x2", &[0]);
        let mut seen = [0usize; 4];
        let mut r = rng();
        for _ in 0..300 {
            let t = add_task(&mut st);
            let mut p = Stock2002::new(4);
            p.enqueue(&st, t, true, &mut r);
            let cpu = (0..4).find(|&c| p.pick(&st, c, &mut r).is_some()).unwrap();
            seen[cpu] += 1;
        }
        assert_eq!(seen[0], 0);
        assert!(seen[1] > 60 && seen[2] > 60 && seen[3] > 60, "{seen:?}");
    }

    #[test]
    fn balance_never_moves_running_tasks() {
        let st = state("2x1x2", &[0, 1]);
        let mut p = Stock2002::new(4);
        assert!(p.balance(&st, &mut rng()).is_empty());
        assert!(p.idle_balance(&st, 2, &mut rng()).is_empty());
    }

    #[test]
    fn idle_cpu_pulls_queued_task_from_long_queue() {
        let mut st = state("2x1x2", &[0]);
        let mut p = Stock2002::new(4);
        let a = add_task(&mut st);
        st.tasks[a].last_cpu = Some(0);
        p.enqueue(&st, a, false, &mut rng()); // woken: back to CPU 0's queue
        assert!(p.waiting(&st, 0));
        p.idle_balance(&st, 3, &mut rng());
        assert_eq!(p.pick(&st, 3, &mut rng()), Some(a));
    }
}
