//! The discrete-event engine: simulated time, tasks, logical CPUs and the SMT rate model.
//!
//! The engine knows nothing of any policy or workload. A task is a list of
//! phases (CPU work in seconds-at-rate-1, or a blocking wait in seconds). A
//! [`Policy`] decides where runnable tasks queue, what an idle CPU picks and
//! which running tasks migrate at balance time; a [`Workload`] creates tasks
//! and hears when they exit.
//!
//! Rate model: a busy logical CPU runs its task at rate 1 while its siblings
//! are idle and at rate `smt` while at least one sibling is busy (2-way SMT;
//! for wider SMT the same `smt` applies as an approximation); the rate is then
//! multiplied by `cross_core` when any other core of the machine is busy too
//! (shared memory bus and caches: Molnar's 2.55 s alone against 2.60 s for two
//! loops on different physical CPUs gives 2.55/2.60 = 0.98).
//!
//! Events: a task's completion of its CPU phase (re-predicted whenever its
//! rate changes; stale predictions are dropped by a per-CPU generation count),
//! time-slice expiry, wake-up after a blocking phase, and a periodic balance
//! tick. Ties in time are broken by insertion order, so a run is a pure
//! function of its inputs and seeds.

use super::policy::{Action, Policy};
use super::shape::Shape;
pub(crate) use super::state::{Phase, State, Task, TaskId, TaskState};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Work below this (seconds at rate 1) counts as done; absorbs rounding.
const EPS: f64 = 1e-9;

/// Rate-model and timing parameters.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct EngineCfg {
    pub(crate) smt_rate: f64,
    pub(crate) cross_core_rate: f64,
    /// Time slice, seconds.
    pub(crate) timeslice: f64,
    /// Balance interval, seconds.
    pub(crate) balance: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Complete { cpu: usize, gen: u64 },
    Slice { cpu: usize, gen: u64 },
    Wake { task: TaskId },
    Tick,
}

#[derive(Debug, Clone, Copy)]
struct Ev {
    t: f64,
    seq: u64,
    kind: Kind,
}
impl PartialEq for Ev {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Ev {}
impl PartialOrd for Ev {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ev {
    // Reversed: BinaryHeap is a max-heap and we want the earliest event first.
    fn cmp(&self, o: &Self) -> Ordering {
        o.t.total_cmp(&self.t).then(o.seq.cmp(&self.seq))
    }
}

/// One stretch of a task on a CPU, for `--trace`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Segment {
    pub(crate) task: TaskId,
    pub(crate) tag: u64,
    pub(crate) cpu: usize,
    pub(crate) start: f64,
    pub(crate) end: f64,
    /// Why the stretch ended: `phase-done`, `preempted`, `migrated`.
    pub(crate) end_reason: &'static str,
}

/// A workload: creates tasks and is told when they exit.
pub(crate) trait Workload {
    fn start(&mut self, sim: &mut Engine);
    fn exited(&mut self, sim: &mut Engine, task: TaskId);
}

/// Counters of one run.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Counters {
    /// Events processed (stale completion predictions not counted).
    pub(crate) events: u64,
    pub(crate) migrations_running: u64,
    pub(crate) preemptions: u64,
    /// Total simulated time during which a core ran two or more tasks while another core was fully idle.
    pub(crate) doubled_time: f64,
    /// Longest such stretch.
    pub(crate) doubled_longest: f64,
    pub(crate) work_submitted: f64,
    pub(crate) work_done: f64,
}

pub(crate) struct Engine {
    pub(crate) st: State,
    cfg: EngineCfg,
    policy: Box<dyn Policy>,
    pub(crate) rng: ChaCha8Rng,
    heap: BinaryHeap<Ev>,
    seq: u64,
    /// Per CPU: generation of the completion prediction, rate, time of last settle, start of current stretch.
    gen: Vec<u64>,
    rate: Vec<f64>,
    since: Vec<f64>,
    stretch: Vec<f64>,
    slice_gen: Vec<u64>,
    busy_cores: usize,
    live: usize,
    tick_pending: bool,
    doubled_since: Option<f64>,
    /// Tasks that exited and whose workload has not been told yet.
    exited: Vec<TaskId>,
    /// Something may have become runnable or a CPU idle: idle CPUs should ask for work.
    dirty_dispatch: bool,
    /// The set of busy CPUs changed: rates and the doubled-core watch need a look.
    dirty_busy: bool,
    pub(crate) counters: Counters,
    pub(crate) trace: Option<Vec<Segment>>,
}

impl Engine {
    pub(crate) fn new(shape: Shape, cfg: EngineCfg, policy: Box<dyn Policy>, rng: ChaCha8Rng, trace: bool) -> Engine {
        let n = shape.ncpus();
        Engine {
            st: State {
                shape,
                now: 0.0,
                running: vec![None; n],
                core_busy: vec![0; shape.ncores()],
                tasks: Vec::new(),
            },
            cfg,
            policy,
            rng,
            heap: BinaryHeap::new(),
            seq: 0,
            gen: vec![0; n],
            rate: vec![0.0; n],
            since: vec![0.0; n],
            stretch: vec![0.0; n],
            slice_gen: vec![0; n],
            busy_cores: 0,
            live: 0,
            tick_pending: false,
            doubled_since: None,
            exited: Vec::new(),
            dirty_dispatch: true,
            dirty_busy: true,
            counters: Counters::default(),
            trace: if trace { Some(Vec::new()) } else { None },
        }
    }

    pub(crate) fn now(&self) -> f64 {
        self.st.now
    }

    fn push(&mut self, t: f64, kind: Kind) {
        self.seq += 1;
        self.heap.push(Ev { t, seq: self.seq, kind });
    }

    /// Create a task now. `hint_cpu`: where its predecessor ran (loops), for affinity.
    pub(crate) fn spawn(&mut self, phases: Vec<Phase>, tag: u64, hint_cpu: Option<usize>) -> TaskId {
        let id = self.st.tasks.len();
        self.counters.work_submitted +=
            phases.iter().map(|p| if let Phase::Cpu(w) = p { *w } else { 0.0 }).sum::<f64>();
        self.st.tasks.push(Task {
            phases,
            phase: 0,
            remaining: 0.0,
            state: TaskState::Blocked,
            last_cpu: None,
            hint_cpu,
            tag,
            created: self.st.now,
        });
        self.live += 1;
        self.enter_phase(id, true);
        id
    }

    /// Put a task into its current phase (or retire it when none is left).
    fn enter_phase(&mut self, id: TaskId, new: bool) {
        let t = &mut self.st.tasks[id];
        match t.phases.get(t.phase).copied() {
            Some(Phase::Cpu(w)) => {
                t.remaining = w.max(0.0);
                t.state = TaskState::Queued;
                self.policy.enqueue(&self.st, id, new, &mut self.rng);
                self.dirty_dispatch = true;
            }
            Some(Phase::Block(d)) => {
                t.state = TaskState::Blocked;
                let at = self.st.now + d.max(0.0);
                self.push(at, Kind::Wake { task: id });
            }
            None => {
                t.state = TaskState::Done;
                self.live -= 1;
                self.exited.push(id);
            }
        }
        if !self.tick_pending && self.live > 0 {
            self.tick_pending = true;
            let at = self.st.now + self.cfg.balance;
            self.push(at, Kind::Tick);
        }
    }

    /// Bring the running task's remaining work on `cpu` up to now.
    fn settle(&mut self, cpu: usize) {
        if let Some(id) = self.st.running[cpu] {
            let dt = self.st.now - self.since[cpu];
            let t = &mut self.st.tasks[id];
            let done = (self.rate[cpu] * dt).min(t.remaining);
            t.remaining -= done;
            self.counters.work_done += done;
        }
        self.since[cpu] = self.st.now;
    }

    fn start(&mut self, id: TaskId, cpu: usize) {
        debug_assert!(self.st.running[cpu].is_none());
        self.st.running[cpu] = Some(id);
        self.dirty_busy = true;
        let core = self.st.shape.core_of(cpu);
        self.st.core_busy[core] += 1;
        if self.st.core_busy[core] == 1 {
            self.busy_cores += 1;
        }
        let t = &mut self.st.tasks[id];
        t.state = TaskState::Running(cpu);
        t.last_cpu = Some(cpu);
        self.rate[cpu] = 0.0; // forces a fresh prediction in refresh_rates
        self.since[cpu] = self.st.now;
        self.stretch[cpu] = self.st.now;
        self.slice_gen[cpu] += 1;
        let g = self.slice_gen[cpu];
        let at = self.st.now + self.cfg.timeslice;
        self.push(at, Kind::Slice { cpu, gen: g });
    }

    /// Take the running task off `cpu` (work settled); returns it.
    fn stop(&mut self, cpu: usize, reason: &'static str) -> TaskId {
        self.settle(cpu);
        let id = self.st.running[cpu].take().expect("stop on an idle CPU");
        self.dirty_busy = true;
        self.dirty_dispatch = true;
        let core = self.st.shape.core_of(cpu);
        self.st.core_busy[core] -= 1;
        if self.st.core_busy[core] == 0 {
            self.busy_cores -= 1;
        }
        self.gen[cpu] += 1;
        self.slice_gen[cpu] += 1;
        self.rate[cpu] = 0.0;
        if let Some(tr) = self.trace.as_mut() {
            let t = &self.st.tasks[id];
            tr.push(Segment {
                task: id,
                tag: t.tag,
                cpu,
                start: self.stretch[cpu],
                end: self.st.now,
                end_reason: reason,
            });
        }
        id
    }

    fn rate_of(&self, cpu: usize) -> f64 {
        let core = self.st.shape.core_of(cpu);
        let mut r = if self.st.core_busy[core] >= 2 { self.cfg.smt_rate } else { 1.0 };
        if self.busy_cores >= 2 {
            r *= self.cfg.cross_core_rate;
        }
        r
    }

    /// Re-predict completions of every running task whose rate changed.
    fn refresh_rates(&mut self) {
        for cpu in 0..self.st.running.len() {
            let Some(id) = self.st.running[cpu] else {
                continue;
            };
            let r = self.rate_of(cpu);
            if r != self.rate[cpu] {
                self.settle(cpu);
                self.rate[cpu] = r;
                self.gen[cpu] += 1;
                let g = self.gen[cpu];
                let at = self.st.now + self.st.tasks[id].remaining / r;
                self.push(at, Kind::Complete { cpu, gen: g });
            }
        }
    }

    /// Let every idle CPU ask the policy for work.
    fn dispatch(&mut self) {
        if !self.dirty_dispatch {
            return;
        }
        self.dirty_dispatch = false;
        for cpu in 0..self.st.running.len() {
            if self.st.running[cpu].is_none() {
                if let Some(id) = self.policy.pick(&self.st, cpu, &mut self.rng) {
                    self.start(id, cpu);
                }
            }
        }
    }

    fn apply(&mut self, actions: Vec<Action>) -> bool {
        let mut any = false;
        for a in actions {
            match a {
                Action::MigrateRunning { from, to } => {
                    if self.st.running[from].is_some() && self.st.running[to].is_none() {
                        let id = self.stop(from, "migrated");
                        self.counters.migrations_running += 1;
                        self.start(id, to);
                        any = true;
                    }
                }
            }
        }
        any
    }

    /// Balance until the policy has nothing more to do (bounded).
    fn balance(&mut self, newidle: Option<usize>) {
        for _ in 0..self.st.running.len() + 1 {
            let acts = match newidle {
                Some(cpu) => self.policy.idle_balance(&self.st, cpu, &mut self.rng),
                None => self.policy.balance(&self.st, &mut self.rng),
            };
            let moved = self.apply(acts);
            // Queued tasks may have moved inside the policy.
            self.dirty_dispatch = true;
            self.dispatch();
            if !moved {
                break;
            }
        }
    }

    fn watch_doubled(&mut self) {
        let bad = self.st.doubled_while_core_idle();
        match (bad, self.doubled_since) {
            (true, None) => self.doubled_since = Some(self.st.now),
            (false, Some(s)) => {
                self.close_doubled(s);
                self.doubled_since = None;
            }
            _ => {}
        }
    }

    fn close_doubled(&mut self, since: f64) {
        let d = self.st.now - since;
        self.counters.doubled_time += d;
        self.counters.doubled_longest = self.counters.doubled_longest.max(d);
    }

    /// Run until every task has exited. Returns the end time.
    pub(crate) fn run(&mut self, wl: &mut dyn Workload) -> f64 {
        wl.start(self);
        self.after_event(wl, &[]);
        while let Some(ev) = self.heap.pop() {
            if let Kind::Complete { cpu, gen } = ev.kind {
                if gen != self.gen[cpu] {
                    continue;
                }
            }
            if let Kind::Slice { cpu, gen } = ev.kind {
                if gen != self.slice_gen[cpu] {
                    continue;
                }
            }
            debug_assert!(ev.t >= self.st.now - 1e-12);
            self.st.now = ev.t.max(self.st.now);
            self.counters.events += 1;
            let mut idled: Vec<usize> = Vec::new();
            match ev.kind {
                Kind::Complete { cpu, .. } => {
                    self.settle(cpu);
                    let id = self.st.running[cpu].expect("completion on an idle CPU");
                    let left = self.st.tasks[id].remaining;
                    if left > EPS {
                        // Rounding left a little: predict again.
                        self.gen[cpu] += 1;
                        let g = self.gen[cpu];
                        let at = self.st.now + left / self.rate[cpu];
                        self.push(at, Kind::Complete { cpu, gen: g });
                        continue;
                    }
                    self.counters.work_done += left;
                    self.st.tasks[id].remaining = 0.0;
                    self.stop(cpu, "phase-done");
                    self.st.tasks[id].phase += 1;
                    self.enter_phase(id, false);
                    idled.push(cpu);
                }
                Kind::Slice { cpu, .. } => {
                    if self.policy.waiting(&self.st, cpu) {
                        let id = self.stop(cpu, "preempted");
                        self.counters.preemptions += 1;
                        self.st.tasks[id].state = TaskState::Queued;
                        self.policy.requeue(&self.st, id, cpu);
                        self.dirty_dispatch = true;
                    } else {
                        self.slice_gen[cpu] += 1;
                        let g = self.slice_gen[cpu];
                        let at = self.st.now + self.cfg.timeslice;
                        self.push(at, Kind::Slice { cpu, gen: g });
                    }
                }
                Kind::Wake { task } => {
                    self.st.tasks[task].phase += 1;
                    self.enter_phase(task, false);
                }
                Kind::Tick => {
                    self.tick_pending = false;
                    self.balance(None);
                    if self.live > 0 {
                        self.tick_pending = true;
                        let at = self.st.now + self.cfg.balance;
                        self.push(at, Kind::Tick);
                    }
                }
            }
            self.after_event(wl, &idled);
            if self.live == 0 && self.exited.is_empty() {
                break;
            }
        }
        if let Some(s) = self.doubled_since.take() {
            self.close_doubled(s);
        }
        self.st.now
    }

    /// Common tail of every event: hand out work, balance CPUs that went idle,
    /// tell the workload of exits (which may spawn), fix rates, watch the invariant.
    fn after_event(&mut self, wl: &mut dyn Workload, idled: &[usize]) {
        while !self.exited.is_empty() {
            let ex = std::mem::take(&mut self.exited);
            for id in ex {
                wl.exited(self, id);
            }
        }
        self.dispatch();
        for &cpu in idled {
            if self.st.running[cpu].is_none() {
                self.balance(Some(cpu));
            }
        }
        if self.dirty_busy {
            self.dirty_busy = false;
            self.refresh_rates();
            self.watch_doubled();
        }
    }
}
