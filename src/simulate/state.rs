//! What the engine simulates and a policy may look at: tasks, their phases
//! and states, and the machine's state. Shared by the engine and the policies
//! so that neither imports the other's internals.

use super::shape::Shape;
use serde::Serialize;

pub(crate) type TaskId = usize;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) enum Phase {
    /// CPU work, in seconds at rate 1.
    Cpu(f64),
    /// Blocked (I/O) for this many seconds.
    Block(f64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) enum TaskState {
    Queued,
    Running(usize),
    Blocked,
    Done,
}

#[derive(Debug, Clone)]
pub(crate) struct Task {
    pub(crate) phases: Vec<Phase>,
    /// Index of the current phase.
    pub(crate) phase: usize,
    /// Work left in the current CPU phase, as of the running CPU's last settle.
    pub(crate) remaining: f64,
    pub(crate) state: TaskState,
    /// Logical CPU this task last ran on.
    pub(crate) last_cpu: Option<usize>,
    /// For a new task: the CPU its predecessor (the previous iteration of its loop) ran on.
    pub(crate) hint_cpu: Option<usize>,
    /// The workload's label.
    pub(crate) tag: u64,
    pub(crate) created: f64,
}

/// What a policy may look at: the machine and every task.
#[derive(Debug, Clone)]
pub(crate) struct State {
    pub(crate) shape: Shape,
    pub(crate) now: f64,
    /// Task running on each logical CPU.
    pub(crate) running: Vec<Option<TaskId>>,
    /// Busy logical CPUs per core.
    pub(crate) core_busy: Vec<usize>,
    pub(crate) tasks: Vec<Task>,
}

impl State {
    pub(crate) fn busy(&self, cpu: usize) -> bool {
        self.running[cpu].is_some()
    }
    pub(crate) fn core_idle(&self, core: usize) -> bool {
        self.core_busy[core] == 0
    }
    /// True when some core runs two or more tasks while another core is fully idle.
    pub(crate) fn doubled_while_core_idle(&self) -> bool {
        self.core_busy.iter().any(|&b| b >= 2) && self.core_busy.contains(&0)
    }
}
