//! What the engine simulates and a policy may look at: tasks, their phases
//! and states, and the machine's state. Shared by the engine and the policies
//! so that neither imports the other's internals.

use super::shape::Shape;
use serde::Serialize;

pub type TaskId = usize;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Phase {
    /// CPU work, in seconds at rate 1.
    Cpu(f64),
    /// Blocked (I/O) for this many seconds.
    Block(f64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum TaskState {
    Queued,
    Running(usize),
    Blocked,
    Done,
}

#[derive(Debug, Clone)]
pub struct Task {
    pub phases: Vec<Phase>,
    /// Index of the current phase.
    pub phase: usize,
    /// Work left in the current CPU phase, as of the running CPU's last settle.
    pub remaining: f64,
    pub state: TaskState,
    /// Logical CPU this task last ran on.
    pub last_cpu: Option<usize>,
    /// For a new task: the CPU its predecessor (the previous iteration of its loop) ran on.
    pub hint_cpu: Option<usize>,
    /// The workload's label.
    pub tag: u64,
    pub created: f64,
}

/// What a policy may look at: the machine and every task.
#[derive(Debug, Clone)]
pub struct State {
    pub shape: Shape,
    pub now: f64,
    /// Task running on each logical CPU.
    pub running: Vec<Option<TaskId>>,
    /// Busy logical CPUs per core.
    pub core_busy: Vec<usize>,
    pub tasks: Vec<Task>,
}

impl State {
    pub fn busy(&self, cpu: usize) -> bool {
        self.running[cpu].is_some()
    }
    pub fn core_idle(&self, core: usize) -> bool {
        self.core_busy[core] == 0
    }
    /// True when some core runs two or more tasks while another core is fully idle.
    pub fn doubled_while_core_idle(&self) -> bool {
        self.core_busy.iter().any(|&b| b >= 2) && self.core_busy.contains(&0)
    }
}
