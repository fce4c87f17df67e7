//! The PostgreSQL schema: the same tables and columns as the SQLite one
//! (`schema.rs`, version 6; PostgreSQL's version 2 is SQLite's 4, 3 is 5, 4 is 6), in PostgreSQL's types, plus `runs.origin`, where
//! a run copied by `kdelta push` came from (unique, so a second push stores
//! nothing). Versioned in the table `kdelta_schema`; bump [`PG_VERSION`] and
//! append a step to [`STEPS`] for every change, never edit a step in place.

/// The version this kdelta writes.
pub(super) const PG_VERSION: i32 = 4;

/// Each step takes the database from the version before it to its own.
pub(super) const STEPS: &[(i32, &str)] = &[(1, V1), (2, V2), (3, V3), (4, V4)];

/// The first version with the results' `profile` column.
pub(super) const PROFILES: i32 = 4;

/// The first version with the runs' `meta`, `hostname` and `kernel`
/// columns; the migration fills the last two for the runs stored before it.
pub(super) const HOST_KEYS: i32 = 2;

/// A key for `pg_advisory_xact_lock` while the schema is made or migrated
/// ("kdlt", as SQLite's application id), so two hosts starting together
/// do it once.
pub(super) const MIGRATION_LOCK: i64 = 0x6b64_6c74;

const V1: &str = "
CREATE TABLE runs (
    id              BIGSERIAL PRIMARY KEY,
    label           TEXT,
    started         TEXT NOT NULL,
    finished        TEXT,
    status          TEXT NOT NULL,
    kdelta_version  TEXT NOT NULL,
    command         TEXT NOT NULL,
    pid             BIGINT,
    configs         TEXT NOT NULL,
    host            TEXT NOT NULL,
    environment     TEXT,
    pid_start       BIGINT,
    origin          TEXT UNIQUE
);
CREATE INDEX runs_label ON runs(label);
CREATE TABLE results (
    id               BIGSERIAL PRIMARY KEY,
    run_id           BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq              BIGINT NOT NULL,
    benchmark        TEXT NOT NULL,
    family           TEXT NOT NULL,
    params           TEXT NOT NULL,
    config           TEXT NOT NULL,
    cpus             TEXT NOT NULL,
    unit             TEXT NOT NULL,
    better           TEXT NOT NULL,
    status           TEXT NOT NULL,
    reason           TEXT,
    samples          TEXT NOT NULL,
    summary          TEXT,
    extras           TEXT,
    notes            TEXT,
    warnings         TEXT,
    iterations       BIGINT,
    simulated        BOOLEAN NOT NULL DEFAULT false,
    samples_meta     TEXT,
    quality          TEXT,
    placement        TEXT,
    below_resolution DOUBLE PRECISION
);
CREATE INDEX results_run ON results(run_id);
";

/// Version 2 (SQLite's 4): run metadata, the host name and kernel release
/// copied out of the `host` JSON (filled for older runs by the migration),
/// and the indexes of a benchmark's history on a host, by run start.
const V2: &str = "
ALTER TABLE runs ADD COLUMN meta TEXT;
ALTER TABLE runs ADD COLUMN hostname TEXT;
ALTER TABLE runs ADD COLUMN kernel TEXT;
CREATE INDEX runs_host_started ON runs(hostname, started);
CREATE INDEX runs_started ON runs(started);
CREATE INDEX results_benchmark_run ON results(benchmark, run_id);
";

/// Version 3 (SQLite's 5): the results of a run by benchmark, with the
/// family, so a history reads which benchmarks its runs hold from this
/// index alone (an index-only scan), never from the wide result rows.
const V3: &str = "
CREATE INDEX results_run_benchmark ON results(run_id, benchmark, family);
";

/// Version 4 (SQLite's 6): a result's profile (`--profile`), its folded
/// stacks as JSON.
const V4: &str = "
ALTER TABLE results ADD COLUMN profile TEXT;
";
