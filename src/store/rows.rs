//! The one shape of a stored row, shared by both backends: a run's and a
//! result's columns as text (JSON for the structured ones), and the
//! conversions to and from the records. SQLite and PostgreSQL keep the same
//! columns with the same meaning; only the SQL dialect differs.

use crate::model::record::{ResultRecord, RunRecord, RunStatus};
use anyhow::Result;

/// A result's columns, in the order both backends write and read them.
pub(crate) struct ResultCols {
    pub(crate) benchmark: String,
    pub(crate) family: String,
    pub(crate) params: String,
    pub(crate) config: String,
    pub(crate) cpus: String,
    pub(crate) unit: String,
    pub(crate) better: String,
    pub(crate) status: String,
    pub(crate) reason: Option<String>,
    pub(crate) samples: String,
    pub(crate) summary: String,
    pub(crate) extras: String,
    pub(crate) notes: String,
    pub(crate) warnings: String,
    pub(crate) iterations: Option<i64>,
    pub(crate) simulated: bool,
    pub(crate) samples_meta: String,
    pub(crate) quality: Option<String>,
    pub(crate) placement: String,
    pub(crate) below_resolution: Option<f64>,
    /// The profile's JSON (`None` without one, and before SQLite schema 6 /
    /// PostgreSQL 4).
    pub(crate) profile: Option<String>,
}

/// The result columns, comma-separated, as both schemas name them.
pub(crate) const RESULT_COLS: &str = "benchmark, family, params, config, cpus, unit, better, status, reason, samples, summary, extras, notes, warnings, \
     iterations, simulated, samples_meta, quality, placement, below_resolution, profile";

/// The most bytes of a stored profile's JSON either store reads: four
/// times the folded text a profile keeps ([`MAX_BYTES`](crate::model::profile::MAX_BYTES)),
/// room for the JSON's quotes, counts and escapes. A longer one (forged,
/// or written by something else) is not read: its row reads without a
/// profile and with a note saying so.
pub(crate) const PROFILE_READ_MAX: usize = 4 * crate::model::profile::MAX_BYTES;

/// [`RESULT_COLS`] as a store reads them: the profile column as it is
/// when it is within [`PROFILE_READ_MAX`] bytes, else its length as a JSON
/// string, so an oversized profile is never fetched. `bytes` is the
/// dialect's byte-length function (`octet_length` in both: SQLite's reads
/// the length from the row's header without loading the text).
pub(crate) fn result_cols_read(bytes: &dyn Fn(&str) -> String) -> String {
    let len = bytes("profile");
    RESULT_COLS.replace(
        ", profile",
        &format!(", CASE WHEN {len} > {PROFILE_READ_MAX} THEN '\"' || {len} || '\"' ELSE profile END"),
    )
}

/// A profile as stored: bounded to what a profile keeps (a store never
/// holds more, whoever wrote the row).
fn bounded(p: &crate::model::profile::Profile) -> crate::model::profile::Profile {
    let mut p = p.clone();
    p.bound(crate::model::profile::MAX_BYTES);
    p
}

/// [`RESULT_COLS`] as `history` reads them: what follows a point over runs
/// (its names, samples and which were disturbed), the rest NULL. A store of
/// years of runs keeps its large columns (extras, summary, warnings) on
/// disk.
pub(crate) const HISTORY_RESULT_COLS: &str =
    "benchmark, family, params, config, cpus, unit, better, status, reason, samples, NULL, NULL, NULL, NULL, \
     iterations, simulated, samples_meta, NULL, NULL, below_resolution, NULL";

impl ResultCols {
    pub(super) fn of(r: &ResultRecord) -> Result<ResultCols> {
        Ok(ResultCols {
            benchmark: r.benchmark.clone(),
            family: r.family.clone(),
            params: serde_json::to_string(&r.params)?,
            config: r.config.clone(),
            cpus: r.cpus.clone(),
            unit: r.unit.clone(),
            better: r.better.as_str().into(),
            status: r.status.as_str().into(),
            reason: r.reason.clone(),
            samples: serde_json::to_string(&r.samples)?,
            summary: serde_json::to_string(&r.summary)?,
            extras: serde_json::to_string(&r.extras)?,
            notes: serde_json::to_string(&r.notes)?,
            warnings: serde_json::to_string(&r.warnings)?,
            iterations: r.iterations.map(|i| i as i64),
            simulated: r.simulated,
            samples_meta: serde_json::to_string(&r.samples_meta)?,
            quality: r.quality.as_ref().map(serde_json::to_string).transpose()?,
            placement: serde_json::to_string(&r.placement)?,
            below_resolution: r.below_resolution,
            profile: r.profile.as_ref().map(|p| serde_json::to_string(&bounded(p))).transpose()?,
        })
    }

    /// The record; `run_id` only names it in an error. A column that does
    /// not parse (a row damaged or forged in the file) is bad input naming
    /// the result, its run and the column: one line, exit 2, the row left
    /// as it is.
    pub(super) fn record(self, run_id: i64) -> Result<ResultRecord> {
        let bad = |col: &str, why: String| {
            crate::error::bad_input(format!(
                "result {} of run {run_id} is damaged in the store: its {col} column does not parse ({}); \
                 nothing was changed",
                crate::model::text::printable(&self.benchmark),
                why.replace(['\n', '\r'], " ")
            ))
        };
        // A JSON column as its type; NULL (`null`) as `T::default()` where `or_default`.
        fn col<T: serde::de::DeserializeOwned + Default>(
            name: &str,
            text: &str,
            or_default: bool,
            bad: &dyn Fn(&str, String) -> anyhow::Error,
        ) -> Result<T> {
            let v: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(name, e.to_string()))?;
            if or_default && v.is_null() {
                return Ok(T::default());
            }
            serde_json::from_value(v).map_err(|e| bad(name, e.to_string()))
        }
        fn opt<T: serde::de::DeserializeOwned + Default>(
            name: &str,
            text: &Option<String>,
            bad: &dyn Fn(&str, String) -> anyhow::Error,
        ) -> Result<T> {
            text.as_deref().map(|t| col(name, t, false, bad)).unwrap_or_else(|| Ok(T::default()))
        }
        // A profile over the read cap came as its length (a JSON string):
        // the result reads without it, and says so.
        let mut notes: Vec<String> =
            col::<Vec<String>>("notes", &self.notes, true, &bad)?.into_iter().map(shown).collect();
        let profile: Option<crate::model::profile::Profile> = match self.profile.as_deref() {
            Some(t) if t.starts_with('"') => {
                notes.push(format!(
                    "its stored profile ({} bytes) is larger than the {PROFILE_READ_MAX} bytes a profile may take: not read",
                    t.trim_matches('"')
                ));
                None
            }
            _ => opt::<Option<crate::model::profile::Profile>>("profile", &self.profile, &bad)?.map(|p| bounded(&p)),
        };
        Ok(ResultRecord {
            params: col("params", &self.params, false, &bad)?,
            better: crate::model::Better::parse(&self.better)
                .ok_or_else(|| bad("better", format!("{:?}", self.better)))?,
            status: crate::model::record::Status::parse(&self.status)
                .ok_or_else(|| bad("status", format!("{:?}", self.status)))?,
            samples: col("samples", &self.samples, false, &bad)?,
            summary: col("summary", &self.summary, false, &bad)?,
            extras: col("extras", &self.extras, true, &bad)?,
            notes,
            warnings: col("warnings", &self.warnings, true, &bad)?,
            iterations: self.iterations.map(|i| i as u64),
            samples_meta: col("samples_meta", &self.samples_meta, true, &bad)?,
            quality: opt("quality", &self.quality, &bad)?,
            placement: col("placement", &self.placement, true, &bad)?,
            below_resolution: self.below_resolution,
            profile,
            benchmark: shown(self.benchmark),
            family: shown(self.family),
            config: shown(self.config),
            cpus: shown(self.cpus),
            unit: shown(self.unit),
            reason: self.reason,
            simulated: self.simulated,
        })
    }
}

/// A run's columns as read back; `status` is the stored one, before the
/// liveness check each backend makes.
pub(crate) struct RunCols {
    pub(crate) id: i64,
    pub(crate) label: Option<String>,
    pub(crate) started: String,
    pub(crate) finished: Option<String>,
    pub(crate) status: String,
    pub(crate) kdelta_version: String,
    pub(crate) command: String,
    pub(crate) pid: Option<i64>,
    pub(crate) configs: Option<String>,
    pub(crate) host: Option<String>,
    pub(crate) environment: Option<String>,
    pub(crate) pid_start: Option<i64>,
    /// The metadata as a JSON object (`None` before schema 4).
    pub(crate) meta: Option<String>,
}

/// The run columns both schemas share, in [`RunCols`] order.
pub(crate) const RUN_COLS: &str =
    "id, label, started, finished, status, kdelta_version, command, pid, configs, host, environment, pid_start, meta";

/// The columns a store keeps beside a run's `host` JSON so it can filter
/// runs through an index: its host name and kernel release, as the JSON
/// has them (`runs --host` and `--kernel` compare the same fields).
pub(crate) fn host_keys(host: &serde_json::Value) -> (Option<String>, Option<String>) {
    let text = |k: &str| host.get(k).and_then(|v| v.as_str()).map(str::to_string);
    (text("hostname"), text("kernel_release"))
}

/// [`host_keys`] of a stored `host` column (unreadable JSON has none).
pub(crate) fn host_keys_of_text(host: Option<&str>) -> (Option<String>, Option<String>) {
    host.and_then(|h| serde_json::from_str::<serde_json::Value>(h).ok()).map(|h| host_keys(&h)).unwrap_or_default()
}

impl RunCols {
    pub(super) fn stored_status(&self) -> RunStatus {
        RunStatus::parse(&self.status).unwrap_or(RunStatus::Incomplete)
    }

    pub(super) fn record(self, status: RunStatus) -> RunRecord {
        let js = |s: Option<String>| s.and_then(|s| serde_json::from_str(&s).ok()).unwrap_or(serde_json::Value::Null);
        RunRecord {
            id: self.id,
            label: self.label.map(shown),
            started: shown(self.started),
            finished: self.finished,
            status,
            kdelta_version: self.kdelta_version,
            command: super::location::redact_command(&self.command),
            pid: self.pid.map(|p| p as u32),
            configs: serde_json::from_value(js(self.configs)).unwrap_or_default(),
            host: js(self.host),
            environment: crate::model::RunEnvironment::from_json(js(self.environment)),
            meta: crate::model::meta::RunMeta::from_json(self.meta.as_deref()),
            job: None,
        }
    }
}

/// A stored text as kdelta may print it: kdelta never writes a control
/// character into these columns (labels, configurations and names are
/// refused with one), so one found there was forged into the file, and is
/// read as its visible escape (`\x1b`), never reaching a terminal raw.
/// (`reason`, a command's stderr, stays as stored: every output escapes it.)
fn shown(s: String) -> String {
    match crate::model::text::printable(&s) {
        std::borrow::Cow::Borrowed(_) => s,
        std::borrow::Cow::Owned(o) => o,
    }
}
