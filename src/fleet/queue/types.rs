//! What the queue hands out and takes: a job as an agent takes it, how an
//! attempt ended, a lease renewed, what an earlier attempt left, and the rows
//! `kdelta jobs` lists.

use super::*;

/// A job as an agent takes it.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub(crate) id: i64,
    /// This attempt's number, from 1.
    pub(crate) attempt: i32,
    /// The command it runs (`run`).
    pub(crate) kind: String,
    /// That command's arguments, as given to `submit`.
    pub(crate) args: Vec<String>,
    pub(crate) label: Option<String>,
}

/// How an attempt ended, as the agent reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum End {
    /// The run is stored.
    Done { run: i64, note: Option<String> },
    /// Something went wrong; the job is tried again unless it failed before.
    Failed(String),
    /// This host cannot run it (a configuration it cannot give, a benchmark
    /// it lacks): never tried again.
    Refused(String),
    /// Back to the queue, not counted as a failure (the agent stopped).
    Returned(String),
    /// `kdelta cancel` stopped it.
    Cancelled,
}

/// What the lease's renewal found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lease {
    Kept,
    /// `kdelta cancel` asked the job to stop.
    Cancelled,
    /// The job is no longer this agent's (its lease ran out and it was
    /// ended or taken again).
    Lost,
}

/// What an earlier attempt left in the store for this job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Prior {
    /// Nothing: run it.
    Nothing,
    /// An unfinished run whose writer is gone, removed (with its results):
    /// run it again.
    Replaced { run: i64, results: i64 },
    /// A complete run: the job is done without running again.
    Stored(i64),
    /// A run another session is still writing (an agent that lost its lease
    /// and has not noticed yet).
    Busy(i64),
}

/// One registered host.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct HostRow {
    pub(crate) name: String,
    pub(crate) labels: std::collections::BTreeMap<String, String>,
    pub(crate) cpus: String,
    pub(crate) state: String,
    pub(crate) note: Option<String>,
    pub(crate) seen: String,
    /// Seconds since it was last seen (server time).
    pub(crate) idle_s: f64,
}

/// One attempt at a job, as `kdelta jobs` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct AttemptRow {
    pub(crate) attempt: i32,
    pub(crate) host: String,
    pub(crate) agent: String,
    pub(crate) started: String,
    pub(crate) ended: Option<String>,
    pub(crate) outcome: Option<String>,
    pub(crate) reason: Option<String>,
    pub(crate) run: Option<i64>,
}

/// One job, as `kdelta jobs` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct JobRow {
    pub(crate) id: i64,
    pub(crate) host: String,
    pub(crate) kind: String,
    pub(crate) args: Vec<String>,
    pub(crate) label: Option<String>,
    pub(crate) state: String,
    pub(crate) submitted: String,
    pub(crate) ended: Option<String>,
    pub(crate) run: Option<i64>,
    pub(crate) reason: Option<String>,
    pub(crate) cancel: bool,
    pub(crate) attempts: Vec<AttemptRow>,
}

impl JobRow {
    /// Whether nothing more will happen to it.
    pub(crate) fn finished(&self) -> bool {
        ![QUEUED, RUNNING].contains(&self.state.as_str())
    }
}

/// Which hosts a submission goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Hosts {
    All,
    /// Those with this label (every host has `host=NAME`).
    Label(String, String),
}
