//! The records every part shares: a run and its results. Their JSON form is
//! kdelta's stable output format (`--format json`, `export`), documented in
//! the README; add fields, never rename or remove them.

use super::sample::PlacementGroup;
pub(crate) use super::sample::{Quality, SampleMeta};
use super::{Better, Params, Summary, Warning};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    Ok,
    Failed,
    Unavailable,
}

impl Status {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed => "failed",
            Status::Unavailable => "unavailable",
        }
    }
    pub(crate) fn parse(s: &str) -> Option<Status> {
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
pub(crate) enum RunStatus {
    Running,
    Complete,
    Incomplete,
}

impl RunStatus {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Incomplete => "incomplete",
        }
    }
    pub(crate) fn parse(s: &str) -> Option<RunStatus> {
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
pub(crate) struct ResultRecord {
    pub(crate) benchmark: String,
    pub(crate) family: String,
    pub(crate) params: Params,
    pub(crate) config: String,
    pub(crate) cpus: String,
    pub(crate) unit: String,
    pub(crate) better: Better,
    pub(crate) status: Status,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub(crate) reason: Option<String>,
    /// Every raw sample, in the order taken, disturbed ones included.
    pub(crate) samples: Vec<f64>,
    /// One entry per sample: start time, wall and CPU time, other work on its
    /// CPUs, steal, the CPUs its tasks ran on, its round, and whether it was
    /// disturbed (empty for results stored before kdelta recorded it).
    #[serde(default)]
    pub(crate) samples_meta: Vec<SampleMeta>,
    /// Clean, disturbed and retaken counts, and whether the result is noisy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) quality: Option<Quality>,
    /// The result split by where its tasks ran, when that explains its spread.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) placement: Vec<PlacementGroup>,
    /// For a figure net of a subtracted overhead whose interval reaches zero:
    /// the bound it is below (`< X`). The samples and summary are kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) below_resolution: Option<f64>,
    /// median, mean, mean_kind, min, max, stddev, cv, n, p5, p95, p99 of the
    /// clean samples (absent when there are none).
    #[serde(flatten)]
    pub(crate) summary: Option<Summary>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub(crate) iterations: Option<u64>,
    #[serde(default)]
    pub(crate) extras: super::extras::Extras,
    #[serde(default)]
    pub(crate) notes: Vec<String>,
    #[serde(default)]
    pub(crate) warnings: Vec<Warning>,
    #[serde(default)]
    pub(crate) simulated: bool,
    /// `--profile`: the folded stacks of the profiled samples, taken apart
    /// from `samples` (absent when the run did not profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) profile: Option<super::profile::Profile>,
}

impl ResultRecord {
    /// Key that matches the same measurement across configurations or runs.
    pub(crate) fn point_key(&self) -> (String, Params) {
        (self.benchmark.clone(), self.params.clone())
    }

    /// The samples the summary and comparisons use: the ones not judged
    /// disturbed (all of them for results without per-sample records).
    pub(crate) fn clean_samples(&self) -> Vec<f64> {
        self.clean_with_meta().into_iter().map(|(v, _)| v).collect()
    }

    /// Clean samples with their records (`None` where there are none). When
    /// every sample was disturbed, all of them: the result is then noisy.
    pub(crate) fn clean_with_meta(&self) -> Vec<(f64, Option<&SampleMeta>)> {
        let used = super::sample::used(&self.samples_meta, self.samples.len());
        let meta = |i: usize| self.samples_meta.get(i).filter(|_| self.samples_meta.len() == self.samples.len());
        self.samples.iter().enumerate().filter(|(i, _)| used[*i]).map(|(i, &v)| (v, meta(i))).collect()
    }

    pub(crate) fn is_noisy(&self) -> bool {
        self.quality.as_ref().is_some_and(|q| q.noisy)
    }

    pub(crate) fn is_busy(&self) -> bool {
        self.quality.as_ref().is_some_and(|q| q.busy)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunRecord {
    pub(crate) id: i64,
    pub(crate) label: Option<String>,
    pub(crate) started: String,
    pub(crate) finished: Option<String>,
    pub(crate) status: RunStatus,
    pub(crate) kdelta_version: String,
    pub(crate) command: String,
    #[serde(skip)]
    pub(crate) pid: Option<u32>,
    pub(crate) configs: Vec<super::config::Config>,
    /// The host snapshot: topology, CPU model, kernel, preemption, libc.
    pub(crate) host: serde_json::Value,
    pub(crate) environment: super::environment::RunEnvironment,
    /// What the user attached to the run (`--meta commit=abc123`), by key;
    /// absent from the JSON when empty, and empty for runs stored before.
    #[serde(default, skip_serializing_if = "super::meta::RunMeta::is_empty")]
    pub(crate) meta: super::meta::RunMeta,
    /// The fleet job this run answers (`kdelta agent`), absent otherwise: a
    /// shared store keeps at most one run per job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) job: Option<i64>,
}

impl RunRecord {
    /// A run starting now in this process, not yet stored (`id` 0).
    pub(crate) fn begin(
        label: Option<String>,
        command: String,
        configs: Vec<super::config::Config>,
        host: serde_json::Value,
        environment: super::environment::RunEnvironment,
    ) -> RunRecord {
        RunRecord {
            id: 0,
            label,
            started: now_rfc3339(),
            finished: None,
            status: RunStatus::Running,
            kdelta_version: env!("CARGO_PKG_VERSION").to_string(),
            command,
            pid: Some(std::process::id()),
            configs,
            host,
            environment,
            meta: Default::default(),
            job: None,
        }
    }
}

pub(crate) fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}
