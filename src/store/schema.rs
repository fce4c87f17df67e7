//! The database schema. Bump [`SCHEMA_VERSION`] and add a migration step in
//! `Store::migrate` for every change; never edit an earlier version in place.

/// `PRAGMA application_id`: "kdlt", so kdelta recognises its own files.
pub const APPLICATION_ID: i32 = 0x6b64_6c74;
pub const SCHEMA_VERSION: i32 = 6;

pub(super) const V1: &str = "
CREATE TABLE IF NOT EXISTS runs (
    id              INTEGER PRIMARY KEY,
    label           TEXT,
    started         TEXT NOT NULL,        -- RFC 3339, UTC
    finished        TEXT,
    status          TEXT NOT NULL,        -- running | complete | incomplete
    kdelta_version  TEXT NOT NULL,
    command         TEXT NOT NULL,
    pid             INTEGER,              -- of the writing process, to spot dead 'running' rows
    configs         TEXT NOT NULL,        -- JSON: the resolved configurations
    host            TEXT NOT NULL,        -- JSON: topology and software snapshot
    environment     TEXT                  -- JSON: load before/after, run warnings
);
CREATE INDEX IF NOT EXISTS runs_label ON runs(label);
CREATE TABLE IF NOT EXISTS results (
    id          INTEGER PRIMARY KEY,
    run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    benchmark   TEXT NOT NULL,
    family      TEXT NOT NULL,
    params      TEXT NOT NULL,            -- JSON object
    config      TEXT NOT NULL,
    cpus        TEXT NOT NULL,            -- CPU list the configuration resolved to
    unit        TEXT NOT NULL,
    better      TEXT NOT NULL,            -- lower | higher
    status      TEXT NOT NULL,            -- ok | failed | unavailable
    reason      TEXT,
    samples     TEXT NOT NULL,            -- JSON array: every raw sample
    summary     TEXT,                     -- JSON: median, mean, min, max, stddev, cv, ...
    extras      TEXT,                     -- JSON: benchmark-specific figures
    notes       TEXT,
    warnings    TEXT,
    iterations  INTEGER,
    simulated   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS results_run ON results(run_id);
";

/// Version 2: per-sample records and the result's quality (trustworthy
/// comparisons). Older results read back with these columns NULL.
pub(super) const V2: &str = "
ALTER TABLE results ADD COLUMN samples_meta TEXT;      -- JSON array, one object per sample
ALTER TABLE results ADD COLUMN quality TEXT;           -- JSON: wanted, clean, disturbed, retaken, noisy, busy
ALTER TABLE results ADD COLUMN placement TEXT;         -- JSON array: the result split by placement
ALTER TABLE results ADD COLUMN below_resolution REAL;  -- bound of a net figure below resolution
";

/// Version 3: the start time of the writing process (`/proc/PID/stat` field
/// 22, clock ticks after boot) beside its `pid`, so a `running` run whose
/// process died, or whose id now names another process, reads `incomplete`.
pub(super) const V3: &str = "
ALTER TABLE runs ADD COLUMN pid_start INTEGER;
";

/// Version 4: run metadata (`--meta KEY=VALUE`), and what a benchmark's
/// history over time needs on a large store: the host name and kernel
/// release copied out of the `host` JSON (set on insert, and by the
/// migration for older runs, so a host's runs are found through an index
/// instead of parsing every snapshot), and indexes for "the results of
/// benchmark B on host H in the order the runs started". `started` is RFC
/// 3339 UTC text of one width, so it sorts in time order.
pub(super) const V4: &str = "
ALTER TABLE runs ADD COLUMN meta TEXT;      -- JSON object {KEY: VALUE}; NULL for runs stored before
ALTER TABLE runs ADD COLUMN hostname TEXT;  -- host.hostname
ALTER TABLE runs ADD COLUMN kernel TEXT;    -- host.kernel_release
CREATE INDEX IF NOT EXISTS runs_host_started ON runs(hostname, started);
CREATE INDEX IF NOT EXISTS runs_started ON runs(started);
CREATE INDEX IF NOT EXISTS results_benchmark_run ON results(benchmark, run_id);
";

/// Version 5: the results of a run by benchmark, with the family, so the
/// benchmarks a history's runs hold (and which of their results it wants)
/// are read from this index alone, never from the wide result rows.
pub(super) const V5: &str = "
CREATE INDEX IF NOT EXISTS results_run_benchmark ON results(run_id, benchmark, family);
";

/// Version 6: a result's profile (`--profile`): its folded stacks and how
/// they were taken, as JSON (`model::profile::Profile`); NULL for results
/// measured without one and for those stored before.
pub(super) const V6: &str = "
ALTER TABLE results ADD COLUMN profile TEXT;  -- JSON: event, hz, stacks {folded stack: count}, samples, cut, ...
";

const RUNS_V1: &[&str] = &[
    "id",
    "label",
    "started",
    "finished",
    "status",
    "kdelta_version",
    "command",
    "pid",
    "configs",
    "host",
    "environment",
];
const RESULTS_V1: &[&str] = &[
    "id",
    "run_id",
    "seq",
    "benchmark",
    "family",
    "params",
    "config",
    "cpus",
    "unit",
    "better",
    "status",
    "reason",
    "samples",
    "summary",
    "extras",
    "notes",
    "warnings",
    "iterations",
    "simulated",
];
const RESULTS_V2: &[&str] = &["samples_meta", "quality", "placement", "below_resolution"];
const RUNS_V3: &[&str] = &["pid_start"];
const RUNS_V4: &[&str] = &["meta", "hostname", "kernel"];
const RESULTS_V6: &[&str] = &["profile"];

/// The tables and the columns a database of schema `version` must have.
pub(super) fn columns(version: i64) -> Vec<(&'static str, Vec<&'static str>)> {
    let mut runs = RUNS_V1.to_vec();
    let mut results = RESULTS_V1.to_vec();
    if version >= 2 {
        results.extend_from_slice(RESULTS_V2);
    }
    if version >= 3 {
        runs.extend_from_slice(RUNS_V3);
    }
    if version >= 4 {
        runs.extend_from_slice(RUNS_V4);
    }
    if version >= 6 {
        results.extend_from_slice(RESULTS_V6);
    }
    vec![("runs", runs), ("results", results)]
}
