//! The records every part shares: a run and its results. Their JSON form is
//! kdelta's stable output format (`--format json`, `export`), documented in
//! the README; add fields, never rename or remove them.

use crate::bench::{Better, Params};
use crate::stats::{Summary, Warning};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Failed,
    Unavailable,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed => "failed",
            Status::Unavailable => "unavailable",
        }
    }
    pub fn parse(s: &str) -> Option<Status> {
        Some(match s {
            "ok" => Status::Ok,
            "failed" => Status::Failed,
            "unavailable" => Status::Unavailable,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Running,
    Complete,
    Incomplete,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Incomplete => "incomplete",
        }
    }
    pub fn parse(s: &str) -> Option<RunStatus> {
        Some(match s {
            "running" => RunStatus::Running,
            "complete" => RunStatus::Complete,
            "incomplete" => RunStatus::Incomplete,
            _ => return None,
        })
    }
}

/// One benchmark at one parameter point under one configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultRecord {
    pub benchmark: String,
    pub family: String,
    pub params: Params,
    pub config: String,
    pub cpus: String,
    pub unit: String,
    pub better: Better,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
    /// Every raw sample, in the order taken.
    pub samples: Vec<f64>,
    /// median, mean, mean_kind, min, max, stddev, cv, n, p5, p95, p99 (absent
    /// when there are no samples).
    #[serde(flatten)]
    pub summary: Option<Summary>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub iterations: Option<u64>,
    #[serde(default)]
    pub extras: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(default)]
    pub warnings: Vec<Warning>,
    #[serde(default)]
    pub simulated: bool,
}

impl ResultRecord {
    /// Key that matches the same measurement across configurations or runs.
    pub fn point_key(&self) -> (String, Params) {
        (self.benchmark.clone(), self.params.clone())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: i64,
    pub label: Option<String>,
    pub started: String,
    pub finished: Option<String>,
    pub status: RunStatus,
    pub kdelta_version: String,
    pub command: String,
    #[serde(skip)]
    pub pid: Option<u32>,
    pub configs: Vec<crate::config::Config>,
    /// The host snapshot: topology, CPU model, kernel, preemption, libc.
    pub host: serde_json::Value,
    pub environment: serde_json::Value,
}

pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}
