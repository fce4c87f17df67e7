//! Scheduling policies for the simulator, each a small module behind [`Policy`].
//!
//! A policy owns its run queues. The engine tells it when a task becomes
//! runnable ([`Policy::enqueue`]) or is preempted ([`Policy::requeue`]), asks
//! what an idle CPU should run ([`Policy::pick`]), whether anyone waits for a
//! CPU ([`Policy::waiting`], decides preemption at the end of a time slice),
//! and lets it balance: periodically ([`Policy::balance`]) and when a CPU has
//! just gone idle with nothing to pick ([`Policy::idle_balance`]). Queued
//! tasks are moved inside the policy; running tasks only move by returning
//! [`Action::MigrateRunning`], which the engine carries out.

pub(crate) mod ht_aware_2002;
pub(crate) mod modern;
pub(crate) mod stock_2002;

use super::state::{State, TaskId};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// The policies there are; `--policy` takes their names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub(crate) enum PolicyName {
    /// Linux 2.4/2.5 before HT awareness: every logical CPU alike.
    #[value(name = "stock-2002")]
    #[serde(rename = "stock-2002")]
    Stock2002,
    /// Molnar's 2002 patch: one run queue per physical core.
    #[value(name = "ht-aware-2002")]
    #[serde(rename = "ht-aware-2002")]
    HtAware2002,
    /// Today's scheduling domains: spread over idle cores first.
    #[value(name = "modern")]
    #[serde(rename = "modern")]
    Modern,
}

impl std::fmt::Display for PolicyName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PolicyName {
    pub(crate) const ALL: [PolicyName; 3] = [PolicyName::Stock2002, PolicyName::HtAware2002, PolicyName::Modern];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            PolicyName::Stock2002 => "stock-2002",
            PolicyName::HtAware2002 => "ht-aware-2002",
            PolicyName::Modern => "modern",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// Move the task running on `from` to the idle CPU `to`, where it keeps running.
    MigrateRunning { from: usize, to: usize },
}

pub(crate) trait Policy {
    #[cfg(test)]
    fn name(&self) -> &'static str;
    /// A task became runnable: `new` when just created (fork+exec), else woken after blocking.
    fn enqueue(&mut self, st: &State, task: TaskId, new: bool, rng: &mut ChaCha8Rng);
    /// The run queue `cpu` takes its tasks from (its own, or its core's).
    fn queue(&self, st: &State, cpu: usize) -> &VecDeque<TaskId>;
    /// The same queue, to change.
    fn queue_mut(&mut self, st: &State, cpu: usize) -> &mut VecDeque<TaskId>;
    /// The task running on `cpu` used up its slice while others waited; queue it again.
    fn requeue(&mut self, st: &State, task: TaskId, cpu: usize) {
        self.queue_mut(st, cpu).push_back(task);
    }
    /// `cpu` is idle: the task it should run now, removed from the queues.
    fn pick(&mut self, st: &State, cpu: usize, _rng: &mut ChaCha8Rng) -> Option<TaskId> {
        self.queue_mut(st, cpu).pop_front()
    }
    /// Whether a task waits that `cpu` would run next (preempt at the end of the slice).
    fn waiting(&self, st: &State, cpu: usize) -> bool {
        !self.queue(st, cpu).is_empty()
    }
    /// The periodic balance tick.
    fn balance(&mut self, st: &State, rng: &mut ChaCha8Rng) -> Vec<Action>;
    /// `cpu` just went idle and `pick` found nothing.
    fn idle_balance(&mut self, st: &State, cpu: usize, rng: &mut ChaCha8Rng) -> Vec<Action>;
}

/// Build a policy for a machine of `ncpus` logical CPUs in `ncores` cores.
pub(crate) fn make(name: PolicyName, ncpus: usize, ncores: usize) -> Box<dyn Policy> {
    match name {
        PolicyName::Stock2002 => Box::new(stock_2002::Stock2002::new(ncpus)),
        PolicyName::HtAware2002 => Box::new(ht_aware_2002::HtAware2002::new(ncores)),
        PolicyName::Modern => Box::new(modern::Modern::new(ncpus)),
    }
}

/// One FIFO run queue per logical CPU (`stock-2002` and `modern`).
pub(crate) struct CpuQueues(Vec<VecDeque<TaskId>>);

impl CpuQueues {
    pub(crate) fn new(ncpus: usize) -> Self {
        CpuQueues(vec![VecDeque::new(); ncpus])
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn at(&self, cpu: usize) -> &VecDeque<TaskId> {
        &self.0[cpu]
    }

    pub(crate) fn at_mut(&mut self, cpu: usize) -> &mut VecDeque<TaskId> {
        &mut self.0[cpu]
    }

    /// Tasks on `cpu`: queued, plus the one running.
    pub(crate) fn nr_running(&self, st: &State, cpu: usize) -> usize {
        self.0[cpu].len() + st.busy(cpu) as usize
    }

    /// Pull one queued task to `cpu` from the queue with the most tasks when
    /// that has at least two more (the 2002 balancer's notion of imbalance,
    /// kept by `modern`'s idle pull).
    pub(crate) fn pull(&mut self, st: &State, cpu: usize) -> bool {
        let mine = self.nr_running(st, cpu);
        let Some(busiest) = (0..self.0.len())
            .filter(|&c| c != cpu && !self.0[c].is_empty())
            .max_by_key(|&c| (self.nr_running(st, c), usize::MAX - c))
        else {
            return false;
        };
        if self.nr_running(st, busiest) < mine + 2 {
            return false;
        }
        let t = self.0[busiest].pop_back().expect("non-empty queue");
        self.0[cpu].push_back(t);
        true
    }
}

/// Index of a minimum of `key` over `items`, ties broken at random.
pub(crate) fn argmin_random<T: Copy>(
    items: impl Iterator<Item = T>,
    key: impl Fn(T) -> usize,
    rng: &mut ChaCha8Rng,
) -> Option<T> {
    let mut best: Vec<T> = Vec::new();
    let mut bk = usize::MAX;
    for it in items {
        let k = key(it);
        if k < bk {
            bk = k;
            best.clear();
        }
        if k == bk {
            best.push(it);
        }
    }
    match best.len() {
        0 => None,
        1 => Some(best[0]),
        n => Some(best[rng.gen_range(0..n)]),
    }
}

/// Idle balancing when logical CPU `cpu` goes idle: if that leaves its whole
/// core idle, [`spread_running`] with that core first; otherwise nothing.
pub(crate) fn spread_onto_core_of(st: &State, cpu: usize) -> Vec<Action> {
    let core = st.shape.core_of(cpu);
    if st.core_idle(core) {
        spread_running(st, Some(core))
    } else {
        Vec::new()
    }
}

/// Active SMT balancing: for each fully idle core, move one running task off a
/// core that runs two or more (the busiest first) onto the idle core.
/// `prefer` is visited first when it names a fully idle core.
pub(crate) fn spread_running(st: &State, prefer: Option<usize>) -> Vec<Action> {
    let sh = st.shape;
    if sh.threads < 2 {
        return Vec::new();
    }
    let mut busy = st.core_busy.clone();
    let mut taken = vec![false; sh.ncpus()];
    let mut acts = Vec::new();
    let idle_cores: Vec<usize> = prefer.into_iter().chain(0..sh.ncores()).filter(|&c| st.core_idle(c)).collect();
    let mut seen = vec![false; sh.ncores()];
    for idle in idle_cores {
        if seen[idle] || busy[idle] != 0 {
            continue;
        }
        seen[idle] = true;
        let Some(src) = (0..sh.ncores()).filter(|&c| busy[c] >= 2).max_by_key(|&c| (busy[c], usize::MAX - c)) else {
            break;
        };
        let Some(from) = sh.cpus_of(src).rev().find(|&cpu| st.busy(cpu) && !taken[cpu]) else {
            break;
        };
        taken[from] = true;
        busy[src] -= 1;
        busy[idle] += 1;
        acts.push(Action::MigrateRunning { from, to: sh.cpus_of(idle).start });
    }
    acts
}

#[cfg(test)]
pub(crate) mod testutil {
    use super::super::shape::Shape;
    use super::super::state::{State, Task, TaskState};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// A state with the given tasks running on the given CPUs (task i on cpus[i]).
    pub(crate) fn state(shape: &str, running_on: &[usize]) -> State {
        let shape = Shape::parse(shape).unwrap();
        let mut st = State {
            shape,
            now: 0.0,
            running: vec![None; shape.ncpus()],
            core_busy: vec![0; shape.ncores()],
            tasks: vec![],
        };
        for &cpu in running_on {
            let id = add_task(&mut st);
            st.running[cpu] = Some(id);
            st.tasks[id].state = TaskState::Running(cpu);
            st.tasks[id].last_cpu = Some(cpu);
            st.core_busy[shape.core_of(cpu)] += 1;
        }
        st
    }

    pub(crate) fn add_task(st: &mut State) -> usize {
        st.tasks.push(Task {
            phases: vec![],
            phase: 0,
            remaining: 1.0,
            state: TaskState::Queued,
            last_cpu: None,
            hint_cpu: None,
            tag: 0,
            created: 0.0,
        });
        st.tasks.len() - 1
    }

    pub(crate) fn rng() -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(7)
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;

    #[test]
    fn spread_moves_one_task_per_idle_core() {
        let st = state("2x1x2", &[0, 1]);
        assert_eq!(spread_running(&st, None), vec![Action::MigrateRunning { from: 1, to: 2 }]);
        let st = state("2x1x2", &[0, 2]);
        assert!(spread_running(&st, None).is_empty());
        // 1x4x2 with core 0 doubled, core 1 doubled, cores 2 and 3 idle.
        let st = state("1x4x2", &[0, 1, 2, 3]);
        let a = spread_running(&st, None);
        assert_eq!(a.len(), 2);
        assert!(a.contains(&Action::MigrateRunning { from: 1, to: 4 }));
        assert!(a.contains(&Action::MigrateRunning { from: 3, to: 6 }));
        // No SMT: nothing to do.
        let st = state("1x2x1", &[0]);
        assert!(spread_running(&st, None).is_empty());
    }

    #[test]
    fn names_match_the_policies() {
        for p in PolicyName::ALL {
            assert_eq!(make(p, 4, 2).name(), p.as_str());
            assert_eq!(<PolicyName as clap::ValueEnum>::from_str(p.as_str(), false), Ok(p));
        }
    }
}
