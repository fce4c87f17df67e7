//! `ht-aware-2002`: Molnar's "fully HT-aware scheduler" (sched-F3, August 2002).
//!
//! One run queue per physical core, shared by its sibling logical CPUs. The
//! five properties of his mail, each marked `PROPERTY n` below:
//! 1. HT-aware passive load balancing: the periodic balancer compares cores,
//!    not logical CPUs ([`HtAware2002::passive_balance`]).
//! 2. Active load balancing: when a core goes idle while another core runs two
//!    tasks, a *running* task is moved over ([`super::spread_running`]).
//! 3. HT-aware task pickup: an idle logical CPU first takes tasks queued on its
//!    core (its sibling's too, since the queue is shared), before pulling from
//!    other cores ([`Policy::pick`]).
//! 4. HT-aware affinity: tasks stick to the core they last ran on, not to a
//!    logical CPU ([`HtAware2002::choose_core`]).
//! 5. HT-aware wakeup: a task woken onto a core whose other sibling is idle runs
//!    there at once, and a new or woken task prefers a fully idle core
//!    ([`HtAware2002::choose_core`]; the engine lets the idle sibling pick it
//!    immediately).

use super::{argmin_random, spread_onto_core_of, spread_running, Action, Policy};
use crate::simulate::state::{State, TaskId};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

pub(crate) struct HtAware2002 {
    /// One queue per core (the shared runqueue).
    queues: Vec<VecDeque<TaskId>>,
}

impl HtAware2002 {
    pub(crate) fn new(ncores: usize) -> Self {
        HtAware2002 { queues: vec![VecDeque::new(); ncores] }
    }

    fn nr_running(&self, st: &State, core: usize) -> usize {
        self.queues[core].len() + st.core_busy[core]
    }

    /// Where a runnable task queues.
    fn choose_core(&self, st: &State, task: TaskId, rng: &mut ChaCha8Rng) -> usize {
        let sh = st.shape;
        let t = &st.tasks[task];
        // PROPERTY 4 (affinity to the physical CPU): the core it, or its loop's
        // previous iteration, last ran on.
        let prev = t.last_cpu.or(t.hint_cpu).map(|c| sh.core_of(c));
        let idle_now = |c: usize| st.core_busy[c] == 0 && self.queues[c].is_empty();
        // PROPERTY 5 (wakeup): a fully idle core first, the previous one if idle.
        if let Some(p) = prev.filter(|&p| idle_now(p)) {
            return p;
        }
        if let Some(c) = argmin_random((0..sh.ncores()).filter(|&c| idle_now(c)), |_| 0, rng) {
            return c;
        }
        // PROPERTY 5: else a core with an idle sibling, which will run it at once.
        let free = |c: usize| st.core_busy[c] + self.queues[c].len() < sh.threads;
        if let Some(p) = prev.filter(|&p| free(p)) {
            return p;
        }
        if let Some(c) = argmin_random((0..sh.ncores()).filter(|&c| free(c)), |c| st.core_busy[c], rng) {
            return c;
        }
        // All busy: the least loaded core, the previous one on a tie (PROPERTY 4).
        let least = (0..sh.ncores()).map(|c| self.nr_running(st, c)).min().unwrap_or(0);
        match prev {
            Some(p) if self.nr_running(st, p) == least => p,
            _ => argmin_random(0..sh.ncores(), |c| self.nr_running(st, c), rng).expect("at least one core"),
        }
    }

    /// PROPERTY 1: passive balancing per physical CPU. Move queued tasks from
    /// the busiest core to the least busy one while they differ by two or more.
    fn passive_balance(&mut self, st: &State) {
        let n = self.queues.len();
        for _ in 0..st.tasks.len().max(1) {
            let Some(busiest) = (0..n)
                .filter(|&c| !self.queues[c].is_empty())
                .max_by_key(|&c| (self.nr_running(st, c), usize::MAX - c))
            else {
                return;
            };
            let idlest = (0..n).min_by_key(|&c| (self.nr_running(st, c), c)).expect("at least one core");
            if self.nr_running(st, busiest) < self.nr_running(st, idlest) + 2 {
                return;
            }
            let t = self.queues[busiest].pop_back().expect("non-empty");
            self.queues[idlest].push_back(t);
        }
    }
}

impl Policy for HtAware2002 {
    #[cfg(test)]
    fn name(&self) -> &'static str {
        "ht-aware-2002"
    }

    fn enqueue(&mut self, st: &State, task: TaskId, _new: bool, rng: &mut ChaCha8Rng) {
        let core = self.choose_core(st, task, rng);
        self.queues[core].push_back(task);
    }

    fn queue(&self, st: &State, cpu: usize) -> &VecDeque<TaskId> {
        &self.queues[st.shape.core_of(cpu)]
    }

    fn queue_mut(&mut self, st: &State, cpu: usize) -> &mut VecDeque<TaskId> {
        &mut self.queues[st.shape.core_of(cpu)]
    }

    fn pick(&mut self, st: &State, cpu: usize, _rng: &mut ChaCha8Rng) -> Option<TaskId> {
        // PROPERTY 3: the shared queue of this core first (the sibling's tasks too).
        let core = st.shape.core_of(cpu);
        if let Some(t) = self.queues[core].pop_front() {
            return Some(t);
        }
        // Then pull a queued task from the core with the most waiting, among
        // cores whose own CPUs are all busy (else their idle sibling runs it).
        let threads = st.shape.threads;
        let src = (0..self.queues.len())
            .filter(|&c| !self.queues[c].is_empty() && st.core_busy[c] == threads)
            .max_by_key(|&c| (self.queues[c].len(), usize::MAX - c))?;
        self.queues[src].pop_back()
    }

    fn balance(&mut self, st: &State, _rng: &mut ChaCha8Rng) -> Vec<Action> {
        self.passive_balance(st);
        // PROPERTY 2 at the tick as well, in case an idle core was missed.
        spread_running(st, None)
    }

    fn idle_balance(&mut self, st: &State, cpu: usize, _rng: &mut ChaCha8Rng) -> Vec<Action> {
        // PROPERTY 2: active balancing when a logical CPU goes idle and leaves
        // its core fully idle while another core runs two.
        spread_onto_core_of(st, cpu)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    fn place(st: &State, p: &mut HtAware2002, t: TaskId) -> usize {
        let mut r = rng();
        p.enqueue(st, t, true, &mut r);
        (0..st.shape.ncores()).find(|&c| !p.queues[c].is_empty()).unwrap()
    }

    #[test]
    fn new_task_goes_to_fully_idle_core() {
        for _ in 0..20 {
            let mut st = state("2x1x2", &[0]);
            let t = add_task(&mut st);
            assert_eq!(place(&st, &mut HtAware2002::new(2), t), 1);
        }
    }

    #[test]
    fn woken_task_prefers_its_previous_core() {
        let mut st = state("2x4x2", &[0]);
        let t = add_task(&mut st);
        st.tasks[t].last_cpu = Some(11); // core 5
        assert_eq!(place(&st, &mut HtAware2002::new(8), t), 5);
        // Previous core half busy but idle cores exist: an idle core wins.
        let mut st = state("2x4x2", &[10]);
        let t = add_task(&mut st);
        st.tasks[t].last_cpu = Some(11);
        assert_ne!(place(&st, &mut HtAware2002::new(8), t), 5);
    }

    #[test]
    fn idle_sibling_takes_a_task_queued_on_its_core() {
        let mut st = state("2x1x2", &[0, 2]);
        let t = add_task(&mut st);
        let mut p = HtAware2002::new(2);
        p.enqueue(&st, t, true, &mut rng());
        let got: Vec<_> = [1, 3].iter().filter_map(|&c| p.pick(&st, c, &mut rng())).collect();
        assert_eq!(got, vec![t]);
    }

    #[test]
    fn idle_core_pulls_a_running_task() {
        let st = state("2x1x2", &[0, 1]);
        let mut p = HtAware2002::new(2);
        assert_eq!(p.idle_balance(&st, 2, &mut rng()), vec![Action::MigrateRunning { from: 1, to: 2 }]);
        // A half-idle core does not pull.
        let st = state("2x1x2", &[0, 1, 2]);
        assert!(p.idle_balance(&st, 3, &mut rng()).is_empty());
    }

    #[test]
    fn passive_balance_compares_cores() {
        let mut st = state("2x1x2", &[0, 1]);
        let mut p = HtAware2002::new(2);
        let a = add_task(&mut st);
        p.queues[0].push_back(a);
        p.passive_balance(&st);
        assert_eq!(p.queues[1].front(), Some(&a));
    }
}
