//! The PostgreSQL schema: the same tables and columns as the SQLite one
//! (`schema.rs`, version 6; PostgreSQL's version 2 is SQLite's 4, 3 is 5, 4 is 6), in PostgreSQL's types, plus `runs.origin`, where
//! a run copied by `kdelta push` came from (unique, so a second push stores
//! nothing), and from version 5 the fleet's queue (`fleet/queue.rs`), which
//! SQLite has no use for. Versioned in the table `kdelta_schema`; bump [`PG_VERSION`] and
//! append a step to [`STEPS`] for every change, never edit a step in place.

/// The version this kdelta writes.
pub(super) const PG_VERSION: i32 = 5;

/// Each step takes the database from the version before it to its own.
pub(super) const STEPS: &[(i32, &str)] = &[(1, V1), (2, V2), (3, V3), (4, V4), (5, V5)];

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

/// Version 5: the fleet (`src/fleet/`). `fleet_hosts`: one row per host an
/// agent registered (its labels, usable CPUs and snapshot, when it was last
/// seen and what it is doing). `jobs`: one row per (submission, host), its
/// state `queued`, `running`, `done`, `failed`, `refused` or `cancelled`, the
/// agent holding it and until when (`lease_until`, server time), the run it
/// stored. `job_attempts`: each time an agent took a job, and how that
/// attempt ended. `runs.job_id`: the job a run answers, unique, so a job
/// run twice is stored once.
const V5: &str = "
ALTER TABLE runs ADD COLUMN job_id BIGINT;
CREATE UNIQUE INDEX runs_job ON runs(job_id);
CREATE TABLE fleet_hosts (
    name            TEXT PRIMARY KEY,
    labels          TEXT NOT NULL,
    cpus            TEXT NOT NULL,
    host            TEXT NOT NULL,
    kdelta_version  TEXT NOT NULL,
    registered      TIMESTAMPTZ NOT NULL DEFAULT now(),
    seen            TIMESTAMPTZ NOT NULL DEFAULT now(),
    state           TEXT NOT NULL,
    note            TEXT
);
CREATE TABLE jobs (
    id              BIGSERIAL PRIMARY KEY,
    host            TEXT NOT NULL,
    kind            TEXT NOT NULL,
    args            TEXT NOT NULL,
    label           TEXT,
    submitted       TIMESTAMPTZ NOT NULL DEFAULT now(),
    submitted_by    TEXT NOT NULL,
    state           TEXT NOT NULL DEFAULT 'queued',
    attempts        INTEGER NOT NULL DEFAULT 0,
    failures        INTEGER NOT NULL DEFAULT 0,
    agent           TEXT,
    lease_until     TIMESTAMPTZ,
    cancel          BOOLEAN NOT NULL DEFAULT false,
    ended           TIMESTAMPTZ,
    run_id          BIGINT,
    reason          TEXT
);
CREATE INDEX jobs_queue ON jobs(host, state, id);
CREATE INDEX jobs_running ON jobs(state, lease_until);
CREATE INDEX jobs_label ON jobs(label);
CREATE TABLE job_attempts (
    job_id          BIGINT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    attempt         INTEGER NOT NULL,
    host            TEXT NOT NULL,
    agent           TEXT NOT NULL,
    started         TIMESTAMPTZ NOT NULL DEFAULT now(),
    ended           TIMESTAMPTZ,
    outcome         TEXT,
    reason          TEXT,
    run_id          BIGINT,
    PRIMARY KEY (job_id, attempt)
);
";
