//! The database schema. Bump [`SCHEMA_VERSION`] and add a migration step in
//! `Store::migrate` for every change; never edit `V1` in place.

/// `PRAGMA application_id`: "kdlt", so kdelta recognises its own files.
pub const APPLICATION_ID: i32 = 0x6b64_6c74;
pub const SCHEMA_VERSION: i32 = 2;

pub const V1: &str = "
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
pub const V2: &str = "
ALTER TABLE results ADD COLUMN samples_meta TEXT;      -- JSON array, one object per sample
ALTER TABLE results ADD COLUMN quality TEXT;           -- JSON: wanted, clean, disturbed, retaken, noisy, busy
ALTER TABLE results ADD COLUMN placement TEXT;         -- JSON array: the result split by placement
ALTER TABLE results ADD COLUMN below_resolution REAL;  -- bound of a net figure below resolution
";
